"""Tampering with stored data is found: verify names the stream, version and kind.

Each test builds the same small log, closes it, changes the stored data behind the log's
back (raw SQL on SQLite and PostgreSQL, an edit of events.jsonl for the file store),
reopens it and checks what `verify` and `compare_views` report.
"""

from __future__ import annotations

import base64
import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from eventlog import StreamProblem, open_log
from projections import Upsert, compare_views
from tests.conftest import PG_URL, BackendTarget
from tests.events import Noted
from tests.procs.settle import settle

every_store = pytest.mark.parametrize("target", ["sqlite", "file", "postgresql"], indirect=True)

LineFilter = Callable[[dict[str, Any]], bool]


async def build(target: BackendTarget) -> None:
    """Stream a: versions 1..5, stream b: 1..3, one event per append; another tenant too."""
    async with open_log(target.url, **target.options()) as log:
        for version in range(1, 6):
            await log.append("t", "a", [Noted(text=f"a{version}")])
            if version <= 3:
                await log.append("t", "b", [Noted(text=f"b{version}")])
        await log.append("other", "a", [Noted(text="untouched")])


async def problems(target: BackendTarget) -> list[tuple[str, str, int, str]]:
    """Reopen and verify: each problem as (tenant, stream, version, kind)."""
    async with open_log(target.url, **target.options()) as log:
        report = await log.verify()
    return [(p.tenant_id, p.stream_id, p.version, p.kind) for p in report.problems]


async def sql(target: BackendTarget, statement: str, *args: Any) -> None:
    """Run one statement on the store's database, bypassing the log."""
    if target.name == "sqlite":
        connection = sqlite3.connect(target.url.removeprefix("sqlite:///"))
        with connection:
            connection.execute(statement.replace("$1", "?").replace("$2", "?"), args)
        connection.close()
        return
    pg = await asyncpg.connect(PG_URL, server_settings={"search_path": target.schema})
    try:
        await pg.execute(statement, *args)
    finally:
        await pg.close()


def edit_lines(target: BackendTarget, edit: Callable[[dict[str, Any]], dict[str, Any] | None]
               ) -> None:
    """Rewrite events.jsonl line by line; ``edit`` returns a line, or None to drop it."""
    path = Path(target.url.removeprefix("file://")) / "events.jsonl"
    kept = []
    for raw in path.read_bytes().splitlines():
        line = edit(json.loads(raw))
        if line is not None:
            kept.append(json.dumps(line, separators=(",", ":")).encode())
    path.write_bytes(b"".join(line + b"\n" for line in kept))


def event_of(line: dict[str, Any], stream: str, versions: Callable[[int], bool]) -> bool:
    """Whether a file-store line holds an event of tenant t's ``stream`` at such a version."""
    return (line["tenant"], line["stream"]) == ("t", stream) and any(
        versions(event["version"]) for event in line["events"]
    )


def flip_text(data: bytes) -> bytes:
    """The same JSON with one byte of the event's text changed (still decodable)."""
    at = data.index(b'"text":"') + len(b'"text":"')
    return data[:at] + b"X" + data[at + 1 :]


@every_store
async def test_changed_byte_is_a_hash_mismatch(target: BackendTarget) -> None:
    """One changed byte of stored event data: hash_mismatch at that version."""
    await build(target)
    if target.name == "file":
        def change(line: dict[str, Any]) -> dict[str, Any]:
            if event_of(line, "a", lambda version: version == 3):
                data = flip_text(base64.b64decode(line["events"][0]["data"]))
                line["events"][0]["data"] = base64.b64encode(data).decode()
            return line
        edit_lines(target, change)
    else:
        data = await fetch_data(target, "a", 3)
        await sql(target, "UPDATE events SET data = $1 WHERE tenant_id = 't' AND "
                  "stream_id = 'a' AND stream_version = 3", flip_text(data))
    assert [("t", "a", 3, "hash_mismatch")] == await problems(target)


@every_store
async def test_deleted_middle_version_is_missing(target: BackendTarget) -> None:
    """A deleted middle event: missing_version naming the hole."""
    await build(target)
    if target.name == "file":
        edit_lines(target, lambda line: None if event_of(line, "a", lambda v: v == 3) else line)
    else:
        await sql(target, "DELETE FROM events WHERE tenant_id = 't' AND stream_id = 'a' AND "
                  "stream_version = 3")
    assert [("t", "a", 3, "missing_version")] == await problems(target)


@every_store
async def test_truncated_tail_is_reported(target: BackendTarget) -> None:
    """The last events of a stream removed: truncated at the first missing version."""
    await build(target)
    if target.name == "file":
        edit_lines(target, lambda line: None if event_of(line, "a", lambda v: v >= 4) else line)
    else:
        await sql(target, "DELETE FROM events WHERE tenant_id = 't' AND stream_id = 'a' AND "
                  "stream_version >= 4")
    assert [("t", "a", 4, "truncated")] == await problems(target)


@every_store
async def test_stream_deleted_whole_is_reported(target: BackendTarget) -> None:
    """Every event of a stream removed: truncated at version 1."""
    await build(target)
    if target.name == "file":
        edit_lines(target, lambda line: None if event_of(line, "b", lambda v: True) else line)
    else:
        await sql(target, "DELETE FROM events WHERE tenant_id = 't' AND stream_id = 'b'")
    assert [("t", "b", 1, "truncated")] == await problems(target)


@every_store
async def test_changed_previous_hash_is_a_broken_link(target: BackendTarget) -> None:
    """A rewritten prev_hash: broken_link at that version."""
    await build(target)
    if target.name == "file":
        def change(line: dict[str, Any]) -> dict[str, Any]:
            if event_of(line, "b", lambda version: version == 2):
                line["events"][0]["prev"] = "00" * 32
            return line
        edit_lines(target, change)
    else:
        await sql(target, "UPDATE events SET prev_hash = $1 WHERE tenant_id = 't' AND "
                  "stream_id = 'b' AND stream_version = 2", bytes(32))
    assert [("t", "b", 2, "broken_link")] == await problems(target)


@every_store
async def test_several_tampered_streams_are_each_named(target: BackendTarget) -> None:
    """Problems in two streams are both reported, each at its first problem only."""
    await build(target)
    if target.name == "file":
        edit_lines(target, lambda line: None if event_of(line, "a", lambda v: v in (2, 4))
                   or event_of(line, "b", lambda v: v == 3) else line)
    else:
        await sql(target, "DELETE FROM events WHERE tenant_id = 't' AND ((stream_id = 'a' AND "
                  "stream_version IN (2, 4)) OR (stream_id = 'b' AND stream_version = 3))")
    assert [("t", "a", 2, "missing_version"), ("t", "b", 3, "truncated")] == await problems(
        target
    )


@every_store
async def test_verify_reports_the_facts_of_a_problem(target: BackendTarget) -> None:
    """A problem carries tenant, stream, version, kind and a readable detail."""
    await build(target)
    if target.name == "file":
        edit_lines(target, lambda line: None if event_of(line, "a", lambda v: v == 2) else line)
    else:
        await sql(target, "DELETE FROM events WHERE tenant_id = 't' AND stream_id = 'a' AND "
                  "stream_version = 2")
    async with open_log(target.url, **target.options()) as log:
        report = await log.verify(tenant_id="t")
    assert [StreamProblem(tenant_id="t", stream_id="a", version=2, kind="missing_version",
                          detail="version 2 is missing (next stored is 3)")] == report.problems
    assert (2, 7) == (report.streams, report.events)


@every_store
async def test_edited_view_row_is_a_view_difference(target: BackendTarget) -> None:
    """A stream-heads row changed by hand differs from the rebuild, and nowhere else."""
    await build(target)
    async with open_log(target.url, **target.options()) as log:
        if target.name == "file":  # the file store's views live in memory
            row = (await log.storage.dump_views())["stream_heads"][0]
            log.storage.views.apply(Upsert("stream_heads", {**row, "last_position": 999}), 0)  # type: ignore[attr-defined]
        else:
            await sql(target, "UPDATE stream_heads SET last_position = 999 WHERE "
                      "tenant_id = 'other'")
        await settle(log)
        differences = await compare_views(log)
    assert [("stream_heads", 999)] == [
        (difference.table, difference.stored["last_position"])  # type: ignore[index]
        for difference in differences
    ]
    assert differences[0].rebuilt is not None
    assert differences[0].rebuilt["last_position"] != 999


async def fetch_data(target: BackendTarget, stream: str, version: int) -> bytes:
    """The stored bytes of one event of tenant t."""
    query = ("SELECT data FROM events WHERE tenant_id = 't' AND stream_id = $1 AND "
             "stream_version = $2")
    if target.name == "sqlite":
        connection = sqlite3.connect(target.url.removeprefix("sqlite:///"))
        (data,) = connection.execute(query.replace("$1", "?").replace("$2", "?"),
                                     (stream, version)).fetchone()
        connection.close()
        return bytes(data)
    pg = await asyncpg.connect(PG_URL, server_settings={"search_path": target.schema})
    try:
        return bytes(await pg.fetchval(query, stream, version))
    finally:
        await pg.close()




@pytest.mark.parametrize("target", ["sqlite", "postgresql"], indirect=True)
async def test_stream_whose_head_row_is_gone_is_reported(target: BackendTarget) -> None:
    """Events with no stream-heads row: the tail could be cut unseen, so verify says so."""
    await build(target)
    await sql(target, "DELETE FROM events WHERE tenant_id = 't' AND stream_id = 'b' AND "
              "stream_version = 3")
    await sql(target, "DELETE FROM stream_heads WHERE tenant_id = 't' AND stream_id = 'b'")
    assert [("t", "b", 2, "head_mismatch")] == await problems(target)
