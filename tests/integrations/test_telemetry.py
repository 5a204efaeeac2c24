"""OpenTelemetry spans and metrics for sync runs and pages, context builds, recalls and LLM calls,
read back from in-memory exporters; attributes carry ids and counts, never customer text."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import respx
from context_fixtures import seed_erp
from llm_stub import USAGE, completion
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from paths import ROOT
from pydantic import SecretStr
from sync_rigs import Rig, rig_factory

from connector import telemetry
from connector.memory import Memory
from connector.settings import ConversationSettings, LLMSettings, Settings

__all__ = ["rig_factory"]

CASE_TEXT = "pallet of bar stools arrived crushed at the Tacoma dock"
TURN_TEXT = "my nephew Jeremy ordered the wrong colour"
QUERY_TEXT = "what happened with the crushed stools"
LLM_SUMMARY = "Crushed stools replaced free of charge"


@dataclass
class Recorded:
    spans: InMemorySpanExporter
    metrics: InMemoryMetricReader

    def finished(self, name: str) -> list[ReadableSpan]:
        return [s for s in self.spans.get_finished_spans() if s.name == name]

    def writes(self, operation: str, store: str) -> list[ReadableSpan]:
        spans = self.finished(operation)
        return [s for s in spans if (s.attributes or {}).get("gen_ai.memory.store.id") == store]

    def units(self) -> dict[str, str]:
        data = self.metrics.get_metrics_data()
        return {
            item.name: item.unit or ""
            for resource in (data.resource_metrics if data else ())
            for scope in resource.scope_metrics
            for item in scope.metrics
        }

    def points(self, metric: str) -> list[Any]:
        data = self.metrics.get_metrics_data()
        found = []
        for resource in data.resource_metrics if data else ():
            for scope in resource.scope_metrics:
                for item in scope.metrics:
                    if item.name == metric:
                        found.extend(item.data.data_points)
        return found


@pytest.fixture
def recorded() -> Iterator[Recorded]:
    spans = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    reader = InMemoryMetricReader()
    previous = telemetry.use(
        telemetry.Telemetry(
            tracer_provider=tracer_provider, meter_provider=MeterProvider(metric_readers=[reader])
        )
    )
    yield Recorded(spans, reader)
    telemetry.use(previous)


def test_a_sync_run_is_a_span_per_stream_with_page_children_and_record_metrics(
    rig_factory: Callable[..., Rig], recorded: Recorded
) -> None:
    rig = rig_factory(customers=60, streams=["Customer"], page_size=25)
    report = rig.run()
    (run,) = recorded.finished("connector.sync.run")
    attributes = dict(run.attributes or {})
    assert attributes["connector.tenant"] == "acme" and attributes["connector.stream"] == "Customer"
    assert attributes["connector.sync.records_read"] == 60
    assert attributes["connector.sync.records_written"] == report.results[0].inserted == 60
    assert attributes["connector.sync.retries"] == 0 and attributes["connector.sync.status"] == "ok"
    pages = recorded.finished("connector.sync.page")
    assert [p.attributes["connector.sync.page"] for p in pages] == [1, 2, 3]  # type: ignore[index]
    assert sum(p.attributes["connector.sync.records_read"] for p in pages) == 60  # type: ignore[index,misc]
    assert {p.parent.span_id for p in pages if p.parent} == {run.context.span_id}  # type: ignore[union-attr]
    inserted = [
        p
        for p in recorded.points("connector.sync.records")
        if p.attributes["connector.sync.outcome"] == "inserted"
    ]
    assert sum(p.value for p in inserted) == 60
    (lag,) = recorded.points("connector.sync.lag")
    assert lag.attributes == {"connector.tenant": "acme", "connector.stream": "Customer"} and lag.value >= 0


@respx.mock
def test_context_recall_and_llm_spans_carry_ids_and_counts_never_text(
    settings: Settings, recorded: Recorded
) -> None:
    respx.post("http://llm.test/v1/chat/completions").mock(return_value=completion(LLM_SUMMARY, usage=USAGE))
    llm_settings = LLMSettings(base_url="http://llm.test/v1", api_key=SecretStr("sk-otel-secret"), model="m")
    conversations = ConversationSettings(enabled=True)  # past-conversation recall: the turn recall span
    memory = Memory(settings.model_copy(update={"llm": llm_settings, "conversations": conversations}))
    seed_erp(memory, synced_at=datetime.now(UTC))
    occurred = datetime.now(UTC) - timedelta(days=3)
    memory.record_case("ABARTENDE", f"Customer says the {CASE_TEXT}.", "Replaced.", occurred_at=occurred)
    assert memory.background.wait(60)  # the case is reworded (the one LLM call) off the caller's path
    memory.record_turn("s-9", "ABARTENDE", "user", TURN_TEXT)
    result = memory.build_context("ABARTENDE", QUERY_TEXT, session_id="s-9")
    assert TURN_TEXT in result.text  # the texts exist: the check below is not vacuous
    hits = memory.recall_cases("ABARTENDE", QUERY_TEXT, k=2)

    (built,) = recorded.finished("connector.build_context")
    context = dict(built.attributes or {})
    assert context["connector.customer_id"] == "ABARTENDE" and context["connector.session_id"] == "s-9"
    assert context["connector.context.tokens"] == result.token_count
    assert context["connector.context.warnings"] == len(result.warnings)
    assert context["connector.context.section.recent_turns.tokens"] == result.section("recent_turns").tokens
    assert context["connector.context.duration.erp"] >= 0
    searches = recorded.finished("search_memory")
    recalls = [dict(s.attributes or {}) for s in searches]
    assert {a["gen_ai.operation.name"] for a in recalls} == {"search_memory"}
    cases = [a for a in recalls if a["connector.recall.kind"] == "cases" and a["connector.recall.k"] == 2]
    assert cases and cases[0]["gen_ai.memory.record.count"] == len(hits)
    assert cases[0]["gen_ai.memory.store.id"] == "episodic_cases"
    assert cases[0]["connector.memory.scope"] == "customer"
    turns = [a for a in recalls if a["connector.recall.kind"] == "turns"]  # the earlier-conversations step
    assert turns and turns[0]["connector.customer_id"] == "ABARTENDE"
    assert "gen_ai.memory.record.count" in turns[0]
    # every recall inside the build is its child: no orphan root span from a pool thread
    inside = [s for s in searches if s.start_time >= built.start_time and s.end_time <= built.end_time]
    assert len(inside) >= 2 and {s.parent.span_id for s in inside if s.parent} == {built.context.span_id}
    assert all(s.parent is not None for s in inside)
    (turn_write,) = recorded.writes("create_memory", "working_turns")
    assert turn_write.attributes["gen_ai.memory.record.id"] == "s-9#1"
    assert turn_write.attributes["gen_ai.conversation.id"] == "s-9"
    assert turn_write.attributes["connector.memory.scope"] == "session"
    (case_write,) = recorded.writes("create_memory", "episodic_cases")
    assert case_write.attributes["connector.customer_id"] == "ABARTENDE"
    (llm,) = recorded.finished("chat m")
    assert llm.attributes["gen_ai.operation.name"] == "chat"
    assert llm.attributes["gen_ai.request.model"] == "m"
    assert llm.attributes["gen_ai.usage.input_tokens"] == 3
    assert [p.count for p in recorded.points("connector.context.duration")] == [1]
    assert [p.sum for p in recorded.points("connector.context.tokens")] == [result.token_count]
    assert recorded.points("connector.memory.operation.duration")
    assert recorded.points("gen_ai.client.operation.duration")
    units = recorded.units()
    assert units["connector.context.duration"] == units["connector.memory.operation.duration"] == "s"
    assert units["gen_ai.client.operation.duration"] == "s"

    forbidden = [CASE_TEXT, TURN_TEXT, QUERY_TEXT, LLM_SUMMARY, "Replaced", "stools", "sk-otel-secret"]
    for span in recorded.spans.get_finished_spans():
        for key, value in (span.attributes or {}).items():
            assert not [f for f in forbidden if f.lower() in str(value).lower()], (span.name, key, value)
        assert span.status.description in (None, "") or " " not in span.status.description


def test_a_failed_build_is_an_error_span_named_by_type_only(settings: Settings, recorded: Recorded) -> None:
    memory = Memory(settings, llm=None)
    seed_erp(memory)
    with pytest.raises(Exception, match="unknown customer"):
        memory.build_context("NOSUCH", QUERY_TEXT)
    (span,) = recorded.finished("connector.build_context")
    assert span.attributes["error.type"] == "UnknownCustomerError"  # type: ignore[index]
    assert span.status.description == "UnknownCustomerError"
    assert not span.events  # no exception event: its message could carry text


def test_otel_console_prints_spans_to_stderr_and_keeps_stdout_clean(settings: Settings) -> None:
    memory = Memory(settings, llm=None)
    seed_erp(memory, synced_at=datetime.now(UTC))
    command = [sys.executable, "-m", "connector.cli", "--otel-console", "context", "ABARTENDE", QUERY_TEXT]
    env = {"CONNECTOR_DATA_DIR": str(settings.data_dir), "PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert "Bartender Supplies" in done.stdout and '"name": "connector.build_context"' not in done.stdout
    assert '"name": "connector.build_context"' in done.stderr
    assert "connector.context.duration" in done.stderr  # the metrics, flushed at exit
    spans = [json.loads(block) for block in _json_objects(done.stderr) if '"trace_id"' in block]
    assert any(span["name"] == "connector.build_context" for span in spans)


def _json_objects(text: str) -> list[str]:
    """The top-level JSON objects printed one after the other by the console exporters."""
    blocks, depth, start = [], 0, 0
    for index, char in enumerate(text):
        if char == "{":
            depth, start = depth + 1, index if depth == 0 else start
        elif char == "}" and depth:
            depth -= 1
            if depth == 0:
                blocks.append(text[start : index + 1])
    return blocks
