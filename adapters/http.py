"""ERP-neutral HTTP plumbing shared by every adapter: retries, rate limits, the error table.

Why one place: the rules for talking to an ERP (retry transport errors, timeouts, 429 and 5xx
with capped exponential backoff and jitter, honour ``Retry-After``, log in again once on 401,
stay under the licence's request rate, never log a secret) are the same for Acumatica and SAP;
only the dialect of error bodies differs, and that is a pluggable :data:`ErrorDecoder`.

API
---
``HttpClient(base_url, *, erp, decode_error, traffic=TrafficPolicy(), clock=None, transport=None,
auth=None, headers=None, limits=None)``
    ``request(method, url, *, params=None, json=None, data=None, headers=None, reauth=True,
    retry=True) -> httpx.Response`` and ``request_json(...) -> Any`` (JSON parsed inside the
    retried unit, so a truncated body is retried like a transport error). Non-2xx answers raise
    the :class:`~connector.errors.ERPError` that ``decode_error`` builds. Each request runs inside
    ``auth.auth_flow`` (:class:`~connector.adapters.auth.LoginFlow`): a :class:`SessionExpired`
    (401) lets the flow log in again and the request is retried once. ``request_count``,
    ``retry_count``, ``throttle_wait_s``, ``cookies`` and ``close()`` are public.
``TrafficPolicy.from_tenant(tenant)``
    Request rate, concurrency, timeouts and retry budget from ``TenantSettings``.
``RetryPolicy``
    ``backoff(attempt)`` (exponential, capped, with jitter) and ``wait_for(error, attempt)``
    (the server's ``Retry-After`` when it sent one, capped; else the backoff).
``parse_retry_after(value, *, now, cap)``
    ``Retry-After`` as delta-seconds or an HTTP date, clamped to ``[0, cap]``; None if absent/bad.
``RateLimiter(requests_per_minute, clock, burst=None)`` / ``TrafficLimits.shared(key, ...)``
    A token bucket (and a semaphore for concurrency) shared by every client of one ERP licence.
``Action``, ``STATUS_ACTIONS``, ``action_for_status(status)``, ``error_for_action(action, ...)``
    The error table: HTTP status -> what to do -> which error class to raise.
``default_decoder(erp)``
    An :data:`ErrorDecoder` that uses only the status table and a short, secret-free body excerpt.
``parse_json_exact(body)``
    JSON with non-integer numbers as exact ``Decimal`` (scale kept), as every ERP body is read.
``safe_url(url)``
    ``scheme://host/path``: no user info and no query string, for messages and logs.

Every wait (backoff, ``Retry-After``, throttling) goes through the injected
:class:`~connector.clock.Clock` (default: the shared ``SYSTEM_CLOCK``), so tests use
``FrozenClock`` and never sleep.
"""

from __future__ import annotations

import enum
import json as jsonlib
import logging
import random
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from email.utils import parsedate_to_datetime
from types import MappingProxyType
from typing import Any, TypeVar

import httpx
import msgspec
from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt

from connector.adapters.auth import LoginFlow
from connector.clock import Clock, SystemClock
from connector.errors import (
    ERPAuthError,
    ERPError,
    ERPNotFound,
    ERPProtocolError,
    ERPRateLimited,
    ERPRequestError,
    ERPServerError,
    ERPTransportError,
)
from connector.settings import TenantSettings

log = logging.getLogger(__name__)

T = TypeVar("T")

#: The default clock. One instance, so clients without an injected clock share their traffic limits.
SYSTEM_CLOCK: Clock = SystemClock()

_FLOW_DONE = object()

#: Builds the error for a non-2xx response; the second argument is the parsed ``Retry-After``.
ErrorDecoder = Callable[[httpx.Response, float | None], ERPError]


class SessionExpired(ERPAuthError):
    """401: the session or token is no longer valid. The client logs in again and retries once."""


class MalformedResponse(ERPProtocolError):
    """A 2xx body that is not the JSON it should be (often a truncated transfer): retried."""

    retriable = True


# --------------------------------------------------------------------------------------------
# The error table
# --------------------------------------------------------------------------------------------


class Action(enum.Enum):
    """What the client does with an answer, decided in one place from the status (and body)."""

    RETRY = "retry"  # transient server trouble: back off and try again
    RATE_LIMITED = "rate_limited"  # slow down: honour Retry-After, else back off
    REAUTHENTICATE = "reauthenticate"  # log in again, then retry the request once
    AUTH_FAILED = "auth_failed"  # bad credentials or no rights: fail fast
    NOT_FOUND = "not_found"  # the record does not exist
    FAIL = "fail"  # any other refusal: retrying will not help


STATUS_ACTIONS: Mapping[int, Action] = MappingProxyType(
    {
        400: Action.FAIL,
        401: Action.REAUTHENTICATE,
        403: Action.AUTH_FAILED,
        404: Action.NOT_FOUND,
        405: Action.FAIL,
        408: Action.RETRY,
        409: Action.FAIL,
        410: Action.NOT_FOUND,
        422: Action.FAIL,
        425: Action.RETRY,
        429: Action.RATE_LIMITED,
        500: Action.RETRY,
        502: Action.RETRY,
        503: Action.RETRY,
        504: Action.RETRY,
    }
)

_ERROR_CLASSES: Mapping[Action, type[ERPError]] = MappingProxyType(
    {
        Action.RETRY: ERPServerError,
        Action.RATE_LIMITED: ERPRateLimited,
        Action.REAUTHENTICATE: SessionExpired,
        Action.AUTH_FAILED: ERPAuthError,
        Action.NOT_FOUND: ERPNotFound,
        Action.FAIL: ERPRequestError,
    }
)

_HINTS: Mapping[Action, str] = MappingProxyType(
    {
        Action.RETRY: "the server failed with a transient error",
        Action.RATE_LIMITED: "the server asked us to slow down; lower requests_per_minute or max_concurrency",
        Action.REAUTHENTICATE: "the session expired; logging in again",
        Action.AUTH_FAILED: "check the username, password, tenant and the API user's rights",
        Action.NOT_FOUND: "the record or endpoint does not exist",
        Action.FAIL: "the request was refused; retrying will not help",
    }
)


def action_for_status(status: int, table: Mapping[int, Action] = STATUS_ACTIONS) -> Action:
    """The action for an HTTP status: the table first, then 5xx retry and other 4xx fail."""
    if status in table:
        return table[status]
    return Action.RETRY if status >= 500 else Action.FAIL


def error_for_action(
    action: Action,
    *,
    erp: str,
    request: httpx.Request | None,
    status_code: int | None,
    detail: str | None = None,
    retry_after: float | None = None,
    exception_type: str | None = None,
    exception_message: str | None = None,
    code: str | None = None,
    tenant: str | None = None,
) -> ERPError:
    """The error of the right class, with a message naming request, status, detail and a hint."""
    where = f"{request.method} {safe_url(request.url)}" if request is not None else "request"
    status = f"HTTP {status_code}" if status_code is not None else "no response"
    text = f"{erp} {where} failed with {status}"
    if detail:
        text += f": {detail}"
    text += f" ({_HINTS[action]})"
    cls = _ERROR_CLASSES[action]
    fields: dict[str, Any] = {
        "status_code": status_code,
        "exception_type": exception_type,
        "exception_message": exception_message,
        "code": code,
        "tenant": tenant,
    }
    if cls is ERPRateLimited:
        return ERPRateLimited(text, retry_after=retry_after, **fields)
    return cls(text, **fields)


def body_excerpt(response: httpx.Response, limit: int = 300) -> str:
    """A short, single-line excerpt of a response body for an error message."""
    try:
        text = response.text
    except (UnicodeDecodeError, httpx.ResponseNotRead):
        return ""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def default_decoder(erp: str, *, tenant: str | None = None) -> ErrorDecoder:
    """An :data:`ErrorDecoder` from the status table alone, for ERPs without a richer dialect."""

    def decode(response: httpx.Response, retry_after: float | None) -> ERPError:
        return error_for_action(
            action_for_status(response.status_code),
            erp=erp,
            request=response.request,
            status_code=response.status_code,
            detail=body_excerpt(response) or None,
            retry_after=retry_after,
            tenant=tenant,
        )

    return decode


def parse_json_exact(body: bytes) -> Any:
    """JSON with every number that has a fraction or exponent as a ``Decimal`` read from its text.

    ERPs send money as JSON numbers with their scale (Acumatica ``10000.0000``, SAP v4 amounts): a
    float step loses the scale and, past 15 digits, the value. msgspec decodes (orjson has no
    Decimal hook; the stdlib with ``parse_float`` takes about 1.5x as long); the stdlib, with the
    same hook, decides whatever msgspec refuses (NaN, UTF-16 bodies...), so every body parses the
    same way. A decoder per thread: the read-ahead thread parses while the writer works.
    """
    decoder = getattr(_decoders, "exact", None)
    if decoder is None:
        decoder = _decoders.exact = msgspec.json.Decoder(float_hook=Decimal)
    try:
        return decoder.decode(body)
    except msgspec.DecodeError:
        return jsonlib.loads(body, parse_float=Decimal)


_decoders = threading.local()


def safe_url(url: httpx.URL | str) -> str:
    """``scheme://host[:port]/path`` without user info or query: safe for messages and logs."""
    parsed = httpx.URL(str(url))
    if not parsed.host:
        return parsed.path
    port = f":{parsed.port}" if parsed.port else ""
    return f"{parsed.scheme}://{parsed.host}{port}{parsed.path}"


# --------------------------------------------------------------------------------------------
# Retry-After and backoff
# --------------------------------------------------------------------------------------------


def parse_retry_after(value: str | None, *, now: datetime, cap: float) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (delta-seconds or HTTP date), in ``[0, cap]``."""
    if value is None or not value.strip():
        return None
    text = value.strip()
    seconds: float
    try:
        seconds = float(text)
    except ValueError:
        try:
            when = parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:  # an HTTP date is always GMT
            when = when.replace(tzinfo=now.tzinfo)
        seconds = (when - now).total_seconds()
    if seconds != seconds:  # NaN
        return None
    return max(0.0, min(seconds, cap))


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Capped exponential backoff with jitter; a server's ``Retry-After`` wins when present.

    ``jitter`` is the random share of each delay (0 = deterministic, 1 = "full jitter").
    Rate-limit answers without ``Retry-After`` back off from ``rate_limited_base_s``, longer
    than plain server errors, because the server's queue needs time to drain.
    """

    max_retries: int = 6
    base_delay_s: float = 1.0
    rate_limited_base_s: float = 5.0
    max_delay_s: float = 120.0
    jitter: float = 0.5
    rng: random.Random = field(default_factory=random.Random, compare=False)

    def __post_init__(self) -> None:
        if not 0.0 <= self.jitter <= 1.0:
            raise ValueError("jitter must be within [0, 1]")

    def backoff(self, attempt: int, *, base: float | None = None) -> float:
        """Delay before retry number ``attempt`` (1-based)."""
        delay = min(self.max_delay_s, (self.base_delay_s if base is None else base) * 2.0 ** (attempt - 1))
        return delay * (1.0 - self.jitter) + delay * self.jitter * self.rng.random()

    def wait_for(self, error: BaseException | None, attempt: int) -> float:
        """How long to wait after ``error`` before retry number ``attempt``."""
        if isinstance(error, ERPRateLimited):
            if error.retry_after is not None:
                return min(max(error.retry_after, 0.0), self.max_delay_s)
            return self.backoff(attempt, base=self.rate_limited_base_s)
        return self.backoff(attempt)


# --------------------------------------------------------------------------------------------
# Client-side traffic limits
# --------------------------------------------------------------------------------------------


class RateLimiter:
    """A token bucket: at most ``burst`` requests at once, refilled at ``requests_per_minute``.

    Keeps the client under the licence's per-minute budget so the server never has to queue
    us. Thread-safe; waits through ``clock.sleep``.
    """

    def __init__(self, requests_per_minute: int, clock: Clock, burst: int | None = None) -> None:
        if requests_per_minute < 1:
            raise ValueError("requests_per_minute must be at least 1")
        self.rate_per_s = requests_per_minute / 60.0
        self.capacity = float(burst if burst is not None else max(1, requests_per_minute // 10))
        self._clock = clock
        self._tokens = self.capacity
        self._stamp = clock.now()
        self._lock = threading.Lock()

    def acquire(self) -> float:
        """Take one token, waiting if the bucket is empty. Returns the seconds waited."""
        with self._lock:
            now = self._clock.now()
            elapsed = max(0.0, (now - self._stamp).total_seconds())
            self._stamp = now
            self._tokens = min(self.capacity, self._tokens + elapsed * self.rate_per_s)
            self._tokens -= 1.0
            wait = 0.0 if self._tokens >= 0 else -self._tokens / self.rate_per_s
        if wait > 0:
            self._clock.sleep(wait)
        return wait


@dataclass(frozen=True, slots=True)
class TrafficLimits:
    """The rate limiter and concurrency semaphore of one ERP licence."""

    limiter: RateLimiter
    concurrency: threading.BoundedSemaphore

    @classmethod
    def create(cls, requests_per_minute: int, max_concurrency: int, clock: Clock) -> TrafficLimits:
        return cls(RateLimiter(requests_per_minute, clock), threading.BoundedSemaphore(max_concurrency))

    @classmethod
    def shared(cls, key: str, requests_per_minute: int, max_concurrency: int, clock: Clock) -> TrafficLimits:
        """One instance per (key, limits, clock) in this process, so parallel adapters share a budget."""
        registry_key = (key, requests_per_minute, max_concurrency, id(clock))
        with _REGISTRY_LOCK:
            limits = _REGISTRY.get(registry_key)
            if limits is None or limits.limiter._clock is not clock:
                limits = cls.create(requests_per_minute, max_concurrency, clock)
                _REGISTRY[registry_key] = limits
            return limits


_REGISTRY: dict[tuple[str, int, int, int], TrafficLimits] = {}
_REGISTRY_LOCK = threading.Lock()


@dataclass(frozen=True, slots=True)
class TrafficPolicy:
    """Rate, concurrency, timeouts and retry budget for one ERP connection."""

    requests_per_minute: int = 600
    max_concurrency: int = 2
    connect_timeout_s: float = 10.0
    read_timeout_s: float = 300.0
    retry: RetryPolicy = field(default_factory=RetryPolicy)

    @classmethod
    def from_tenant(cls, tenant: TenantSettings, *, rng: random.Random | None = None) -> TrafficPolicy:
        return cls(
            requests_per_minute=tenant.requests_per_minute,
            max_concurrency=tenant.max_concurrency,
            connect_timeout_s=tenant.connect_timeout_s,
            read_timeout_s=tenant.read_timeout_s,
            retry=RetryPolicy(
                max_retries=tenant.max_retries,
                max_delay_s=tenant.max_retry_wait_s,
                rng=rng or random.Random(),
            ),
        )

    @property
    def timeout(self) -> httpx.Timeout:
        """Reads wait long: the ERP queues requests beyond its rate instead of refusing them."""
        return httpx.Timeout(
            connect=self.connect_timeout_s,
            read=self.read_timeout_s,
            write=self.connect_timeout_s,
            pool=self.read_timeout_s,
        )


# --------------------------------------------------------------------------------------------
# The client
# --------------------------------------------------------------------------------------------


class HttpClient:
    """An ``httpx.Client`` with the ERP rules applied to every request.

    Counts requests and retries (for the runs table). Logs method, path, status and timing only:
    never headers, cookies, bodies or query strings.
    """

    def __init__(
        self,
        base_url: str,
        *,
        erp: str,
        decode_error: ErrorDecoder,
        traffic: TrafficPolicy | None = None,
        clock: Clock | None = None,
        transport: httpx.BaseTransport | None = None,
        auth: LoginFlow | None = None,
        headers: Mapping[str, str] | None = None,
        limits: TrafficLimits | None = None,
    ) -> None:
        self.erp = erp
        self.traffic = traffic or TrafficPolicy()
        self._clock: Clock = clock or SYSTEM_CLOCK
        self._decode_error = decode_error
        self.auth = auth
        self._limits = limits or TrafficLimits.create(
            self.traffic.requests_per_minute, self.traffic.max_concurrency, self._clock
        )
        self._client = httpx.Client(
            base_url=base_url,
            transport=transport,
            timeout=self.traffic.timeout,
            follow_redirects=False,
            headers={"Accept": "application/json", **(headers or {})},
        )
        self._counter_lock = threading.Lock()
        self._requests = 0
        self._retries = 0
        self._throttled = 0.0

    # Counters --------------------------------------------------------------------------------
    @property
    def request_count(self) -> int:
        return self._requests

    @property
    def retry_count(self) -> int:
        return self._retries

    @property
    def throttle_wait_s(self) -> float:
        """Seconds spent waiting for the client-side rate limiter."""
        return self._throttled

    @property
    def cookies(self) -> httpx.Cookies:
        return self._client.cookies

    @property
    def headers(self) -> httpx.Headers:
        return self._client.headers

    @property
    def clock(self) -> Clock:
        return self._clock

    def close(self) -> None:
        self._client.close()

    # Requests --------------------------------------------------------------------------------
    def request(
        self,
        method: str,
        url: str,
        *,
        params: Mapping[str, str] | None = None,
        json: Any = None,
        data: Mapping[str, str] | None = None,
        headers: Mapping[str, str] | None = None,
        reauth: bool = True,
        retry: bool = True,
    ) -> httpx.Response:
        """Send with retries; raise the decoded :class:`ERPError` for a non-2xx answer."""
        return self._call(
            lambda: self._send(method, url, params=params, json=json, data=data, headers=headers),
            reauth=reauth,
            retry=retry,
        )

    def request_json(
        self,
        method: str,
        url: str,
        *,
        params: Mapping[str, str] | None = None,
        json: Any = None,
        data: Mapping[str, str] | None = None,
        headers: Mapping[str, str] | None = None,
        reauth: bool = True,
        retry: bool = True,
    ) -> Any:
        """Like :meth:`request`, returning the parsed JSON body; a malformed body is retried."""

        def send_and_parse() -> Any:
            response = self._send(method, url, params=params, json=json, data=data, headers=headers)
            try:
                return parse_json_exact(response.content)
            except ValueError:
                raise MalformedResponse(
                    f"{self.erp} {method} {safe_url(response.request.url)} returned HTTP "
                    f"{response.status_code} with a body that is not valid JSON "
                    f"({len(response.content)} bytes); expected a JSON document",
                    status_code=response.status_code,
                ) from None

        return self._call(send_and_parse, reauth=reauth, retry=retry)

    def _call(self, attempt: Callable[[], T], *, reauth: bool, retry: bool) -> T:
        """Send inside the login flow: it may renew a credential first, and once after a 401."""
        flow = self.auth.auth_flow(self) if reauth and self.auth is not None else iter((None,))
        next(flow)
        while True:
            try:
                return self._with_retries(attempt) if retry else attempt()
            except SessionExpired as exc:
                if next(flow, _FLOW_DONE) is _FLOW_DONE:  # final: say what was done, not what will be
                    renewed = reauth and self.auth is not None and self.auth.refreshes
                    done = "logged in again once and was refused again" if renewed else "not logged in again"
                    hint = _HINTS[Action.REAUTHENTICATE]
                    exc.args = (exc.args[0].replace(hint, f"the session was refused; {done}"), *exc.args[1:])
                    raise

    def _with_retries(self, attempt: Callable[[], T]) -> T:
        retrying = Retrying(
            stop=stop_after_attempt(self.traffic.retry.max_retries + 1),
            wait=self._wait,
            retry=retry_if_exception(lambda exc: isinstance(exc, ERPError) and exc.retriable),
            sleep=self._clock.sleep,
            before_sleep=self._before_sleep,
            reraise=True,
        )
        try:
            return retrying(attempt)
        except ERPError as exc:
            if exc.retriable:  # the final failure says so, never that it will be retried
                attempts = retrying.statistics.get("attempt_number", 1)
                exc.args = (f"{exc.args[0]}; gave up after {attempts} attempt(s)", *exc.args[1:])
            raise

    def _wait(self, state: RetryCallState) -> float:
        error = state.outcome.exception() if state.outcome is not None else None
        return self.traffic.retry.wait_for(error, state.attempt_number)

    def _before_sleep(self, state: RetryCallState) -> None:
        with self._counter_lock:
            self._retries += 1
        error = state.outcome.exception() if state.outcome is not None else None
        wait = state.next_action.sleep if state.next_action is not None else 0.0
        log.warning(
            "%s: %s; retry %d/%d in %.1fs",
            self.erp,
            type(error).__name__ if error is not None else "error",
            state.attempt_number,
            self.traffic.retry.max_retries,
            wait,
        )

    def _send(
        self,
        method: str,
        url: str,
        *,
        params: Mapping[str, str] | None,
        json: Any,
        data: Mapping[str, str] | None,
        headers: Mapping[str, str] | None,
    ) -> httpx.Response:
        waited = self._limits.limiter.acquire()
        with self._limits.concurrency:
            with self._counter_lock:
                self._requests += 1
                self._throttled += waited
            request = self._client.build_request(
                method, url, params=params, json=json, data=data, headers=headers
            )
            started = time.perf_counter()
            try:
                response = self._client.send(request)
            except httpx.TimeoutException as exc:
                raise ERPTransportError(
                    f"{self.erp} {method} {safe_url(request.url)} timed out ({type(exc).__name__})"
                ) from exc
            except httpx.TransportError as exc:
                raise ERPTransportError(
                    f"{self.erp} {method} {safe_url(request.url)} failed: {type(exc).__name__}"
                ) from exc
        elapsed_ms = (time.perf_counter() - started) * 1000
        log.debug(
            "%s %s %s -> %d (%.0f ms)",
            self.erp,
            method,
            safe_url(request.url),
            response.status_code,
            elapsed_ms,
        )
        if response.is_success:
            return response
        retry_after = parse_retry_after(
            response.headers.get("Retry-After"), now=self._clock.now(), cap=self.traffic.retry.max_delay_s
        )
        raise self._decode_error(response, retry_after)
