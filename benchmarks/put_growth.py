"""Does a put cost more as its thread grows? (issue 41, "serialize what is new"):
``python -m benchmarks.put_growth [--steps N] [--rounds N] [--profile]``.

`AsyncEventlogSaver.aput` on a SQLite file log, called as LangGraph's runtime calls it
for a chat thread: a ``messages`` list growing by one ~1 KB `AIMessage` a step (the same
message objects every step, as ``add_messages`` hands them on, in a new list) and two
scalar channels, each put naming new versions of all three. Each round puts a fresh
thread of ``--steps`` steps after a 30-step warm-up thread; the client CPU of each
``aput`` (`time.process_time`: every thread of the process, SQLite's writer included) is
taken per step, and the median over rounds is reported for steps 1-50 and the last 50,
with their ratio (issue 41's goal: ≤ 1.3) and the total. Also, on the event loop's
thread alone (`time.thread_time`): the whole ``aput`` (the rest is SQLite's writer
thread), and of it what serializing the channel values and planning the elements cost.
Caveats: one machine, shared; process CPU counts any other thread of the process that
runs meanwhile, so compare runs made back to back.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import pstats
import random
import statistics
import tempfile
import time
import uuid
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import ChannelVersions, Checkpoint, empty_checkpoint

from eventlog.adapters.langgraph import AsyncEventlogSaver

PARTS: dict[str, list[float]] = {"aput": [], "serialize": [], "plan": []}


def timed(obj: Any, attr: str, label: str) -> None:
    """Wrap ``obj.attr`` to add its loop-thread CPU to ``PARTS[label]``."""
    original = getattr(obj, attr)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        started = time.thread_time()
        try:
            return original(*args, **kwargs)
        finally:
            PARTS[label].append(time.thread_time() - started)

    setattr(obj, attr, wrapper)


async def thread(saver: AsyncEventlogSaver, name: str, steps: int,
                 profile: cProfile.Profile | None = None) -> list[float]:
    """Client CPU of each aput of a ``steps``-step chat thread."""
    rng = random.Random(41)
    messages: list[Any] = [HumanMessage("hello", id="h")]
    config: RunnableConfig = {"configurable": {"thread_id": name, "checkpoint_ns": ""}}
    version: str | None = None
    times = []
    for step in range(steps):
        text = "".join(rng.choice("abcdefghij klmnop") for _ in range(1000))
        messages = [*messages, AIMessage(text, id=f"ai-{step}")]
        version = saver.get_next_version(version, None)
        versions: ChannelVersions = {"messages": version, "step_count": version,
                                     "status": version}
        checkpoint: Checkpoint = {
            **empty_checkpoint(), "id": str(uuid.uuid4()),
            "channel_versions": dict(versions),
            "versions_seen": {"agent": {"messages": version}},
            "channel_values": {"messages": messages, "step_count": step,
                               "status": f"step {step}"},
        }
        if profile is not None:
            profile.enable()
        started, on_loop = time.process_time(), time.thread_time()
        config = await saver.aput(config, checkpoint, {"source": "loop", "step": step},
                                  versions)
        times.append(time.process_time() - started)
        PARTS["aput"].append(time.thread_time() - on_loop)
        if profile is not None:
            profile.disable()
    return times


def window(values: list[float], first: bool) -> float:
    return statistics.mean(values[:50] if first else values[-50:])


async def run(steps: int, rounds: int, profile: bool) -> None:
    with tempfile.TemporaryDirectory() as directory:
        async with AsyncEventlogSaver.from_conn_string(
                f"sqlite:///{directory}/log.db", tenant_id="bench") as saver:
            timed(saver, "_channels", "serialize")
            timed(saver._threads._elements, "plan", "plan")
            await thread(saver, "warm-up", 30)
            profiler = cProfile.Profile() if profile else None
            per_round, parts = [], []
            for n in range(rounds):
                for values in PARTS.values():
                    values.clear()
                per_round.append(await thread(saver, f"chat-{n}", steps, profiler))
                parts.append({label: list(values) for label, values in PARTS.items()})
    by_step = [statistics.median(times[step] for times in per_round) for step in range(steps)]
    first, last = window(by_step, True), window(by_step, False)
    print(f"aput client CPU, median of {rounds} rounds: steps 1-50 {first * 1e3:.3f} ms, "
          f"last 50 {last * 1e3:.3f} ms, ratio {last / first:.2f}; "
          f"a thread's total {sum(by_step):.3f} s")
    for label in PARTS:
        early, late = (statistics.median(window(round_[label], first) for round_ in parts)
                       for first in (True, False))
        print(f"  {label} (loop thread): steps 1-50 {early * 1e3:.3f} ms, "
              f"last 50 {late * 1e3:.3f} ms, ratio {late / early:.2f}")
    if profiler is not None:
        pstats.Stats(profiler).sort_stats("tottime").print_stats(25)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--profile", action="store_true")
    options = parser.parse_args()
    asyncio.run(run(options.steps, options.rounds, options.profile))


if __name__ == "__main__":
    main()
