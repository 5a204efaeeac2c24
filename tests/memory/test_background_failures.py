"""A background job that fails because a store is away (the turn indexer while Chroma is down or
hung) is one warning line naming the store and the cause, not a traceback per job in the agent's
log; a job that fails any other way keeps its traceback (a bug to see)."""

from __future__ import annotations

import logging

import pytest

from connector.background import BackgroundJobs
from connector.errors import StoreTimeout


def _fail(exc: Exception) -> None:
    raise exc


def test_a_store_failure_in_a_job_is_one_warning_line(caplog: pytest.LogCaptureFixture) -> None:
    jobs = BackgroundJobs("turn-index")
    hung = StoreTimeout("the Chroma server at 127.0.0.1:8000 did not answer opening within 1 s")
    with caplog.at_level(logging.WARNING, logger="connector.background"):
        jobs.submit(("index", "s-1"), lambda: _fail(hung))
        jobs.submit(("index", "s-2"), lambda: _fail(ValueError("a bug")))
        assert jobs.wait(10)
    jobs.close()
    by_key = {r.getMessage().split(" failed")[0]: r for r in caplog.records}
    store = by_key["turn-index: job ('index', 's-1')"]
    assert store.levelno == logging.WARNING and store.exc_info is None
    assert store.getMessage().endswith(
        "StoreTimeout: the Chroma server at 127.0.0.1:8000 did not answer opening within 1 s"
    )
    assert by_key["turn-index: job ('index', 's-2')"].exc_info is not None
