"""Tampering that changes a column's type or format is a finding, never an abort: verify
names the row and goes on to the other streams (issue 14, attack 6)."""

from __future__ import annotations

import asyncio

import pytest

from eventlog.cli import EXIT_FINDINGS
from tests.cli.helpers import Run
from tests.conftest import BackendTarget
from tests.test_tamper import build, problems, sql

SQLITE_REWRITES = {
    "data as text": ("UPDATE events SET data = CAST(data AS TEXT)", "unreadable_row"),
    "malformed event id": ("UPDATE events SET event_id = 'not-a-uuid'", "unreadable_row"),
    "malformed time": ("UPDATE events SET recorded_at = 'yesterday at noon'",
                       "unreadable_row"),
    # SQLite sorts text after every number: version 4 then arrives where 3 was expected.
    "version as text": ("UPDATE events SET stream_version = 'three'", "missing_version"),
}


@pytest.mark.parametrize("target", ["sqlite"], indirect=True)
@pytest.mark.parametrize("rewrite", sorted(SQLITE_REWRITES))
async def test_a_rewritten_column_is_an_unreadable_row(target: BackendTarget, rewrite: str
                                                        ) -> None:
    """One row of stream a rewritten: unreadable_row there; stream b and the other tenant
    are still checked (and fine)."""
    await build(target)
    statement, kind = SQLITE_REWRITES[rewrite]
    await sql(target, statement + " WHERE tenant_id = 't' AND stream_id = 'a' "
              "AND stream_version = 3")
    found = await problems(target)
    assert [kind] == [found_kind for _, _, _, found_kind in found]
    assert ("t", "a") == found[0][:2]


@pytest.mark.parametrize("target", ["postgresql"], indirect=True)
async def test_a_column_whose_type_changed_is_reported_row_by_row(target: BackendTarget
                                                                  ) -> None:
    """events.data altered to text on PostgreSQL: every stream is named, nothing raises."""
    await build(target)
    await sql(target, "ALTER TABLE events ALTER COLUMN data TYPE text "
              "USING encode(data, 'escape')")
    found = await problems(target)
    assert {("t", "a"), ("t", "b"), ("other", "a")} == {(t, s) for t, s, _, _ in found}
    assert {"unreadable_row"} == {kind for _, _, _, kind in found}


@pytest.mark.parametrize("target", ["sqlite"], indirect=True)
def test_the_command_reports_it_as_a_finding(own_run: Run, target: BackendTarget) -> None:
    """`eventlog verify --json` exits 1 and lists the row; `log` still prints the others."""
    asyncio.run(build(target))
    asyncio.run(sql(target, "UPDATE events SET event_id = 'x' WHERE tenant_id = 't' AND "
                    "stream_id = 'a' AND stream_version = 2"))
    checked = own_run("verify", "--json")
    assert EXIT_FINDINGS == checked.status
    assert [("a", 2, "unreadable_row")] == [
        (p["stream_id"], p["version"], p["kind"]) for p in checked.json()["chain_problems"]]
    listed = own_run("log", "--json")
    assert 8 <= len(listed.json_lines())
