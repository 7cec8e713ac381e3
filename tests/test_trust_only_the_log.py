"""Retention and reads that trust only the log (issue 40 §3): the database administrator's
edits, made with SQL from outside the library on a real SQLite file and the PostgreSQL
server, of the rows retention, a sealed view read and the transparency tree used to
believe. Each is refused or ignored in favour of the log's own (signed) events.
"""

from __future__ import annotations

import asyncio
import base64
import os
from pathlib import Path

import msgspec
import pytest

from eventlog import ForgedEvent
from eventlog.checkpoints.thread_records import Payload
from eventlog.cli import EXIT_FINDINGS, EXIT_OK
from eventlog.errors import SealRefused
from eventlog.events.checkpoints import CheckpointCreated
from eventlog.events.interrupts import BatchFinalized, batch_stream
from eventlog.merkle import leaf_hash, new_nodes
from eventlog.testing.contract.checkpoints import record
from eventlog.testing.interrupts import create
from tests.cli.helpers import Run, make_runner
from tests.cli.test_digest import build, rewrite_consistently, sql
from tests.cli.test_transparency import head, keys  # noqa: F401  (a fixture)
from tests.conftest import BackendTarget
from tests.signing_outside import forge, rows

stores = pytest.mark.parametrize("target", ["sqlite", "postgresql"], indirect=True)
signed_stores = pytest.mark.parametrize("target", ["sqlite-sealed", "postgresql-sealed"],
                                        indirect=True)


async def _sessions(target: BackendTarget, *names: str, count: int = 3) -> None:
    async with target.open() as log:
        for name in names:
            for n in range(count):
                await log.checkpoints.create(record(name, {"s": name, "n": n},
                                                    checkpoint_id=f"{name}-{n}",
                                                    tenant_id="t"))


# -- 1. retention decides what protects a session from the log ----------------------------

@stores
async def test_a_pending_batch_the_dba_marked_expired_still_keeps_its_session(
    target: BackendTarget,
) -> None:
    """The DBA sets a pending batch's ``interrupt_batches`` row to ``expired`` (and
    another's row away altogether): the pass still finds both batches open in their
    streams and purges nothing of their sessions; the free session is purged."""
    await _sessions(target, "waiting", "gone-row", "free")
    async with target.open() as log:
        await create(log, "t", "waiting")
        await create(log, "t", "gone-row")
    await rows(target, "UPDATE interrupt_batches SET state = 'expired' WHERE tenant_id = $1 "
                       "AND thread_id = $2", "t", "waiting")
    await rows(target, "DELETE FROM interrupt_batches WHERE tenant_id = $1 AND thread_id = $2",
               "t", "gone-row")
    async with target.open() as log:
        report = await log.retention.apply("t", keep_latest=1)
        kept = [len(await log.checkpoints.list("t", s)) for s in ("waiting", "gone-row", "free")]
    assert ([3, 3, 1], ["gone-row", "waiting"]) == (kept, sorted(report.open_batches))


@stores
async def test_a_finished_batch_lets_its_session_go(target: BackendTarget) -> None:
    """The other way round: a batch its events end (finalized) keeps nothing, whatever
    its row says (the DBA set it back to ``pending``)."""
    await _sessions(target, "done")
    async with target.open() as log:
        batch = await create(log, "t", "done")
        await log.append("t", batch_stream(batch.batch_id),
                         [BatchFinalized(batch_id=batch.batch_id, generation=0)])
    await rows(target, "UPDATE interrupt_batches SET state = 'pending' WHERE tenant_id = $1",
               "t")
    async with target.open() as log:
        report = await log.retention.apply("t", keep_latest=1)
        kept = len(await log.checkpoints.list("t", "done"))
    assert (1, []) == (kept, report.open_batches)


@stores
def test_retention_apply_from_the_command_line_keeps_a_batch_the_dba_expired(
    target: BackendTarget, run: Run,
) -> None:
    """``eventlog retention apply`` after the DBA set a pending batch's row to
    ``expired``: exit 0, the session kept whole and reported as kept for its batch."""
    asyncio.run(_sessions(target, "waiting"))

    async def pending() -> None:
        async with target.open() as log:
            await create(log, "t", "waiting")

    asyncio.run(pending())
    asyncio.run(rows(target, "UPDATE interrupt_batches SET state = 'expired'"))
    applied = run("retention", "apply", "t", "--keep-latest", "1", "--json")

    async def kept() -> int:
        async with target.open() as log:
            return len(await log.checkpoints.list("t", "waiting"))

    assert (EXIT_OK, ["waiting"], 3) == (applied.status,
                                         applied.json()["passes"][0]["open_batches"],
                                         asyncio.run(kept()))


@signed_stores
async def test_a_forged_batch_event_refuses_the_pass(target: BackendTarget) -> None:
    """A correctly chained ``batch_finalized`` the DBA appended to a pending batch's
    stream (signed logs): the pass refuses with ForgedEvent naming that stream, and
    purges nothing."""
    await _sessions(target, "waiting")
    async with target.open() as log:
        batch = await create(log, "t", "waiting")
    stream = batch_stream(batch.batch_id)
    version = await forge(target, "t", stream,
                          BatchFinalized(batch_id=batch.batch_id, generation=0))
    async with target.open() as log:
        with pytest.raises(ForgedEvent) as refused:
            await log.retention.apply("t", keep_latest=1)
        kept = len(await log.checkpoints.list("t", "waiting"))
    assert ((stream, version, "unsigned"), 3) == (
        (refused.value.stream_id, refused.value.version, refused.value.reason), kept)


@stores
async def test_a_hold_by_subject_survives_a_cleared_subject_column(
    target: BackendTarget,
) -> None:
    """Records naming subject cust-7 (a customer shared by sessions) under legal hold;
    the DBA clears the views' ``subject`` column (checkpoints and threads): the pass
    still keeps both whole, from the subjects their events name."""
    async with target.open() as log:
        for n in range(3):
            await log.checkpoints.create(record("case", {"n": n}, checkpoint_id=f"c{n}",
                                                tenant_id="t", subject="cust-7"))
            with log.sealing_for("cust-7"):  # what an adapter's subject= does
                await log.threads.put("t", "chat", f"{n:04d}",
                                      state=Payload("json", b'{"n": %d}' % n))
        await log.retention.hold("t", "cust-7", reason="litigation")
    for table in ("checkpoints", "thread_checkpoints"):
        await rows(target, f"UPDATE {table} SET subject = NULL WHERE tenant_id = $1", "t")
    async with target.open() as log:
        report = await log.retention.apply("t", keep_latest=1)
        kept = (len(await log.checkpoints.list("t", "case")),
                len(await log.threads.page("t", "chat", payloads=False)))
    assert ((3, 3), ["case", "chat"]) == (kept, sorted(report.held))


# -- 2. a sealed view value is its row's own ------------------------------------------------

sealed_stores = signed_stores


async def _metadata_rows(target: BackendTarget) -> None:
    """Sessions alice (two checkpoints) and bob, each with sealed metadata of its own."""
    async with target.open() as log:
        for name, count in (("alice", 2), ("bob", 1)):
            for n in range(count):
                await log.checkpoints.create(record(
                    name, {"n": n}, checkpoint_id=f"{name}-{n}", tenant_id="t",
                    metadata={"note": f"{name}'s secret {n}"}))


async def _copy_metadata(target: BackendTarget, source: str, into: str) -> None:
    """The DBA's copy of one checkpoint row's sealed metadata into another's."""
    found = await rows(target, "SELECT metadata FROM checkpoints WHERE tenant_id = 't' AND "
                               "checkpoint_id = $1", source)
    await rows(target, "UPDATE checkpoints SET metadata = $1 WHERE tenant_id = 't' AND "
                       "checkpoint_id = $2", found[0][0], into)


@sealed_stores
@pytest.mark.parametrize(("source", "into", "session"), [
    ("alice-0", "bob-0", "bob"),      # another subject's row
    ("alice-0", "alice-1", "alice"),  # another record of the same session
])
async def test_a_sealed_view_value_copied_into_another_row_is_refused(
    target: BackendTarget, source: str, into: str, session: str,
) -> None:
    """A checkpoint's sealed metadata copied by SQL into another checkpoint's row (another
    subject's, or another record of the same session) is refused with SealRefused when
    that row is read, not served as its data; the rows left alone still read."""
    await _metadata_rows(target)
    await _copy_metadata(target, source, into)
    async with target.open() as log:
        with pytest.raises(SealRefused, match="copied from another row"):
            await log.checkpoints.list("t", session)
        other = "alice" if session == "bob" else "bob"
        kept = [r.metadata for r in await log.checkpoints.list("t", other)][:1]
    assert [{"note": f"{other}'s secret 0"}] == kept


@sealed_stores
async def test_an_interrupt_descriptor_copied_into_another_batch_is_refused(
    target: BackendTarget,
) -> None:
    """One batch's sealed descriptor (its interrupts' messages) copied into another
    batch's row: reading that batch is refused."""
    async with target.open() as log:
        first = await create(log, "t", "thread-a", "i1")
        second = await create(log, "t", "thread-b", "i2")
    found = await rows(target, "SELECT descriptor FROM interrupt_batches WHERE batch_id = $1",
                       first.batch_id)
    await rows(target, "UPDATE interrupt_batches SET descriptor = $1 WHERE batch_id = $2",
               found[0][0], second.batch_id)
    async with target.open() as log:
        with pytest.raises(SealRefused, match="copied from another row"):
            await log.interrupts.batches.read("t", second.batch_id)


@pytest.mark.parametrize("target", ["sqlite-sealed"], indirect=True)
async def test_values_sealed_before_records_were_bound_still_read(
    target: BackendTarget, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Metadata sealed in the first form (no record in its envelope: a log written before
    this change, made here by an event type naming no record) still reads; copied into
    another subject's row it is still refused (its stream is bound)."""
    monkeypatch.setattr(CheckpointCreated, "sealed_record", lambda self: "")
    await _metadata_rows(target)
    monkeypatch.undo()
    first_form = await rows(target, "SELECT metadata FROM checkpoints WHERE checkpoint_id = $1",
                            "alice-0")
    async with target.open() as log:
        read = [r.metadata for r in await log.checkpoints.list("t", "alice")]
    await _copy_metadata(target, "alice-0", "bob-0")
    async with target.open() as log:
        with pytest.raises(SealRefused, match="copied from another row"):
            await log.checkpoints.list("t", "bob")
    assert [{"note": "alice's secret 0"}, {"note": "alice's secret 1"}] == read
    assert b"\x00els1" in base64.b64decode(
        msgspec.json.decode(first_form[0][0])["$sealed"])


# -- 3. the tree: no head signed, and no rebuild, on rows the events do not vouch for -----

@pytest.fixture
def run(capsys: pytest.CaptureFixture[str], target: BackendTarget) -> Run:
    return make_runner(capsys, target)


@stores
def test_a_rebuild_with_the_tree_rows_deleted_does_not_launder_a_rewrite(
    target: BackendTarget, run: Run, tmp_path: Path, keys: tuple[str, str]  # noqa: F811
) -> None:
    """The issue's attack: an event rewritten and re-chained, then the tree's node rows
    deleted with SQL (and, the second time, every tree row): tree-rebuild without
    --accept-new-root refuses (exit 1, the stored tree's leaves cannot vouch for the
    events) and writes nothing; with it, it rebuilds and says what it took on trust."""
    asyncio.run(build(target))
    head(run, tmp_path, keys, "head.txt")
    asyncio.run(rewrite_consistently(target))
    asyncio.run(sql(target, "DELETE FROM tree_nodes WHERE tenant_id = 't'"))
    nodes_gone = run("tree-rebuild", "t")
    for table in ("tree_states", "tree_leaves"):
        asyncio.run(sql(target, f"DELETE FROM {table} WHERE tenant_id = 't'"))
    all_gone = run("tree-rebuild", "t", "--json")
    still_empty = asyncio.run(stored_size(target))
    forced = run("tree-rebuild", "t", "--accept-new-root")
    assert ([EXIT_FINDINGS, EXIT_FINDINGS, EXIT_OK], ["unchecked"], 0) == (
        [nodes_gone.status, all_gone.status, forced.status],
        [p["kind"] for p in all_gone.json()["problems"]], still_empty)
    assert "cannot be checked against evidence" in nodes_gone.err
    assert "warning: discarded as evidence" in forced.err


@stores
def test_a_rebuild_with_a_kept_head_covering_the_deleted_rows_goes_ahead(
    target: BackendTarget, run: Run, tmp_path: Path, keys: tuple[str, str]  # noqa: F811
) -> None:
    """Deleted tree rows are no obstacle when a kept head still vouches for every event
    they covered: tree-rebuild --head rebuilds without --accept-new-root."""
    asyncio.run(build(target))
    signed = head(run, tmp_path, keys, "head.txt")
    asyncio.run(sql(target, "DELETE FROM tree_nodes WHERE tenant_id = 't'"))
    rebuilt = run("tree-rebuild", "t", "--head", signed, "--key", keys[1], "--json")
    assert (EXIT_OK, 8) == (rebuilt.status, rebuilt.json()["size"])


@stores
def test_tree_head_signs_no_stored_tree_the_events_do_not_give(
    target: BackendTarget, run: Run, tmp_path: Path, keys: tuple[str, str]  # noqa: F811
) -> None:
    """The DBA grows the stored tree to 15 leaves over the tenant's 8 events (the nodes
    a head of 15 needs, and the state row), then, the second time, replaces its 8
    leaves' nodes by a self-consistent tree of other leaves: tree-head refuses both
    (exit 1, one line naming the mismatch) and writes no head."""
    asyncio.run(build(target))
    head(run, tmp_path, keys, "head.txt")
    for level, index in ((2, 2), (1, 6), (0, 14)):
        asyncio.run(sql(target, "INSERT INTO tree_nodes (tenant_id, level, idx, hash) VALUES "
                                "('t', $1, $2, $3)", level, index, os.urandom(32)))
    asyncio.run(sql(target, "UPDATE tree_states SET size = 15 WHERE tenant_id = 't'"))
    grown = run("tree-head", "t", "--key", keys[0], "--name", "example.org/log",
                "-o", str(tmp_path / "grown.txt"))
    asyncio.run(sql(target, "UPDATE tree_states SET size = 8 WHERE tenant_id = 't'"))
    other = new_nodes(0, [leaf_hash(os.urandom(32)) for _ in range(8)], {})
    for (level, index), digest in other.items():
        asyncio.run(sql(target, "UPDATE tree_nodes SET hash = $1 WHERE tenant_id = 't' AND "
                                "level = $2 AND idx = $3", digest, level, index))
    swapped = run("tree-head", "t", "--key", keys[0], "--name", "example.org/log",
                  "-o", str(tmp_path / "swapped.txt"))
    assert ([EXIT_FINDINGS] * 2, [1, 1], [False, False]) == (
        [grown.status, swapped.status], [len(r.err.splitlines()) for r in (grown, swapped)],
        [(tmp_path / name).exists() for name in ("grown.txt", "swapped.txt")])
    assert "it holds 15 leaves, the log 8 events of the tenant" in grown.err
    assert "is not the root the events give" in swapped.err


async def stored_size(target: BackendTarget) -> int:
    async with target.open() as log:
        return (await log.storage.tree_state("t")).size
