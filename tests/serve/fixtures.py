"""A log for the console's tests: two tenants holding a thread of the same id, a thread
only the second holds, and a thread of crafted stored strings and oversized values."""

from __future__ import annotations

import asyncio
import os
import tempfile
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from typing import cast

import msgspec
import pytest

from eventlog.adapters.langgraph import AsyncEventlogSaver
from eventlog.checkpoints.thread_records import Elements, Payload
from eventlog.cli.serve.access import Access, Grant
from eventlog.face import OpenLog
from eventlog.log import EventLog
from tests.cli.test_stored_code import system_call
from tests.conftest import PG_URL, BackendTarget, drop_schema, fresh_id, require_postgres
from tests.forensic_threads import _config, _three_nodes, interrupted_thread
from tests.procs.settle import settle

TOKEN_A = "token-of-alice-" + "a" * 20
TOKEN_B = "token-of-bob-" + "b" * 20
APPROVER = "ops-lead@acme"
SCRIPT = "<script>window.__ran = 1</script>"
IMG = '"><img src=x onerror="window.__ran=2">'
JS_URL = "javascript:window.__ran=3"
HOLD = "litigation 2031-17"
BIG = 5 * 1024 * 1024
ELEMENT_REFERENCES = 10_000


@dataclass
class Logged:
    """What the log holds, and how to open it."""

    target: BackendTarget
    tenant: str
    other: str
    trip: str = "trip"
    secret: str = "secret-plan"
    crafted: str = IMG
    waiting: str = "waiting-for-approval"
    marker: str = ""
    """A file the crafted thread's stored value would create, were it run."""


def access() -> Access:
    return Access([Grant("alice", TOKEN_A, None), Grant("bob", TOKEN_B, None)])


def scoped(logged: Logged) -> Access:
    """Alice sees the first tenant, Bob the second."""
    return Access([Grant("alice", TOKEN_A, frozenset({logged.tenant})),
                   Grant("bob", TOKEN_B, frozenset({logged.other}))])


def opener(target: BackendTarget) -> Callable[[], AbstractAsyncContextManager[EventLog]]:
    """What the console opens: the log with the lenient registry, as the CLI opens it."""
    from eventlog.cli.lenient import LenientRegistry
    from eventlog.events import default_registry

    @asynccontextmanager
    async def opened() -> AsyncIterator[EventLog]:
        async with target.open(registry=LenientRegistry(default_registry)) as log:
            yield log

    return opened


async def crafted_thread(log: OpenLog, tenant: str, thread_id: str, marker: str) -> None:
    """A thread whose id, metadata and values are hostile: markup, a ``javascript:`` URL,
    a 5 MB value and a list naming one element 10,000 times."""
    element = Payload("msgpack", msgspec.msgpack.encode(list(range(2_000))))
    state = Payload("msgpack", msgspec.msgpack.encode({"note": SCRIPT, "big": "x" * BIG}))
    await log.checkpoints.threads.put(
        tenant, thread_id, "1f0-crafted-1", state=state, step=0, run_key="run-1",
        metadata={"source": "input", "step": 0, "link": JS_URL, "who": IMG, "s": SCRIPT},
        channels={"messages": Elements((element,) * ELEMENT_REFERENCES),
                  "note": Payload("msgpack", msgspec.msgpack.encode(SCRIPT)),
                  # what LangGraph's permissive serializer would run: os.system("touch …")
                  "evil": Payload("msgpack", system_call(f"touch {marker}"))})
    await log.checkpoints.threads.put(
        tenant, thread_id, "1f0-crafted-2", state=state, step=1, run_key="run-1",
        parent_id="1f0-crafted-1",
        metadata={"source": "loop", "step": 1, "writes": {SCRIPT: IMG}},
        channels={"messages": Elements((element,) * ELEMENT_REFERENCES)})


async def asked_thread(log: OpenLog, tenant: str, thread_id: str) -> None:
    """The three-node graph run up to its question, which nobody answers."""
    graph = _three_nodes(AsyncEventlogSaver(log, tenant_id=tenant))
    await graph.ainvoke({"items": []}, _config(thread_id))


async def _write(target: BackendTarget) -> Logged:
    logged = Logged(target, fresh_id("acme"), fresh_id("globex"),
                    marker=os.path.join(tempfile.gettempdir(), fresh_id("console-ran")))
    async with target.open() as log:
        await interrupted_thread(log, logged.tenant, logged.trip, answered_by=APPROVER)
        await interrupted_thread(log, logged.other, logged.trip, answered_by="someone-else")
        await interrupted_thread(log, logged.other, logged.secret)
        await crafted_thread(cast(OpenLog, log), logged.tenant, logged.crafted, logged.marker)
        await cast(OpenLog, log).retention.hold(logged.tenant, logged.trip, reason=HOLD)
        await asked_thread(cast(OpenLog, log), logged.tenant, logged.waiting)
        await settle(log)
    return logged


def logged_on(backend: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Logged]:
    """The log written once on ``backend``, for reading only (a module fixture's body)."""
    if backend == "sqlite":
        path = tmp_path_factory.mktemp("serve") / "log.db"
        yield asyncio.run(_write(BackendTarget("sqlite", f"sqlite:///{path}")))
        return
    require_postgres()
    target = BackendTarget("postgresql", PG_URL, f"t_{uuid.uuid4().hex[:12]}")
    try:
        yield asyncio.run(_write(target))
    finally:
        asyncio.run(drop_schema(target.schema))
