"""OpenTelemetry spans and metrics, through the API only, and only when the host uses it.

The library is instrumented the way instrumentation libraries are: it calls the
OpenTelemetry *API* (``opentelemetry-api``) and never an SDK or an exporter; the host
configures those. Where the spans and metrics go is decided at each call:

- a host that configured OpenTelemetry (it set a tracer or meter provider, which imports
  ``opentelemetry.trace``) gets eventlog's spans and metrics through its providers;
- a host that did not has not imported ``opentelemetry.trace`` at all, and an instrumented
  call then costs one dictionary lookup: the library never imports OpenTelemetry itself
  (its API alone takes ~60 ms to import, and `import eventlog` stays light); one that
  imported the API but set no provider costs two calls more, and no span is made;
- `instrument` hands explicit providers (a test's in-memory ones, or a host that keeps
  several), and `uninstrument` goes back to the global ones.

The instrumentation scope is ``eventlog`` at the package's version, with `SCHEMA_URL`:
the semantic conventions whose words it uses.

What is recorded never holds a state value, free text or a caller's argument: ids
(tenant, stream, thread, batch, checkpoint), counts, sizes, backend names and outcomes
only. A failed call records ``error.type`` (the exception's class) and, as the span's
status, our description of that class (`error_description`), never the exception's
message, which may repeat what the caller passed.

Storage calls are database client calls in the conventions' words
(https://opentelemetry.io/docs/specs/semconv/db/): the log's ``append`` (and ``BATCH
append``), ``read_all``, ``read_stream``, ``get_blobs``, ``query``, ``history``,
``find_event`` and a durable consumer's page reads and acks are CLIENT spans (INTERNAL on
the in-memory backend) named ``{db.operation.name} {target}`` (the table read, else the
database), with ``db.system.name``, ``db.namespace``, ``db.operation.name``,
``db.collection.name`` where one table is read, and ``server.address``/``server.port`` on
PostgreSQL (`Database`), each timed in the ``db.client.operation.duration`` histogram
(seconds, the conventions' bucket boundaries). Other spans are INTERNAL: ``eventlog.verify``
and the tree's heads and proofs, the interrupt store's claims and resumes, and the
adapters' calls (``gen_ai.conversation.id`` is the thread id, so tracing tools line them up
with the agent's own spans). Attributes of our own are under ``eventlog.``. Metrics besides
the duration: ``eventlog.appends``, ``eventlog.append.events``, ``eventlog.append.bytes``,
``eventlog.append.retries``, ``eventlog.append.conflicts`` and ``eventlog.consumer.lag``.
"""

from __future__ import annotations

import functools
import inspect
import sys
import time
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, ParamSpec, TypeVar

from eventlog.errors import EventLogError, InvalidInput, VersionConflict

__all__ = [
    "CONVERSATION_ID",
    "DURATION_BUCKETS",
    "SCHEMA_URL",
    "Database",
    "instrument",
    "uninstrument",
]

P = ParamSpec("P")
R = TypeVar("R")

#: The GenAI semantic conventions' attribute for a conversation (a thread).
CONVERSATION_ID = "gen_ai.conversation.id"

SCHEMA_URL = "https://opentelemetry.io/schemas/1.40.0"
"""The semantic conventions whose names the spans and metrics use (the database client
spans and ``db.client.operation.duration``, ``error.type``, ``server.*``,
``gen_ai.conversation.id``)."""

DURATION_BUCKETS = (0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0)
"""The bucket boundaries (seconds) the conventions advise for
``db.client.operation.duration``: an append of ~1 ms and one of ~30 ms fall apart (the
SDK's defaults, made for milliseconds, put every call under 5 s in its first bucket)."""

_SCOPE = "eventlog"
_TRACE_MODULE = "opentelemetry.trace"
_METRICS_STATE = "opentelemetry.metrics._internal"
_ABSENT = object()

AttributeValue = str | bool | int | float
Attributes = Mapping[str, AttributeValue]


@dataclass(frozen=True)
class Database:
    """Where a backend keeps the log, in the conventions' words: what its storage calls'
    spans and durations carry (each backend names its own when it opens)."""

    system: str
    """``db.system.name``: ``postgresql``, ``sqlite``, or ``eventlog.memory`` /
    ``eventlog.file`` for the library's own stores."""
    namespace: str | None = None
    """``db.namespace``: ``{database}|{schema}`` on PostgreSQL, the file on SQLite, the
    directory of a file store."""
    address: str | None = None
    """``server.address``: the host the configuration names (never its credentials)."""
    port: int | None = None
    """``server.port``."""
    in_memory: bool = False
    """Calls that stay in this process's memory: INTERNAL spans, as the conventions say
    of an in-memory database."""

    def attributes(self) -> dict[str, AttributeValue]:
        """The attributes every span and duration of a call to this database carries."""
        found: dict[str, AttributeValue] = {"db.system.name": self.system}
        if self.namespace is not None:
            found["db.namespace"] = self.namespace
        if self.address is not None:
            found["server.address"] = self.address
            if self.port is not None:
                found["server.port"] = self.port
        return found

    def target(self, collection: str | None) -> str | None:
        """The span name's ``{target}``: the table, else the database, else the server."""
        if collection is not None:
            return collection
        if self.namespace is not None:
            return self.namespace
        if self.address is not None:
            return self.address if self.port is None else f"{self.address}:{self.port}"
        return None


@dataclass
class _Instruments:
    """The tracer and the metric instruments of one pair of providers."""

    tracer: Any
    appends: Any
    events: Any
    bytes: Any
    retries: Any
    conflicts: Any
    duration: Any
    lag: Any


@dataclass
class _State:
    explicit: _Instruments | None = None
    automatic: tuple[Any, _Instruments] | None = None  # (the trace module, its instruments)


_state = _State()


def instrument(*, tracer_provider: Any = None, meter_provider: Any = None) -> None:
    """Record eventlog's spans and metrics through these providers (each defaults to the
    global one), whether or not the host set global providers. Imports the OpenTelemetry
    API (a dependency of the package)."""
    from opentelemetry import metrics, trace

    _state.explicit = _build(
        (tracer_provider or trace.get_tracer_provider()).get_tracer(
            _SCOPE, _version(), schema_url=SCHEMA_URL),
        (meter_provider or metrics.get_meter_provider()).get_meter(
            _SCOPE, _version(), schema_url=SCHEMA_URL),
    )


def uninstrument() -> None:
    """Forget the providers `instrument` gave: back to the host's global ones, if any."""
    _state.explicit = None


def _current() -> _Instruments | None:
    """The instruments to record through now, or None when nobody listens."""
    if _state.explicit is not None:
        return _state.explicit
    trace = sys.modules.get(_TRACE_MODULE)
    if trace is None:
        return None
    if _nothing_set(trace):
        return None  # the API without a provider: every span and point would be a no-op
    from opentelemetry import metrics

    automatic = _state.automatic
    if automatic is None or automatic[0] is not trace:
        # Proxies: a provider the host sets later is used from then on.
        automatic = (trace, _build(
            trace.get_tracer(_SCOPE, _version(), schema_url=SCHEMA_URL),
            metrics.get_meter(_SCOPE, _version(), schema_url=SCHEMA_URL)))
        _state.automatic = automatic
    return automatic[1]


def _nothing_set(trace: Any) -> bool:
    """Whether neither a tracer provider nor a meter provider was set. The API's own
    getters look for a provider in the environment on every call until one is set (~10
    µs each); its module globals answer in a lookup, and where a future API lacks them
    the getters still do."""
    metrics = sys.modules.get(_METRICS_STATE)
    tracer_unset = getattr(trace, "_TRACER_PROVIDER", _ABSENT)
    meter_unset = getattr(metrics, "_METER_PROVIDER", _ABSENT)
    if tracer_unset is _ABSENT or meter_unset is _ABSENT:
        from opentelemetry import metrics as api

        return (isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)
                and type(api.get_meter_provider()).__name__ == "_ProxyMeterProvider")
    return tracer_unset is None and meter_unset is None


def _build(tracer: Any, meter: Any) -> _Instruments:
    return _Instruments(
        tracer=tracer,
        appends=meter.create_counter(
            "eventlog.appends", unit="{append}",
            description="Appends committed or refused (one per append or batch)"),
        events=meter.create_counter(
            "eventlog.append.events", unit="{event}", description="Events appended"),
        bytes=meter.create_counter(
            "eventlog.append.bytes", unit="By",
            description="Bytes of event data and blob payloads appended"),
        retries=meter.create_counter(
            "eventlog.append.retries", unit="{retry}",
            description="Appends gone round again after a lost race or an unheard commit"),
        conflicts=meter.create_counter(
            "eventlog.append.conflicts", unit="{conflict}",
            description="Appends refused with VersionConflict"),
        duration=meter.create_histogram(
            "db.client.operation.duration", unit="s",
            description="Duration of database client operations.",
            explicit_bucket_boundaries_advisory=DURATION_BUCKETS),
        lag=meter.create_gauge(
            "eventlog.consumer.lag", unit="{event}",
            description="Events a durable consumer is behind the head of its scope"),
    )


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("checkpoint-eventlog")
    except PackageNotFoundError:  # pragma: no cover - a source tree without metadata
        return "0"


# -- what a failure records ----------------------------------------------------------------

def error_type(error: BaseException) -> str:
    """``error.type``: the exception's class, by its own name for ours and Python's, by
    module and name for others (``asyncpg.exceptions.ConnectionDoesNotExistError``)."""
    kind = type(error)
    if kind.__module__ in ("builtins",) or isinstance(error, EventLogError):
        return kind.__qualname__
    return f"{kind.__module__}.{kind.__qualname__}"


def error_description(error: BaseException) -> str:
    """The span status's description of a failure, in our words and never the exception's
    message (which may repeat the caller's argument): the first line of its class's
    docstring, and the argument's name for `InvalidInput`."""
    kind = type(error)
    summary = (kind.__doc__ or kind.__qualname__).strip().splitlines()[0].rstrip(".")
    if isinstance(error, InvalidInput):
        return f"{summary} ({error.field})"
    return summary


def _failed(span: Any, error: BaseException) -> None:
    from opentelemetry.trace import Status, StatusCode

    kind, said = error_type(error), error_description(error)
    span.set_attribute("error.type", kind)
    span.add_event("exception", {"exception.type": kind, "exception.message": said})
    span.set_status(Status(StatusCode.ERROR, said))


# -- spans around calls --------------------------------------------------------------------

Describe = Callable[[Mapping[str, Any]], Attributes]
Outcome = Callable[[Any], Attributes]
Where = Callable[[Mapping[str, Any]], "Database | None"]


def traced(
    name: str, describe: Describe | None = None, outcome: Outcome | None = None,
) -> Callable[[Callable[P, Coroutine[Any, Any, R]]], Callable[P, Coroutine[Any, Any, R]]]:
    """Decorate an async method: each call is an INTERNAL span ``name`` when someone
    listens.

    ``describe`` turns the call's bound arguments (by parameter name, ``self`` included)
    into the span's attributes; ``outcome`` turns its result into more. Neither runs
    when nobody listens. An exception marks the span as failed (`_failed`).
    """

    def decorate(
        function: Callable[P, Coroutine[Any, Any, R]],
    ) -> Callable[P, Coroutine[Any, Any, R]]:
        signature = inspect.signature(function)

        @functools.wraps(function)
        async def call(*args: P.args, **kwargs: P.kwargs) -> R:
            current = _current()
            if current is None:
                return await function(*args, **kwargs)
            described = _safe(describe, _bound(signature, args, kwargs))
            with _span(current, name, {}, None, described) as span:
                result = await function(*args, **kwargs)
                if outcome is not None:
                    span.set_attributes(_safe(outcome, result))
                return result

        return call

    return decorate


def storage_call(
    operation: str, where: Where, *, collection: str | Callable[[Mapping[str, Any]], Any]
    | None = None, describe: Describe | None = None, outcome: Outcome | None = None,
) -> Callable[[Callable[P, Coroutine[Any, Any, R]]], Callable[P, Coroutine[Any, Any, R]]]:
    """Decorate an async method that calls storage: each call is a database client span
    (`database_call`) of ``operation`` on the `Database` ``where`` finds in the bound
    arguments, on the table ``collection`` (a name, or found in the arguments; None: no
    one table), with ``describe``'s and ``outcome``'s attributes as in `traced`."""

    def decorate(
        function: Callable[P, Coroutine[Any, Any, R]],
    ) -> Callable[P, Coroutine[Any, Any, R]]:
        signature = inspect.signature(function)

        @functools.wraps(function)
        async def call(*args: P.args, **kwargs: P.kwargs) -> R:
            current = _current()
            if current is None:
                return await function(*args, **kwargs)
            bound = _bound(signature, args, kwargs)
            with database_call(current, operation, _where(where, bound),
                               _collection(collection, bound), {},
                               described=_safe(describe, bound)) as span:
                result = await function(*args, **kwargs)
                if outcome is not None:
                    span.set_attributes(_safe(outcome, result))
                return result

        return call

    return decorate


def traced_iteration(
    name: str, describe: Describe | None = None, *, where: Where | None = None,
    collection: str | None = None,
) -> Callable[[Callable[P, AsyncIterator[R]]], Callable[P, AsyncIterator[R]]]:
    """Decorate an async generator method: its whole iteration is one span when someone
    listens, current only while the generator runs (never in the consumer's code
    between items), with the number of items yielded as ``eventlog.items``. With
    ``where`` it is a database client span of the operation ``name`` (`database_call`),
    whose duration counts the time spent inside the generator; else INTERNAL ``name``."""

    def decorate(function: Callable[P, AsyncIterator[R]]) -> Callable[P, AsyncIterator[R]]:
        signature = inspect.signature(function)

        @functools.wraps(function)
        async def iterate(*args: P.args, **kwargs: P.kwargs) -> AsyncIterator[R]:
            current = _current()
            if current is None:
                async for item in function(*args, **kwargs):
                    yield item
                return
            from opentelemetry import context, trace

            bound = _bound(signature, args, kwargs)
            described = _safe(describe, bound)
            if where is not None:
                span_name, kind, metric = _client(name, _where(where, bound), collection)
                attributes: dict[str, Any] = dict(metric)
            else:
                span_name, kind, metric, attributes = name, trace.SpanKind.INTERNAL, None, {}
            span = current.tracer.start_span(span_name, kind=kind, attributes=attributes)
            items, inside, failure = 0, 0.0, None
            inner = function(*args, **kwargs)
            try:
                while True:
                    token = context.attach(trace.set_span_in_context(span))
                    started = time.perf_counter()
                    try:
                        item = await inner.__anext__()
                    except StopAsyncIteration:
                        break
                    finally:
                        inside += time.perf_counter() - started
                        context.detach(token)
                    items += 1
                    yield item
            except BaseException as error:
                failure = error
                _failed(span, error)
                raise
            finally:
                if not isinstance(failure, InvalidInput):
                    span.set_attributes(described)
                span.set_attribute("eventlog.items", items)
                span.end()
                if metric is not None:
                    _record(current, metric, inside, failure)
                await _close(inner)

        return iterate

    return decorate


@contextmanager
def database_call(
    current: _Instruments, operation: str, database: Database | None,
    collection: str | None, attributes: Mapping[str, AttributeValue], *,
    described: Mapping[str, AttributeValue] | None = None, batch: int | None = None,
    links: Sequence[Any] = (),
) -> Iterator[Any]:
    """One storage call as the conventions' database client span, current while it runs,
    and its ``db.client.operation.duration``: named ``{db.operation.name} {target}``
    (``BATCH append`` for an append of ``batch`` ≥ 2 streams), CLIENT (INTERNAL on the
    in-memory backend), linked to the span contexts ``links``. ``attributes`` are set
    when it starts, ``described`` (what the caller's arguments say) when it ends, unless
    the arguments were refused."""
    name = f"BATCH {operation}" if batch is not None and batch >= 2 else operation
    span_name, kind, metric = _client(name, database, collection)
    started = time.perf_counter()
    failure: BaseException | None = None
    batched = {"db.operation.batch.size": batch} if batch is not None and batch >= 2 else {}
    try:
        with _span(current, span_name, {**metric, **batched, **attributes}, kind,
                   described, links) as span:
            try:
                yield span
            except BaseException as error:
                failure = error
                raise
    finally:
        _record(current, metric, time.perf_counter() - started, failure)


def _client(operation: str, database: Database | None,
            collection: str | None) -> tuple[str, Any, dict[str, Any]]:
    """A database call's span name, kind and the attributes its duration carries."""
    from opentelemetry.trace import SpanKind

    described = database.attributes() if database is not None else {}
    described["db.operation.name"] = operation
    if collection is not None:
        described["db.collection.name"] = collection
    target = database.target(collection) if database is not None else collection
    kind = (SpanKind.INTERNAL if database is not None and database.in_memory
            else SpanKind.CLIENT)
    return (f"{operation} {target}" if target else operation), kind, described


def _record(current: _Instruments, metric: Mapping[str, Any], seconds: float,
            failure: BaseException | None) -> None:
    point = dict(metric)
    if failure is not None:
        point["error.type"] = error_type(failure)
    current.duration.record(seconds, point)


@contextmanager
def _span(current: _Instruments, name: str, attributes: Mapping[str, AttributeValue],
          kind: Any, described: Mapping[str, AttributeValue] | None = None,
          links: Sequence[Any] = ()) -> Iterator[Any]:
    """A span current while the block runs, with ``attributes`` from its start and
    ``described`` (what the caller's arguments say) set at its end, unless the call
    refused them (`InvalidInput`: then they are the caller's bad values); linked to the
    span contexts ``links``. A failure is recorded our way (`_failed`), never the SDK's,
    which copies the exception's message and with it the caller's value."""
    options: dict[str, Any] = {} if kind is None else {"kind": kind}
    if links:
        from opentelemetry.trace import Link

        options["links"] = [Link(context) for context in links]
    with current.tracer.start_as_current_span(
            name, attributes=attributes, record_exception=False,
            set_status_on_exception=False, **options) as span:
        try:
            yield span
        except BaseException as error:
            _failed(span, error)
            if described and not isinstance(error, InvalidInput):
                span.set_attributes(described)
            raise
        if described:
            span.set_attributes(described)


async def _close(generator: AsyncIterator[Any]) -> None:
    aclose = getattr(generator, "aclose", None)
    if aclose is not None:
        await aclose()


def _bound(signature: inspect.Signature, args: Sequence[Any],
           kwargs: Mapping[str, Any]) -> Mapping[str, Any]:
    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError:  # the call itself will say what is wrong
        return {}
    return bound.arguments


def _where(where: Where | None, bound: Mapping[str, Any]) -> Database | None:
    if where is None:
        return None
    try:
        return where(bound)
    except Exception:  # a description never fails the call
        return None


def _collection(collection: str | Callable[[Mapping[str, Any]], Any] | None,
                bound: Mapping[str, Any]) -> str | None:
    if collection is None or isinstance(collection, str):
        return collection
    try:
        found = collection(bound)
    except Exception:
        return None
    return found if isinstance(found, str) else None


def _safe(make: Callable[[Any], Attributes] | None, value: Any) -> dict[str, AttributeValue]:
    """The attributes ``make`` gives, keeping only those OpenTelemetry accepts; a caller's
    odd argument (the call will refuse it) never fails the span."""
    if make is None:
        return {}
    try:
        made = make(value)
    except Exception:
        return {}
    return {key: item for key, item in made.items()
            if isinstance(item, (str, bool, int, float))}


def ids(**names: str) -> Describe:
    """A `describe` taking string arguments as attributes: ``ids(tenant_id=
    "eventlog.tenant_id")`` records the call's ``tenant_id`` as ``eventlog.tenant_id``
    (when it is a string; an absent or odd one is left out)."""

    def describe(arguments: Mapping[str, Any]) -> Attributes:
        return {attribute: arguments[parameter] for parameter, attribute in names.items()
                if isinstance(arguments.get(parameter), str)}

    return describe


# -- the append: a span, and the metrics ------------------------------------------------

@dataclass
class _AppendTally:
    retries: int = 0


_tally: ContextVar[_AppendTally | None] = ContextVar("eventlog_append_tally", default=None)

_carried: ContextVar[tuple[Any, ...]] = ContextVar("eventlog_append_carries", default=())
"""The span contexts of other callers whose writes the next append carries
(`carrying`)."""


def caller_context() -> Any | None:
    """The current span's context when someone listens and a span is recording, else
    None: what a caller whose work another task will append hands over (`carrying`)."""
    if _current() is None:
        return None
    from opentelemetry import trace

    context = trace.get_current_span().get_span_context()
    return context if context.is_valid else None


@contextmanager
def carrying(contexts: Sequence[Any]) -> Iterator[None]:
    """Appends made in the block carry other callers' writes (a thread's queued task
    writes, `eventlog.checkpoints.write_batches`): each append span links to their span
    contexts (None ones left out), so each caller's trace reaches the append that stored
    its writes, though the span's parent is the caller who committed them. The
    conventions' way for one operation done on behalf of several."""
    token = _carried.set(tuple(context for context in contexts if context is not None))
    try:
        yield
    finally:
        _carried.reset(token)


@contextmanager
def append_span(database: Database, backend: str, tenant_id: str, stream_id: str,
                streams: int, events: int, size: int) -> Iterator[None]:
    """The span and metrics of one append (or one batch of ``streams`` streams)."""
    current = _current()
    if current is None:
        yield
        return
    attributes: dict[str, AttributeValue] = {
        "eventlog.backend": backend, "eventlog.tenant_id": tenant_id,
        "eventlog.stream_id": stream_id, "eventlog.streams": streams,
        "eventlog.events": events, "eventlog.bytes": size,
    }
    tally = _AppendTally()
    token = _tally.set(tally)
    outcome = "error"
    try:
        with database_call(current, "append", database, None, attributes,
                           batch=streams, links=_carried.get()) as span:
            try:
                yield
            except BaseException as error:
                outcome = "conflict" if isinstance(error, VersionConflict) else "error"
                raise
            finally:
                span.set_attribute("eventlog.append.retries", tally.retries)
            outcome = "ok"
    finally:
        _tally.reset(token)
        current.appends.add(1, {"eventlog.backend": backend, "eventlog.outcome": outcome})
        if tally.retries:
            current.retries.add(tally.retries, {"eventlog.backend": backend})
        if outcome == "conflict":
            current.conflicts.add(1, {"eventlog.backend": backend})
        if outcome == "ok":
            current.events.add(events, {"eventlog.backend": backend})
            current.bytes.add(size, {"eventlog.backend": backend})


def note_retry(reason: str) -> None:
    """Count a retry of the append in progress (a lost race, an unheard commit)."""
    tally = _tally.get()
    if tally is not None:
        tally.retries += 1
        current = _current()
        if current is not None:
            from opentelemetry import trace

            trace.get_current_span().add_event("eventlog.append.retry", {"reason": reason})


def observe_consumer_lag(consumer: str, events: int) -> None:
    """Record how many events the durable consumer ``consumer`` is behind its scope's head."""
    current = _current()
    if current is not None:
        current.lag.set(events, {"eventlog.consumer": consumer})
