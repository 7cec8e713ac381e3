"""Contract: view queries through the log's read side (`EventLog.query`)."""

from __future__ import annotations

import re
import uuid

import pytest

from eventlog import CheckpointRecord, InvalidInput, OpenLog
from eventlog.testing.contract._base import ContractBase
from projections import In, Lookup, ViewQuery
from projections.checkpoints import CHECKPOINTS

RUN = uuid.UUID("00000000-0000-4000-8000-000000000001")


class LogQueryContract(ContractBase):
    """Contract: view queries through the log's read side (`EventLog.query`)."""

    async def test_a_view_row_reads_with_its_own_tenants_blob(self, log: OpenLog) -> None:
        """`ViewQuery.with_blob` returns each row once, with the blob of the row's own
        tenant under ``blob`` (two tenants holding the same bytes do not double a row)."""
        for tenant in ("t", "u"):
            await log.checkpoints.create(CheckpointRecord(
                tenant_id=tenant, session_id="s", run_id=RUN, checkpoint_id="c",
                state={"same": "bytes"}))
        await log.checkpoints.create(CheckpointRecord(
            tenant_id="u", session_id="s", run_id=RUN, checkpoint_id="d", state={"other": 1}))
        rows = await log.query(ViewQuery(
            CHECKPOINTS, {"tenant_id": In(("t", "u"))}, order_by=("tenant_id", "version"),
            columns=("tenant_id", "checkpoint_id"), with_blob="state_digest"))
        assert [("t", "c"), ("u", "c"), ("u", "d")] == [
            (row["tenant_id"], row["checkpoint_id"]) for row in rows]
        assert {"tenant_id", "checkpoint_id", "blob"} == set(rows[0])
        assert [b'{"same":"bytes"}', b'{"same":"bytes"}', b'{"other":1}'] == [
            row["blob"] for row in rows]

    async def test_with_blob_must_name_a_column_of_the_table(self, log: OpenLog) -> None:
        """A ``with_blob`` naming no column of the table is refused, naming it."""
        with pytest.raises(InvalidInput, match="nosuch"):
            await log.query(ViewQuery(CHECKPOINTS, {"tenant_id": "t"}, with_blob="nosuch"))

    async def test_a_query_orders_null_after_every_value(self, log: OpenLog) -> None:
        """Rows whose order column is NULL come after every value (first, descending),
        on every backend; paging by such a column is refused, naming it."""
        for checkpoint_id, parent in (("p1", None), ("p2", None), ("a", "p2"), ("b", None),
                                      ("c", "p1")):
            await log.checkpoints.create(CheckpointRecord(
                tenant_id="t", session_id="s", run_id=RUN, checkpoint_id=checkpoint_id,
                parent_id=parent, state={"n": 1}))
        ordered = ("parent_id", "checkpoint_id")
        expected = ["c", "a", "b", "p1", "p2"]
        for descending in (False, True):
            rows = await log.query(ViewQuery(CHECKPOINTS, {"tenant_id": "t"}, order_by=ordered,
                                             descending=descending))
            wanted = expected[::-1] if descending else expected
            assert wanted == [row["checkpoint_id"] for row in rows]
        with pytest.raises(InvalidInput, match="parent_id"):
            await log.query(ViewQuery(CHECKPOINTS, {"tenant_id": "t"}, order_by=ordered,
                                      after=("p1", "c")))


    async def test_a_lookup_reads_exactly_its_keys(self, log: OpenLog) -> None:
        """`ViewQuery.lookup` returns the rows whose columns equal one of its keys (a key
        naming no row adds nothing), with the other conditions, order and blobs applied;
        no keys, no rows."""
        for session, version in (("s", 1), ("s", 2), ("s", 3), ("s2", 1)):
            await log.checkpoints.create(CheckpointRecord(
                tenant_id="t", session_id=session, run_id=RUN, checkpoint_id=f"{session}.{version}",
                state={"n": version}))
        keys = (("s", 3), ("s2", 1), ("s", 1), ("s", 9), ("nobody", 1))
        rows = await log.query(ViewQuery(
            CHECKPOINTS, {"tenant_id": "t"}, order_by=("checkpoint_id",), descending=True,
            columns=("checkpoint_id",), with_blob="state_digest",
            lookup=Lookup(("session_id", "version"), keys)))
        assert [("s2.1", b'{"n":1}'), ("s.3", b'{"n":3}'), ("s.1", b'{"n":1}')] == [
            (row["checkpoint_id"], row["blob"]) for row in rows]
        rows = await log.query(ViewQuery(
            CHECKPOINTS, {"tenant_id": "t", "session_id": "s"}, columns=("checkpoint_id",),
            lookup=Lookup(("version",), ((2,), (3,)))))
        assert ["s.2", "s.3"] == sorted(row["checkpoint_id"] for row in rows)
        assert [] == await log.query(ViewQuery(
            CHECKPOINTS, {"tenant_id": "t"}, lookup=Lookup(("session_id", "version"), ())))

    @pytest.mark.parametrize(("query", "named"), [
        (ViewQuery("no_such_view"), "no_such_view"),
        (ViewQuery(CHECKPOINTS, {"no_such_column": 1}), "no_such_column"),
        (ViewQuery(CHECKPOINTS, {"tenant_id": "t"}, order_by=("nope",)), "nope"),
        (ViewQuery(CHECKPOINTS, {"tenant_id": "t"}, order_by="version"), "tuple"),  # type: ignore[arg-type]
        (ViewQuery(CHECKPOINTS, {"tenant_id": "t"}, columns=("nope",)), "nope"),
        (ViewQuery(CHECKPOINTS, {"tenant_id": "t"}, order_by=("version",), after=(1, 2)),
         "one value per order_by"),
        (ViewQuery(CHECKPOINTS, {"tenant_id": "t"}, after=(1,)), "one value per order_by"),
        (ViewQuery(CHECKPOINTS, {"tenant_id": "t"}, limit=-1), "limit"),
        (ViewQuery(CHECKPOINTS, {"tenant_id": "t"}, limit=True), "limit"),
        (ViewQuery(CHECKPOINTS, {"tenant_id": "t"}, descending=1), "descending"),  # type: ignore[arg-type]
        (ViewQuery(CHECKPOINTS, {"tenant_id": In(["t"])}), "tuple"),  # type: ignore[arg-type]
        (ViewQuery(CHECKPOINTS, {"tenant_id": "t"}, with_blob=5), "5"),  # type: ignore[arg-type]
        (ViewQuery(CHECKPOINTS, {"tenant_id": "bad id\n"}), "tenant_id"),
        (ViewQuery(CHECKPOINTS, {"tenant_id": "t"}, lookup=Lookup(("nope",), (("x",),))),
         "nope"),
        (ViewQuery(CHECKPOINTS, {"tenant_id": "t"}, lookup=Lookup(("version",), ((1, 2),))),
         "1-tuples"),
        (ViewQuery(CHECKPOINTS, {"tenant_id": "t"}, lookup=Lookup((), ())), "lookup columns"),
    ])
    async def test_a_malformed_query_is_refused_the_same_everywhere(
        self, log: OpenLog, query: ViewQuery, named: str
    ) -> None:
        """Every backend refuses the same malformed queries with `InvalidInput` naming the
        fault, before reading anything (an unknown column, a keyset of the wrong length or
        a negative limit would otherwise mean something different to each backend)."""
        await log.checkpoints.create(CheckpointRecord(
            tenant_id="t", session_id="s", run_id=RUN, checkpoint_id="c", state={"n": 1}))
        with pytest.raises(InvalidInput, match=re.escape(named)):
            await log.query(query)
