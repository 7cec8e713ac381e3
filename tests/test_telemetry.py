"""OpenTelemetry: the spans and metrics the library records through the API, read back
with the SDK's in-memory exporter and reader, on every backend; and, in fresh processes,
that a host without OpenTelemetry pays nothing and sees nothing."""

from __future__ import annotations

import asyncio
import importlib
import pkgutil
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator, Iterator
from importlib.metadata import version
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.semconv.schemas import Schemas
from opentelemetry.trace import SpanKind, StatusCode

from eventlog import EventLog, InvalidInput, VersionConflict, open_log, telemetry
from eventlog.adapters.langgraph import AsyncEventlogSaver
from eventlog.checkpoints import Payload
from eventlog.events import Event, register_event
from eventlog.records import ExpectedVersion, StreamAppend
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

    def calls(self, operation: str) -> list[ReadableSpan]:
        """The database client spans of one operation (``append``, ``read_all``, …)."""
        return [span for span in self.exporter.get_finished_spans()
                if (span.attributes or {}).get("db.operation.name") == operation]

    def histograms(self, name: str) -> list[Any]:
        data = self.reader.get_metrics_data()
        return [metric for resource in (data.resource_metrics if data else ())
                for scope in resource.scope_metrics for metric in scope.metrics
                if metric.name == name]

    def metric(self, name: str) -> list[Any]:
        """The data points of metric ``name`` collected now."""
        return [point for metric in self.histograms(name) for point in metric.data.data_points]

    def total(self, name: str, **attributes: str) -> float:
        return sum(point.value for point in self.metric(name)
                   if all(point.attributes.get(k) == v for k, v in attributes.items()))

    def every_attribute_value(self) -> list[str]:
        """Every value recorded anywhere on a span: attributes, events, the status."""
        found = []
        for span in self.exporter.get_finished_spans():
            found += [str(value) for value in (span.attributes or {}).values()]
            found += [str(value) for event in span.events
                      for value in (event.attributes or {}).values()]
            found.append(str(span.status.description))
        return found


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


def _database(target: BackendTarget, log: EventLog) -> dict[str, Any]:
    """The database attributes a storage call on ``target`` carries (the URL's host and
    port: PgBouncer's behind it, the coordinator's on Citus)."""
    if target.name == "memory":
        return {"db.system.name": "eventlog.memory"}
    if target.name == "file":
        return {"db.system.name": "eventlog.file",
                "db.namespace": target.url.removeprefix("file://")}
    if target.name == "sqlite":
        return {"db.system.name": "sqlite", "db.namespace": target.url.removeprefix(
            "sqlite:///")}
    url = urlsplit(target.url)
    schema = getattr(log.storage, "schema", None)
    return {"db.system.name": "postgresql", "db.namespace": f"{url.path[1:]}|{schema}",
            "server.address": url.hostname, "server.port": url.port or 5432}


@every_backend
async def test_an_append_is_a_database_client_span_with_its_counts_and_metrics(
        otel: Telemetry, target: BackendTarget, noting_log: EventLog) -> None:
    """An append records one span in the database conventions' words: CLIENT (INTERNAL on
    the in-memory backend), named ``append {db.namespace}``, with db.system.name,
    db.namespace, db.operation.name and server.address/port; our own counts under
    eventlog.*; the append, its events and its bytes counted; the values nowhere."""
    stream = fresh_id("s")
    await noting_log.append("acme", stream, [Noted(text=MARKER), Noted(text="two")])
    [span] = otel.calls("append")
    database = _database(target, noting_log)
    attributes = dict(span.attributes or {})
    assert database == {key: attributes.get(key) for key in database}
    assert "append" == attributes["db.operation.name"]
    target_name = database.get("db.namespace") or ""
    assert f"append {target_name}".strip() == span.name
    assert (SpanKind.INTERNAL if target.name == "memory" else SpanKind.CLIENT) == span.kind
    assert ("acme", stream, 2, 0) == (
        attributes["eventlog.tenant_id"], attributes["eventlog.stream_id"],
        attributes["eventlog.events"], attributes["eventlog.append.retries"])
    assert noting_log.backend_name == attributes["eventlog.backend"]
    assert 0 < int(attributes["eventlog.bytes"])
    assert 1 == otel.total("eventlog.appends", **{"eventlog.outcome": "ok"})
    assert 2 == otel.total("eventlog.append.events")
    assert attributes["eventlog.bytes"] == otel.total("eventlog.append.bytes")
    [duration] = [point for point in otel.metric("db.client.operation.duration")
                  if point.attributes.get("db.operation.name") == "append"]
    assert (1, database) == (duration.count,
                             {key: duration.attributes.get(key) for key in database})
    assert not any(MARKER in value for value in otel.every_attribute_value())


@pytest.mark.parametrize("target", ["sqlite"], indirect=True)
async def test_the_duration_is_in_seconds_with_the_conventions_buckets(
        otel: Telemetry, noting_log: EventLog) -> None:
    """db.client.operation.duration: a histogram in seconds whose buckets are the ones
    the conventions advise (the SDK's defaults, made for milliseconds, put every one of
    20 appends in one bucket); no eventlog.append.duration beside it."""
    for _ in range(20):
        await noting_log.append("acme", fresh_id("s"), [Noted(text="x")])
    [histogram] = otel.histograms("db.client.operation.duration")
    assert ("s", 1) == (histogram.unit, len(histogram.data.data_points))
    [point] = histogram.data.data_points
    assert (20, list(telemetry.DURATION_BUCKETS)) == (point.count, list(point.explicit_bounds))
    assert [] == otel.histograms("eventlog.append.duration")


@pytest.mark.parametrize("target", ["sqlite", "postgresql"], indirect=True)
async def test_a_batch_append_is_a_batch_operation(
        otel: Telemetry, noting_log: EventLog) -> None:
    """An append_batch over three streams: ``BATCH append``, db.operation.batch.size 3."""
    await noting_log.append_batch([
        StreamAppend(tenant_id="acme", stream_id=fresh_id("s"), events=[Noted(text="x")])
        for _ in range(3)])
    [span] = otel.calls("BATCH append")
    assert (True, 3) == (span.name.startswith("BATCH append "),
                         (span.attributes or {})["db.operation.batch.size"])


@every_backend
async def test_a_conflict_is_a_failed_span_and_counted(
        otel: Telemetry, noting_log: EventLog) -> None:
    """An append refused with VersionConflict: error.type on the span and on its
    duration, the span's status an error in our words, and a conflict counted."""
    stream = fresh_id("s")
    await noting_log.append("acme", stream, [Noted(text="one")])
    with pytest.raises(VersionConflict):
        await noting_log.append("acme", stream, [Noted(text="two")],
                                expected_version=ExpectedVersion.NO_STREAM)
    [failed] = [span for span in otel.calls("append")
                if (span.attributes or {}).get("error.type") == "VersionConflict"]
    assert (StatusCode.ERROR, "The stream was not at the version the append expected; "
                              "nothing was written") == (
        failed.status.status_code, failed.status.description)
    assert (1, 1) == (otel.total("eventlog.append.conflicts"),
                      otel.total("eventlog.appends", **{"eventlog.outcome": "conflict"}))
    assert 1 == sum(point.count for point in otel.metric("db.client.operation.duration")
                    if point.attributes.get("error.type") == "VersionConflict")


@pytest.mark.parametrize("target", ["memory", "sqlite", "postgresql"], indirect=True)
async def test_a_refused_argument_is_recorded_by_its_type_not_its_value(
        otel: Telemetry, noting_log: EventLog) -> None:
    """A call refused for a bad argument: error.type and our description naming the
    argument, never the value (the SDK's own recording copied the exception's message,
    which repeats it), not even as the id attribute the call would have carried."""
    bad = MARKER + "\n"
    with pytest.raises(InvalidInput):
        await noting_log.read_all(tenant_id=bad)
    with pytest.raises(InvalidInput):
        await noting_log.append(bad, "s", [Noted(text="x")])
    [read] = otel.calls("read_all")
    assert ("InvalidId", StatusCode.ERROR) == ((read.attributes or {})["error.type"],
                                               read.status.status_code)
    assert "(tenant_id)" in str(read.status.description)
    assert ["exception"] == [event.name for event in read.events]
    assert not any(MARKER in value for value in otel.every_attribute_value())


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
    last = otel.calls("append")[-1]
    assert 1 == (last.attributes or {})["eventlog.append.retries"]
    assert ["eventlog.append.retry"] == [event.name for event in last.events]
    assert 1 == otel.total("eventlog.append.retries")


@every_backend
async def test_reads_are_database_client_spans_and_verify_is_internal(
        otel: Telemetry, target: BackendTarget, noting_log: EventLog) -> None:
    """read_all, read_stream (it had no span), a view query, get_blobs and find_event are
    database client calls named by what they read (``query stream_heads``); verify is
    an INTERNAL span of its own."""
    stream = fresh_id("s")
    written = await noting_log.append("acme", stream, [Noted(text="one")])
    await noting_log.wait_readable()
    page = await noting_log.read_all(tenant_id="acme")
    streamed = [event async for event in noting_log.read_stream("acme", stream)]
    rows = await noting_log.query(ViewQuery("stream_heads", where={"tenant_id": "acme"}))
    await noting_log.get_blobs("acme", [b"\x00" * 32])
    await noting_log.find_event("acme", streamed[0].event_id)
    assert (await noting_log.verify("acme")).ok
    kind = SpanKind.INTERNAL if target.name == "memory" else SpanKind.CLIENT
    [read] = otel.calls("read_all")
    [listed] = otel.calls("read_stream")
    queried = [span for span in otel.calls("query")
               if (span.attributes or {}).get("db.collection.name") == "stream_heads"]
    [blobs] = otel.calls("get_blobs")
    [found] = otel.calls("find_event")
    assert [("read_all events", kind), ("read_stream events", kind),
            ("query stream_heads", kind), ("get_blobs blobs", kind),
            ("find_event events", kind)] == [
        (span.name, span.kind) for span in (read, listed, queried[-1], blobs, found)]
    assert ("acme", len(page.events)) == (
        (read.attributes or {})["eventlog.tenant_id"], (read.attributes or {})["eventlog.events"])
    streamed_attributes = dict(listed.attributes or {})
    assert (stream, 1, written.version) == (
        streamed_attributes["eventlog.stream_id"], streamed_attributes["eventlog.items"],
        len(streamed))
    assert len(rows) == (queried[-1].attributes or {})["eventlog.rows"]
    [verified] = otel.spans("eventlog.verify")
    assert ("acme", SpanKind.INTERNAL) == ((verified.attributes or {})["eventlog.tenant_id"],
                                           verified.kind)
    operations = {point.attributes.get("db.operation.name")
                  for point in otel.metric("db.client.operation.duration")}
    assert {"append", "read_all", "read_stream", "query", "get_blobs", "find_event"} <= operations


@pytest.mark.parametrize("target", ["sqlite"], indirect=True)
async def test_the_scope_says_its_version_and_schema(
        otel: Telemetry, noting_log: EventLog) -> None:
    """Spans and metrics come from the instrumentation scope ``eventlog`` at the
    package's version, with the semantic conventions' schema URL."""
    await noting_log.append("acme", fresh_id("s"), [Noted(text="x")])
    [span] = otel.calls("append")
    data = otel.reader.get_metrics_data()
    assert data is not None
    scopes = {(scope.scope.name, scope.scope.version, scope.scope.schema_url)
              for resource in data.resource_metrics for scope in resource.scope_metrics}
    expected = ("eventlog", version("checkpoint-eventlog"), telemetry.SCHEMA_URL)
    assert span.instrumentation_scope is not None
    assert expected == (span.instrumentation_scope.name, span.instrumentation_scope.version,
                        span.instrumentation_scope.schema_url)
    assert {expected} == scopes
    assert telemetry.SCHEMA_URL in {schema.value for schema in Schemas}


def _convention_names() -> set[str]:
    """Every attribute name the installed semantic conventions package defines."""
    import opentelemetry.semconv._incubating.attributes as incubating
    import opentelemetry.semconv.attributes as stable

    names = set()
    for package in (stable, incubating):
        for module in pkgutil.iter_modules(package.__path__, package.__name__ + "."):
            loaded = importlib.import_module(module.name)
            names |= {value for key, value in vars(loaded).items()
                      if key.isupper() and isinstance(value, str)}
    return names


@pytest.mark.parametrize("target", ["sqlite", "postgresql"], indirect=True)
async def test_every_attribute_is_ours_or_the_conventions(
        otel: Telemetry, target: BackendTarget) -> None:
    """Across a graph run, interrupts and reads, every attribute is under ``eventlog.``
    or a name the semantic conventions define (``langgraph.`` and ``agent_framework.``
    belong to those projects)."""
    config = thread(fresh_id("th"))
    async with AsyncEventlogSaver.from_conn_string(target.url, **target.options()) as saver:
        await build(saver).ainvoke({"items": ["x"]}, config)
        [_ async for _ in saver.alist(config)]
    async with open_interrupt_log(target, FakeClock()) as log:
        await whole_flow(log)
    keys = {key for span in otel.exporter.get_finished_spans() for key in (span.attributes or {})}
    keys |= {key for point in otel.metric("db.client.operation.duration")
             for key in point.attributes}
    foreign = sorted(key for key in keys if not key.startswith("eventlog."))
    assert [] == [key for key in foreign if key not in _convention_names()]
    assert {"gen_ai.conversation.id", "db.system.name", "db.operation.name"} <= set(foreign)


@pytest.mark.parametrize("target", ["memory", "sqlite", "postgresql", CITUS], indirect=True)
async def test_claims_and_resumes_are_spans(otel: Telemetry, target: BackendTarget) -> None:
    """Each decision of a batch's life is an INTERNAL span naming the batch and its
    outcome, and the appends it made are its children."""
    async with open_interrupt_log(target, FakeClock()) as log:
        batch = await whole_flow(log)
    [claim] = otel.spans("eventlog.interrupts.claim")
    attributes = dict(claim.attributes or {})
    assert (batch.batch_id, True, 1, SpanKind.INTERNAL) == (
        attributes["eventlog.batch_id"], attributes["eventlog.claim.granted"],
        attributes["eventlog.claim.generation"], claim.kind)
    [finish] = otel.spans("eventlog.interrupts.finish")
    assert ("finalize", True) == ((finish.attributes or {})["eventlog.finish"],
                                  (finish.attributes or {})["eventlog.decided"])
    assert claim.context is not None
    children = [span for span in otel.calls("append")
                if span.parent is not None and span.parent.span_id == claim.context.span_id]
    assert 1 == len(children)
    assert "ok 'approve'?" not in " ".join(otel.every_attribute_value())


@pytest.mark.parametrize("target", ["sqlite", "postgresql", CITUS], indirect=True)
async def test_langgraph_spans_carry_the_conversation_and_nest(
        otel: Telemetry, target: BackendTarget) -> None:
    """A graph run through the saver: each aput is a span with the thread as
    gen_ai.conversation.id and the checkpoint's namespace and id under eventlog.*, under
    the caller's span, with the log's append beneath it; no state value appears in any
    attribute."""
    config = thread(fresh_id("th"))
    tracer = otel.tracer_provider.get_tracer("the-agent")
    async with AsyncEventlogSaver.from_conn_string(target.url, **target.options()) as saver:
        with tracer.start_as_current_span("agent.run") as run:
            await build(saver).ainvoke({"items": [MARKER]}, config)
    puts = otel.spans("eventlog.langgraph.aput")
    assert puts
    thread_id = config["configurable"]["thread_id"]
    assert {thread_id} == {(span.attributes or {})[telemetry.CONVERSATION_ID] for span in puts}
    assert {""} == {(span.attributes or {})["eventlog.checkpoint.namespace"] for span in puts}
    assert {run.get_span_context().span_id} == {
        span.parent.span_id for span in puts if span.parent is not None}
    put_ids = {span.context.span_id for span in puts if span.context is not None}
    appends_under_puts = [span for span in otel.calls("append")
                          if span.parent is not None and span.parent.span_id in put_ids]
    assert len(puts) == len(appends_under_puts)
    assert {SpanKind.CLIENT} == {span.kind for span in appends_under_puts}
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
    spans = exporter.get_finished_spans()
    operations = [span.attributes.get("db.operation.name") for span in spans]
    print(operations.count("append"), "eventlog.verify" in [span.name for span in spans])
    """, tmp_path)
    assert (0, "3 True\n", "") == (done.returncode, done.stdout, done.stderr)


async def test_agent_framework_spans_carry_the_workflow_as_conversation(
        otel: Telemetry, tmp_path: Path) -> None:
    """Agent Framework's save and load are spans naming the workflow (its thread) as
    gen_ai.conversation.id and the checkpoint (eventlog.checkpoint.id); the state's values
    appear nowhere."""
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
        (save.attributes or {})["eventlog.checkpoint.id"])
    assert checkpoint_id == (load.attributes or {})["eventlog.checkpoint.id"]
    assert not any(MARKER in value for value in otel.every_attribute_value())


@pytest.mark.parametrize("target", ["memory", "sqlite", "postgresql", CITUS], indirect=True)
async def test_a_consumer_s_reads_and_acks_are_spans_and_its_lag_a_gauge(
        otel: Telemetry, noting_log: EventLog) -> None:
    """A durable consumer's page reads and acks are database client calls naming it;
    `consumers()` records each consumer's lag as the eventlog.consumer.lag gauge."""
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
    reads = [span for span in otel.calls("consumer_read")
             if (span.attributes or {}).get("eventlog.consumer") == name]
    acks = [span for span in otel.calls("consumer_ack")
            if (span.attributes or {}).get("eventlog.consumer") == name]
    assert reads
    assert (tenant, True) == ((reads[0].attributes or {})["eventlog.tenant_id"],
                                        (reads[0].attributes or {})["eventlog.found"])
    assert 1 == len(acks)
    lags = [point.value for point in otel.metric("eventlog.consumer.lag")
            if point.attributes.get("eventlog.consumer") == name]
    assert [2] == lags


@pytest.mark.parametrize("target", ["memory", "sqlite", "postgresql", PGBOUNCER, CITUS],
                         indirect=True)
async def test_an_append_of_queued_writes_links_every_other_callers_span(
        otel: Telemetry, target: BackendTarget) -> None:
    """Tasks' writes that queued behind an append of their thread go in one append
    (`eventlog.checkpoints.write_batches`): its span is a child of the caller who
    committed it and links to each other caller's span, so every task's trace reaches
    the append that stored its writes; an append of one caller's writes links nothing."""
    tracer = otel.tracer_provider.get_tracer("the-agent")
    async with target.open() as log:
        threads = log.checkpoints.threads
        await threads.put("t", "th", "c1", state=Payload("json", b'"s"'))
        storage: Any = log.storage
        original, gate, entered = storage.append, asyncio.Event(), asyncio.Event()

        async def held(request: Any, *args: Any, **kwargs: Any) -> Any:
            entered.set()
            await gate.wait()
            return await original(request, *args, **kwargs)

        storage.append = held

        async def task(number: int) -> Any:
            with tracer.start_as_current_span(f"task-{number}") as span:
                await threads.put_writes("t", "th", "c1", f"task-{number}",
                                         [(0, "ch", Payload("json", b'"v"'))])
                return span.get_span_context()

        first = asyncio.create_task(task(0))
        await entered.wait()
        queued = [asyncio.create_task(task(number)) for number in (1, 2, 3)]
        queues = threads._writes._queues
        for _ in range(1000):  # until all three wait behind the first append
            if 3 == sum(map(len, queues.values())):
                break
            await asyncio.sleep(0.01)
        gate.set()
        alone, *together = await asyncio.gather(first, *queued)
    appends = {(span.attributes or {})["eventlog.events"]: span
               for span in otel.calls("append")
               if (span.attributes or {}).get("eventlog.stream_id") == "thread:th"}
    assert {1, 3} <= set(appends)
    batch = appends[3]
    assert batch.parent is not None
    assert {context.span_id for context in together} == {
        batch.parent.span_id, *(link.context.span_id for link in batch.links)}
    assert 2 == len(batch.links)
    assert alone.span_id == appends[1].parent.span_id
    assert () == tuple(appends[1].links)
