"""The one loop of every decision fenced on what it read: read, decide, append fenced on
the version read and, after a lost race (`VersionConflict`), decide again, within a bound.

The stores differ only in their bound and in how they wait (`Retries`) and in what a try
runs inside (`held_after_first`):

- a removal (a session delete, a thread delete or prune) backs off with jitter and decides
  again *holding* its stream, until a time bound (`eventlog.checkpoints.removal`);
- a copy, which reads one stream and appends to another, backs off and never holds;
- an interrupt batch's decision decides again at once, a bounded number of times.

When the bound is reached the caller sees the last conflict a try really met, never one
made up to force a retry.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager, nullcontext
from dataclasses import dataclass
from typing import Protocol, TypeVar

from eventlog.errors import VersionConflict

R = TypeVar("R")

Retried = Callable[[int, VersionConflict], None]
"""Told of each lost race that is tried again: the number of tries lost so far, and the
conflict (the stores log it with their own logger)."""


@dataclass(frozen=True, slots=True)
class Retries:
    """How a fenced decision is tried again after a lost race: at most ``attempts`` tries
    and/or no new try once ``seconds`` have passed since the first (at least one bound),
    sleeping ``backoff(n)`` seconds after the n-th lost try (None: decide again at once)."""

    attempts: int | None = None
    seconds: float | None = None
    backoff: Callable[[int], float] | None = None

    def __post_init__(self) -> None:
        if self.attempts is None and self.seconds is None:
            raise ValueError("Retries needs a bound: attempts, seconds or both")
        if self.attempts is not None and self.attempts < 1:
            raise ValueError(f"Retries.attempts must be at least 1, not {self.attempts}")
        if self.seconds is not None and not self.seconds > 0:
            raise ValueError(f"Retries.seconds must be above 0, not {self.seconds}")

    def exhausted(self, lost: int, deadline: float | None) -> bool:
        """Whether no try follows ``lost`` lost tries (``deadline``: `time.monotonic`)."""
        if self.attempts is not None and lost >= self.attempts:
            return True
        return deadline is not None and time.monotonic() >= deadline


async def decide_fenced(
    once: Callable[[int], Awaitable[R]], retries: Retries, retried: Retried | None = None
) -> R:
    """``await once(attempt)`` (attempt 0 first) until a try returns, and return that.

    A `VersionConflict` out of a try is a lost race: unless ``retries`` is exhausted,
    ``retried`` is told, the loop waits ``retries.backoff`` and tries again; once it is
    exhausted, that conflict is raised as it was. Any other exception ends the loop.
    """
    deadline = None if retries.seconds is None else time.monotonic() + retries.seconds
    lost = 0
    while True:
        try:
            return await once(lost)
        except VersionConflict as conflict:
            lost += 1
            if retries.exhausted(lost, deadline):
                raise
            if retried is not None:
                retried(lost, conflict)
            if retries.backoff is not None:
                await asyncio.sleep(retries.backoff(lost))


class StreamHolder(Protocol):
    """What `held_after_first` needs of a log (an `EventLog` is one)."""

    def hold_stream(
        self, tenant_id: str, stream_id: str
    ) -> AbstractAsyncContextManager[None]: ...


def held_after_first(
    log: StreamHolder, tenant_id: str, stream_id: str, attempt: int
) -> AbstractAsyncContextManager[None]:
    """What try ``attempt`` of a removal runs inside: nothing for the first (it decides and
    appends as any writer does), the stream's hold (`EventLog.hold_stream`) for every
    later one, so the version it reads is the version it appends at."""
    if attempt == 0:
        return nullcontext()
    return log.hold_stream(tenant_id, stream_id)
