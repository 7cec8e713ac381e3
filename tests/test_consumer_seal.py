"""Consumers the database administrator cannot steer (issue 40 §5): in a log with a writer
key each consumer's row is signed, so an edit made with SQL from outside the library (on a
real SQLite file and the PostgreSQL server) — a cursor moved forward or past the end, a
fencing token taken back, a row written back from before, a scope widened — is refused
with `ConsumerTampered` instead of obeyed, and one bad row never breaks the listing.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from eventlog import (
    ConsumerFenced,
    ConsumerTampered,
    EventLog,
    InvalidInput,
    open_log,
)
from eventlog.cli import EXIT_FINDINGS, EXIT_OK
from eventlog.records import RecordedEvent
from eventlog.testing.events import Noted
from tests.cli.helpers import make_runner
from tests.conftest import BackendTarget
from tests.signing_outside import rows

signed_stores = pytest.mark.parametrize("target", ["sqlite-sealed", "postgresql-sealed"],
                                        indirect=True)
every_sql_store = pytest.mark.parametrize(
    "target", ["sqlite", "postgresql", "sqlite-sealed", "postgresql-sealed"], indirect=True)


async def take(subscription: Any, count: int) -> list[RecordedEvent]:
    """The next ``count`` events of a subscription (failing after 20 s)."""
    taken: list[RecordedEvent] = []
    while len(taken) < count:
        taken += await asyncio.wait_for(subscription.next_batch(count - len(taken)), 20)
    return taken


def texts(events: list[RecordedEvent]) -> list[str]:
    return [event.event.text for event in events]  # type: ignore[attr-defined]


async def noted(log: EventLog, count: int, tenant: str = "t") -> None:
    for number in range(count):
        await log.append(tenant, "s", [Noted(text=str(number))])
    await log.wait_readable()


async def stored(target: BackendTarget, name: str) -> tuple[Any, ...]:
    """The consumer's row as the administrator reads it: (cursor, token, signature)."""
    found = await rows(target, "SELECT cursor, token, signature FROM consumers "
                               "WHERE name = $1", name)
    return found[0]


async def acked_through(target: BackendTarget, name: str, count: int) -> None:
    """A consumer ``name`` that acknowledged the first ``count`` events, then let go."""
    async with target.open() as log, log.subscribe(name, poll_interval=0.1) as sub:
        events = await take(sub, count)
        await sub.ack(events[-1])


@signed_stores
async def test_a_cursor_moved_forward_is_refused_not_skipped(target: BackendTarget) -> None:
    """The administrator copies a further consumer's cursor into this one's row: reopened,
    it raises `ConsumerTampered` (forged) and delivers nothing, instead of silently
    skipping the events in between; the listing names the row."""
    async with target.open() as log:
        await noted(log, 5)
    await acked_through(target, "c", 1)
    await acked_through(target, "probe", 4)
    await rows(target, "UPDATE consumers SET cursor = (SELECT cursor FROM consumers "
                       "WHERE name = 'probe') WHERE name = 'c'")
    async with target.open() as log:
        with pytest.raises(ConsumerTampered) as refused:
            async with log.subscribe("c", poll_interval=0.1) as sub:
                await sub.next_batch(10, wait=False)
        listed = {info.name: info for info in await log.consumers()}
    assert refused.value.reason == "forged"
    assert "consumer 'c'" in str(refused.value)
    assert (listed["c"].problem or "").startswith("forged")
    assert (listed["probe"].problem, listed["probe"].lag_events) == (None, 1)


@signed_stores
async def test_a_cursor_past_the_end_is_refused_and_a_reset_restores_delivery(
    target: BackendTarget,
) -> None:
    """A cursor set to the maximum (delivery would stop for good) is refused; the
    operator's reset, signed by the writer key, brings every event back."""
    async with target.open() as log:
        await noted(log, 3)
    await acked_through(target, "c", 1)
    huge = "p:9223372036854775000" if target.name == "sqlite" else (
        "x:9223372036854775000:9223372036854775000")
    await rows(target, "UPDATE consumers SET cursor = $1 WHERE name = 'c'", huge)
    async with target.open() as log:
        with pytest.raises(ConsumerTampered):
            async with log.subscribe("c", poll_interval=0.1):
                pass
        await log.reset_consumer("c", "beginning")
        async with log.subscribe("c", poll_interval=0.1) as sub:
            assert ["0", "1", "2"] == texts(await take(sub, 3))


@signed_stores
async def test_a_token_taken_back_does_not_readmit_a_fenced_holder(
    target: BackendTarget,
) -> None:
    """A holder fenced by a reset stays fenced when the administrator takes the token
    back: its ack is refused (`ConsumerTampered`: the row is not the one it wrote) and
    stores nothing; the row is refused to the next opener too."""
    async with target.open() as log:
        await noted(log, 3)
        async with log.subscribe("c", poll_interval=0.1) as sub:
            events = await take(sub, 3)
            await log.reset_consumer("c", "beginning")
            await rows(target, "UPDATE consumers SET token = token - 1 WHERE name = 'c'")
            with pytest.raises(ConsumerTampered) as refused:
                await sub.ack(events[2])
        assert (None, 1) == (await stored(target, "c"))[:2]
        with pytest.raises(ConsumerTampered):
            async with log.subscribe("c", poll_interval=0.1):
                pass
    assert refused.value.reason == "forged"


@signed_stores
async def test_a_row_written_back_under_its_holder_is_named(target: BackendTarget) -> None:
    """The administrator saves the row (signature and all) and writes it back after the
    next claim: the current holder's next write names it (`ConsumerTampered`,
    rolled_back: its token went back) instead of being fenced in silence."""
    async with target.open() as log:
        await noted(log, 3)
    await acked_through(target, "c", 1)
    columns = "cursor, token, holder, lease_until, updated_at, signature"
    saved = (await rows(target, f"SELECT {columns} FROM consumers WHERE name = 'c'"))[0]
    async with target.open() as log, log.subscribe("c", poll_interval=0.1) as sub:
        events = await take(sub, 2)
        await rows(target, "UPDATE consumers SET cursor = $1, token = $2, holder = $3, "
                           "lease_until = $4, updated_at = $5, signature = $6 "
                           "WHERE name = 'c'", *saved)
        with pytest.raises(ConsumerTampered) as refused:
            await sub.ack(events[1])
    assert refused.value.reason == "rolled_back"
    assert "went back" in str(refused.value)


@signed_stores
async def test_a_widened_scope_is_refused(target: BackendTarget) -> None:
    """A consumer of one tenant whose row the administrator widens to the whole log is
    refused: the tenant wall is not the row's to move."""
    async with target.open() as log:
        await noted(log, 2, tenant="t1")
        await noted(log, 2, tenant="t2")
        async with log.subscribe("c", tenant_id="t1", poll_interval=0.1) as sub:
            await sub.ack((await take(sub, 1))[0])
    await rows(target, "UPDATE consumers SET scope_tenant = NULL WHERE name = 'c'")
    async with target.open() as log:
        with pytest.raises(ConsumerTampered):
            async with log.subscribe("c", poll_interval=0.1):
                pass


@signed_stores
async def test_an_edit_under_a_running_projection_commits_nothing(
    target: BackendTarget,
) -> None:
    """A projection's batch whose row was moved forward under it raises
    `ConsumerTampered` before its handler runs: nothing is committed, and the edit is
    obeyed by nobody."""
    handled: list[str] = []

    async def handler(event: RecordedEvent, connection: Any) -> None:
        handled.append(event.event.text)  # type: ignore[attr-defined]

    async with target.open() as log:
        await noted(log, 6)
        await acked_through(target, "probe", 5)
        async with log.subscribe("c", poll_interval=0.1) as sub:
            assert 2 == await sub.project_batch(handler, 2, wait=False)
            await rows(target, "UPDATE consumers SET cursor = (SELECT cursor FROM consumers "
                               "WHERE name = 'probe') WHERE name = 'c'")
            edited = await stored(target, "c")
            with pytest.raises(ConsumerTampered) as refused:
                await sub.project_batch(handler, 2, wait=False)
        assert edited == await stored(target, "c")  # nothing committed over it
        with pytest.raises(ConsumerTampered):
            async with log.subscribe("c", poll_interval=0.1):
                pass
    assert refused.value.reason == "forged"
    assert ["0", "1"] == handled  # refused before the handler was given the batch


async def unsigned_row(target: BackendTarget) -> str:
    """Three events, consumer ``c`` acknowledged through two, its signature removed; the
    cursor it stands at."""
    async with target.open() as log:
        await noted(log, 3)
    await acked_through(target, "c", 2)
    cursor: str = (await stored(target, "c"))[0]
    await rows(target, "UPDATE consumers SET signature = NULL WHERE name = 'c'")
    return cursor


async def refusal(target: BackendTarget, name: str) -> ConsumerTampered:
    async with target.open() as log:
        with pytest.raises(ConsumerTampered) as refused:
            async with log.subscribe(name, poll_interval=0.1):
                pass
    return refused.value


async def delivered(target: BackendTarget, name: str, count: int) -> list[str]:
    async with target.open() as log, log.subscribe(name, poll_interval=0.1) as sub:
        return texts(await take(sub, count))


@signed_stores
def test_an_unsigned_row_is_refused_until_the_operator_adopts_it(
    target: BackendTarget, capsys: pytest.CaptureFixture[str],
) -> None:
    """A row without a signature (as a row from before signing, or one whose signature
    the administrator removed) is refused and listed as unsigned; ``eventlog consumers
    reset NAME --to CURSOR`` signs it, and the consumer resumes there."""
    cursor = asyncio.run(unsigned_row(target))
    assert asyncio.run(refusal(target, "c")).reason == "unsigned"
    assert target.keyring is not None
    run = make_runner(capsys, target)
    keyring = ["--keyring", target.keyring]
    listed = run("consumers", "--json", *keyring)
    reset = run("consumers", "reset", "c", "--to", cursor, *keyring)
    relisted = run("consumers", *keyring)
    assert (EXIT_FINDINGS, EXIT_OK, EXIT_OK) == (listed.status, reset.status, relisted.status)
    assert '"problem": "unsigned' in listed.out
    assert ["2"] == asyncio.run(delivered(target, "c", 1))


@every_sql_store
async def test_one_bad_row_does_not_break_the_listing(target: BackendTarget) -> None:
    """A cursor that is no cursor (and, on SQLite, a token that is no number) flags its
    own consumer in `consumers`, and the others are listed with their lag; opening the
    bad one raises `ConsumerTampered` naming it (unreadable, or forged where rows are
    signed)."""
    await bad_and_good(target)
    async with target.open() as log:
        listed = {info.name: info for info in await log.consumers()}
        with pytest.raises(ConsumerTampered) as refused:
            async with log.subscribe("a-bad", poll_interval=0.1) as sub:
                await sub.next_batch(1, wait=False)
    assert "consumer 'a-bad'" in str(refused.value)
    assert refused.value.reason == ("unreadable" if target.keyring is None else "forged")
    assert listed["a-bad"].problem is not None
    assert (listed["b-good"].problem, listed["b-good"].lag_events) == (None, 2)
    if target.name == "sqlite":
        await rows(target, "UPDATE consumers SET token = 'abc' WHERE name = 'a-bad'")
        async with target.open() as log:
            infos = await log.consumers()
        assert "unreadable" in (infos[0].problem or "")
        assert infos[1].lag_events == 2


async def bad_and_good(target: BackendTarget) -> None:
    """Consumers ``a-bad`` (its cursor made no cursor) and ``b-good``, each through one of
    three events."""
    async with target.open() as log:
        await noted(log, 3)
    await acked_through(target, "a-bad", 1)
    await acked_through(target, "b-good", 1)
    await rows(target, "UPDATE consumers SET cursor = 'not a cursor' WHERE name = 'a-bad'")


@every_sql_store
def test_eventlog_consumers_lists_every_row_and_flags_the_bad_one(
    target: BackendTarget, capsys: pytest.CaptureFixture[str],
) -> None:
    """``eventlog consumers`` lists both consumers, the bad one flagged as refused, and
    exits 1 (findings)."""
    asyncio.run(bad_and_good(target))
    run = make_runner(capsys, target)
    keyring = [] if target.keyring is None else ["--keyring", target.keyring]
    shown = run("consumers", *keyring)
    assert shown.status == EXIT_FINDINGS
    assert {"a-bad", "b-good", "refused"} <= set(shown.out.split())


@pytest.mark.parametrize("target", ["sqlite"], indirect=True)
async def test_without_a_writer_key_the_administrator_is_trusted(
    target: BackendTarget,
) -> None:
    """A log without a writer key signs no consumer row and obeys its rows as stored (as
    it does its events): the decision recorded in docs/decisions/consumers.md."""
    async with target.open() as log:
        await noted(log, 5)
    await acked_through(target, "c", 1)
    await acked_through(target, "probe", 4)
    assert (await stored(target, "c"))[2] is None
    await rows(target, "UPDATE consumers SET cursor = (SELECT cursor FROM consumers "
                       "WHERE name = 'probe') WHERE name = 'c'")
    async with open_log(target.url) as log, log.subscribe("c", poll_interval=0.1) as sub:
        assert ["4"] == texts(await take(sub, 1))


@signed_stores
async def test_a_holder_taken_over_is_still_only_fenced(target: BackendTarget) -> None:
    """The application's own takeover (a reset) is `ConsumerFenced`, not tampering: the
    check tells a newer signed row from an edited one."""
    async with target.open() as log:
        await noted(log, 2)
        async with log.subscribe("c", poll_interval=0.1) as sub:
            events = await take(sub, 2)
            await log.reset_consumer("c", "end")
            with pytest.raises(ConsumerFenced) as fenced:
                await sub.ack(events[1])
    assert not isinstance(fenced.value, ConsumerTampered)


def revision_before() -> str:
    """The revision 0023_consumer_seal follows (whatever the merge chains it after)."""
    from alembic.script import ScriptDirectory

    from eventlog.storage.migrate import migrations_dir

    down = ScriptDirectory(str(migrations_dir())).get_revision(
        "0023_consumer_seal").down_revision
    assert isinstance(down, str)
    return down


@pytest.mark.parametrize("target", ["sqlite", "postgresql", "sqlite-sealed",
                                    "postgresql-sealed"], indirect=True)
async def test_a_consumer_from_before_signed_rows_upgrades(target: BackendTarget) -> None:
    """A database as main left it before signed rows (no ``signature`` column, stamped
    with the revision before 0023_consumer_seal) opens: without a writer key its consumer
    resumes as it was; with one its unsigned row is refused until reset to its position,
    then it resumes there."""
    async with target.open() as log:
        await noted(log, 3)
    await acked_through(target, "c", 2)
    cursor = (await stored(target, "c"))[0]
    await rows(target, "ALTER TABLE consumers DROP COLUMN signature")
    await rows(target, "UPDATE alembic_version SET version_num = $1", revision_before())
    if target.keyring is not None:
        refused = await refusal(target, "c")
        assert refused.reason == "unsigned"
        async with target.open() as log:
            await log.reset_consumer("c", cursor)
    assert ["2"] == await delivered(target, "c", 1)


async def test_the_file_store_signs_its_rows_too(tmp_path: Path) -> None:
    """The file store's ``consumers.json`` carries each row's signature (base64): a
    cursor edited in the file is refused, and a row as written resumes after a reopen."""
    from eventlog.crypto import init_keyring

    keyring = str(init_keyring(tmp_path / "keyring.json").path)
    url = f"file://{tmp_path / 'store'}"
    async with open_log(url, keyring=keyring) as log:
        await noted(log, 3)
        async with log.subscribe("c", poll_interval=0.1) as sub:
            await sub.ack((await take(sub, 1))[0])
    async with open_log(url, keyring=keyring) as log, log.subscribe("c") as sub:
        assert ["1"] == texts(await take(sub, 1))
    path = tmp_path / "store" / "consumers.json"
    document = json.loads(path.read_text())
    document["consumers"][0]["cursor"] = "p:3"
    path.write_text(json.dumps(document))
    async with open_log(url, keyring=keyring) as log:
        with pytest.raises(ConsumerTampered) as refused:
            async with log.subscribe("c"):
                pass
        assert [("c", True)] == [(info.name, bool(info.problem))
                                 for info in await log.consumers()]
    assert refused.value.reason == "forged"


@pytest.mark.parametrize("target", ["sqlite-sealed"], indirect=True)
async def test_public_keys_alone_check_rows_and_write_none(target: BackendTarget) -> None:
    """A log opened with the writer public keys only (an auditor's) flags an edited row in
    the listing, and refuses to claim a consumer (it could not sign the row), naming the
    keyring."""
    from eventlog.crypto import FileKeyring
    from eventlog.writer_keys import WriterKeys, public_pem

    async with target.open() as log:
        await noted(log, 3)
    await acked_through(target, "c", 1)
    await acked_through(target, "d", 1)
    await rows(target, "UPDATE consumers SET cursor = 'p:3' WHERE name = 'd'")
    assert target.keyring is not None
    public = [public_pem(key) for key in
              WriterKeys(FileKeyring(target.keyring).writer_public_keys).public_keys()]
    async with open_log(target.url, writer_keys=public) as log:
        listed = [(info.name, (info.problem or "ok").split(":")[0])
                  for info in await log.consumers()]
        with pytest.raises(InvalidInput, match="holds no writer key: this log's consumer"):
            async with log.subscribe("c"):
                pass
    assert [("c", "ok"), ("d", "forged")] == listed
