"""Contract: thread checkpoints (``log.checkpoints.threads``)."""

from __future__ import annotations

import msgspec
import pytest

from eventlog import InvalidInput, OpenLog, content_digest
from eventlog.checkpoints import ChannelValue, Payload, ThreadCheckpoints
from eventlog.testing.contract._base import ContractBase
from eventlog.testing.helpers import fresh_id, settle
from projections import compare_views

T = "tenant"


def state(text: str) -> Payload:
    """A JSON list of the text: even a one-letter text is a payload of more than
    `eventlog.hashing.TOLD_BY_DIGEST` bytes, counted and purged like any state."""
    return Payload("json", msgspec.json.encode([text]))


def threads(log: OpenLog) -> ThreadCheckpoints:
    return log.checkpoints.threads


async def put(log: OpenLog, thread: str, checkpoint: str, **options: object) -> None:
    await threads(log).put(T, thread, checkpoint, state=state(checkpoint), **options)  # type: ignore[arg-type]



class CheckpointsThreadsContract(ContractBase):
    """Contract: thread checkpoints (``log.checkpoints.threads``)."""

    async def test_get_returns_state_channels_and_writes(self, log: OpenLog) -> None:
        """A put reads back with its state, channel values and pending writes."""
        thread = fresh_id("th")
        await put(log, thread, "c1", channels={"a": state("va"), "b": state("vb")},
                  metadata={"source": "input"}, step=-1, parent_id="c0", run_key="run 1")
        await threads(log).put_writes(T, thread, "c1", "task", [(0, "a", state("w"))])
        found = await threads(log).get(T, thread, "c1")
        assert found is not None
        assert (state("c1"), {"a": state("va"), "b": state("vb")}) == (found.state, found.channels)
        assert [("task", 0, "a", state("w"))] == [
            (w.task_id, w.idx, w.channel, w.value) for w in found.writes or []
        ]
        assert ("c0", "run 1", -1, {"source": "input"}) == (
            found.parent_id, found.run_key, found.step, found.metadata
        )

    async def test_latest_is_the_highest_id_not_the_last_put(self, log: OpenLog) -> None:
        """A retried put of an old id does not make it the latest."""
        thread = fresh_id("th")
        for checkpoint in ("c1", "c2", "c1"):
            await put(log, thread, checkpoint)
        latest = await threads(log).get(T, thread)
        assert latest is not None
        assert "c2" == latest.checkpoint_id
        assert ["c2", "c1"] == [c.checkpoint_id for c in await threads(log).page(T, thread)]

    async def test_unchanged_channel_is_stored_once(self, log: OpenLog) -> None:
        """Two checkpoints carrying the same channel value share one blob."""
        thread = fresh_id("th")
        for checkpoint in ("c1", "c2"):
            await put(log, thread, checkpoint, channels={"big": state("same value")})
        refs = await log.blob_refs(T)
        assert 3 == len(refs)
        assert 2 == max(refs.values())

    async def test_first_write_per_index_wins_special_indexes_overwrite(
        self, log: OpenLog,
    ) -> None:
        """A write at an existing idx ≥ 0 is ignored; a negative idx replaces."""
        thread = fresh_id("th")
        await put(log, thread, "c1")
        store = threads(log)
        await store.put_writes(T, thread, "c1", "t", [(0, "a", state("first")),
                                                      (-1, "__error__", state("e1"))])
        await store.put_writes(T, thread, "c1", "t", [
            (0, "a", state("second")), (-1, "__error__", state("e2")),
            (-1, "__error__", state("e3")),
        ])
        found = await store.get(T, thread, "c1")
        assert found is not None
        assert {0: state("first"), -1: state("e3")} == {w.idx: w.value for w in found.writes or []}
        await store.delete_thread(T, thread)
        assert {} == dict(await log.blob_refs(T))

    async def test_namespaces_are_kept_apart(self, log: OpenLog) -> None:
        """Each namespace has its own latest; the thread lists its namespaces."""
        thread = fresh_id("th")
        long_namespace = "|".join(f"node:{i:036d}" for i in range(20))
        await put(log, thread, "c1")
        await put(log, thread, "c2", namespace=long_namespace)
        root = await threads(log).get(T, thread)
        assert root is not None
        assert "c1" == root.checkpoint_id
        assert ["", long_namespace] == await threads(log).namespaces(T, thread)

    async def test_page_before_limit_and_metadata_filter(self, log: OpenLog) -> None:
        """Pages go newest first, below ``before``, matching the metadata filter."""
        thread = fresh_id("th")
        for number in range(1, 6):
            await put(log, thread, f"c{number}",
                      metadata={"source": "loop" if number % 2 else "input", "step": number})
        store = threads(log)
        assert ["c3", "c2"] == [c.checkpoint_id for c in await store.page(
            T, thread, before="c4", limit=2, payloads=False)]
        assert ["c5", "c3", "c1"] == [c.checkpoint_id for c in await store.page(
            T, thread, metadata={"source": "loop"})]
        assert ["c4"] == [c.checkpoint_id for c in await store.page(
            T, thread, metadata={"source": "input", "step": 4})]

    async def test_a_metadata_filter_key_is_compared_literally(self, log: OpenLog) -> None:
        """A filter key holding ``"."`` matches that key, never a member of a nested object."""
        thread = fresh_id("th")
        await put(log, thread, "c1", metadata={'a"."b': 1})
        await put(log, thread, "c2", metadata={"a": {"b": 1}})
        assert ["c1"] == [c.checkpoint_id for c in await threads(log).page(
            T, thread, metadata={'a"."b': 1}, payloads=False)]

    async def test_a_nul_nested_in_metadata_is_refused(self, log: OpenLog) -> None:
        """A NUL character in a nested metadata string is InvalidInput on every backend."""
        with pytest.raises(InvalidInput, match="NUL"):
            await put(log, fresh_id("th"), "c1", metadata={"outer": {"text": "a\x00b"}})

    async def test_a_nul_in_a_nested_metadata_key_is_refused(self, log: OpenLog) -> None:
        """A NUL character in a nested metadata key is InvalidInput on every backend."""
        with pytest.raises(InvalidInput, match="NUL"):
            await put(log, fresh_id("th"), "c1", metadata={"outer": [{"k\x00": 1}]})

    async def test_a_refused_nul_leaves_filtered_listings_working(self, log: OpenLog) -> None:
        """After a refused NUL, a metadata-filtered listing of the tenant still answers."""
        thread = fresh_id("th")
        await put(log, thread, "c1", metadata={"source": "loop"})
        with pytest.raises(InvalidInput):
            await put(log, thread, "c2", metadata={"source": {"nested": "\x00"}})
        assert ["c1"] == [c.checkpoint_id for c in await threads(log).page(
            T, metadata={"source": "loop"}, payloads=False)]

    async def test_a_namespace_of_1024_bytes_is_stored(self, log: OpenLog) -> None:
        """A namespace at the limit (1,024 bytes of UTF-8) is put and read back."""
        thread, namespace = fresh_id("th"), "n" * 1024
        await put(log, thread, "c1", namespace=namespace)
        found = await threads(log).get(T, thread, namespace=namespace)
        assert found is not None
        assert (namespace, "c1") == (found.namespace, found.checkpoint_id)

    async def test_a_namespace_over_1024_bytes_is_refused(self, log: OpenLog) -> None:
        """A namespace of 1,025 bytes is InvalidInput on every backend, before any write."""
        with pytest.raises(InvalidInput, match="namespace"):
            await put(log, fresh_id("th"), "c1", namespace="n" * 1025)

    async def test_the_namespace_limit_counts_utf8_bytes(self, log: OpenLog) -> None:
        """400 three-byte characters (1,200 bytes) are over the limit."""
        with pytest.raises(InvalidInput, match="1200 bytes"):
            await put(log, fresh_id("th"), "c1", namespace="\u20ac" * 400)

    async def test_a_run_key_of_1024_bytes_is_stored_and_deleted(self, log: OpenLog) -> None:
        """A run key at the limit is put, and delete_runs finds it."""
        run_key = "r" * 1024
        await put(log, fresh_id("th"), "c1", run_key=run_key)
        assert 1 == await threads(log).delete_runs(T, [run_key])

    async def test_a_run_key_over_1024_bytes_is_refused(self, log: OpenLog) -> None:
        """A run key of 1,025 bytes is InvalidInput on every backend."""
        with pytest.raises(InvalidInput, match="run_key"):
            await put(log, fresh_id("th"), "c1", run_key="r" * 1025)

    async def test_the_longest_keys_the_limits_allow_are_stored(self, log: OpenLog) -> None:
        """A 248-character thread id, a 1,024-byte namespace and a 256-byte channel name and
        version together are stored and read back (they share one index entry)."""
        thread, namespace, channel = "t" * 248, "n" * 1024, "c" * 256
        await threads(log).put(T, thread, "c1", state=state("s"), namespace=namespace,
                               channels={channel: ChannelValue("v" * 256, state("x"))})
        found = await threads(log).get(T, thread, namespace=namespace)
        assert found is not None
        assert {channel: state("x")} == found.channels

    async def test_a_channel_name_over_256_bytes_is_refused(self, log: OpenLog) -> None:
        """A channel name of 257 bytes is InvalidInput on every backend."""
        with pytest.raises(InvalidInput, match="channel"):
            await put(log, fresh_id("th"), "c1", channels={"c" * 257: state("x")})

    async def test_tenant_page_sees_only_its_tenant(self, log: OpenLog) -> None:
        """A page without a thread lists every thread of the tenant and nothing else."""
        await put(log, fresh_id("th"), "c1")
        await threads(log).put("other", fresh_id("th"), "c2", state=state("x"))
        assert ["c1"] == [c.checkpoint_id for c in await threads(log).page(T)]

    async def test_delete_thread_removes_every_namespace_and_purges_blobs(
        self, log: OpenLog,
    ) -> None:
        """One tombstone removes all namespaces and releases every blob."""
        thread = fresh_id("th")
        await put(log, thread, "c1", channels={"a": state("va")})
        await put(log, thread, "c2", namespace="child:1")
        await put(log, thread, "c1")
        await threads(log).put_writes(T, thread, "c1", "t", [(0, "a", state("w"))])
        assert 2 == await threads(log).delete_thread(T, thread)
        assert [] == await threads(log).page(T, thread)
        assert {} == dict(await log.blob_refs(T))
        assert 0 == await threads(log).delete_thread(T, thread)
        assert (await log.verify()).ok
        await settle(log)
        assert [] == await compare_views(log)
        assert (await log.verify()).ok

    async def test_delete_runs_and_prune_release_what_they_remove(self, log: OpenLog) -> None:
        """Runs and prunes remove checkpoints and writes, keeping the rest intact."""
        thread = fresh_id("th")
        for number, run in ((1, "r1"), (2, "r1"), (3, "r2"), (4, "r2")):
            await put(log, thread, f"c{number}", run_key=run)
        await threads(log).put_writes(T, thread, "c1", "t", [(0, "a", state("w1"))])
        assert 2 == await threads(log).delete_runs(T, ["r1", "unknown"])
        assert 1 == await threads(log).prune(T, thread, keep_latest=1)
        assert ["c4"] == [c.checkpoint_id for c in await threads(log).page(T, thread)]
        assert {1} == set((await log.blob_refs(T)).values())
        await settle(log)
        assert [] == await compare_views(log)
        assert (await log.verify()).ok

    async def test_copy_thread_records_source_and_copies_everything(self, log: OpenLog) -> None:
        """A copy carries every checkpoint, channel and write to the target."""
        source, target = fresh_id("src"), fresh_id("dst")
        await put(log, source, "c1", channels={"a": state("va")}, metadata={"step": 0})
        await put(log, source, "c2", namespace="child:1", parent_id="c1")
        await threads(log).put_writes(T, source, "c1", "t", [(0, "a", state("w"))])
        assert 2 == await threads(log).copy_thread(T, source, target)
        copied = await threads(log).page(T, target)
        original = await threads(log).page(T, source)
        assert [(c.namespace, c.checkpoint_id, c.state, c.channels, c.writes, c.metadata)
                for c in original] == [
            (c.namespace, c.checkpoint_id, c.state, c.channels, c.writes, c.metadata)
            for c in copied]
        await threads(log).delete_thread(T, source)
        assert copied == await threads(log).page(T, target)
        await settle(log)
        assert [] == await compare_views(log)
        assert (await log.verify()).ok

    async def test_invalid_input_writes_nothing(self, log: OpenLog) -> None:
        """Bad ids, namespaces and payloads are refused naming the field."""
        store = threads(log)
        with pytest.raises(InvalidInput, match="thread_id"):
            await store.put(T, "x" * 249, "c1", state=state("s"))
        with pytest.raises(InvalidInput, match="namespace"):
            await store.put(T, "th", "c1", state=state("s"), namespace="a\x00b")
        with pytest.raises(InvalidInput, match="state"):
            await store.put(T, "th", "c1", state=b"raw")  # type: ignore[arg-type]
        assert [] == await store.page(T)

    async def test_copy_merges_writes_like_put_writes(self, log: OpenLog) -> None:
        """A copy keeps the target's first writes, replaces special ones, and orphans nothing."""
        source, target = fresh_id("src"), fresh_id("dst")
        store = threads(log)
        for thread, value in ((source, "from source"), (target, "target's own")):
            await put(log, thread, "c1")
            await store.put_writes(T, thread, "c1", "t", [(0, "a", state(value)),
                                                          (-1, "__error__", state(value))])
        await store.copy_thread(T, source, target)
        found = await store.get(T, target, "c1")
        assert found is not None
        assert {0: state("target's own"), -1: state("from source")} == {
            w.idx: w.value for w in found.writes or []
        }
        await store.delete_thread(T, source)
        await store.delete_thread(T, target)
        assert {} == dict(await log.blob_refs(T))
        await settle(log)
        assert [] == await compare_views(log)
        assert (await log.verify()).ok

    async def test_a_channel_version_is_stored_once_and_goes_with_its_last_carrier(
        self, log: OpenLog,
    ) -> None:
        """Later checkpoints name an unchanged version without storing it; a prune releases
        a version no remaining checkpoint carries."""
        thread = fresh_id("th")
        big, newer = state("big value"), state("newer value")
        await put(log, thread, "c1", channels={"ch": ChannelValue("1", big)})
        await put(log, thread, "c2", channels={"ch": ChannelValue("1")})
        found = await threads(log).get(T, thread, "c2")
        assert found is not None
        assert {"ch": big} == found.channels
        assert 1 == (await log.blob_refs(T))[content_digest(big.data)]
        await put(log, thread, "c3", channels={"ch": ChannelValue("2", newer)})
        assert 2 == await threads(log).prune(T, thread, keep_latest=1)
        assert content_digest(big.data) not in await log.blob_refs(T)
        latest = await threads(log).get(T, thread)
        assert latest is not None
        assert {"ch": newer} == latest.channels
        await settle(log)
        assert [] == await compare_views(log)
        assert (await log.verify()).ok

    async def test_thread_events_belong_to_their_thread_stream(self, log: OpenLog) -> None:
        """A thread's event appended to another stream is refused (a forged thread)."""
        from eventlog.events.threads import ThreadDeleted

        with pytest.raises(InvalidInput):
            await log.append(T, "thread:other", [ThreadDeleted(thread_id="mine", checkpoints=0)])
