"""OpenTelemetry: the spans and metrics the library records through the API, read back
with the SDK's in-memory exporter and reader, on every backend; and, in fresh processes,
that a host without OpenTelemetry pays nothing and sees nothing."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from eventlog import EventLog, VersionConflict, open_log, telemetry
from eventlog.adapters.langgraph import AsyncEventlogSaver
from eventlog.events import Event, register_event
from eventlog.records import ExpectedVersion
from eventlog.testing.interrupts import FakeClock, open_interrupt_log, whole_flow
from projections.query import ViewQuery
from tests.adapters.test_langgraph_graph import build, thread
from tests.conftest import CITUS, PGBOUNCER, BackendTarget, fresh_id

MARKER = "s3cr3t-marker-value"


@register_event
class Noted(Event, tag="telemetry_noted"):
    text: str


class Telemetry:
    """The SDK's in-memory span exporter and metric reader behind `telemetry.instrument`."""

    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        tracer_provider = TracerProvider()
        tracer_provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.reader = InMemoryMetricReader()
        self.tracer_provider = tracer_provider
        telemetry.instrument(tracer_provider=tracer_provider,
                             meter_provider=MeterProvider(metric_readers=[self.reader]))

    def spans(self, name: str) -> list[ReadableSpan]:
        return [span for span in self.exporter.get_finished_spans() if span.name == name]

    def metric(self, name: str) -> list[Any]:
        """The data points of metric ``name`` collected now."""
        data = self.reader.get_metrics_data()
        points = []
        for resource in data.resource_metrics if data else ():
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    if metric.name == name:
                        points.extend(metric.data.data_points)
        return points

    def total(self, name: str, **attributes: str) -> float:
        return sum(point.value for point in self.metric(name)
                   if all(point.attributes.get(k) == v for k, v in attributes.items()))

    def every_attribute_value(self) -> list[str]:
        return [str(value) for span in self.exporter.get_finished_spans()
                for value in (span.attributes or {}).values()]


@pytest.fixture
def otel() -> Iterator[Telemetry]:
    recorded = Telemetry()
    yield recorded
    telemetry.uninstrument()


@pytest.fixture
async def noting_log(target: BackendTarget) -> AsyncIterator[EventLog]:
    async with open_log(target.url, **target.options()) as opened:
        yield opened


every_backend = pytest.mark.parametrize(
    "target", ["memory", "sqlite", "file", "postgresql", PGBOUNCER, CITUS], indirect=True)


@every_backend
async def test_an_append_is_a_span_with_its_counts_and_metrics(
        otel: Telemetry, noting_log: EventLog) -> None:
    """An append records one span (tenant, stream, events, bytes, no retries) and counts
    the append, its events and its bytes; the values themselves appear nowhere."""
    stream = fresh_id("s")
    await noting_log.append("acme", stream, [Noted(text=MARKER), Noted(text="two")])
    [span] = otel.spans("eventlog.append")
    attributes = dict(span.attributes or {})
    assert ("acme", stream, 2, 0) == (
        attributes["eventlog.tenant_id"], attributes["eventlog.stream_id"],
        attributes["eventlog.events"], attributes["eventlog.append.retries"])
    assert noting_log.backend_name == attributes["eventlog.backend"]
    assert 0 < int(attributes["eventlog.bytes"])
    assert 1 == otel.total("eventlog.appends", **{"eventlog.outcome": "ok"})
    assert 2 == otel.total("eventlog.append.events")
    assert attributes["eventlog.bytes"] == otel.total("eventlog.append.bytes")
    [duration] = otel.metric("eventlog.append.duration")
    assert 1 == duration.count
    assert not any(MARKER in value for value in otel.every_attribute_value())


@every_backend
async def test_a_conflict_is_a_failed_span_and_counted(
        otel: Telemetry, noting_log: EventLog) -> None:
    """An append refused with VersionConflict marks its span and counts a conflict."""
    stream = fresh_id("s")
    await noting_log.append("acme", stream, [Noted(text="one")])
    with pytest.raises(VersionConflict):
        await noting_log.append("acme", stream, [Noted(text="two")],
                                expected_version=ExpectedVersion.NO_STREAM)
    failed = [span for span in otel.spans("eventlog.append")
              if (span.attributes or {}).get("error.type") == "VersionConflict"]
    assert 1 == len(failed)
    assert (1, 1) == (otel.total("eventlog.append.conflicts"),
                      otel.total("eventlog.appends", **{"eventlog.outcome": "conflict"}))


@pytest.mark.parametrize("target", ["sqlite", "postgresql"], indirect=True)
async def test_a_lost_race_is_a_retry_on_the_span(
        otel: Telemetry, target: BackendTarget) -> None:
    """An append from a stale cached head (another log appended meanwhile) goes round
    again: its span says one retry, with the reason as a span event, and the retry is
    counted."""
    stream = fresh_id("s")
    async with open_log(target.url, **target.options()) as first, \
            open_log(target.url, **target.options()) as second:
        await first.append("acme", stream, [Noted(text="one")])   # first caches the head
        await second.append("acme", stream, [Noted(text="two")])  # moves it
        await first.append("acme", stream, [Noted(text="three")])  # stale: goes round
    last = otel.spans("eventlog.append")[-1]
    assert 1 == (last.attributes or {})["eventlog.append.retries"]
    assert ["eventlog.append.retry"] == [event.name for event in last.events]
    assert 1 == otel.total("eventlog.append.retries")


@every_backend
async def test_reads_and_verify_are_spans(otel: Telemetry, noting_log: EventLog) -> None:
    """read_all, a view query and verify each record a span with the tenant and counts."""
    stream = fresh_id("s")
    await noting_log.append("acme", stream, [Noted(text="one")])
    await noting_log.wait_readable()
    page = await noting_log.read_all(tenant_id="acme")
    rows = await noting_log.query(ViewQuery("stream_heads", where={"tenant_id": "acme"}))
    assert (await noting_log.verify("acme")).ok
    [read] = otel.spans("eventlog.read_all")
    assert ("acme", len(page.events)) == (
        (read.attributes or {})["eventlog.tenant_id"], (read.attributes or {})["eventlog.events"])
    queried = [span for span in otel.spans("eventlog.query")
               if (span.attributes or {}).get("eventlog.view") == "stream_heads"]
    assert [len(rows)] == [(span.attributes or {})["eventlog.rows"] for span in queried][-1:]
    [verified] = otel.spans("eventlog.verify")
    assert "acme" == (verified.attributes or {})["eventlog.tenant_id"]


@pytest.mark.parametrize("target", ["memory", "sqlite", "postgresql", CITUS], indirect=True)
async def test_claims_and_resumes_are_spans(otel: Telemetry, target: BackendTarget) -> None:
    """Each decision of a batch's life is a span naming the batch and its outcome, and the
    appends it made are its children."""
    async with open_interrupt_log(target, FakeClock()) as log:
        batch = await whole_flow(log)
    [claim] = otel.spans("eventlog.interrupts.claim")
    attributes = dict(claim.attributes or {})
    assert (batch.batch_id, True, 1) == (
        attributes["eventlog.batch_id"], attributes["eventlog.claim.granted"],
        attributes["eventlog.claim.generation"])
    [finish] = otel.spans("eventlog.interrupts.finish")
    assert ("finalize", True) == ((finish.attributes or {})["eventlog.finish"],
                                  (finish.attributes or {})["eventlog.decided"])
    assert claim.context is not None
    children = [span for span in otel.spans("eventlog.append")
                if span.parent is not None and span.parent.span_id == claim.context.span_id]
    assert 1 == len(children)
    assert "ok 'approve'?" not in " ".join(otel.every_attribute_value())


@pytest.mark.parametrize("target", ["sqlite", "postgresql", CITUS], indirect=True)
async def test_langgraph_spans_carry_the_conversation_and_nest(
        otel: Telemetry, target: BackendTarget) -> None:
    """A graph run through the saver: each aput is a span with the thread as
    gen_ai.conversation.id, under the caller's span, with the log's append beneath it;
    no state value appears in any attribute."""
    config = thread(fresh_id("th"))
    tracer = otel.tracer_provider.get_tracer("the-agent")
    async with AsyncEventlogSaver.from_conn_string(target.url, **target.options()) as saver:
        with tracer.start_as_current_span("agent.run") as run:
            await build(saver).ainvoke({"items": [MARKER]}, config)
    puts = otel.spans("eventlog.langgraph.aput")
    assert puts
    thread_id = config["configurable"]["thread_id"]
    assert {thread_id} == {(span.attributes or {})[telemetry.CONVERSATION_ID] for span in puts}
    assert {run.get_span_context().span_id} == {
        span.parent.span_id for span in puts if span.parent is not None}
    put_ids = {span.context.span_id for span in puts if span.context is not None}
    appends_under_puts = [span for span in otel.spans("eventlog.append")
                          if span.parent is not None and span.parent.span_id in put_ids]
    assert len(puts) == len(appends_under_puts)
    assert not any(MARKER in value for value in otel.every_attribute_value())


async def test_a_blocking_call_from_another_thread_keeps_its_callers_span(
        otel: Telemetry, tmp_path: Path) -> None:
    """A sync saver call from a worker thread runs on the saver's loop, yet its span is a
    child of the span current in the calling thread (``call_soon_threadsafe`` runs its
    callback in a copy of the caller's context, and the task it starts copies that)."""
    config = thread(fresh_id("th"))
    tracer = otel.tracer_provider.get_tracer("the-agent")
    async with AsyncEventlogSaver.from_conn_string(f"sqlite:///{tmp_path / 'l.db'}") as saver:
        await build(saver).ainvoke({"items": []}, config)

        def from_a_thread() -> int:
            with tracer.start_as_current_span("worker") as worker:
                assert saver.get_tuple(config) is not None
                return worker.get_span_context().span_id

        worker_id = await asyncio.to_thread(from_a_thread)
    [got] = otel.spans("eventlog.langgraph.aget_tuple")[-1:]
    assert got.parent is not None
    assert worker_id == got.parent.span_id


async def test_alist_is_one_span_counting_what_it_yielded(otel: Telemetry, tmp_path: Path) -> None:
    """alist's iteration is one span with the number of checkpoints it yielded."""
    config = thread(fresh_id("th"))
    async with AsyncEventlogSaver.from_conn_string(f"sqlite:///{tmp_path / 'l.db'}") as saver:
        await build(saver).ainvoke({"items": []}, config)
        listed = [item async for item in saver.alist(config)]
    [span] = otel.spans("eventlog.langgraph.alist")
    assert len(listed) == (span.attributes or {})["eventlog.items"]
    assert config["configurable"]["thread_id"] == (span.attributes or {})[telemetry.CONVERSATION_ID]


def _run(code: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120, check=False)


_WORKLOAD = """
    import asyncio, sys, uuid
    from eventlog import open_log
    from eventlog.checkpoints import CheckpointRecord

    async def main():
        async with open_log("sqlite:///log.db") as log:
            for step in range(3):
                await log.checkpoints.create(CheckpointRecord(
                    tenant_id="acme", session_id="s1", run_id=uuid.uuid4(),
                    checkpoint_id=f"c{step}",
                    state={"step": step}))
            await log.checkpoints.list("acme", "s1")
            assert (await log.verify()).ok
    asyncio.run(main())
"""


def test_without_opentelemetry_nothing_is_imported_or_printed(tmp_path: Path) -> None:
    """A host that never touched OpenTelemetry: the library does not import it, prints
    nothing, and works as ever."""
    done = _run(_WORKLOAD + """
    print(sorted(name for name in sys.modules if name.startswith("opentelemetry")))
    """, tmp_path)
    assert (0, "[]\n", "") == (done.returncode, done.stdout, done.stderr)


def test_with_the_api_but_no_sdk_nothing_is_recorded_or_printed(tmp_path: Path) -> None:
    """A host that imported the API but configured no provider (and has no SDK): the
    library makes no span at all, loads no SDK, and prints nothing."""
    done = _run("""
    import opentelemetry.trace
    class Blocked:
        def find_spec(self, name, path=None, target=None):
            if name.startswith("opentelemetry.sdk"):
                raise ImportError("no SDK here")
    sys_ = __import__("sys"); sys_.meta_path.insert(0, Blocked())
    """ + _WORKLOAD + """
    from eventlog import telemetry
    print(telemetry._current(), any(name.startswith("opentelemetry.sdk") for name in sys.modules))
    """, tmp_path)
    assert (0, "None False\n", "") == (done.returncode, done.stdout, done.stderr)


def test_a_host_that_sets_global_providers_gets_the_spans(tmp_path: Path) -> None:
    """Without `instrument`: a host's global tracer provider, set even after the library
    was imported, receives the library's spans."""
    done = _run("""
    import eventlog
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    """ + _WORKLOAD + """
    names = [span.name for span in exporter.get_finished_spans()]
    print(names.count("eventlog.append"), "eventlog.verify" in names)
    """, tmp_path)
    assert (0, "3 True\n", "") == (done.returncode, done.stdout, done.stderr)


async def test_agent_framework_spans_carry_the_workflow_as_conversation(
        otel: Telemetry, tmp_path: Path) -> None:
    """Agent Framework's save and load are spans naming the workflow (its thread) as
    gen_ai.conversation.id and the checkpoint; the state's values appear nowhere."""
    from agent_framework import WorkflowCheckpoint

    from eventlog.adapters.maf import EventlogCheckpointStorage

    saved = WorkflowCheckpoint(workflow_name="payments", graph_signature_hash="g",
                               state={"note": MARKER})
    async with EventlogCheckpointStorage.from_url(f"sqlite:///{tmp_path / 'l.db'}") as storage:
        checkpoint_id = await storage.save(saved)
        assert MARKER == (await storage.load(checkpoint_id)).state["note"]
    [save] = otel.spans("eventlog.agent_framework.save")
    [load] = otel.spans("eventlog.agent_framework.load")
    assert ("payments", checkpoint_id) == (
        (save.attributes or {})[telemetry.CONVERSATION_ID],
        (save.attributes or {})["agent_framework.checkpoint_id"])
    assert checkpoint_id == (load.attributes or {})["agent_framework.checkpoint_id"]
    assert not any(MARKER in value for value in otel.every_attribute_value())


@pytest.mark.parametrize("target", ["memory", "sqlite", "postgresql", CITUS], indirect=True)
async def test_a_consumer_s_reads_and_acks_are_spans_and_its_lag_a_gauge(
        otel: Telemetry, noting_log: EventLog) -> None:
    """A durable consumer's page reads and acks are spans naming it; `consumers()` records
    each consumer's lag as the eventlog.consumer.lag gauge."""
    name = fresh_id("billing")
    tenant = fresh_id("t")
    for _ in range(3):
        await noting_log.append(tenant, fresh_id("s"), [Noted(text="x")])
    await noting_log.wait_readable()
    async with noting_log.subscribe(name, tenant_id=tenant) as subscription:
        first = await subscription.next_batch(1)
        await subscription.ack(first[0])
    [info] = [info for info in await noting_log.consumers() if info.name == name]
    assert info.lag_events == 2
    reads = [span for span in otel.spans("eventlog.consumer.read")
             if (span.attributes or {}).get("eventlog.consumer") == name]
    acks = [span for span in otel.spans("eventlog.consumer.ack")
            if (span.attributes or {}).get("eventlog.consumer") == name]
    assert reads
    assert (tenant, True) == ((reads[0].attributes or {})["eventlog.tenant_id"],
                                        (reads[0].attributes or {})["eventlog.found"])
    assert 1 == len(acks)
    lags = [point.value for point in otel.metric("eventlog.consumer.lag")
            if point.attributes.get("eventlog.consumer") == name]
    assert [2] == lags
