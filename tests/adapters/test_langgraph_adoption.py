"""Adoption from LangGraph's own savers (AsyncPostgresSaver, AsyncSqliteSaver) into the
log, and export back: a real compiled graph interrupted on one resumes on the other and
ends exactly as it does on LangGraph's saver, with the same history."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import psycopg
import pytest
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.types import Command

from eventlog import open_log
from eventlog.adapters import langgraph_adoption
from eventlog.adapters.langgraph import AsyncEventlogSaver
from eventlog.adapters.langgraph_adoption import adopt_langgraph, export_langgraph
from eventlog.adapters.langgraph_sources import open_langgraph_saver
from eventlog.checkpoints import ThreadAdopted, ThreadCheckpointPut
from eventlog.errors import AdoptionFailed, SourceRefused, VersionConflict
from projections import compare_views
from tests.adapters.langgraph_stores import (
    build,
    history,
    postgres_saver,
    postgres_url,
    sqlite_saver,
    state_history,
    thread,
)
from tests.conftest import fresh_id

TENANT = "acme"


@asynccontextmanager
async def source_saver(kind: str, tmp_path: Path, schema: str
                       ) -> AsyncIterator[tuple[BaseCheckpointSaver[Any], str]]:
    """LangGraph's saver of this kind and the URL `eventlog adopt` names it by."""
    if kind == "sqlite":
        path = tmp_path / "langgraph.db"
        async with sqlite_saver(path) as saver:
            yield saver, f"sqlite:///{path}"
    else:
        async with postgres_saver(schema) as saver:
            yield saver, postgres_url(schema)


def our_log(tmp_path: Path) -> AbstractAsyncContextManager[Any]:
    return open_log(f"sqlite:///{tmp_path / 'log.db'}")


@pytest.fixture(params=["sqlite", "postgresql"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def schema(kind: str, request: pytest.FixtureRequest) -> str:
    if kind == "sqlite":
        return "unused"
    return str(request.getfixturevalue("pg_schema"))


@pytest.mark.adopt
async def test_an_interrupted_thread_resumes_on_the_log_as_on_langgraph(
    kind: str, schema: str, tmp_path: Path,
) -> None:
    """Interrupted on LangGraph's saver, adopted, resumed with AsyncEventlogSaver: the
    same end, the same history (ids, parents, metadata, values) as resuming on the source;
    the log verifies and each adopted append says where it came from."""
    thread_id = fresh_id("th")
    config = thread(thread_id)
    async with source_saver(kind, tmp_path, schema) as (source, url), our_log(tmp_path) as log:
        first = await build(source).ainvoke({"items": []}, config)
        assert "__interrupt__" in first
        report = await adopt_langgraph(log, source, tenant_id=TENANT, source=url)
        ours = AsyncEventlogSaver(log, tenant_id=TENANT)
        assert [thread_id] == report.threads
        assert report.checkpoints == len(await history(source, thread_id))
        assert 0 < report.writes
        assert await history(source, thread_id) == await history(ours, thread_id)
        assert await state_history(source, thread_id) == await state_history(ours, thread_id)

        on_ours = await build(ours).ainvoke(Command(resume="yes"), config)
        on_source = await build(source).ainvoke(Command(resume="yes"), config)
        assert on_source == on_ours
        assert ["approved:yes", "done"] == on_ours["items"][-2:]
        assert [row[2:] for row in await state_history(source, thread_id)] == [
            row[2:] for row in await state_history(ours, thread_id)]
        assert (await log.verify()).ok
        assert [] == await compare_views(log)
        adopted = [e.event async for e in _events(log, thread_id)
                   if isinstance(e.event, ThreadAdopted)]
        assert 1 == len(adopted)
        assert url == adopted[0].source
        assert "LangGraph" == adopted[0].framework
        assert report.checkpoints == len(adopted[0].checkpoints)
        assert all(item.ts for item in adopted[0].checkpoints)


@pytest.mark.adopt
async def test_a_rerun_adopts_only_what_the_source_added_since(
    kind: str, schema: str, tmp_path: Path,
) -> None:
    """Adopting again adds nothing; after the thread went on on the old saver, only its
    new checkpoints come in, and the histories match again."""
    thread_id = fresh_id("th")
    config = thread(thread_id)
    async with source_saver(kind, tmp_path, schema) as (source, url), our_log(tmp_path) as log:
        await build(source).ainvoke({"items": []}, config)
        first = await adopt_langgraph(log, source, tenant_id=TENANT, source=url)
        again = await adopt_langgraph(log, source, tenant_id=TENANT, source=url)
        assert (0, first.checkpoints, []) == (again.checkpoints, again.skipped, again.threads)
        await build(source).ainvoke(Command(resume="later"), config)
        third = await adopt_langgraph(log, source, tenant_id=TENANT, thread_ids=[thread_id])
        ours = AsyncEventlogSaver(log, tenant_id=TENANT)
        assert 0 < third.checkpoints
        assert first.checkpoints == third.skipped
        assert await history(source, thread_id) == await history(ours, thread_id)
        assert (await log.verify()).ok


async def test_a_source_too_large_to_keep_is_listed_again_thread_by_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Beyond KEPT checkpoints the first listing only names the threads: each is listed
    again on its turn, and the adoption is the same."""
    monkeypatch.setattr(langgraph_adoption, "KEPT", 3)
    async with sqlite_saver(tmp_path / "lg.db") as source, our_log(tmp_path) as log:
        for thread_id in ("a", "b"):
            await build(source).ainvoke({"items": []}, thread(thread_id))
        report = await adopt_langgraph(log, source, tenant_id=TENANT)
        ours = AsyncEventlogSaver(log, tenant_id=TENANT)
        assert ["a", "b"] == report.threads
        for thread_id in ("a", "b"):
            assert await history(source, thread_id) == await history(ours, thread_id)


async def test_langgraphs_sync_savers_are_read_and_written_through_their_sync_methods(
    tmp_path: Path,
) -> None:
    """SqliteSaver (sync: its async methods are not implemented) is adopted from and
    exported to like the async savers."""
    from langgraph.checkpoint.sqlite import SqliteSaver

    thread_id = fresh_id("th")
    with SqliteSaver.from_conn_string(str(tmp_path / "sync.db")) as source:
        build(source).invoke({"items": []}, thread(thread_id))
        async with our_log(tmp_path) as log:
            report = await adopt_langgraph(log, source, tenant_id=TENANT)
            ours = AsyncEventlogSaver(log, tenant_id=TENANT)
            assert [thread_id] == report.threads
            assert await history(ours, thread_id) == [
                row async for row in _sync_history(source, thread_id)]
            with SqliteSaver.from_conn_string(str(tmp_path / "out.db")) as target:
                await export_langgraph(log, target, tenant_id=TENANT)
                assert [row async for row in _sync_history(target, thread_id)] == await history(
                    ours, thread_id)


async def _sync_history(saver: Any, thread_id: str) -> AsyncIterator[tuple[Any, ...]]:
    for row in await asyncio.to_thread(_collect_sync, saver, thread_id):
        yield row


def _collect_sync(saver: Any, thread_id: str) -> list[tuple[Any, ...]]:
    found = []
    for item in saver.list(thread(thread_id)):
        configurable = item.config["configurable"]
        parent = None if item.parent_config is None else item.parent_config[
            "configurable"]["checkpoint_id"]
        found.append((
            configurable.get("checkpoint_ns", ""), configurable["checkpoint_id"], parent,
            item.metadata, item.checkpoint["channel_values"], item.checkpoint["ts"],
            sorted((task, channel, repr(value))
                   for task, channel, value in item.pending_writes or []),
        ))
    return sorted(found, key=lambda row: (row[1], row[0]))


async def test_two_adoptions_at_once_never_add_a_checkpoint_twice(tmp_path: Path) -> None:
    """Both read the thread empty; the second append's fence fails (VersionConflict)
    instead of adding the checkpoints again, and a re-run then has nothing to do."""
    thread_id = fresh_id("th")
    async with sqlite_saver(tmp_path / "lg.db") as source, our_log(tmp_path) as log:
        await build(source).ainvoke({"items": []}, thread(thread_id))
        outcomes = await asyncio.gather(
            adopt_langgraph(log, source, tenant_id=TENANT, thread_ids=[thread_id]),
            adopt_langgraph(log, source, tenant_id=TENANT, thread_ids=[thread_id]),
            return_exceptions=True)
        failed = [o for o in outcomes if isinstance(o, BaseException)]
        assert all(isinstance(o, VersionConflict) for o in failed)
        again = await adopt_langgraph(log, source, tenant_id=TENANT)
        assert 0 == again.checkpoints
        puts = [e async for e in _events(log, thread_id)
                if isinstance(e.event, ThreadCheckpointPut)]
        assert len(puts) == len({(e.event.namespace, e.event.checkpoint_id) for e in puts})
        assert (await log.verify()).ok


async def test_dry_run_counts_and_writes_nothing(tmp_path: Path) -> None:
    thread_id = fresh_id("th")
    async with sqlite_saver(tmp_path / "lg.db") as source, our_log(tmp_path) as log:
        await build(source).ainvoke({"items": []}, thread(thread_id))
        report = await adopt_langgraph(log, source, tenant_id=TENANT, dry_run=True)
        assert report.dry_run
        assert 0 < report.checkpoints
        assert [] == [t async for t in AsyncEventlogSaver(log, tenant_id=TENANT).alist(None)]


async def test_a_checkpoint_that_does_not_load_is_named_and_a_rerun_continues(
    tmp_path: Path,
) -> None:
    """A checkpoint whose serializer is unknown stops the thread there, named by id;
    what came before it is committed and verifies; once repaired, a re-run finishes."""
    thread_id = fresh_id("th")
    path = tmp_path / "lg.db"
    async with sqlite_saver(path) as source:
        await build(source).ainvoke({"items": []}, thread(thread_id))
        ids = sorted([t.config["configurable"]["checkpoint_id"]
                      async for t in source.alist(thread(thread_id))])
    broken = ids[2]
    with sqlite3.connect(path) as connection:
        kept = connection.execute("SELECT type FROM checkpoints WHERE checkpoint_id = ?",
                                  (broken,)).fetchone()[0]
        connection.execute("UPDATE checkpoints SET type = 'no-such-serializer' "
                           "WHERE checkpoint_id = ?", (broken,))
    async with our_log(tmp_path) as log:
        async with open_langgraph_saver(f"sqlite:///{path}") as source:
            with pytest.raises(AdoptionFailed, match=broken) as caught:
                await adopt_langgraph(log, source, tenant_id=TENANT)
        assert thread_id == caught.value.thread_id
        ours = AsyncEventlogSaver(log, tenant_id=TENANT)
        adopted = sorted([t.config["configurable"]["checkpoint_id"]
                          async for t in ours.alist(thread(thread_id))])
        assert [i for i in ids if i < broken] == [i for i in adopted if i < broken]
        assert broken not in adopted
        assert (await log.verify()).ok
        with sqlite3.connect(path) as connection:
            connection.execute("UPDATE checkpoints SET type = ? WHERE checkpoint_id = ?",
                               (kept, broken))
        async with open_langgraph_saver(f"sqlite:///{path}") as source:
            await adopt_langgraph(log, source, tenant_id=TENANT)
            assert await history(source, thread_id) == await history(ours, thread_id)
        assert (await log.verify()).ok


async def test_sources_that_are_not_a_savers_store_are_refused(tmp_path: Path) -> None:
    """A missing file, a SQLite database without the saver's tables, or with another
    schema, is refused naming what was found; nothing is created."""
    missing = tmp_path / "missing.db"
    with pytest.raises(SourceRefused, match="no such file"):
        async with open_langgraph_saver(str(missing)):
            pass
    assert not missing.exists()
    empty = tmp_path / "other.db"
    with sqlite3.connect(empty) as connection:
        connection.execute("CREATE TABLE notes (x)")
    with pytest.raises(SourceRefused, match="no LangGraph SqliteSaver checkpoints and writes"):
        async with open_langgraph_saver(f"sqlite:///{empty}"):
            pass
    with sqlite3.connect(empty) as connection:
        connection.execute("CREATE TABLE checkpoints (thread_id, checkpoint_id, blob)")
        connection.execute("CREATE TABLE writes (thread_id, checkpoint_id, task_id, idx, "
                           "channel, type, value, checkpoint_ns)")
    with pytest.raises(SourceRefused, match="another version of the SqliteSaver schema"):
        async with open_langgraph_saver(f"sqlite:///{empty}"):
            pass
    (tmp_path / "text.db").write_text("hello " * 1000)
    with pytest.raises(SourceRefused, match="is not a SQLite database"):
        async with open_langgraph_saver(str(tmp_path / "text.db")):
            pass


@pytest.mark.postgres
async def test_postgres_sources_without_the_tables_or_of_another_version_are_refused(
    pg_schema: str,
) -> None:
    """A schema without PostgresSaver's tables; one whose migrations are ahead of the
    installed saver's (another major version): refused, naming what was found."""
    async with postgres_saver(pg_schema, setup=False):
        pass
    with pytest.raises(SourceRefused, match="no LangGraph PostgresSaver tables"):
        async with open_langgraph_saver(postgres_url(pg_schema)):
            pass
    async with postgres_saver(pg_schema) as saver:
        await build(saver).ainvoke({"items": []}, thread("t-1"))
    async with open_langgraph_saver(postgres_url(pg_schema)) as source:  # read-only
        assert 0 < len([t async for t in source.alist(None)])
        with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
            await source.adelete_thread("t-1")
    async with postgres_saver(pg_schema) as saver:
        assert 0 < len([t async for t in saver.alist(None)])
        await saver.conn.execute("INSERT INTO checkpoint_migrations (v) VALUES (999)")
    with pytest.raises(SourceRefused, match="at migration 999, newer"):
        async with open_langgraph_saver(postgres_url(pg_schema)):
            pass


@pytest.mark.adopt
async def test_export_then_resume_on_langgraph_saver(
    kind: str, schema: str, tmp_path: Path,
) -> None:
    """The reverse: interrupted on the log, exported into LangGraph's saver, resumed
    there: the same end and history as resuming on the log; exporting again adds nothing."""
    thread_id = fresh_id("th")
    config = thread(thread_id)
    async with source_saver(kind, tmp_path, schema) as (target, url), our_log(tmp_path) as log:
        ours = AsyncEventlogSaver(log, tenant_id=TENANT)
        await build(ours).ainvoke({"items": []}, config)
        report = await export_langgraph(log, target, tenant_id=TENANT, target=url)
        assert [thread_id] == report.threads
        assert await history(ours, thread_id) == await history(target, thread_id)
        assert await state_history(ours, thread_id) == await state_history(target, thread_id)
        again = await export_langgraph(log, target, tenant_id=TENANT)
        assert (0, 0, report.checkpoints) == (again.checkpoints, again.writes, again.skipped)
        on_target = await build(target).ainvoke(Command(resume="yes"), config)
        on_ours = await build(ours).ainvoke(Command(resume="yes"), config)
        assert on_ours == on_target
        assert [row[2:] for row in await state_history(ours, thread_id)] == [
            row[2:] for row in await state_history(target, thread_id)]

    other = fresh_id("th")  # went on here after its export: a second export catches up
    async with source_saver(kind, tmp_path, schema) as (target, url), our_log(tmp_path) as log:
        ours = AsyncEventlogSaver(log, tenant_id=TENANT)
        await build(ours).ainvoke({"items": []}, thread(other))
        await export_langgraph(log, target, tenant_id=TENANT, thread_ids=[other])
        await build(ours).ainvoke(Command(resume="later"), thread(other))
        later = await export_langgraph(log, target, tenant_id=TENANT, thread_ids=[other])
        assert 0 < later.checkpoints
        assert 0 < later.writes
        assert await history(ours, other) == await history(target, other)


async def _events(log: Any, thread_id: str) -> AsyncIterator[Any]:
    async for event in log.read_stream(TENANT, f"thread:{thread_id}"):
        yield event
