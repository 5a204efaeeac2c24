"""The shared HTTP plumbing: error table, retries, Retry-After, 401 re-login, limits, safe logging."""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import httpx
import pytest
import respx

from connector.adapters.auth import LoginFlow
from connector.adapters.http import (
    Action,
    HttpClient,
    MalformedResponse,
    RateLimiter,
    RetryPolicy,
    SessionExpired,
    TrafficLimits,
    TrafficPolicy,
    action_for_status,
    default_decoder,
    parse_retry_after,
    safe_url,
)
from connector.clock import FrozenClock
from connector.errors import (
    ERPAuthError,
    ERPNotFound,
    ERPRateLimited,
    ERPRequestError,
    ERPServerError,
    ERPTransportError,
)

BASE = "https://erp.test"
NOW = datetime(2026, 1, 15, 12, 0, tzinfo=UTC)


class _CallbackLogin(LoginFlow):
    """A login flow whose refresh only calls back, to count the logins a 401 causes."""

    def __init__(self, on_refresh: Callable[[], None]) -> None:
        self.on_refresh = on_refresh

    def login(self, http: HttpClient) -> None:
        return None

    def refresh(self, http: HttpClient) -> None:
        self.on_refresh()


def make_client(
    clock: FrozenClock,
    *,
    max_retries: int = 3,
    jitter: float = 0.0,
    reauthenticate: Callable[[], None] | None = None,
    rpm: int = 60_000,
) -> HttpClient:
    policy = TrafficPolicy(
        requests_per_minute=rpm,
        retry=RetryPolicy(max_retries=max_retries, base_delay_s=1.0, max_delay_s=60.0, jitter=jitter),
    )
    return HttpClient(
        BASE,
        erp="TestERP",
        decode_error=default_decoder("TestERP"),
        traffic=policy,
        clock=clock,
        auth=_CallbackLogin(reauthenticate) if reauthenticate is not None else None,
    )


# Error table ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "action"),
    [
        (400, Action.FAIL),
        (401, Action.REAUTHENTICATE),
        (403, Action.AUTH_FAILED),
        (404, Action.NOT_FOUND),
        (418, Action.FAIL),
        (422, Action.FAIL),
        (429, Action.RATE_LIMITED),
        (500, Action.RETRY),
        (503, Action.RETRY),
        (599, Action.RETRY),
    ],
)
def test_status_table_decides_the_action(status: int, action: Action) -> None:
    assert action_for_status(status) is action


# Retry-After ----------------------------------------------------------------------------------


def test_retry_after_seconds_are_honoured_and_capped() -> None:
    assert parse_retry_after("7", now=NOW, cap=60) == 7.0
    assert parse_retry_after("7.5", now=NOW, cap=60) == 7.5
    assert parse_retry_after("3600", now=NOW, cap=60) == 60.0
    assert parse_retry_after("-4", now=NOW, cap=60) == 0.0


def test_retry_after_http_date_is_relative_to_the_clock() -> None:
    assert parse_retry_after("Thu, 15 Jan 2026 12:00:30 GMT", now=NOW, cap=60) == 30.0
    assert parse_retry_after("Thu, 15 Jan 2026 11:00:00 GMT", now=NOW, cap=60) == 0.0


@pytest.mark.parametrize("value", [None, "", "  ", "soon", "nan"])
def test_retry_after_absent_or_garbage_is_none(value: str | None) -> None:
    assert parse_retry_after(value, now=NOW, cap=60) is None


# Backoff --------------------------------------------------------------------------------------


def test_backoff_is_exponential_and_capped_without_jitter() -> None:
    policy = RetryPolicy(base_delay_s=1.0, max_delay_s=10.0, jitter=0.0)
    assert [policy.backoff(n) for n in range(1, 6)] == [1.0, 2.0, 4.0, 8.0, 10.0]


def test_backoff_jitter_stays_within_its_share() -> None:
    policy = RetryPolicy(base_delay_s=2.0, max_delay_s=100.0, jitter=0.5, rng=random.Random(1))
    waits = [policy.backoff(3) for _ in range(200)]
    assert all(4.0 <= w <= 8.0 for w in waits)
    assert len(set(waits)) > 100


def test_rate_limited_without_retry_after_backs_off_longer() -> None:
    policy = RetryPolicy(base_delay_s=1.0, rate_limited_base_s=5.0, max_delay_s=100.0, jitter=0.0)
    limited = ERPRateLimited("slow down", retry_after=None)
    assert [policy.wait_for(limited, n) for n in (1, 2, 3)] == [5.0, 10.0, 20.0]
    assert policy.wait_for(ERPRateLimited("x", retry_after=3.0), 4) == 3.0


# Client behaviour -----------------------------------------------------------------------------


@respx.mock
def test_429_storm_is_retried_with_the_servers_waits() -> None:
    clock = FrozenClock(NOW)
    route = respx.get(f"{BASE}/items").mock(
        side_effect=[
            httpx.Response(429, headers={"Retry-After": "2"}),
            httpx.Response(429, headers={"Retry-After": "Thu, 15 Jan 2026 12:00:07 GMT"}),
            httpx.Response(429),
            httpx.Response(200, json=[1, 2]),
        ]
    )
    client = make_client(clock, max_retries=5)
    assert client.request_json("GET", "/items") == [1, 2]
    assert route.call_count == 4
    # 2 s, then the HTTP date 12:00:07 seen at 12:00:02 = 5 s, then the rate-limit backoff 5*2^2.
    assert clock.sleeps == [2.0, 5.0, 20.0]
    assert client.request_count == 4
    assert client.retry_count == 3


@respx.mock
def test_5xx_and_transport_errors_are_retried_then_succeed() -> None:
    clock = FrozenClock(NOW)
    respx.get(f"{BASE}/items").mock(
        side_effect=[
            httpx.ConnectError("refused"),
            httpx.ReadTimeout("slow"),
            httpx.Response(503),
            httpx.Response(200, json={}),
        ]
    )
    client = make_client(clock, max_retries=3)
    assert client.request_json("GET", "/items") == {}
    assert clock.sleeps == [1.0, 2.0, 4.0]


@respx.mock
def test_retries_give_up_with_the_last_error() -> None:
    clock = FrozenClock(NOW)
    route = respx.get(f"{BASE}/items").mock(return_value=httpx.Response(502, text="bad gateway"))
    client = make_client(clock, max_retries=2)
    with pytest.raises(ERPServerError, match="HTTP 502") as info:
        client.request("GET", "/items")
    assert info.value.status_code == 502
    assert route.call_count == 3
    assert client.retry_count == 2
    # the final failure says it gave up, never that the request "is retried"
    assert "gave up after 3 attempt(s)" in str(info.value) and "is retried" not in str(info.value)


@respx.mock
def test_timeouts_that_persist_become_a_transport_error() -> None:
    clock = FrozenClock(NOW)
    respx.get(f"{BASE}/items").mock(side_effect=httpx.ReadTimeout("slow"))
    with pytest.raises(ERPTransportError, match="timed out") as info:
        make_client(clock, max_retries=1).request("GET", "/items")
    assert str(info.value).endswith("gave up after 2 attempt(s)") and "is retried" not in str(info.value)


@pytest.mark.parametrize(
    ("status", "error"),
    [(400, ERPRequestError), (403, ERPAuthError), (404, ERPNotFound), (422, ERPRequestError)],
)
@respx.mock
def test_fatal_statuses_fail_fast_without_retry(status: int, error: type[Exception]) -> None:
    clock = FrozenClock(NOW)
    route = respx.get(f"{BASE}/items").mock(return_value=httpx.Response(status))
    with pytest.raises(error):
        make_client(clock).request("GET", "/items")
    assert route.call_count == 1
    assert clock.sleeps == []


@respx.mock
def test_401_logs_in_again_and_retries_once() -> None:
    clock = FrozenClock(NOW)
    logins: list[int] = []
    route = respx.get(f"{BASE}/items").mock(side_effect=[httpx.Response(401), httpx.Response(200, json=[])])
    client = make_client(clock, reauthenticate=lambda: logins.append(1))
    assert client.request_json("GET", "/items") == []
    assert logins == [1]
    assert route.call_count == 2


@respx.mock
def test_a_second_401_after_relogin_is_raised() -> None:
    clock = FrozenClock(NOW)
    logins: list[int] = []
    respx.get(f"{BASE}/items").mock(return_value=httpx.Response(401))
    client = make_client(clock, reauthenticate=lambda: logins.append(1))
    with pytest.raises(SessionExpired) as info:
        client.request("GET", "/items")
    assert logins == [1]
    # the final failure says what was done, never that it is "logging in again"
    assert "HTTP 401 (the session was refused; logged in again once and was refused again)" in str(info.value)
    assert "logging in again" not in str(info.value)


@respx.mock
def test_a_login_flow_that_cannot_refresh_lets_the_first_401_stand() -> None:
    clock = FrozenClock(NOW)
    logins: list[int] = []
    route = respx.get(f"{BASE}/items").mock(return_value=httpx.Response(401))
    client = make_client(clock, reauthenticate=lambda: logins.append(1))
    assert isinstance(client.auth, _CallbackLogin)
    client.auth.refreshes = False  # static credentials: a 401 means they are wrong
    with pytest.raises(SessionExpired) as info:
        client.request("GET", "/items")
    assert logins == [] and route.call_count == 1
    assert "(the session was refused; not logged in again)" in str(info.value)


@respx.mock
def test_malformed_json_is_retried_then_reported() -> None:
    clock = FrozenClock(NOW)
    respx.get(f"{BASE}/ok").mock(
        side_effect=[httpx.Response(200, text='[{"a": '), httpx.Response(200, json=[1])]
    )
    respx.get(f"{BASE}/bad").mock(return_value=httpx.Response(200, text="<html>"))
    client = make_client(clock, max_retries=2)
    assert client.request_json("GET", "/ok") == [1]
    with pytest.raises(MalformedResponse, match="not valid JSON"):
        client.request_json("GET", "/bad")


@respx.mock
def test_logs_and_errors_carry_no_query_or_credentials(caplog: pytest.LogCaptureFixture) -> None:
    clock = FrozenClock(NOW)
    respx.get(f"{BASE}/items").mock(side_effect=[httpx.Response(503), httpx.Response(400)])
    client = HttpClient(
        BASE,
        erp="TestERP",
        decode_error=default_decoder("TestERP"),
        traffic=TrafficPolicy(retry=RetryPolicy(max_retries=2, jitter=0.0)),
        clock=clock,
        headers={"Authorization": "Bearer sekret-token"},
    )
    client.cookies.set("session", "sekret-cookie")
    with (
        caplog.at_level(logging.DEBUG, logger="connector.adapters.http"),
        pytest.raises(ERPRequestError) as info,
    ):
        client.request("GET", "/items", params={"password": "sekret-pw"})
    text = caplog.text + str(info.value)
    assert "sekret" not in text
    assert "/items" in str(info.value)


def test_safe_url_drops_user_info_and_query() -> None:
    assert safe_url("https://user:pw@erp.test:8443/a/b?token=x") == "https://erp.test:8443/a/b"


def test_rate_limiter_spaces_requests_after_the_burst() -> None:
    clock = FrozenClock(NOW)
    limiter = RateLimiter(60, clock, burst=2)  # one per second after two free ones
    waits = [limiter.acquire() for _ in range(4)]
    assert waits == [0.0, 0.0, pytest.approx(1.0), pytest.approx(1.0)]
    clock.advance(timedelta(seconds=10))
    assert limiter.acquire() == 0.0


def test_rate_limit_waits_go_through_the_clock() -> None:
    clock = FrozenClock(NOW)
    with respx.mock:
        respx.get(f"{BASE}/items").mock(return_value=httpx.Response(200, json=[]))
        client = make_client(clock, rpm=60)  # burst of 6, then one per second
        for _ in range(8):
            client.request("GET", "/items")
    assert clock.sleeps == [pytest.approx(1.0), pytest.approx(1.0)]
    assert client.throttle_wait_s == pytest.approx(2.0)


def test_shared_limits_are_one_per_licence_and_clock() -> None:
    clock = FrozenClock(NOW)
    a = TrafficLimits.shared("tenant-a", 600, 2, clock)
    assert TrafficLimits.shared("tenant-a", 600, 2, clock) is a
    assert TrafficLimits.shared("tenant-b", 600, 2, clock) is not a
    assert TrafficLimits.shared("tenant-a", 600, 2, FrozenClock(NOW)) is not a


def test_concurrency_is_capped_by_the_semaphore() -> None:
    clock = FrozenClock(NOW)
    lock = threading.Lock()
    state = {"in_flight": 0, "peak": 0}
    release = threading.Event()

    def handler(request: httpx.Request) -> httpx.Response:
        with lock:
            state["in_flight"] += 1
            state["peak"] = max(state["peak"], state["in_flight"])
        release.wait(10)  # hold the slot until the test has seen the cap
        with lock:
            state["in_flight"] -= 1
        return httpx.Response(200, json=[])

    client = HttpClient(
        BASE,
        erp="TestERP",
        decode_error=default_decoder("TestERP"),
        traffic=TrafficPolicy(requests_per_minute=60_000, max_concurrency=2),
        clock=clock,
        transport=httpx.MockTransport(handler),
    )
    threads = [threading.Thread(target=client.request, args=("GET", "/items")) for _ in range(6)]
    for thread in threads:
        thread.start()
    for _ in range(500):
        if state["in_flight"] == 2:
            break
        threading.Event().wait(0.01)
    threading.Event().wait(0.1)  # time for a third request to slip through, if the cap failed
    assert state["in_flight"] == 2
    release.set()
    for thread in threads:
        thread.join()
    assert state["peak"] == 2
    assert client.request_count == 6
