"""One process of the soak: mixed checkpoint and interrupt traffic for SECONDS.

    python -m tests.procs.soak_worker URL SCHEMA WORKER SECONDS SEED

Over six shared threads (checkpoint sessions) of the tenant ``soak`` it creates
checkpoints, now and then deletes a session, creates interrupt batches, races the other
processes to claim pending ones, and under a claim starts the effect, captures, finishes
or walks away (leases last 1 s, so cleanup expires them and unresolved effects appear),
runs cleanup passes and reconciles unresolved batches. It prints one JSON line per
acknowledged write a later check must find (``ckpt``, ``claim``, ``effect``), and at the
end its counts: operations, errors by type, and its resident memory sampled every 0.25 s.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import random
import sys
import time
import uuid
from collections import Counter
from datetime import timedelta
from typing import Any

import structlog

from eventlog import (
    CheckpointRecord,
    EventLog,
    EventLogError,
    Finish,
    Interrupt,
    InterruptOptions,
    Reconciliation,
    Resume,
    ResumeInput,
    open_log,
)

SCOPE = "soak"
THREADS = [f"thread-{n}" for n in range(6)]
PAGE = os.sysconf("SC_PAGE_SIZE")


def emit(**fields: Any) -> None:
    print(json.dumps(fields), flush=True)


def rss_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * PAGE


class Worker:
    def __init__(self, log: EventLog, name: str, rng: random.Random) -> None:
        self.log, self.name, self.rng = log, name, rng
        self.ops: Counter[str] = Counter()

    async def step(self) -> None:
        op = self.rng.choices(
            ["ckpt", "delete", "batch", "claim", "cleanup", "reconcile", "read"],
            weights=[40, 2, 10, 25, 5, 5, 13])[0]
        await getattr(self, op)()
        self.ops[op] += 1

    async def ckpt(self) -> None:
        thread = self.rng.choice(THREADS)
        record = await self.log.checkpoints.create(CheckpointRecord(
            tenant_id=SCOPE, session_id=thread, run_id=uuid.uuid4(),
            step=self.rng.randint(0, 9), state={"by": self.name, "pad": "x" * 500}))
        emit(ckpt=record.checkpoint_id, session=thread)

    async def delete(self) -> None:
        await self.log.checkpoints.delete(SCOPE, self.rng.choice(THREADS))

    async def batch(self) -> None:
        thread = self.rng.choice(THREADS)
        latest = await self.log.checkpoints.latest(SCOPE, thread)
        if latest is None:
            return
        await self.log.interrupts.create(
            SCOPE, thread, [Interrupt(id="approve", reason="confirmation", message="pay?")],
            latest.checkpoint_id, operation=("payments", "1"))

    async def claim(self) -> None:
        page = await self.log.interrupts.list({SCOPE}, limit=10, state="pending")
        if not page.batches:
            return
        summary = self.rng.choice(page.batches)
        answer = ResumeInput(thread_id=summary.thread_id, batch_id=summary.batch_id,
                             responses=[Resume(interrupt_id="approve", status="resolved",
                                               payload={"approved": True})])
        claim = (await self.log.interrupts.try_claim(SCOPE, answer)).claim
        if claim is None:
            return
        emit(claim=claim.batch_id, generation=claim.generation)
        fate = self.rng.random()
        if fate < 0.15:
            return  # walk away: the lease runs out, cleanup expires it
        if fate < 0.6 and await self.log.interrupts.try_start_effect(claim):
            emit(effect=claim.batch_id, generation=claim.generation)
            if fate < 0.3:
                return  # dispatched, then died: an unresolved effect for reconcile
        capture = await self.log.interrupts.start_capture(claim)
        if capture is not None:
            await self.log.interrupts.complete_capture(capture, "completed", '{"ok": true}')
        finish = Finish.RELEASE if fate > 0.9 else Finish.FINALIZE
        await self.log.interrupts.finish(claim, finish)

    async def cleanup(self) -> None:
        await self.log.interrupts.cleanup(limit=20)

    async def reconcile(self) -> None:
        page = await self.log.interrupts.list({SCOPE}, limit=10, state="unresolved")
        for summary in page.batches[:2]:
            await self.log.interrupts.reconcile(
                {SCOPE}, summary.batch_id, self.name,
                Reconciliation(resolution="effect_applied", evidence={"ref": summary.batch_id}))

    async def read(self) -> None:
        thread = self.rng.choice(THREADS)
        await self.log.checkpoints.list(SCOPE, thread)
        await self.log.interrupts.recover(SCOPE, thread)


async def main(url: str, schema: str, name: str, seconds: float, seed: int) -> None:
    options = {"schema": schema, "pool_size": 3} if url.startswith("postgresql") else {}
    errors: Counter[str] = Counter()
    samples: list[tuple[float, int]] = []
    async with open_log(url, interrupt_options=InterruptOptions(
            preparation_lease=timedelta(seconds=1)), **options) as log:
        worker = Worker(log, name, random.Random(seed))
        start = time.monotonic()
        deadline = start + seconds
        next_sample = start
        while (now := time.monotonic()) < deadline:
            if now >= next_sample:
                samples.append((now - start, rss_bytes()))
                next_sample = now + 0.25
            try:
                await worker.step()
            except EventLogError as error:
                errors[type(error).__name__] += 1
                if errors[type(error).__name__] <= 3:
                    emit(error=type(error).__name__, detail=str(error)[:300])
        samples.append((time.monotonic() - start, rss_bytes()))
    emit(done=name, ops=dict(worker.ops), errors=dict(errors), rss=samples,
         seconds=time.monotonic() - start)


if __name__ == "__main__":
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.ERROR))
    url, schema, name, seconds, seed = sys.argv[1:]
    asyncio.run(main(url, schema, name, float(seconds), int(seed)))
