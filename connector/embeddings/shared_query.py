"""One embedding of a query shared by the recalls of one context build.

``build_context`` recalls past cases and earlier conversations at once, with the same query and
the same model; each used to embed it, which doubled the most expensive step of the build. A
:class:`SharedQuery` lives for one build: the first recall to ask embeds the text, a concurrent
one waits for that result. It keeps nothing after the build, so it hides no cost from a benchmark
that repeats queries, and a different model or text is embedded on its own. What else both recalls
derive from the query text alone (its lexical terms) is made once per build too (:meth:`derived`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Executor, Future
from typing import Any, TypeVar

from connector.embeddings.base import Embedder, Vectors

_T = TypeVar("_T")


class SharedQuery:
    """Embeds each (model, text) once for the recalls that share this object."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._vectors: dict[tuple[str, str], Future[Vectors]] = {}
        self._derived: dict[tuple[Callable[[str], Any], str], Any] = {}

    def derived(self, make: Callable[[str], _T], text: str) -> _T:
        """``make(text)``, made by the first recall of the build that asks; ``make`` must depend on
        the text alone (it is the key with the text) and its result must not be changed by a caller."""
        key = (make, text)
        with self._lock:
            if key not in self._derived:
                self._derived[key] = make(text)
            made: _T = self._derived[key]
        return made

    def vector(self, embedder: Embedder, text: str) -> Vectors:
        key = (embedder.model_id, text)
        with self._lock:
            pending = self._vectors.get(key)
            owner = pending is None
            if pending is None:
                pending = self._vectors[key] = Future()
        if owner:
            try:
                pending.set_result(embedder.embed([text])[0])
            except BaseException as exc:
                pending.set_exception(exc)
                raise
        return pending.result()

    def start(self, embedder: Embedder, text: str, pool: Executor) -> Future[Vectors]:
        """The text's embedding as it runs: the one a recall of this build started already, else
        started now on ``pool``. The second recall then waits on the first one's result directly,
        without a thread of its own (each hand-off to a thread costs a wake-up on a busy machine)."""
        key = (embedder.model_id, text)
        with self._lock:
            pending = self._vectors.get(key)
            if pending is None:
                pending = self._vectors[key] = pool.submit(_embed, embedder, text)
        return pending


def _embed(embedder: Embedder, text: str) -> Vectors:
    vector: Vectors = embedder.embed([text])[0]
    return vector


def embed_one(embedder: Embedder, text: str, shared: SharedQuery | None = None) -> Vectors:
    """The text's vector: through ``shared`` when the caller's build shares one, else embedded here."""
    if shared is not None:
        return shared.vector(embedder, text)
    return _embed(embedder, text)
