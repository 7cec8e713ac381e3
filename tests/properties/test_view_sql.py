"""The SQL text both SQL backends run (`eventlog.storage.sqltext`) against the in-memory
views, the reference every other backend uses: any sequence of view changes, applied by
SQLite and by PostgreSQL, leaves the rows the memory views hold, and any view query
(equality, `In`, `JsonContains`, order, keyset, limit, columns, a blob read with each
row) answers the same rows.
"""

from __future__ import annotations

import asyncio
import dataclasses
import re
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eventlog import EventLog, content_digest, open_log
from eventlog.storage.sqltext import (
    Numbered,
    Positional,
    PostgresDialect,
    SqliteDialect,
    query_sql,
)
from eventlog.testing.events import Noted
from projections.changes import AT_POSITION, Change, Delete, InsertIfAbsent, Update, Upsert
from projections.memory import ViewTables
from projections.query import In, JsonContains, Lookup, ViewQuery
from projections.threads import THREAD_CHECKPOINTS
from tests.conftest import PG_URL, drop_schema, icu_database_url, require_postgres
from tests.properties.sql_changes import apply_changes

TABLE = THREAD_CHECKPOINTS
TENANT = "acme"
# Case and punctuation: a collation other than byte order sorts these differently.
IDS = ("c1", "C2", "c-3", "c_4", "c5")
KEYS = ("a", "b", "c")
EPOCH = datetime(2030, 1, 1, tzinfo=UTC)
HELD, FOREIGN = b"held by acme", b"held by another tenant only"
DIGESTS = (content_digest(HELD), content_digest(FOREIGN), b"no such blob")

scalars = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from([0.5, 2.0]),
                    st.sampled_from(["x", "y", ""]))
json_values = st.one_of(scalars, st.dictionaries(st.sampled_from(KEYS), scalars, max_size=2),
                        st.lists(st.integers(0, 3), max_size=3))
documents = st.dictionaries(st.sampled_from(KEYS), json_values, max_size=3)


@st.composite
def rows(draw: st.DrawFn) -> dict[str, Any]:
    """A full row of the table, keyed by one of a few checkpoint ids."""
    from msgspec import json

    return {
        "tenant_id": TENANT, "thread_id": "t", "namespace": "",
        "checkpoint_id": draw(st.sampled_from(IDS)),
        "version": draw(st.integers(1, 4)),
        "position": draw(st.just(AT_POSITION) | st.integers(1, 9)),
        "parent_id": draw(st.none() | st.sampled_from(IDS)),
        "run_key": None, "step": draw(st.none() | st.integers(0, 3)),
        "state_encoding": "json", "state_digest": draw(st.sampled_from(DIGESTS)),
        "channels": "{}", "metadata": json.encode(draw(documents)).decode(),
        "recorded_at": EPOCH + timedelta(seconds=draw(st.integers(0, 5))),
        "subject": draw(st.none() | st.sampled_from(("cust-1", "C-2"))),
    }


def key(checkpoint_id: str) -> dict[str, Any]:
    return {"tenant_id": TENANT, "thread_id": "t", "namespace": "", "checkpoint_id": checkpoint_id}


changes = st.one_of(
    rows().map(lambda row: Upsert(TABLE, row)),
    rows().map(lambda row: InsertIfAbsent(TABLE, row)),
    st.builds(lambda checkpoint_id, step, version: Update(
        TABLE, key(checkpoint_id), {"step": step, "version": version}),
        st.sampled_from(IDS), st.none() | st.integers(0, 3), st.integers(1, 4)),
    st.sampled_from(IDS).map(lambda checkpoint_id: Delete(TABLE, key(checkpoint_id))),
)


@st.composite
def queries(draw: st.DrawFn) -> ViewQuery:
    """Any query the stores could make of the table."""
    where: dict[str, Any] = {"tenant_id": TENANT}
    if draw(st.booleans()):
        where["checkpoint_id"] = In(tuple(draw(st.lists(st.sampled_from(IDS), max_size=3))))
    if draw(st.booleans()):
        wanted = draw(st.dictionaries(st.sampled_from(KEYS), scalars, max_size=2))
        where["metadata"] = JsonContains(wanted)
    if draw(st.booleans()):
        where["version"] = draw(st.integers(1, 4))
    order_by = draw(st.sampled_from([
        (), ("checkpoint_id",), ("version", "checkpoint_id"),
        ("step", "checkpoint_id"), ("parent_id", "checkpoint_id"),  # nullable first columns
    ]))
    after = None
    if order_by in (("checkpoint_id",), ("version", "checkpoint_id")) and draw(st.booleans()):
        mark = draw(st.sampled_from(IDS))
        after = (mark,) if order_by == ("checkpoint_id",) else (2, mark)
    return ViewQuery(
        TABLE, where, order_by=order_by, descending=draw(st.booleans()), after=after,
        limit=draw(st.none() | st.integers(0, 4)),
        columns=draw(st.none() | st.just(("checkpoint_id", "step", "recorded_at"))),
        with_blob=draw(st.none() | st.just("state_digest")),
        lookup=draw(st.none() | st.builds(
            lambda ids, version: Lookup(("checkpoint_id", "version")[:1 + version], tuple(
                (key, 1 + n % 3)[:1 + version] for n, key in enumerate(ids))),
            st.lists(st.sampled_from(IDS), min_size=1, max_size=3), st.integers(0, 1))),
    )


class OpenLog:
    """A log held open on a loop of its own, across Hypothesis examples."""

    def __init__(self, url: str, schema: str) -> None:
        self.loop = asyncio.new_event_loop()
        self.opened = open_log(url, schema=schema)
        self.log: EventLog = self.loop.run_until_complete(self.opened.__aenter__())
        # The blobs rows may name: one of the row's tenant, one of another tenant only.
        self.run(self.log.append(TENANT, "blobs", [Noted(text="held")], attach=[HELD]))
        self.run(self.log.append("other", "blobs", [Noted(text="held")], attach=[FOREIGN]))

    def run(self, work: Any) -> Any:
        return self.loop.run_until_complete(work)

    def close(self) -> None:
        self.run(self.opened.__aexit__(None, None, None))
        self.loop.close()


@pytest.fixture(params=["sqlite", "postgresql", "postgresql-icu"])
def sql_log(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[OpenLog]:
    """An open log on each SQL backend (PostgreSQL also in a database whose default
    collation is not byte order)."""
    if request.param == "sqlite":
        opened = OpenLog(f"sqlite:///{tmp_path / 'views.db'}", "eventlog")
    else:
        require_postgres()
        url = icu_database_url() if request.param == "postgresql-icu" else PG_URL
        opened = OpenLog(url, f"t_views_{uuid.uuid4().hex[:12]}")
    try:
        yield opened
    finally:
        opened.close()
        if request.param != "sqlite":
            asyncio.run(drop_schema(opened.log.storage.schema, url))  # type: ignore[attr-defined]


@settings(max_examples=60)
@given(applied=st.lists(changes, max_size=8), asked=st.lists(queries(), min_size=1, max_size=4))
def test_sql_views_answer_as_the_memory_views_do(
    sql_log: OpenLog, applied: list[Change], asked: list[ViewQuery]
) -> None:
    """Changes then queries: the SQL backend's rows equal the memory views' rows."""
    storage: Any = sql_log.log.storage
    reference = ViewTables()
    numbered = [(change, position) for position, change in enumerate(applied, start=1)]
    reference.apply_all(numbered)

    async def run() -> None:
        await apply_changes(storage, [(Delete(TABLE, {"tenant_id": TENANT}), 0), *numbered])
        for query in asked:
            expected = reference.select(query)
            if query.with_blob:
                # Only the row's own tenant's blob, never another tenant's.
                digests = [row["state_digest"] for row in reference.select(
                    dataclasses.replace(query, columns=None, with_blob=None))]
                for row, digest in zip(expected, digests, strict=True):
                    row["blob"] = HELD if digest == DIGESTS[0] else None
            assert_same_answer(query, expected, await storage.query(query))

    sql_log.run(run())


def assert_same_answer(query: ViewQuery, expected: list[dict[str, Any]],
                       found: list[dict[str, Any]]) -> None:
    """The rows a store found for ``query`` are the reference's (in any order when the
    query names none; only as many when an unordered LIMIT lets the store choose)."""
    if not query.order_by:
        expected = sorted(expected, key=lambda row: row["checkpoint_id"])
        found = sorted(found, key=lambda row: row["checkpoint_id"])
    if query.limit is not None and not query.order_by:
        # Which rows an unordered LIMIT keeps is the database's choice.
        assert len(expected) == len(found), query
        return
    assert expected == found, query


@given(query=queries())
def test_query_text_places_exactly_its_values(query: ViewQuery) -> None:
    """Each dialect's text names the placeholder of every value it recorded, and no other:
    a text and its values cannot disagree in number."""
    for dialect, param in ((PostgresDialect(), Numbered()), (SqliteDialect(), Positional())):
        sql = query_sql(query, {TABLE: "t", "blobs": "b"}, dialect, param)
        named = {int(number) for number in re.findall(rf"\{param.prefix}(\d+)", sql)}
        assert named == set(range(1, len(param.values) + 1)), sql

