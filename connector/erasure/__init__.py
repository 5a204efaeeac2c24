"""Erasure that stays erased: tombstones that refuse later writes, and on-disk scrubbing after forget."""

from __future__ import annotations

from connector.erasure.tombstones import Erasures, customer_digest

__all__ = ["Erasures", "customer_digest"]
