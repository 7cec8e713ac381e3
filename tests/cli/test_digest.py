"""``eventlog digest`` and ``verify --digest``: tampering that hides from verify alone.

Someone who can write the database can rewrite events, their hashes and the stream head
rows consistently, drop a whole stream, or cut a stream's tail and its head row: every
chain still verifies. A digest taken before and kept elsewhere catches each of them.
"""

from __future__ import annotations

import asyncio
import json
import re
import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import asyncpg
import msgspec
import pytest

from eventlog import open_log
from eventlog.cli import EXIT_FINDINGS, EXIT_OK, EXIT_USAGE
from eventlog.cli.digest import MAX_DIGEST_FILE_BYTES
from eventlog.digest import LogDigest, check_digest, decode_digest, encode_digest, take_digest
from eventlog.hashing import event_hash
from tests.cli.helpers import Run
from tests.conftest import PG_URL, BackendTarget
from tests.events import Noted
from tests.procs.settle import settle
from tests.test_blob_tamper import build as build_blobs
from tests.test_blob_tamper import shared_digest

sql_stores = pytest.mark.parametrize("target", ["sqlite", "postgresql"], indirect=True)


async def build(target: BackendTarget) -> None:
    """Tenant t: stream a with versions 1..5, stream b with 1..3; tenant u: stream a."""
    async with open_log(target.url, **target.options()) as log:
        for version in range(1, 6):
            await log.append("t", "a", [Noted(text=f"a{version}")])
            if version <= 3:
                await log.append("t", "b", [Noted(text=f"b{version}")])
        await log.append("u", "a", [Noted(text="other tenant")])


async def sql(target: BackendTarget, statement: str, *args: Any) -> None:
    """Run one statement on the store's database behind the log's back ($n parameters)."""
    if target.name == "sqlite":
        connection = sqlite3.connect(target.url.removeprefix("sqlite:///"))
        with connection:
            connection.execute(re.sub(r"\$\d+", "?", statement), args)
        connection.close()
        return
    pg = await asyncpg.connect(PG_URL, server_settings={"search_path": target.schema})
    try:
        await pg.execute(statement, *args)
    finally:
        await pg.close()


async def rewrite_consistently(target: BackendTarget) -> None:
    """Forge t/b version 2, recompute the hashes of versions 2 and 3, fix the head row."""
    async with open_log(target.url, **target.options()) as log:
        events = [event async for event in log.read_stream("t", "b")]
    previous = events[0].hash
    for event in events[1:]:
        data = msgspec.json.encode(Noted(text="forged")) if event.version == 2 else event.data
        digest = event_hash(tenant_id="t", stream_id="b", version=event.version,
                            event_id=event.event_id, type=event.type,
                            recorded_at=event.recorded_at, data=data, prev_hash=previous)
        await sql(target, "UPDATE events SET data = $1, prev_hash = $2, hash = $3 WHERE "
                  "tenant_id = 't' AND stream_id = 'b' AND stream_version = $4",
                  data, previous, digest, event.version)
        previous = digest
    await sql(target, "UPDATE stream_heads SET head_hash = $1 WHERE tenant_id = 't' AND "
              "stream_id = 'b'", previous)


async def drop_stream(target: BackendTarget) -> None:
    """Delete every event of t/b and its head row."""
    await sql(target, "DELETE FROM events WHERE tenant_id = 't' AND stream_id = 'b'")
    await sql(target, "DELETE FROM stream_heads WHERE tenant_id = 't' AND stream_id = 'b'")


async def cut_tail(target: BackendTarget) -> None:
    """Delete t/a version 5 and move its head row back to version 4."""
    async with open_log(target.url, **target.options()) as log:
        fourth = [event async for event in log.read_stream("t", "a")][3]
    await sql(target, "DELETE FROM events WHERE tenant_id = 't' AND stream_id = 'a' AND "
              "stream_version = 5")
    await sql(target, "UPDATE stream_heads SET version = 4, head_hash = $1, last_position = "
              "$2 WHERE tenant_id = 't' AND stream_id = 'a'", fourth.hash, fourth.position)


TAMPERINGS = {
    "rewrite": (rewrite_consistently, ("t", "b", 3, "stream_rewritten")),
    "drop": (drop_stream, ("t", "b", 3, "stream_missing")),
    "cut": (cut_tail, ("t", "a", 5, "stream_cut")),
}


async def digest_then_tamper(target: BackendTarget, tampering: str) -> LogDigest:
    """Build the log, take a digest, then tamper with the database; the digest."""
    await build(target)
    async with open_log(target.url, **target.options()) as log:
        await settle(log)
        digest = await take_digest(log)
    await TAMPERINGS[tampering][0](target)
    return digest


@sql_stores
@pytest.mark.parametrize("tampering", sorted(TAMPERINGS))
async def test_tampering_hidden_from_verify_is_caught_by_the_digest(
    target: BackendTarget, tampering: str,
) -> None:
    """verify alone passes; checking the digest names the stream and what happened."""
    digest = await digest_then_tamper(target, tampering)
    async with open_log(target.url, **target.options()) as log:
        report = await log.verify()
        found = await check_digest(log, digest)
    assert [] == report.problems
    assert [TAMPERINGS[tampering][1]] == [
        (p.tenant_id, p.stream_id, p.version, p.kind) for p in found]


@sql_stores
async def test_untouched_log_passes_its_digest(target: BackendTarget) -> None:
    """A log that only grew since the digest passes it."""
    await build(target)
    async with open_log(target.url, **target.options()) as log:
        await settle(log)
        digest = await take_digest(log)
        await log.append("t", "a", [Noted(text="later")])
        await log.append("t", "new", [Noted(text="new stream")])
        assert [] == await check_digest(log, digest)
    assert 3 == len(digest.streams)


def test_digest_document_round_trips_and_refuses_edits() -> None:
    """decode(encode(d)) == d; a changed head, version or garbage is refused by name."""
    empty = LogDigest(taken_at=datetime(2030, 1, 1, tzinfo=UTC), tenant_id=None, streams=())
    assert empty == decode_digest(encode_digest(empty))

    async def sample() -> LogDigest:
        async with open_log("memory://") as log:
            await log.append("t", "a", [Noted(text="x")])
            return await take_digest(log)
    real = asyncio.run(sample())
    assert real == decode_digest(encode_digest(real))
    document = json.loads(encode_digest(real))
    document["streams"][0]["version"] = 7
    with pytest.raises(Exception, match="does not match its heads"):
        decode_digest(json.dumps(document).encode())
    document = json.loads(encode_digest(real))
    document["version"] = True
    with pytest.raises(Exception, match="unsupported version"):
        decode_digest(json.dumps(document).encode())
    with pytest.raises(Exception, match="not a JSON document"):
        decode_digest(b"{not json")


@sql_stores
def test_command_digest_then_verify_names_the_rewritten_stream(
    own_run: Run, target: BackendTarget, tmp_path: Path,
) -> None:
    """`eventlog digest -o F` then tampering: `verify` exits 0, `verify --digest F` exits 1
    naming the stream; JSON lists the finding."""
    asyncio.run(build(target))
    kept = tmp_path / "digest.json"
    written = own_run("digest", "-o", str(kept))
    assert EXIT_OK == written.status, written.err
    assert 3 == len(json.loads(kept.read_text())["streams"])
    asyncio.run(rewrite_consistently(target))
    assert EXIT_OK == own_run("verify").status
    checked = own_run("verify", "--digest", str(kept), "--json")
    assert EXIT_FINDINGS == checked.status
    assert [("t", "b", "stream_rewritten")] == [(p["tenant_id"], p["stream_id"], p["kind"])
                                               for p in checked.json()["digest"]["problems"]]


@sql_stores
def test_verify_says_how_many_streams_the_digest_held(
    own_run: Run, target: BackendTarget, tmp_path: Path,
) -> None:
    """On an untouched log `verify --digest F` says how many streams were held against the
    digest and that all reached their recorded heads; --json carries the same."""
    asyncio.run(build(target))
    kept = tmp_path / "digest.json"
    assert EXIT_OK == own_run("digest", "-o", str(kept)).status
    said = own_run("verify", "--digest", str(kept))
    checked = own_run("verify", "--digest", str(kept), "--json").json()["digest"]
    assert EXIT_OK == said.status
    assert re.search(rf"Digest {re.escape(str(kept))} \(taken [^)]+\): 3 streams held "
                     r"against it: all reached their recorded heads", said.out), said.out
    assert (str(kept), 3, 3, []) == (checked["file"], checked["streams_held"],
                                     checked["streams_at_heads"], checked["problems"])


@sql_stores
def test_command_refuses_an_edited_digest_file(
    own_run: Run, target: BackendTarget, tmp_path: Path,
) -> None:
    """A digest file changed after it was written is a finding naming the file (exit 1,
    as a signature that does not hold is)."""
    asyncio.run(build(target))
    kept = tmp_path / "digest.json"
    assert EXIT_OK == own_run("digest", "-o", str(kept)).status
    kept.write_text(kept.read_text().replace('"version":5', '"version":4'))
    refused = own_run("verify", "--digest", str(kept))
    assert EXIT_FINDINGS == refused.status
    assert str(kept) in refused.err
    assert "does not match its heads" in refused.err


@sql_stores
def test_command_writes_no_digest_of_a_broken_log(
    own_run: Run, target: BackendTarget, tmp_path: Path,
) -> None:
    """A log whose chains do not verify gets no digest (exit 1, nothing written)."""
    asyncio.run(build(target))
    asyncio.run(sql(target, "UPDATE events SET hash = $1 WHERE tenant_id = 't' AND "
                    "stream_id = 'a' AND stream_version = 2", b"\x00" * 32))
    kept = tmp_path / "digest.json"
    refused = own_run("digest", "-o", str(kept))
    assert EXIT_FINDINGS == refused.status
    assert not kept.exists()
    assert "hash_mismatch" in refused.err


@pytest.mark.parametrize("target", ["sqlite"], indirect=True)
def test_command_names_a_blob_finding_by_its_streams(
    own_run: Run, target: BackendTarget, tmp_path: Path,
) -> None:
    """A log with a blob finding gets no digest; the refusal names the blob's finding
    and every stream that references it, not a stream at "v0"."""
    asyncio.run(build_blobs(target))
    asyncio.run(sql(target, "UPDATE blobs SET refs = 1 WHERE digest = $1", shared_digest()))
    refused = own_run("digest", "-o", str(tmp_path / "digest.json"))
    assert EXIT_FINDINGS == refused.status
    assert (f"t blob_refs: blob {shared_digest().hex()[:16]}…: stored count 1, the events "
            "hold 2 references (referenced by session:s1, session:s2)") in refused.err


@pytest.mark.parametrize("target", ["sqlite"], indirect=True)
def test_command_refuses_a_digest_file_too_large_to_be_one(
    own_run: Run, target: BackendTarget, tmp_path: Path,
) -> None:
    """A file larger than any digest (a sparse 1 GiB one) is a usage error naming it and
    the limit, refused by its size, unread (/dev/zero, read up to the limit, is
    `pytest -m growth`'s)."""
    huge = tmp_path / "huge.json"
    with huge.open("wb") as sink:
        sink.truncate(1024 * 1024 * 1024)
    refused = own_run("verify", "--digest", str(huge))
    assert EXIT_USAGE == refused.status, refused.err
    assert (f"digest {huge} is larger than {MAX_DIGEST_FILE_BYTES} bytes, the most a "
            "digest file holds") in refused.err, refused.err


@pytest.mark.parametrize("target", ["sqlite"], indirect=True)
def test_command_writes_no_digest_too_large_for_verify_to_read(
    own_run: Run, target: BackendTarget, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A digest longer than verify --digest reads (the limit made small here) is not
    written: a usage error saying its size and suggesting one per tenant."""
    asyncio.run(build(target))
    monkeypatch.setattr("eventlog.cli.digest.MAX_DIGEST_FILE_BYTES", 100)
    kept = tmp_path / "digest.json"
    refused = own_run("digest", "-o", str(kept))
    assert EXIT_USAGE == refused.status
    assert not kept.exists()
    assert "the digest would hold 3 streams in " in refused.err
    assert "more than the 100 a digest file may hold" in refused.err
    assert "--tenant" in refused.err
