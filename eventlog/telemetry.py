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

What is recorded never holds a state value or free text: ids (tenant, stream, thread,
batch, checkpoint), counts, sizes, backend names and outcomes only.

Spans: ``eventlog.append`` (tenant, stream, events, bytes, retries), the log's reads
(``eventlog.read_all``, ``eventlog.read_stream``, ``eventlog.query``, ...),
``eventlog.verify``, the interrupt store's claims and resumes, and the adapters' calls
(``gen_ai.conversation.id`` is the thread id, so tracing tools line them up with the
agent's own spans). Metrics: ``eventlog.appends``, ``eventlog.append.events``,
``eventlog.append.bytes``, ``eventlog.append.retries``, ``eventlog.append.conflicts``,
the ``eventlog.append.duration`` histogram, and ``eventlog.consumer.lag``.
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

from eventlog.errors import VersionConflict

__all__ = [
    "CONVERSATION_ID",
    "instrument",
    "uninstrument",
]

P = ParamSpec("P")
R = TypeVar("R")

#: The GenAI semantic conventions' attribute for a conversation (a thread).
CONVERSATION_ID = "gen_ai.conversation.id"

_SCOPE = "eventlog"
_TRACE_MODULE = "opentelemetry.trace"
_METRICS_STATE = "opentelemetry.metrics._internal"
_ABSENT = object()

AttributeValue = str | bool | int | float
Attributes = Mapping[str, AttributeValue]


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
        (tracer_provider or trace.get_tracer_provider()).get_tracer(_SCOPE, _version()),
        (meter_provider or metrics.get_meter_provider()).get_meter(_SCOPE, _version()),
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
        automatic = (trace, _build(trace.get_tracer(_SCOPE, _version()),
                                   metrics.get_meter(_SCOPE, _version())))
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
            "eventlog.append.duration", unit="s", description="Time an append took"),
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


# -- spans around calls --------------------------------------------------------------------

Describe = Callable[[Mapping[str, Any]], Attributes]
Outcome = Callable[[Any], Attributes]


def traced(
    name: str, describe: Describe | None = None, outcome: Outcome | None = None,
) -> Callable[[Callable[P, Coroutine[Any, Any, R]]], Callable[P, Coroutine[Any, Any, R]]]:
    """Decorate an async method: each call is a span ``name`` when someone listens.

    ``describe`` turns the call's bound arguments (by parameter name, ``self`` included)
    into the span's attributes; ``outcome`` turns its result into more. Neither runs
    when nobody listens. An exception marks the span as failed with ``error.type``.
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
            attributes = _safe(describe, _bound(signature, args, kwargs))
            with current.tracer.start_as_current_span(name, attributes=attributes) as span:
                try:
                    result = await function(*args, **kwargs)
                except BaseException as error:
                    span.set_attribute("error.type", type(error).__qualname__)
                    raise
                if outcome is not None:
                    span.set_attributes(_safe(outcome, result))
                return result

        return call

    return decorate


def traced_iteration(
    name: str, describe: Describe | None = None,
) -> Callable[[Callable[P, AsyncIterator[R]]], Callable[P, AsyncIterator[R]]]:
    """Decorate an async generator method: its whole iteration is one span ``name`` when
    someone listens, current only while the generator runs (never in the consumer's code
    between items), with the number of items yielded as ``eventlog.items``."""

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

            attributes = _safe(describe, _bound(signature, args, kwargs))
            span = current.tracer.start_span(name, attributes=attributes)
            items = 0
            inner = function(*args, **kwargs)
            try:
                while True:
                    token = context.attach(trace.set_span_in_context(span))
                    try:
                        item = await inner.__anext__()
                    except StopAsyncIteration:
                        break
                    finally:
                        context.detach(token)
                    items += 1
                    yield item
            except BaseException as error:
                span.set_attribute("error.type", type(error).__qualname__)
                raise
            finally:
                span.set_attribute("eventlog.items", items)
                span.end()
                await _close(inner)

        return iterate

    return decorate


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


@contextmanager
def append_span(backend: str, tenant_id: str, stream_id: str, streams: int, events: int,
                size: int) -> Iterator[None]:
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
    started = time.perf_counter()
    outcome = "error"
    try:
        with current.tracer.start_as_current_span("eventlog.append",
                                                  attributes=attributes) as span:
            try:
                yield
            except BaseException as error:
                outcome = "conflict" if isinstance(error, VersionConflict) else "error"
                span.set_attribute("error.type", type(error).__qualname__)
                raise
            finally:
                span.set_attribute("eventlog.append.retries", tally.retries)
            outcome = "ok"
    finally:
        _tally.reset(token)
        metric = {"eventlog.backend": backend, "eventlog.outcome": outcome}
        current.appends.add(1, metric)
        current.duration.record(time.perf_counter() - started, metric)
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
