"""Contract: the view storage methods the log calls on a backend (``log.storage``), each
asked directly, on views the log's appends changed."""

from __future__ import annotations

from eventlog import EventLog
from eventlog.testing.contract._base import ContractBase
from eventlog.testing.events import Noted
from projections import ViewQuery
from projections.views import STREAM_HEADS


class ViewStorageCalls(ContractBase):
    """Contract: each `ViewStorage` method, asked of the backend directly."""

    async def test_query_gives_plain_dicts_of_the_rows_asked(self, log: EventLog) -> None:
        """`query` gives the rows matching ``where``, in ``order_by`` order, with the
        columns asked for, each a plain dict."""
        await log.append("t", "b", [Noted(text="b1"), Noted(text="b2")])
        await log.append("t", "a", [Noted(text="a1")])
        await log.append("u", "c", [Noted(text="c1")])
        rows = await log.storage.query(ViewQuery(
            STREAM_HEADS, {"tenant_id": "t"}, order_by=("stream_id",),
            columns=("stream_id", "version")))
        assert ([{"stream_id": "a", "version": 1}, {"stream_id": "b", "version": 2}],
                {dict}) == (rows, {type(row) for row in rows})

    async def test_dump_views_gives_every_row_sorted_by_key(self, log: EventLog) -> None:
        """`dump_views` gives each view table's rows sorted by primary key: the stream
        heads, one per stream, whatever order the streams were written in."""
        for tenant_id, stream_id in (("u", "a"), ("t", "b"), ("t", "a")):
            await log.append(tenant_id, stream_id, [Noted(text="x")])
        views = await log.storage.dump_views()
        heads = [(row["tenant_id"], row["stream_id"]) for row in views[STREAM_HEADS]]
        assert [("t", "a"), ("t", "b"), ("u", "a")] == heads

    async def test_dump_views_agrees_with_query(self, log: EventLog) -> None:
        """The rows `dump_views` gives are the rows `query` reads."""
        await log.append("t", "s", [Noted(text="x"), Noted(text="y")])
        queried = await log.storage.query(ViewQuery(STREAM_HEADS, {"tenant_id": "t"}))
        assert queried == (await log.storage.dump_views())[STREAM_HEADS]
