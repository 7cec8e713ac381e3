"""Signed appends (issue 40 §1): what the writer key's signature costs a write, and what
checking signatures costs the reads that decide.

Writes: `CheckpointStore.create` and the LangGraph adapter's ``aput``, signed beside
unsigned, on SQLite and PostgreSQL. Both contestants are encrypted logs (a keyring each),
one whose keyring holds a writer key (every event's chain hash signed, Ed25519, 72 bytes
stored with the row) and one whose keyring holds none, so the ratio is the signature's
cost alone; goal ≥ 0.9. ~2 KB state per checkpoint, a new session or thread every 100.
The contestants take turns every 50 calls within a round (`bench_writes.take_turns`: the
disk's flush time swings within seconds here), and each call's client CPU is reported
too: the signature is client CPU alone, the figure that does not swing with the disk.

Reads: the legal-hold list (``retention.holds``: the retention stream read through the
checked read side, every event's chain link and signature checked) beside reading the
same stream with `EventLog.read_stream` (no check), on a retention stream of 50 holds and
releases: cold (every signature checked afresh, a process's first read) and warm (the
log remembers the signatures it found holding);
and `verify` of 1,000 signed events beside 1,000 unsigned (SQLite). Figures are calls/s;
the ratio is checked ÷ unchecked.

Measured in one process and one run, the contestants interleaved round by round. Caveats:
client and server share 2 cores with other work; fsync on.
"""

from __future__ import annotations

import tempfile
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

from benchmarks.bench_crypt import META, STATE, _putter
from benchmarks.bench_writes import take_turns
from benchmarks.common import PG_URL, Results, interleave, scratch_schema, section, size
from eventlog import CheckpointRecord, OpenLog, open_log
from eventlog.crypto import init_keyring
from eventlog.events.retention import RETENTION_STREAM
from eventlog.testing.events import Noted


@asynccontextmanager
async def _logs(backend: str, directory: Path) -> AsyncIterator[tuple[OpenLog, OpenLog]]:
    """An encrypted log that signs nothing and one that signs every append, on ``backend``."""
    unsigned_ring = init_keyring(directory / "unsigned.json", writer=False)
    signed_ring = init_keyring(directory / "signed.json")
    async with AsyncExitStack() as stack:
        if backend == "sqlite":
            unsigned = await stack.enter_async_context(
                open_log(f"sqlite:///{directory}/u.db", keyring=unsigned_ring))
            signed = await stack.enter_async_context(
                open_log(f"sqlite:///{directory}/s.db", keyring=signed_ring))
        else:
            one = await stack.enter_async_context(scratch_schema())
            two = await stack.enter_async_context(scratch_schema())
            unsigned = await stack.enter_async_context(
                open_log(PG_URL, schema=one, keyring=unsigned_ring))
            signed = await stack.enter_async_context(
                open_log(PG_URL, schema=two, keyring=signed_ring))
        assert unsigned.signer is None
        assert signed.signer is not None
        yield unsigned, signed


def _creator(log: OpenLog, run_id: uuid.UUID) -> Callable[[int], Awaitable[object]]:
    async def create(i: int) -> None:
        await log.checkpoints.create(CheckpointRecord(
            tenant_id="t", session_id=f"s{i // 100}", run_id=run_id, step=i,
            state={**STATE, "step": i}, metadata=META))
    return create


async def _holds_stream(log: OpenLog, count: int) -> None:
    """A retention stream of ``count`` events: holds placed and released in turn."""
    for n in range(count // 2):
        await log.retention.hold("h", f"subject-{n}", reason="audit")
        await log.retention.release("h", f"subject-{n}")


def _checked(log: OpenLog, *, cold: bool) -> Callable[[int], Awaitable[object]]:
    """The hold list; ``cold``: every signature checked afresh, as a process's first read
    pays (otherwise the log remembers the signatures it checked)."""
    async def holds(_: int) -> None:
        if cold and log.writer_keys is not None:
            log.writer_keys.forget_checked()
        await log.retention.holds("h")
    return holds


def _unchecked(log: OpenLog) -> Callable[[int], Awaitable[object]]:
    async def holds(_: int) -> None:
        _ = [event async for event in log.read_stream("h", RETENTION_STREAM)]
    return holds


def _verifier(log: OpenLog) -> Callable[[int], Awaitable[object]]:
    async def verify(_: int) -> None:
        assert (await log.verify("v")).ok
    return verify


async def run(results: Results) -> None:
    count = size(300, 10)
    for backend in ("sqlite", "postgresql"):
        section(f"{backend}: signed beside unsigned (both encrypted), {count} calls per round")
        with tempfile.TemporaryDirectory() as scratch:
            async with _logs(backend, Path(scratch)) as (unsigned, signed):
                await _writes(results, backend, count, unsigned, signed)
                await _many_per_append(results, backend, count, unsigned, signed)
                await _reads(results, backend, signed)
                if backend == "sqlite":
                    await _verify(results, unsigned, signed)


async def _writes(results: Results, backend: str, count: int, unsigned: OpenLog,
                  signed: OpenLog) -> None:
    from eventlog.adapters.langgraph import AsyncEventlogSaver

    run_id = uuid.uuid4()
    savers: list[Any] = [AsyncEventlogSaver(log) for log in (unsigned, signed)]
    for name, contestants in (
        ("create", {"create": _creator(unsigned, run_id),
                    "create_signed": _creator(signed, run_id)}),
        ("aput", {"aput": _putter(savers[0]), "aput_signed": _putter(savers[1])}),
    ):
        figures = await take_turns(contestants, count)
        label = "create" if name == "create" else "LangGraph aput"
        results.compare(f"{backend} {label}, signed vs unsigned", f"{name}_signed", name,
                        figures["calls_per_s"], goal="≥ 0.9", at_least=0.9)
        results.compare(f"{backend} {label} client CPU, signed vs unsigned",
                        f"{name}_signed", name, figures["client_cpu_us"], unit="µs",
                        goal="measured")


def _appender(log: OpenLog, per_call: int) -> Callable[[int], Awaitable[object]]:
    async def append(i: int) -> None:
        await log.append("b", f"s{i // 100}", [Noted(text=f"{i}-{n}") for n in range(per_call)])
    return append


async def _many_per_append(results: Results, backend: str, count: int, unsigned: OpenLog,
                           signed: OpenLog) -> None:
    """An append of 10 events (a batch, an import's): 10 signatures where one per
    transaction would do; the figure that decides per event or per transaction."""
    figures = await take_turns({"append10": _appender(unsigned, 10),
                                "append10_signed": _appender(signed, 10)}, count)
    results.compare(f"{backend} append of 10 events, signed vs unsigned", "append10_signed",
                    "append10", figures["calls_per_s"], goal="measured")


async def _reads(results: Results, backend: str, signed: OpenLog) -> None:
    await _holds_stream(signed, size(50, 4))
    figures = await interleave(size(100, 5), shuffled=True, fold=_unchecked(signed),
                               holds_checked=_checked(signed, cold=True),
                               holds_rechecked=_checked(signed, cold=False))
    results.compare(f"{backend} hold list (50 events), checked (cold) vs unchecked read",
                    "holds_checked", "fold", figures, goal="measured")
    results.compare(f"{backend} hold list (50 events), checked (warm) vs unchecked read",
                    "holds_rechecked", "fold", figures, goal="measured")


async def _verify(results: Results, unsigned: OpenLog, signed: OpenLog) -> None:
    for log in (unsigned, signed):
        for n in range(size(1000, 20) // 10):
            await log.append("v", f"s{n % 10}", [Noted(text=str(n))] * 10)
    figures = await interleave(1, times=5, shuffled=True, verify=_verifier(unsigned),
                               verify_signed=_verifier(signed))
    results.compare("sqlite verify of 1,000 events, signed vs unsigned", "verify_signed",
                    "verify", figures, unit="verifies/s", goal="measured")
