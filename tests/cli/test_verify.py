"""``eventlog verify``: exit 0 on a sound log; 1, naming what, after a stored change."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import asyncpg
import msgspec
import pytest

from eventlog import open_log
from eventlog.checkpoints import CheckpointRecord
from eventlog.cli import EXIT_FINDINGS, EXIT_OK
from eventlog.hashing import recompute_hash
from eventlog.testing.events import Noted
from tests.cli.helpers import Run, Story, url_args
from tests.conftest import PG_URL, BackendTarget

mutating = pytest.mark.parametrize("target", ["sqlite", "postgresql"], indirect=True)


def execute(target: BackendTarget, statement: str, *args: Any) -> Any:
    """Run one statement behind the log's back ($1, $2 placeholders); return a value."""
    if target.name == "sqlite":
        connection = sqlite3.connect(target.url.removeprefix("sqlite:///"))
        with connection:
            row = connection.execute(statement.replace("$1", "?").replace("$2", "?"),
                                     args).fetchone()
        connection.close()
        return None if row is None else row[0]

    async def on_postgres() -> Any:
        connection = await asyncpg.connect(PG_URL, server_settings={"search_path": target.schema})
        try:
            return await connection.fetchval(statement, *args)
        finally:
            await connection.close()

    return asyncio.run(on_postgres())


def test_a_sound_log_verifies(story: Story, run: Run) -> None:
    """Every chain and every view checks out: exit 0, no findings."""
    ran = run("verify", "--json")
    report = ran.json()
    assert (EXIT_OK, True, [], []) == (ran.status, report["ok"], report["chain_problems"],
                                       report["view_differences"])
    assert 13 == report["events"]


@mutating
def test_a_changed_byte_fails_and_names_the_link(own_story: Story, own_run: Run,
                                                  target: BackendTarget) -> None:
    """One byte of one stored event changed: exit 1 naming tenant, stream, version."""
    stream = f"session:{own_story.session}"
    where = "WHERE tenant_id = $1 AND stream_id = $2 AND stream_version = 2"
    data = bytes(execute(target, f"SELECT data FROM events {where}", own_story.tenant, stream))
    changed = data.replace(b'"step":1', b'"step":7')
    assert changed != data
    execute(target, f"UPDATE events SET data = {_blob(target, changed)} {where}",
            own_story.tenant, stream)
    ran = own_run("verify", "--json")
    problems = ran.json()["chain_problems"]
    assert EXIT_FINDINGS == ran.status
    assert [(own_story.tenant, stream, 2, "hash_mismatch")] == [
        (p["tenant_id"], p["stream_id"], p["version"], p["kind"]) for p in problems]


@mutating
def test_a_changed_view_row_fails_and_names_the_row(own_story: Story, own_run: Run,
                                                     target: BackendTarget) -> None:
    """A stored view row edited behind the log's back: exit 1 naming table, key, column."""
    execute(target, "UPDATE checkpoint_sessions SET latest_step = 99 "
                    "WHERE tenant_id = $1 AND session_id = $2", own_story.tenant, own_story.session)
    ran = own_run("verify", "--json")
    differences = ran.json()["view_differences"]
    assert EXIT_FINDINGS == ran.status
    key = [own_story.tenant, own_story.session]
    assert [("checkpoint_sessions", key, ["latest_step"], 99, 3)] == [
        (d["table"], d["key"], d["columns"], d["stored"]["latest_step"],
         d["rebuilt"]["latest_step"]) for d in differences]


@mutating
def test_people_see_the_finding_named(
    own_story: Story, own_run: Run, target: BackendTarget
) -> None:
    """Without --json the differing row and column are named in words."""
    execute(target, "UPDATE checkpoint_sessions SET latest_step = 99 "
                    "WHERE tenant_id = $1 AND session_id = $2", own_story.tenant, own_story.session)
    ran = own_run("verify")
    assert EXIT_FINDINGS == ran.status
    assert "latest_step: stored 99, log says 3" in ran.out


@mutating
def test_verify_of_one_tenant_ignores_the_others(own_story: Story, own_run: Run,
                                                  target: BackendTarget) -> None:
    """--tenant checks only that tenant: a broken view row elsewhere is not its finding."""
    execute(target, "UPDATE checkpoint_sessions SET latest_step = 99 "
                    "WHERE tenant_id = $1", own_story.other_tenant)
    assert EXIT_OK == own_run("verify", "--tenant", own_story.tenant).status
    assert EXIT_FINDINGS == own_run("verify", "--tenant", own_story.other_tenant).status


async def _write_undecodable_row(target: BackendTarget) -> None:
    """One event in stream ``s`` of tenant ``t``, then its row rewritten with the
    database's own client to bytes that hash right (its hash and the head's recomputed)
    but hold an int where `Noted.text` is a str: a row written before append refused such
    events."""
    async with open_log(target.url, **target.options()) as log:
        await log.append("t", "s", [Noted(text="words")])
        [stored] = [event async for event in log.storage.scan_streams("t")]
    bad = stored.data.replace(b'"text":"words"', b'"text":5')
    digest = recompute_hash(msgspec.structs.replace(stored, data=bad))
    where = "WHERE tenant_id = 't' AND stream_id = 's'"
    if target.name == "sqlite":
        connection = sqlite3.connect(target.url.removeprefix("sqlite:///"))
        with connection:
            connection.execute(f"UPDATE events SET data = ?, hash = ? {where}", (bad, digest))
            connection.execute(f"UPDATE stream_heads SET head_hash = ? {where}", (digest,))
        connection.close()
        return
    connection = await asyncpg.connect(PG_URL, server_settings={"search_path": target.schema})
    try:
        async with connection.transaction():
            await connection.execute(f"UPDATE events SET data = $1, hash = $2 {where}", bad,
                                     digest)
            await connection.execute(f"UPDATE stream_heads SET head_hash = $1 {where}", digest)
    finally:
        await connection.close()


@mutating
async def test_verify_reports_a_stored_row_that_does_not_decode(target: BackendTarget) -> None:
    """log.verify names the row as an ``undecodable_event`` (its chain is sound)."""
    await _write_undecodable_row(target)
    async with open_log(target.url, **target.options()) as log:
        report = await log.verify()
    assert [("t", "s", 1, "undecodable_event")] == [
        (p.tenant_id, p.stream_id, p.version, p.kind) for p in report.problems]
    assert "Expected `str`, got `int` - at `$.text`" in report.problems[0].detail


@mutating
def test_the_command_reports_a_stored_row_that_does_not_decode(
    target: BackendTarget, own_run: Run
) -> None:
    """``eventlog verify`` exits 1 and lists the row among the events that do not decode
    (with its kind), not as a broken chain; so does its JSON."""
    asyncio.run(_write_undecodable_row(target))
    ran = own_run("verify", "--json")
    found = ran.json()
    assert (EXIT_FINDINGS, [], [("undecodable_event", "t", "s", 1, "test.noted")]) == (
        ran.status, found["chain_problems"],
        [(e["kind"], e["tenant_id"], e["stream_id"], e["version"], e["type"])
         for e in found["undecodable_events"]])
    shown = own_run("verify")
    assert ("undecodable_event" in shown.out, "got `int`" in shown.out) == (True, True)


def _blob(target: BackendTarget, data: bytes) -> str:
    literal = data.hex()
    return f"X'{literal}'" if target.name == "sqlite" else f"'\\x{literal}'::bytea"


def test_verify_waits_for_the_read_horizon_on_postgresql(pg_schema: str) -> None:
    """A transaction left open elsewhere hides later commits from read_all: a real
    `eventlog verify` process waits for it to end instead of reporting the views (which
    already show those commits) as differing."""
    returncode, out, waited = asyncio.run(_verify_behind_an_open_transaction(pg_schema))
    assert (EXIT_OK, True) == (returncode, json.loads(out)["ok"])
    assert waited >= 0.5


async def _verify_behind_an_open_transaction(schema: str) -> tuple[int, bytes, float]:
    target = BackendTarget("postgresql", PG_URL, schema)
    blocker = await asyncpg.connect(PG_URL)
    transaction = blocker.transaction()
    await transaction.start()
    await blocker.fetchval("SELECT pg_current_xact_id()")
    async with open_log(target.url, **target.options()) as log:
        await log.checkpoints.create(CheckpointRecord(
            tenant_id="t", session_id="s", run_id=uuid.uuid4(), state={"late": True}))
    started = time.monotonic()
    verify = await asyncio.create_subprocess_exec(
        str(Path(sys.executable).with_name("eventlog")), "verify", "--json", *url_args(target),
        stdout=asyncio.subprocess.PIPE)
    await asyncio.sleep(1.0)
    await transaction.rollback()
    await blocker.close()
    out, _ = await verify.communicate()
    assert verify.returncode is not None
    return verify.returncode, out, time.monotonic() - started
