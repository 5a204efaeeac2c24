"""Moved to :mod:`connector.vectors.slack`; kept as a re-export."""

from __future__ import annotations

from connector.vectors.slack import scrub_segment_slack

__all__ = ["scrub_segment_slack"]
