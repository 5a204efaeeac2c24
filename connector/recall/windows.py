"""The retention windows at one moment: which case dates are still live, archived, or expired PII.

One place for the rule that retention (``apply_retention``), recall (what is still recallable) and
the writer (a case already past its window goes straight to the archive) all apply.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

from connector.settings import RetentionSettings

Fate = Literal["live", "archived", "expired"]


@dataclass(frozen=True, slots=True)
class Windows:
    archive_before: datetime  # a live entry retained from before this leaves the index
    pii_before: datetime  # a PII entry dated before this is deleted everywhere

    @classmethod
    def at(cls, now: datetime, conf: RetentionSettings) -> Windows:
        return cls(
            archive_before=now - timedelta(days=conf.episodic_days),
            pii_before=now - timedelta(days=conf.pii_days),
        )

    def fate(self, occurred_at: datetime, *, pii: bool) -> Fate:
        """Where a case of this date belongs now: PII past its window is not kept at all."""
        if pii and occurred_at < self.pii_before:
            return "expired"
        if occurred_at < self.archive_before:
            return "archived"
        return "live"
