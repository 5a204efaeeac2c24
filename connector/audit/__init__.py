"""The audit trail: who (a token's name, or ``cli``) wrote, erased or read what, where and when.

Never the content. ``connector audit`` lists it; ``audit.retention_days`` bounds it; an erasure
keeps a tombstone without the erased customer's id. See docs/guides/access-and-audit.md.
"""

from __future__ import annotations

from connector.audit.table import AuditEvent, audit_t
from connector.audit.trail import (
    ERASE,
    Event,
    apply_retention,
    forget_customer,
    list_events,
    record,
    record_quietly,
)

__all__ = [
    "ERASE",
    "AuditEvent",
    "Event",
    "apply_retention",
    "audit_t",
    "forget_customer",
    "list_events",
    "record",
    "record_quietly",
]
