"""The outcome of one (tenant, stream) run, as the CLI, the scheduler and tests see it."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any, Literal

RunStatus = Literal["ok", "failed", "interrupted", "locked"]


@dataclass(slots=True)
class StreamResult:
    tenant: str
    stream: str
    status: RunStatus
    run_id: int | None = None
    mode: str = "incremental"
    window_start: datetime | None = None
    window_end: datetime | None = None
    watermark: datetime | None = None
    pages: int = 0
    records_read: int = 0
    inserted: int = 0
    updated: int = 0
    unchanged: int = 0
    deleted: int = 0
    skipped: int = 0
    requests: int = 0
    retries: int = 0
    duration_s: float = 0.0
    key_scan: bool = False
    error: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(slots=True)
class SyncReport:
    """Every stream run of one ``connector sync`` invocation."""

    results: list[StreamResult]
    interrupted_by: str | None = None

    @property
    def ok(self) -> bool:
        return all(r.status == "ok" for r in self.results) and self.interrupted_by is None

    def first_problem(self) -> StreamResult | None:
        for status in ("failed", "interrupted", "locked"):
            for result in self.results:
                if result.status == status:
                    return result
        return None
