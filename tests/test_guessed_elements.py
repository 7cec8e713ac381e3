"""The latest checkpoint of an element-stored thread in one statement (issue 41: "in no
more statements than a whole state"): a store remembers the elements of the list values
it put (`ThreadCheckpoints._guess`) and asks for them in the checkpoint's own statement
(`ViewQuery.blobs`, PostgreSQL), so the read needs no second statement for them; what it
did not guess is read after, as before; a guess is never trusted for more than bytes the
database holds under that digest, opened as `get_blobs` opens them."""

from __future__ import annotations

from typing import Any

import pytest

from eventlog import open_log
from eventlog.checkpoints import ChannelValue, Payload
from eventlog.checkpoints.thread_records import Elements
from eventlog.crypto._seal import MAGIC
from eventlog.errors import CorruptBlob
from eventlog.hashing import content_digest
from tests.conftest import (
    CITUS,
    PGBOUNCER,
    SEALED_POSTGRESQL,
    SEALED_SQLITE,
    BackendTarget,
)
from tests.events import Noted
from tests.test_elements import T, chat, grow, message
from tests.test_tamper import sql


def _counting(log: Any) -> list[str]:
    """The statements the log's PostgreSQL backend runs from now on (their first words)."""
    statements: list[str] = []
    storage = log.storage
    fetch = storage._fetch

    async def counted(operation: str, text: str, *args: Any, **options: Any) -> Any:
        statements.append(text[:60])
        return await fetch(operation, text, *args, **options)

    storage._fetch = counted
    return statements


async def _latest(log: Any, thread: str = "chat") -> Any:
    found = await log.checkpoints.threads.get(T, thread)
    assert found is not None
    assert found.channels is not None
    return found.channels["messages"]


@pytest.mark.parametrize("target", ["postgresql"], indirect=True)
async def test_the_latest_checkpoint_after_a_put_is_one_statement(
        target: BackendTarget) -> None:
    """After its own puts a store reads the latest checkpoint with its elements in one
    statement; a read by id is not guessed (it may be any older checkpoint): the
    checkpoint, then its elements; a store that put nothing (another process) reads the
    same list in three, the chain's manifests between."""
    async with open_log(target.url, **target.options()) as log:
        await grow(log, "chat", 20)
        statements = _counting(log)
        assert chat(20) == await _latest(log)
        assert len(statements) == 1, statements
        statements.clear()
        found = await log.checkpoints.threads.get(T, "chat", "c0004")
        assert found is not None
        assert found.channels is not None
        assert chat(5) == found.channels["messages"]
        assert len(statements) == 2, statements
    async with open_log(target.url, **target.options()) as fresh:
        statements = _counting(fresh)
        assert chat(20) == await _latest(fresh)
        assert len(statements) == 3, statements


@pytest.mark.parametrize("target", ["postgresql"], indirect=True)
async def test_a_guess_outrun_by_another_writer_reads_the_rest_after(
        target: BackendTarget) -> None:
    """Another store (another process) puts a newer checkpoint with one more element: the
    first store's guess lacks it, so the element is read in a second statement, and the
    list is the newer one, whole."""
    async with open_log(target.url, **target.options()) as log, \
            open_log(target.url, **target.options()) as other:
        await grow(log, "chat", 10)
        await grow(other, "chat", 1, start=10)
        statements = _counting(log)
        assert chat(11) == await _latest(log)
        assert len(statements) == 2, statements


@pytest.mark.parametrize("target", ["postgresql"], indirect=True)
async def test_a_guessed_blob_the_dba_sealed_is_refused_as_get_blobs_refuses_it(
        target: BackendTarget) -> None:
    """A DBA who replaces a guessed element's bytes with a sealed-looking payload on a
    plain log: the read refuses it (`CorruptBlob`: its bytes are not its digest's), as the
    second statement's `get_blobs` does for a store that guessed nothing."""
    async with open_log(target.url, **target.options()) as log:
        await grow(log, "chat", 3)
        digest = content_digest(message(2))
        await sql(target, "UPDATE blobs SET data = $1 WHERE digest = $2",
                  MAGIC + b"forged", digest)
        with pytest.raises(CorruptBlob):
            await _latest(log)
    async with open_log(target.url, **target.options()) as fresh:
        with pytest.raises(CorruptBlob):
            await _latest(fresh)


@pytest.mark.parametrize("target", ["memory", "file", "sqlite", "postgresql", PGBOUNCER,
                                    CITUS, SEALED_SQLITE, SEALED_POSTGRESQL], indirect=True)
async def test_reads_after_puts_are_the_lists_put_on_every_backend(
        target: BackendTarget) -> None:
    """Whatever a backend does with the guess (PostgreSQL reads it; the others, and an
    encrypted log, ignore it), the latest checkpoint is the list last put, as it grows
    and after one is removed by a prune."""
    async with open_log(target.url, **target.options()) as log:
        for step in range(0, 30, 6):
            await grow(log, "chat", 6, start=step)
            assert chat(step + 6) == await _latest(log)
        await log.checkpoints.threads.prune(T, "chat")
        assert chat(30) == await _latest(log)
        await grow(log, "chat", 1, start=30)
        assert chat(31) == await _latest(log)


async def _plans(log: Any, like: str) -> list[dict[str, int]]:
    """The generic and custom plan counts of the prepared statements ``LIKE`` this on
    the log's one connection (``pool_size=1``), this query's own left out."""
    async with log.storage.driver_connection() as driver:
        rows = await driver.fetch(
            "SELECT generic_plans, custom_plans FROM pg_prepared_statements "
            "WHERE statement LIKE $1 AND statement NOT LIKE '%pg_prepared_statements%'",
            like)
    return [dict(row) for row in rows]


def _repeating(step: int) -> Elements:
    """A list of 19 items, 18 of them one repeated element (two digests to guess)."""
    return Elements((Payload("b", b"x" * 100),) * 18 + (Payload("b", f"step {step}".encode()),))


@pytest.mark.parametrize("target", ["postgresql"], indirect=True)
async def test_the_guessed_read_keeps_its_plan(target: BackendTarget) -> None:
    """PostgreSQL plans the guessed read once and runs that generic plan from the sixth
    call on (`pg_prepared_statements`), for a guess of two digests as for one of forty.
    With `unnest` of the guess a generic plan looked dearer than a custom one for a short
    guess, and each call was planned again (0.4 ms of planning for 0.15 ms of
    execution)."""
    async with open_log(target.url, pool_size=1, **target.options()) as log:
        store = log.checkpoints.threads
        for step in range(300):
            await store.put(T, "short", f"c{step:04}", state=Payload("b", b"s"),
                            channels={"messages": ChannelValue(f"v{step:04}", _repeating(step))})
        await grow(log, "long", 40)
        for thread, value in (("short", _repeating(299)), ("long", chat(40))):
            for _ in range(12):
                assert value == await _latest(log, thread)
        plans = await _plans(log, "%FROM generate_subscripts(%")
    assert len(plans) == 1
    assert plans[0]["generic_plans"] >= 18, plans[0]


@pytest.mark.parametrize("target", ["postgresql"], indirect=True)
async def test_blob_reads_keep_their_plan(target: BackendTarget) -> None:
    """`get_blobs` of two digests, twelve times on one connection: the generic plan from
    the sixth call on (with `unnest` every one of them was planned anew)."""
    payloads = [f"blob {n} ".encode() * 20 for n in range(50)]
    async with open_log(target.url, pool_size=1, **target.options()) as log:
        await log.append(T, "notes", [Noted(text="blobs")], attach=payloads)
        digests = [content_digest(payload) for payload in payloads[:2]]
        for _ in range(12):
            assert dict(zip(digests, payloads[:2], strict=True)) == await log.get_blobs(
                T, digests)
        plans = await _plans(log, "SELECT d.digest, data FROM%")
    assert len(plans) == 1
    assert plans[0]["generic_plans"] >= 6, plans[0]
