"""What OpenTelemetry costs an append (issue 34 §5): appends to a memory log and a SQLite
file in three states, interleaved in one run:

- *nobody listens*: the host never imported OpenTelemetry, so `eventlog.telemetry` finds no
  ``opentelemetry.trace`` module and records nothing (the baseline);
- *API only*: the host imported the API but set no provider (the library then makes no
  span, after asking the API for its providers);
- *SDK recording*: an SDK tracer and meter provider with a span processor that drops what
  it is handed (the cost of recording, without an exporter's I/O).

A benchmark process imports OpenTelemetry for the second and third states, so the first is
made by hiding ``opentelemetry.trace`` from ``sys.modules`` for its turns (what a host that
never imported it looks like to the library). Ratios are appends/s ÷ the baseline's.
Run: ``python -m benchmarks --only telemetry``.
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path

from benchmarks.common import Results, interleave, section, size
from eventlog import EventLog, open_log, telemetry
from eventlog.events import Event, register_event


@register_event
class Measured(Event, tag="bench_telemetry_measured"):
    text: str


def _states() -> dict[str, Callable[[], None]]:
    import opentelemetry.trace as trace_module
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.trace import SpanProcessor, TracerProvider

    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SpanProcessor())  # the base class keeps nothing
    meter_provider = MeterProvider()

    telemetry.instrument(tracer_provider=tracer_provider, meter_provider=meter_provider)
    recording_instruments = telemetry._state.explicit  # built once, as a host's would be

    def nobody() -> None:
        telemetry._state.explicit = None
        sys.modules.pop("opentelemetry.trace", None)

    def api_only() -> None:
        telemetry._state.explicit = None
        sys.modules["opentelemetry.trace"] = trace_module

    def recording() -> None:
        sys.modules["opentelemetry.trace"] = trace_module
        telemetry._state.explicit = recording_instruments

    return {"nobody listens": nobody, "API only, no SDK": api_only,
            "SDK recording": recording}


def _appending(log: EventLog, state: Callable[[], None], name: str
               ) -> Callable[[int], Awaitable[object]]:
    async def append(index: int) -> object:
        if index % 50 == 0:  # each turn of `interleave` starts at a multiple of its count
            state()
        return await log.append("bench", f"{name}-{index // 50}", [Measured(text="x" * 200)])

    return append


async def backend(results: Results, title: str, log: EventLog) -> None:
    count = size(1000, 50)
    states = _states()
    figures = await interleave(count, **{
        name: _appending(log, state, name.split()[0]) for name, state in states.items()})
    states["nobody listens"]()
    results.compare(f"{title}: append, API only vs nobody listening", "API only, no SDK",
                    "nobody listens", figures, goal="≥ 0.95", at_least=0.95)
    results.compare(f"{title}: append, SDK recording vs nobody listening", "SDK recording",
                    "nobody listens", figures, goal="report")
    sys.modules.setdefault("opentelemetry.trace", __import__("opentelemetry.trace").trace)


async def run(results: Results) -> None:
    section("OpenTelemetry: appends with nobody listening, the API alone, an SDK recording")
    async with open_log("memory://") as log:
        await backend(results, "memory", log)
    with tempfile.TemporaryDirectory() as directory:
        async with open_log(f"sqlite:///{Path(directory) / 'telemetry.db'}") as log:
            await backend(results, "SQLite", log)
