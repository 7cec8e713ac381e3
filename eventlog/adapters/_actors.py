"""Who an adapter's call acts as: the framework's per-call word, else an `acting_as` block
around the call, else the adapter's own ``actor``, else the log's.

Applied inside the coroutine the adapter awaits (`EventLog.acting_as` is a context
variable), so it holds on whatever loop the coroutine runs: a sync LangGraph call runs its
async twin on the saver's loop, in a task that does not share the caller's context.
"""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any, TypeVar

from eventlog.log import EventLog
from eventlog.validation import check_actor

R = TypeVar("R")


def chosen_actor(log: EventLog, given: Any, own: str | None, field: str) -> str | None:
    """The actor a call is recorded as appended by: ``given`` (the call's own, checked and
    named ``field`` when refused), else the block's, else ``own``, else None (the log's)."""
    if given is not None:
        return check_actor(given, field)
    block = log.acting_block
    return block if block is not None else own


async def acting(log: EventLog, actor: str | None, coroutine: Coroutine[Any, Any, R]) -> R:
    """Await ``coroutine`` acting as ``actor`` (as the log's own when None)."""
    if actor is None:
        return await coroutine
    with log.acting_as(actor):
        return await coroutine


async def sealing(log: EventLog, subject: str | None, coroutine: Coroutine[Any, Any, R]) -> R:
    """Await ``coroutine`` sealing under ``subject``'s data key (the default subjects when
    None; `EventLog.sealing_for`)."""
    if subject is None:
        return await coroutine
    with log.sealing_for(subject):
        return await coroutine
