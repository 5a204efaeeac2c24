"""The vector store's ``doctor`` check: it answers within its deadline, or the check fails."""

from __future__ import annotations

from typing import Any

from connector.settings import Settings
from connector.vectors.store import ChromaStore


def describe(settings: Settings) -> str:
    """Where the store is and how many collections it holds; StoreError (StoreTimeout when it does
    not answer within its deadline: a server's ``chroma.read_timeout_s``, opening an embedded
    directory ``chroma.timeout_s``) when it cannot say."""
    store = ChromaStore.for_settings(settings)

    def probe(client: Any) -> int:
        client.heartbeat()
        return len(client.list_collections())

    try:
        count = store.run("read" if store.lock is None else "write", "a heartbeat", probe)
    finally:
        if not store.deadlines.hung:  # a hung call still holds the client
            store.release()
    where = "embedded at " + str(store.embedded_path) if store.embedded_path else store.where
    return f"{where}, {count} collection(s)"
