"""A TCP proxy of our own between the library and PostgreSQL that cuts connections on cue.

It listens on 127.0.0.1 only, answers SSL and GSS requests with "no" itself (so the
PostgreSQL protocol stays readable), and follows each client's messages: which prepared
statement is an INSERT into the events table, which Sync or COMMIT ends an append. When an
append starts and the dice say so, it cuts that connection at the chosen instant:

* ``before``: the append's Bind never reaches the server;
* ``mid``: Bind and Execute reach the server (the insert runs), the Sync that would end the
  statement (or the transaction's next step) never does, so the server rolls it back;
* ``after``: the append is committed (its Sync, or the transaction's COMMIT, was answered
  by ReadyForQuery) and the reply is swallowed: the client never hears that it committed.

It runs its own event loop in a thread, so tests and child processes can use it freely.
"""

from __future__ import annotations

import asyncio
import random
import re
import struct
import threading
from dataclasses import dataclass, field

_NEGOTIATION_CODES = (80877103, 80877104)  # SSLRequest, GSSENCRequest
_EVENTS_INSERT = re.compile(rb"INSERT INTO [^ (]*\bevents\b", re.IGNORECASE)
MODES = ("before", "mid", "after")


@dataclass
class CutPlan:
    """When to cut: the mode, the chance per append, and at most how many cuts."""

    mode: str
    probability: float
    budget: int
    seed: int = 0
    cuts: int = 0
    appends_seen: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self._random = random.Random(self.seed)

    def roll(self) -> bool:
        """One append started: whether to cut it (and count it)."""
        with self.lock:
            self.appends_seen += 1
            if self.cuts < self.budget and self._random.random() < self.probability:
                self.cuts += 1
                return True
            return False


class _Cut(Exception):
    """Raised inside a pump to end the connection on purpose."""


class _Session:
    """One client connection and its server connection."""

    def __init__(self, proxy: PgProxy, client_r: asyncio.StreamReader,
                 client_w: asyncio.StreamWriter) -> None:
        self.proxy = proxy
        self.client_r, self.client_w = client_r, client_w
        self.statements: dict[bytes, bytes] = {}
        self.in_transaction = False
        self.tx_has_append = False
        self.pending: str | None = None  # a cut chosen for the append in flight
        self.syncs_sent = 0
        self.readies_seen = 0
        self.swallow_after_ready = -1  # swallow the reply to this sync point, then cut
        self.done = asyncio.Event()

    async def run(self) -> None:
        server_r, server_w = await asyncio.open_connection(*self.proxy.upstream)
        self.server_w = server_w
        tasks = [asyncio.ensure_future(self.client_to_server(server_w)),
                 asyncio.ensure_future(self.server_to_client(server_r))]
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for task in tasks:
            task.cancel()
        for task in done:
            task.exception()  # a cut, or one side hung up: both are the end of it
        for writer in (self.client_w, server_w):
            writer.transport.abort()

    async def client_to_server(self, server_w: asyncio.StreamWriter) -> None:
        reader = self.client_r
        while True:  # the untyped start: SSL/GSS requests, then the startup message
            head = await reader.readexactly(8)
            length, code = struct.unpack("!ii", head)
            if code in _NEGOTIATION_CODES:
                self.client_w.write(b"N")
                await self.client_w.drain()
                continue
            server_w.write(head + await reader.readexactly(length - 8))
            self.syncs_sent = 1  # the startup exchange ends with a ReadyForQuery too
            break
        while True:
            kind = await reader.readexactly(1)
            (length,) = struct.unpack("!i", await reader.readexactly(4))
            body = await reader.readexactly(length - 4)
            message = kind + struct.pack("!i", length) + body
            if await self.before_forward(kind, body):
                server_w.write(message)
                await server_w.drain()

    async def before_forward(self, kind: bytes, body: bytes) -> bool:
        """Track the conversation; cut (raise) or say whether to forward this message."""
        plan = self.proxy.plan
        if kind == b"P":
            name, _, rest = body.partition(b"\0")
            self.statements[name] = rest.partition(b"\0")[0]
        elif kind == b"B":
            statement = body.split(b"\0", 2)[1]
            if _EVENTS_INSERT.search(self.statements.get(statement, b"")):
                self.tx_has_append = self.in_transaction
                if self.pending is None and plan is not None and plan.roll():
                    self.pending = plan.mode
                    if plan.mode == "before":
                        raise _Cut
        elif kind == b"S":
            if self.pending == "mid":
                await asyncio.sleep(0.02)  # let the server run the insert, then cut
                raise _Cut
            self.syncs_sent += 1
            if self.pending == "after" and not self.in_transaction:
                self.swallow_after_ready = self.syncs_sent
                self.pending = None
        elif kind == b"Q":
            sql = body.rstrip(b"\0").strip().upper()
            self.syncs_sent += 1
            if sql.startswith((b"BEGIN", b"START TRANSACTION")):
                self.in_transaction, self.tx_has_append = True, False
            elif sql.startswith((b"COMMIT", b"ROLLBACK", b"END")):
                if self.pending == "after" and self.tx_has_append and sql.startswith(b"COMMIT"):
                    self.swallow_after_ready = self.syncs_sent
                self.pending = None
                self.in_transaction = False
        return True

    async def server_to_client(self, reader: asyncio.StreamReader) -> None:
        while True:
            kind = await reader.readexactly(1)
            length_bytes = await reader.readexactly(4)
            (length,) = struct.unpack("!i", length_bytes)
            body = await reader.readexactly(length - 4)
            if kind == b"Z":
                self.readies_seen += 1
                if self.readies_seen == self.swallow_after_ready:
                    raise _Cut  # committed; the client never hears it
            if self.swallow_after_ready >= 0 and self.readies_seen == self.swallow_after_ready - 1:
                continue  # part of the reply being swallowed
            self.client_w.write(kind + length_bytes + body)
            await self.client_w.drain()


class PgProxy:
    """``with PgProxy(("127.0.0.1", 5432)) as proxy:`` then connect to ``proxy.port``."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self.plan: CutPlan | None = None
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._server: asyncio.base_events.Server | None = None

    def __enter__(self) -> PgProxy:
        self._thread.start()
        self._server = asyncio.run_coroutine_threadsafe(self._start(), self._loop).result()
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self._stop(), self._loop).result()
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)

    def url(self, database_url: str) -> str:
        """``database_url`` with its host and port replaced by this proxy's."""
        scheme, rest = database_url.split("://", 1)
        userinfo, _, hostpart = rest.rpartition("@")
        path = hostpart.partition("/")[2]
        prefix = f"{userinfo}@" if userinfo else ""
        return f"{scheme}://{prefix}127.0.0.1:{self.port}/{path}"

    async def _start(self) -> asyncio.base_events.Server:
        return await asyncio.start_server(self._serve, "127.0.0.1", 0)

    async def _stop(self) -> None:
        assert self._server is not None
        self._server.close()
        for task in asyncio.all_tasks():
            if task is not asyncio.current_task():
                task.cancel()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        session = _Session(self, reader, writer)
        try:
            await session.run()
        except (OSError, asyncio.IncompleteReadError):
            writer.transport.abort()
