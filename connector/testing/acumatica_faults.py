"""Faults a test can inject into the fake Acumatica, fired by request count.

A fault targets entity requests (``target=None``: any entity; or an entity name such as
``"Customer"``) or one of the service routes ``"login"``, ``"logout"``, ``"token"``, ``"index"``.
It lets ``after`` matching requests through, then fires on the next ``times`` ones.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

FaultKind = Literal[
    "status",  # an error answer: 429 (with or without Retry-After), 5xx, a business error
    "timeout",  # the request times out (in-process: httpx.ReadTimeout; served: the connection drops)
    "malformed_json",  # 200 with a truncated JSON body
    "expire_sessions",  # every session and token expires just before this request
    "repeat_page",  # a list request answers with the previous list response (the server ignores $skip)
]

SERVICE_TARGETS = frozenset({"login", "logout", "token", "index"})


@dataclass(slots=True)
class Fault:
    kind: FaultKind
    target: str | None = None
    times: int = 1
    after: int = 0
    status: int = 503
    retry_after: str | None = None
    exception_type: str | None = None
    exception_message: str | None = None

    def __post_init__(self) -> None:
        if self.times < 1 or self.after < 0:
            raise ValueError("a fault fires at least once (times >= 1) after a non-negative count")

    def matches(self, target: str) -> bool:
        if self.target is None:
            return target not in SERVICE_TARGETS
        return self.target == target


class FaultPlan:
    """Pending faults in the order they were added."""

    def __init__(self) -> None:
        self._faults: list[Fault] = []
        self.fired: list[Fault] = []

    def add(self, fault: Fault) -> Fault:
        self._faults.append(fault)
        return fault

    def clear(self) -> None:
        self._faults.clear()

    @property
    def pending(self) -> list[Fault]:
        return list(self._faults)

    def take(self, target: str) -> Fault | None:
        """The fault that fires for this request, if any; every matching fault counts it."""
        chosen: Fault | None = None
        for fault in list(self._faults):
            if not fault.matches(target):
                continue
            if fault.after > 0:
                fault.after -= 1
                continue
            if chosen is None:
                chosen = fault
                fault.times -= 1
                if fault.times == 0:
                    self._faults.remove(fault)
        if chosen is not None:
            self.fired.append(chosen)
        return chosen
