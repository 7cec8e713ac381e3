"""Contract: single-writer threads (``fenced=True`` puts and writes of
``log.checkpoints.threads``; `eventlog.checkpoints.thread_fence`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from eventlog import NotThreadHead, OpenLog
from eventlog.checkpoints import Payload, ThreadCheckpoints
from eventlog.checkpoints.thread_decisions import thread_stream
from eventlog.testing.contract._base import ContractBase
from eventlog.testing.helpers import fresh_id

T = "tenant"
Refused = tuple[str, str | None, str | None]


def state(text: str) -> Payload:
    return Payload("json", text.encode())


async def fenced_put(store: ThreadCheckpoints, thread: str, checkpoint: str,
                     parent: str | None, **options: Any) -> int:
    return await store.put(T, thread, checkpoint, state=state(checkpoint), parent_id=parent,
                           fenced=True, **options)


async def fenced_write(store: ThreadCheckpoints, thread: str, checkpoint: str,
                       **options: Any) -> int:
    return await store.put_writes(T, thread, checkpoint, "task", [(0, "a", state("w"))],
                                  fenced=True, **options)


async def version(log: OpenLog, thread: str) -> int:
    head = await log.stream_head(T, thread_stream(thread))
    return 0 if head is None else head[0]


def facts(error: pytest.ExceptionInfo[NotThreadHead]) -> Refused:
    return (error.value.checkpoint_id, error.value.expected, error.value.head)


class CheckpointsFencedContract(ContractBase):
    """Contract: fenced puts and writes append only what is based on the head."""

    async def test_a_chain_of_fenced_puts_is_accepted(self, log: OpenLog) -> None:
        """Each put naming the head as parent is accepted and becomes the head."""
        thread = fresh_id("th")
        for parent, checkpoint in ((None, "c1"), ("c1", "c2"), ("c2", "c3")):
            await fenced_put(log.threads, thread, checkpoint, parent)
        latest = await log.threads.get(T, thread)
        assert latest is not None
        assert ("c3", "c2") == (latest.checkpoint_id, latest.parent_id)

    async def test_a_put_whose_parent_is_not_the_head_is_refused(self, log: OpenLog) -> None:
        """A second child of the same parent (a fork) is refused with the parent it named
        and the head, and nothing is written."""
        thread = fresh_id("th")
        await fenced_put(log.threads, thread, "c1", None)
        await fenced_put(log.threads, thread, "c2", "c1")
        before = await version(log, thread)
        with pytest.raises(NotThreadHead) as refused:
            await fenced_put(log.threads, thread, "c3", "c1")
        assert ("c3", "c1", "c2") == facts(refused)
        assert (T, thread, "") == (refused.value.tenant_id, refused.value.thread_id,
                                   refused.value.namespace)
        assert before == await version(log, thread)
        assert ["c2", "c1"] == [c.checkpoint_id for c in await log.threads.page(T, thread)]

    async def test_a_put_without_a_parent_on_a_thread_with_a_head_is_refused(
        self, log: OpenLog
    ) -> None:
        """A second root in one namespace is a fork too."""
        thread = fresh_id("th")
        await fenced_put(log.threads, thread, "c1", None)
        with pytest.raises(NotThreadHead) as refused:
            await fenced_put(log.threads, thread, "c2", None)
        assert ("c2", None, "c1") == facts(refused)

    async def test_a_put_sorting_before_the_head_is_refused(self, log: OpenLog) -> None:
        """A child of the head whose id would not make it the latest is refused."""
        thread = fresh_id("th")
        await fenced_put(log.threads, thread, "c5", None)
        with pytest.raises(NotThreadHead) as refused:
            await fenced_put(log.threads, thread, "c4", "c5")
        assert ("c4", "c5", "c5") == facts(refused)

    async def test_the_head_put_again_with_its_parent_is_accepted(self, log: OpenLog) -> None:
        """A retried put of the head is the same checkpoint again; with another parent,
        refused."""
        thread = fresh_id("th")
        await fenced_put(log.threads, thread, "c1", None)
        await fenced_put(log.threads, thread, "c2", "c1")
        await fenced_put(log.threads, thread, "c2", "c1")
        with pytest.raises(NotThreadHead):
            await fenced_put(log.threads, thread, "c2", None)
        assert ["c2", "c1"] == [c.checkpoint_id for c in await log.threads.page(T, thread)]

    async def test_namespaces_have_heads_of_their_own(self, log: OpenLog) -> None:
        """A subgraph's namespace starts its own chain beside the root's."""
        thread = fresh_id("th")
        await fenced_put(log.threads, thread, "c1", None)
        await fenced_put(log.threads, thread, "s1", None, namespace="child:1")
        await fenced_put(log.threads, thread, "c2", "c1")
        await fenced_put(log.threads, thread, "s2", "s1", namespace="child:1")
        with pytest.raises(NotThreadHead):
            await fenced_put(log.threads, thread, "s3", "c2", namespace="child:1")

    async def test_writes_go_to_the_head_or_a_checkpoint_still_to_come(
        self, log: OpenLog
    ) -> None:
        """Writes to the head, or to an id after it (LangGraph's async durability saves a
        step's writes while its checkpoint is being put), are kept; to an older
        checkpoint they are refused and nothing is written."""
        thread = fresh_id("th")
        await fenced_write(log.threads, thread, "c1")  # before its checkpoint's put
        await fenced_put(log.threads, thread, "c1", None)
        await fenced_put(log.threads, thread, "c2", "c1")
        assert 1 == await fenced_write(log.threads, thread, "c2")
        assert 1 == await fenced_write(log.threads, thread, "c3")
        before = await version(log, thread)
        with pytest.raises(NotThreadHead) as refused:
            await fenced_write(log.threads, thread, "c1")
        assert ("c1", "c1", "c2") == facts(refused)
        assert before == await version(log, thread)

    async def test_nothing_late_resurrects_a_deleted_thread(self, log: OpenLog) -> None:
        """After delete_thread, a put naming the deleted head, a write to it or a late
        first put are refused; a new first put starts the thread again."""
        thread = fresh_id("th")
        await fenced_put(log.threads, thread, "c1", None)
        await fenced_put(log.threads, thread, "c2", None, namespace="child:1")
        await log.threads.delete_thread(T, thread)
        attempts: list[Callable[[], Awaitable[int]]] = [
            lambda: fenced_put(log.threads, thread, "c3", "c1"),
            lambda: fenced_write(log.threads, thread, "c1"),
            lambda: fenced_write(log.threads, thread, "c2", namespace="child:1"),
            lambda: fenced_put(log.threads, thread, "c0", None),
        ]
        for attempt in attempts:
            with pytest.raises(NotThreadHead) as refused:
                await attempt()
            assert refused.value.head is None
        assert [] == await log.threads.page(T, thread)
        await fenced_put(log.threads, thread, "c9", None)
        assert ["c9"] == [c.checkpoint_id for c in await log.threads.page(T, thread)]
        assert (await log.verify()).ok

    async def test_a_write_to_a_pruned_checkpoint_is_refused(self, log: OpenLog) -> None:
        """Pruned or run-deleted checkpoints take no late writes either."""
        thread = fresh_id("th")
        await fenced_put(log.threads, thread, "c1", None, run_key="r1")
        await fenced_put(log.threads, thread, "c2", "c1", run_key="r2")
        await log.threads.delete_runs(T, ["r2"])
        with pytest.raises(NotThreadHead) as refused:
            await fenced_write(log.threads, thread, "c2")
        assert ("c2", "c2", "c1") == facts(refused)
        with pytest.raises(NotThreadHead):
            await fenced_put(log.threads, thread, "c3", "c2")
        await fenced_put(log.threads, thread, "c3", "c1")

    async def test_a_head_another_process_moved_is_seen(self, log: OpenLog) -> None:
        """A second store on the log (another process) moving the head: this store's
        stale put is refused, and its put on the new head is accepted."""
        thread = fresh_id("th")
        other = log.sibling().threads
        await fenced_put(log.threads, thread, "c1", None)
        await fenced_put(other, thread, "c2", "c1")
        with pytest.raises(NotThreadHead) as refused:
            await fenced_put(log.threads, thread, "c3", "c1")
        assert ("c3", "c1", "c2") == facts(refused)
        await fenced_put(log.threads, thread, "c3", "c2")
        await other.delete_thread(T, thread)
        with pytest.raises(NotThreadHead):
            await fenced_put(log.threads, thread, "c4", "c3")

    async def test_unfenced_puts_still_fork(self, log: OpenLog) -> None:
        """Without fenced, puts append as before: two children of one parent are kept."""
        thread = fresh_id("th")
        await fenced_put(log.threads, thread, "c1", None)
        for checkpoint in ("c2", "c3"):
            await log.threads.put(T, thread, checkpoint, state=state(checkpoint),
                                  parent_id="c1")
        assert ["c3", "c2", "c1"] == [c.checkpoint_id for c in await log.threads.page(T, thread)]
