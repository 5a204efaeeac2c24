"""Decay: importance × factor per elapsed UTC day, threshold removal, once per day (SQLite + PostgreSQL)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as settings_h
from hypothesis import strategies as st
from sqlalchemy.engine import Engine

from connector.clock import FrozenClock
from connector.memory import Memory
from connector.settings import Settings


@pytest.fixture
def clock() -> FrozenClock:
    return FrozenClock(datetime(2026, 1, 15, 12, 0, tzinfo=UTC))


@pytest.fixture
def memory(settings: Settings, engine: Engine, clock: FrozenClock) -> Memory:
    return Memory(settings, clock=clock, llm=None, engine=engine)


def importance(memory: Memory, content: str) -> float:
    [match] = [f for f in memory.facts.top("C1", limit=100) if f.content == content]
    return match.importance


def test_importance_decays_by_the_factor_per_elapsed_day(memory: Memory, clock: FrozenClock) -> None:
    memory.learn("C1", "Prefers e-mail", importance=0.8)
    clock.advance(timedelta(days=1))
    report = memory.facts.decay()
    assert (report.facts_decayed, report.facts_removed, report.factor) == (1, 0, 0.95)
    assert importance(memory, "Prefers e-mail") == pytest.approx(0.8 * 0.95)
    clock.advance(timedelta(days=3))
    memory.facts.decay()
    assert importance(memory, "Prefers e-mail") == pytest.approx(0.8 * 0.95**4)


def test_running_twice_on_one_day_decays_once(memory: Memory, clock: FrozenClock) -> None:
    memory.learn("C1", "Prefers e-mail", importance=0.8)
    clock.advance(timedelta(days=2))
    memory.facts.decay()
    clock.advance(timedelta(hours=11))  # 23:00 the same day
    assert memory.facts.decay().facts_decayed == 0
    assert importance(memory, "Prefers e-mail") == pytest.approx(0.8 * 0.95**2)


def test_the_result_depends_on_elapsed_days_not_on_runs(memory: Memory, clock: FrozenClock) -> None:
    memory.learn("C1", "Fact", importance=0.9)
    for _ in range(10 * 4):  # every six hours for ten days
        clock.advance(timedelta(hours=6))
        memory.facts.decay()
    assert importance(memory, "Fact") == pytest.approx(0.9 * 0.95**10)


def test_one_late_run_catches_up_on_the_missed_days(memory: Memory, clock: FrozenClock) -> None:
    memory.learn("C1", "Fact", importance=0.9)
    clock.advance(timedelta(days=10))
    assert memory.facts.decay().facts_decayed == 1
    assert importance(memory, "Fact") == pytest.approx(0.9 * 0.95**10)


def test_each_fact_decays_by_its_own_elapsed_days(memory: Memory, clock: FrozenClock) -> None:
    memory.learn("C1", "Older", importance=0.9)
    clock.advance(timedelta(days=2))
    memory.learn("C1", "Newer", importance=0.9)
    clock.advance(timedelta(days=1))
    assert memory.facts.decay().facts_decayed == 2
    assert importance(memory, "Older") == pytest.approx(0.9 * 0.95**3)
    assert importance(memory, "Newer") == pytest.approx(0.9 * 0.95)


def test_days_are_utc_calendar_days(memory: Memory, clock: FrozenClock) -> None:
    clock.advance(timedelta(hours=11, minutes=30))  # 23:30 UTC
    memory.learn("C1", "Late", importance=0.9)
    clock.advance(timedelta(hours=1))  # 00:30 UTC the next day
    memory.facts.decay()
    assert importance(memory, "Late") == pytest.approx(0.9 * 0.95)


def test_facts_below_the_threshold_are_removed(memory: Memory, clock: FrozenClock) -> None:
    memory.learn("C1", "Weak", importance=0.06)
    memory.learn("C1", "Strong", importance=0.9)
    clock.advance(timedelta(days=4))  # 0.06 × 0.95^4 ≈ 0.0489 < 0.05
    report = memory.facts.decay()
    assert (report.facts_decayed, report.facts_removed, report.threshold) == (2, 1, 0.05)
    assert [f.content for f in memory.facts.top("C1")] == ["Strong"]


def test_confirmation_restores_importance_and_restarts_decay(memory: Memory, clock: FrozenClock) -> None:
    memory.learn("C1", "Prefers e-mail", importance=0.8)
    clock.advance(timedelta(days=5))
    memory.facts.decay()
    assert importance(memory, "Prefers e-mail") == pytest.approx(0.8 * 0.95**5)
    clock.advance(timedelta(days=1, hours=6))
    confirmed = memory.learn("C1", "prefers e-mail", importance=0.3)
    assert confirmed.importance == pytest.approx(0.9)  # its peak (0.8) plus the confirmation boost
    memory.facts.decay()  # the day of the confirmation: nothing to decay
    assert importance(memory, "Prefers e-mail") == pytest.approx(0.9)
    clock.advance(timedelta(days=1))
    memory.facts.decay()
    assert importance(memory, "Prefers e-mail") == pytest.approx(0.9 * 0.95)


def test_decay_uses_the_configured_factor_and_threshold(
    tmp_path: Path, engine: Engine, clock: FrozenClock
) -> None:
    settings = Settings(data_dir=tmp_path / "d", facts={"decay_factor": 0.5, "decay_threshold": 0.2})  # type: ignore[arg-type]
    memory = Memory(settings, clock=clock, llm=None, engine=engine)
    memory.learn("C1", "Halves", importance=1.0)
    memory.learn("C1", "Goes", importance=0.3)
    clock.advance(timedelta(days=1))
    report = memory.facts.decay()
    assert (report.facts_decayed, report.facts_removed) == (2, 1)
    assert [(f.content, f.importance) for f in memory.facts.top("C1")] == [("Halves", 0.5)]


@settings_h(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(st.integers(min_value=1, max_value=36 * 60), min_size=1, max_size=8))
def test_any_schedule_of_runs_gives_factor_to_the_elapsed_days(
    sqlite_engine: Engine, steps: list[int]
) -> None:
    clock = FrozenClock(datetime(2026, 1, 15, 12, 0, tzinfo=UTC))
    memory = Memory(Settings(), clock=clock, llm=None, engine=sqlite_engine)
    customer = f"C{uuid.uuid4().hex[:8]}"
    start = clock.now()
    memory.learn(customer, "Fact", importance=0.9)
    for minutes in steps:  # runs at arbitrary times, several a day or days apart
        clock.advance(timedelta(minutes=minutes))
        memory.facts.decay()
    [fact] = memory.facts.top(customer)
    assert fact.importance == pytest.approx(0.9 * 0.95 ** (clock.now().date() - start.date()).days)
