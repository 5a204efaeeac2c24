"""The fake SAP's injectable faults: what each one does to a request or to the answer.

Before routing: ``rate_limit`` (429 from the API-management proxy, with or without
``Retry-After``), ``server_error`` (5xx with an OData body), ``timeout`` (raises
``httpx.ReadTimeout``; served over HTTP the connection is dropped). After routing, on a good
answer: ``repeat_page`` (the previous page of that collection again), ``foreign_next`` (a next
link to another host), ``malformed_json`` (the body cut in half), ``sap_message`` (a warning in
the ``sap-message`` header).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

import httpx

from connector.testing.sap_render import Version, dumps, error_body

FaultKind = Literal[
    "rate_limit", "server_error", "timeout", "malformed_json", "repeat_page", "foreign_next", "sap_message"
]
FOREIGN_HOST = "https://attacker.example.net"
BEFORE_ROUTING: tuple[FaultKind, ...] = ("rate_limit", "server_error", "timeout")


@dataclass(slots=True)
class Fault:
    """A fault that fires on ``times`` matching requests after skipping ``after`` of them."""

    kind: FaultKind
    times: int = 1
    after: int = 0
    entity_set: str | None = None
    retry_after: str | None = None
    status: int = 503
    message: str = ""


@dataclass(slots=True)
class FaultQueue:
    """Queued faults and the last page of each collection (for ``repeat_page``)."""

    faults: list[Fault] = field(default_factory=list)
    last_pages: dict[str, bytes] = field(default_factory=dict)

    def add(self, fault: Fault) -> Fault:
        self.faults.append(fault)
        return fault

    def take(self, request: httpx.Request, kinds: tuple[FaultKind, ...]) -> Fault | None:
        """The first due fault of ``kinds`` for this request (consuming one of its ``times``)."""
        for fault in self.faults:
            if fault.kind not in kinds or fault.times <= 0:
                continue
            if fault.entity_set is not None and f"/{fault.entity_set}" not in request.url.path:
                continue
            if fault.after > 0:
                fault.after -= 1
                return None
            fault.times -= 1
            if fault.times == 0:
                self.faults.remove(fault)
            return fault
        return None

    def before(self, request: httpx.Request, version: Version) -> httpx.Response | None:
        """The failure to answer instead of routing the request, if one is due."""
        fault = self.take(request, BEFORE_ROUTING)
        if fault is None:
            return None
        if fault.kind == "timeout":
            raise httpx.ReadTimeout("fake SAP: read timed out", request=request)
        if fault.kind == "rate_limit":
            headers = {"Retry-After": fault.retry_after} if fault.retry_after is not None else {}
            body = {
                "fault": {
                    "faultstring": "Rate limit quota violation. Quota limit exceeded.",
                    "detail": {"errorcode": "policies.ratelimit.QuotaViolation"},
                }
            }
            return httpx.Response(
                429, content=dumps(body), headers={"content-type": "application/json", **headers}
            )
        body_bytes = error_body(version, "/IWFND/CM_BEC/026", fault.message or "Backend system unavailable")
        return httpx.Response(fault.status, content=body_bytes, headers={"content-type": "application/json"})

    def after(self, request: httpx.Request, response: httpx.Response, version: Version) -> httpx.Response:
        """Bend a good answer: repeated page, foreign next link, cut body, warning header."""
        path = request.url.path
        if response.extensions.get("collection"):
            if path in self.last_pages and self.take(request, ("repeat_page",)) is not None:
                response = httpx.Response(200, content=self.last_pages[path], headers=response.headers)
            elif self.take(request, ("foreign_next",)) is not None:
                body = dumps(_with_foreign_next(response, version, request))
                response = httpx.Response(200, content=body, headers=response.headers)
            self.last_pages[path] = response.content
        if response.status_code == 200 and self.take(request, ("malformed_json",)) is not None:
            cut = response.content[: len(response.content) // 2]
            response = httpx.Response(200, content=cut, headers=response.headers)
        warning = self.take(request, ("sap_message",))
        if warning is not None:
            message = {
                "code": "ZFAKE/001",
                "message": warning.message or "Fake warning",
                "severity": "warning",
                "target": "",
                "details": [],
            }
            response.headers["sap-message"] = dumps(message).decode()
        return response


def _with_foreign_next(response: httpx.Response, version: Version, request: httpx.Request) -> Any:
    payload = json.loads(response.content)
    link = f"{FOREIGN_HOST}{request.url.path}?$skiptoken=1000"
    if version == "v2":
        payload["d"]["__next"] = link
    else:
        payload["@odata.nextLink"] = link
    return payload
