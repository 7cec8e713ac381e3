"""A thread checkpoint's channel history (`projections.thread_history`) in one statement.

A recursive CTE walks the checkpoint's ancestors by primary key, carrying two bit masks
of the query's channels: those still walking when it reaches a row (``arriving``) and
after it (``leaving``: less those whose stored value the row names). It stops where
nothing is left walking, where a parent is missing, or where a parent's id is not below
its child's. The rows returned are the writes of each reached row for the channels
arriving there, and the stored value of each channel at the row that ends its walk,
each with its digest and its blob: LangGraph's PostgreSQL saver needs two queries (and
pages of the first) for the same answer.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping

from eventlog.storage.sqltext import Param, SqlDialect
from projections.thread_history import HistoryQuery


def place_history(query: HistoryQuery, tables: Mapping[str, str], dialect: SqlDialect,
                  param: Param) -> Callable[[], str]:
    """Record ``query``'s values through ``param``; what writes its statement."""
    tenant, thread, namespace, target = param.extend(
        (query.tenant_id, query.thread_id, query.namespace, query.checkpoint_id))
    channels = param.extend(query.channels)
    return lambda: _history_text(tables, dialect, (tenant, thread, namespace), target,
                                 channels)


def history_shape(query: HistoryQuery) -> Hashable:
    """What `place_history`'s text depends on: how many channels."""
    return ("history", len(query.channels))


def _history_text(tables: Mapping[str, str], dialect: SqlDialect,
                  thread: tuple[str, str, str], target: str, channels: list[str]) -> str:
    tenant, thread_id, namespace = thread

    def of_thread(alias: str) -> str:
        return (f"{alias}.tenant_id = {tenant} AND {alias}.thread_id = {thread_id} "
                f"AND {alias}.namespace = {namespace}")

    def stored(alias: str, channel: str, row: str) -> str:
        # The value row that checkpoint row ``row``'s channels name for ``channel``.
        return (f"{of_thread(alias)} AND {alias}.channel = {channel} AND "
                f"{alias}.channel_version = {dialect.json_text(row + '.channels', channel)}")

    full = (1 << len(channels)) - 1
    seeds = " + ".join(
        f"(CASE WHEN EXISTS (SELECT 1 FROM {tables['thread_channel_values']} AS s "
        f"WHERE {stored('s', channel, 'v')}) THEN {1 << n} ELSE 0 END)"
        for n, channel in enumerate(channels))
    checkpoints = tables["thread_checkpoints"]
    chain = (
        "WITH RECURSIVE chain(checkpoint_id, parent_id, channels, depth, arriving, leaving) "
        f"AS (SELECT v.checkpoint_id, v.parent_id, v.channels, 0, CAST(0 AS BIGINT), "
        f"CAST({full} AS BIGINT) "
        f"FROM {checkpoints} AS v WHERE {of_thread('v')} AND v.checkpoint_id = {target} "
        "UNION ALL SELECT v.checkpoint_id, v.parent_id, v.channels, c.depth + 1, c.leaving, "
        f"c.leaving & ~({seeds}) FROM chain AS c JOIN {checkpoints} AS v ON {of_thread('v')} "
        "AND v.checkpoint_id = c.parent_id AND v.checkpoint_id < c.checkpoint_id "
        "WHERE c.leaving <> 0) "
    )

    def blob(digest: str) -> str:
        # A scalar subquery: one seek of the blob's key per row, whatever the planner
        # guesses of a join (unanalysed, PostgreSQL filtered every blob of the tenant).
        return (f"(SELECT b.data FROM {tables['blobs']} AS b "
                f"WHERE b.tenant_id = {tenant} AND b.digest = {digest})")

    wanted = " OR ".join(f"(w.channel = {channel} AND (c.arriving & {1 << n}) <> 0)"
                         for n, channel in enumerate(channels))
    writes = (
        "SELECT 'write' AS kind, c.depth AS depth, w.channel AS channel, "
        "w.task_id AS task_id, w.task_path AS task_path, w.idx AS idx, "
        f"w.encoding AS encoding, w.digest AS digest, {blob('w.digest')} AS blob "
        "FROM chain AS c "
        f"JOIN {tables['thread_writes']} AS w ON {of_thread('w')} "
        f"AND w.checkpoint_id = c.checkpoint_id WHERE {wanted}"
    )
    values = [
        f"SELECT 'value', c.depth, x.channel, NULL, NULL, NULL, x.encoding, x.digest, "
        f"{blob('x.digest')} "
        f"FROM chain AS c CROSS JOIN {tables['thread_channel_values']} AS x "
        f"WHERE (c.arriving & {1 << n}) <> 0 AND (c.leaving & {1 << n}) = 0 "
        f"AND {stored('x', channel, 'c')}"
        for n, channel in enumerate(channels)
    ]
    return chain + " UNION ALL ".join([writes, *values])
