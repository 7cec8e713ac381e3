"""Who did it (issue 31): the actor in the hash chain, in the stored rows (changed behind the
log's back, verify finds it), in exports and in inclusion proofs."""

from __future__ import annotations

import asyncio
import io
import json
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from eventlog import InvalidInput, open_log
from eventlog.cli import EXIT_FINDINGS, EXIT_OK
from eventlog.hashing import event_hash
from eventlog.signing import generate_key_pair
from eventlog.transfer import export_log, import_log
from tests.cli.helpers import Run, make_runner
from tests.conftest import BackendTarget
from tests.events import Noted
from tests.test_tamper import edit_lines, event_of, problems, sql

every_store = pytest.mark.parametrize("target", ["sqlite", "file", "postgresql"], indirect=True)

ENVELOPE: dict[str, Any] = {
    "tenant_id": "t", "stream_id": "s", "version": 1, "event_id": uuid.UUID(int=7),
    "type": "noted", "recorded_at": datetime(2026, 1, 2, 3, 4, 5, 6, tzinfo=UTC),
    "data": b'{"text":"a"}', "prev_hash": bytes(32),
}


def test_an_event_without_an_actor_hashes_as_before_actors_existed() -> None:
    """The hash of an envelope without an actor is the one the log computed before actors
    (pinned from that code), so every log written then verifies unchanged."""
    expected = "6b38be6863baf9a99948b3b60d6e18b45cbb5a452dbddbcfc966cf81d2f74677"
    assert [expected, expected] == [event_hash(**ENVELOPE).hex(),
                                    event_hash(**ENVELOPE, actor=None).hex()]


def test_the_actor_is_hashed() -> None:
    """Naming an actor changes the hash, and two actors hash differently."""
    hashes = {event_hash(**ENVELOPE, actor=actor) for actor in (None, "alice", "bob", "alic")}
    assert 4 == len(hashes)


async def build(target: BackendTarget) -> None:
    """Stream a: three events by alice; streams b and c: one each by nobody named."""
    async with open_log(target.url, **target.options(), actor="alice") as log:
        for n in range(3):
            await log.append("t", "a", [Noted(text=f"a{n}")])
    async with open_log(target.url, **target.options()) as log:
        await log.append("t", "b", [Noted(text="b")])
        await log.append("t", "c", [Noted(text="c")])


def set_actor(target: BackendTarget, stream: str, version: int, actor: str | None) -> None:
    """Change one stored event's actor behind the log's back."""
    if target.name == "file":
        def change(line: dict[str, Any]) -> dict[str, Any]:
            if event_of(line, stream, lambda v: v == version):
                line["events"][0].pop("actor", None)
                if actor is not None:
                    line["events"][0]["actor"] = actor
            return line
        edit_lines(target, change)
        return
    asyncio.run(sql(target, "UPDATE events SET actor = $1 WHERE tenant_id = 't' AND "
                    f"stream_id = '{stream}' AND stream_version = {version}", actor))


@every_store
def test_an_actor_edited_in_the_database_breaks_verify(target: BackendTarget) -> None:
    """Another actor written over alice's, an actor removed, and one added to an event
    that had none: each a hash mismatch at that version, and nothing else."""
    asyncio.run(build(target))
    assert [] == asyncio.run(problems(target))
    set_actor(target, "a", 2, "mallory")
    set_actor(target, "a", 3, None)
    set_actor(target, "c", 1, "alice")
    assert [("t", "a", 2, "hash_mismatch"), ("t", "c", 1, "hash_mismatch")] == \
        asyncio.run(problems(target))


@pytest.mark.parametrize("target", ["sqlite", "postgresql"], indirect=True)
def test_an_export_carries_the_actor_and_an_import_keeps_it(
    target: BackendTarget, tmp_path: Path
) -> None:
    """Exported events carry their actor (and only those that have one); imported into
    another log they keep it, and the copy verifies."""
    asyncio.run(build(target))

    async def copy() -> tuple[list[dict[str, Any]], list[str | None], bool]:
        sink = io.BytesIO()
        async with open_log(target.url, **target.options()) as log:
            await export_log(log, sink, tenant_id="t")
        records = [json.loads(line) for line in sink.getvalue().splitlines()]
        async with open_log(f"sqlite:///{tmp_path / 'copy.db'}") as other:
            await import_log(other, io.BytesIO(sink.getvalue()))
            page = await other.read_all(tenant_id="t")
            return records, [e.actor for e in page.events], (await other.verify()).ok

    records, actors, ok = asyncio.run(copy())
    events = [r for r in records if r.get("kind") == "event"]
    assert [["alice"] * 3 + [None, None]] * 2 + [True] == [
        [r.get("actor") for r in events], actors, ok]
    assert ["actor" in r for r in events] == [True, True, True, False, False]


@pytest.mark.parametrize("target", ["sqlite"], indirect=True)
def test_an_import_refuses_a_malformed_actor(target: BackendTarget, tmp_path: Path) -> None:
    """An export whose event names an actor with a line break is refused as bad input
    naming its line; nothing is imported."""
    asyncio.run(build(target))

    async def run() -> tuple[str, int, int]:
        sink = io.BytesIO()
        async with open_log(target.url, **target.options()) as log:
            await export_log(log, sink, tenant_id="t")
        lines = sink.getvalue().splitlines()
        first = next(i for i, line in enumerate(lines) if b'"actor"' in line)
        record = json.loads(lines[first])
        record["actor"] = "alice\nroot"
        lines[first] = json.dumps(record).encode()
        async with open_log(f"sqlite:///{tmp_path / 'copy.db'}") as other:
            with pytest.raises(InvalidInput) as refused:
                await import_log(other, io.BytesIO(b"\n".join(lines) + b"\n"))
            return (str(refused.value), first + 1,
                    len((await other.read_all(tenant_id="t")).events))

    message, number, imported = asyncio.run(run())
    assert (True, True, 0) == (f"line {number}:" in message, "its actor" in message, imported)


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str], target: BackendTarget) -> Run:
    return make_runner(capsys, target)


@pytest.mark.parametrize("target", ["sqlite"], indirect=True)
def test_an_inclusion_proof_covers_the_actor(
    target: BackendTarget, run: Run, tmp_path: Path
) -> None:
    """An event's inclusion proof names its actor, check-proof holds; the same proof with
    the actor changed, or removed, fails (the leaf is the event hash, which covers it)."""
    asyncio.run(build(target))
    private, public = generate_key_pair()
    (tmp_path / "op.pem").write_bytes(private)
    (tmp_path / "op.pub.pem").write_bytes(public)
    signed = str(tmp_path / "head.txt")
    assert EXIT_OK == run("tree-head", "t", "--key", str(tmp_path / "op.pem"), "--name",
                          "example.org/log", "-o", signed).status

    async def first_id() -> str:
        async with open_log(target.url) as log:
            return str((await log.read_all(tenant_id="t")).events[0].event_id)

    proof = tmp_path / "proof.json"
    assert EXIT_OK == run("prove", "t", asyncio.run(first_id()), "--head", signed,
                          "-o", str(proof)).status
    document = json.loads(proof.read_text())
    changed = dict(document, event=dict(document["event"], actor="mallory"))
    removed = dict(document, event={k: v for k, v in document["event"].items()
                                    if k != "actor"})
    statuses = []
    for name, doc in (("same", document), ("changed", changed), ("removed", removed)):
        (tmp_path / f"{name}.json").write_text(json.dumps(doc))
        statuses.append(run("check-proof", str(tmp_path / f"{name}.json"), "--head", signed,
                            "--key", str(tmp_path / "op.pub.pem"), url=False).status)
    assert ("alice", [EXIT_OK, EXIT_FINDINGS, EXIT_FINDINGS]) == (
        document["event"]["actor"], statuses)


def test_open_log_refuses_a_bad_actor_before_opening_anything(tmp_path: Path) -> None:
    """`open_log(actor=...)` with a control character is `InvalidInput` naming ``actor``,
    and no database file is created."""
    async def open_bad() -> None:
        async with open_log(f"sqlite:///{tmp_path / 'x.db'}", actor="a\tb"):
            pass  # pragma: no cover

    with pytest.raises(InvalidInput, match=r"^actor: contains the control character"):
        asyncio.run(open_bad())
    assert not (tmp_path / "x.db").exists()
