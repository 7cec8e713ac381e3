"""The SQLite tree's node read seeks each node by its whole key: a head and a proof read
O(log n) rows, not every node of the tenant (the plan is asked of SQLite itself, on a real
file holding a tree of 5,000 events)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from sqlalchemy.dialects import sqlite

from eventlog import open_log
from eventlog.merkle import perfect_subtrees
from eventlog.storage.sqltree import nodes_query
from eventlog.testing.events import Noted


async def test_stored_nodes_are_read_by_index_seeks(tmp_path: Path) -> None:
    async with open_log(f"sqlite:///{tmp_path / 'log.db'}") as log:
        for _ in range(20):
            await log.append("t", "s", [Noted(text="x", number=n) for n in range(250)])
        await log.append("u", "s", [Noted(text="other")])
        head = await log.tree_head("t")
        table = log.storage.tables["tree_nodes"]  # type: ignore[attr-defined]
        statement = nodes_query(table, "t", perfect_subtrees(0, head.size - 1)).compile(
            dialect=sqlite.dialect())
    params = [statement.params[name] for name in statement.positiontup or ()]
    with sqlite3.connect(tmp_path / "log.db") as connection:
        connection.execute("ANALYZE")
        plan = [row[3] for row in connection.execute(f"EXPLAIN QUERY PLAN {statement}",
                                                     params)]
    assert "MULTI-INDEX OR" in plan[0], plan
    searches = [step for step in plan if step.startswith("SEARCH")]
    assert searches, plan
    assert all("tenant_id=? AND level=? AND idx=?" in step for step in searches), plan
