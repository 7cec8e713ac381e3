"""Element storage on an encrypted log (issue 33 §1 with issue 32): elements and manifests
sealed under the thread's key, a manifest naming its elements and its chain by their
sealed addresses, nothing stored in the clear (no marker, no plain digest), ciphertext
bound to its thread and tenant, erasure, prune, copy, delete and export/import."""

from __future__ import annotations

import io
import operator
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypedDict

import asyncpg
import pytest

from eventlog import open_log
from eventlog.checkpoints import ChannelValue, Payload
from eventlog.checkpoints.elements import ELEMENTS_ENCODING, decode_manifest
from eventlog.checkpoints.thread_records import Elements
from eventlog.crypto import FileKeyring, init_keyring
from eventlog.crypto._seal import MAGIC
from eventlog.errors import CorruptBlob, KeyringRequired, SealRefused, SubjectErased
from eventlog.events.threads import ThreadCheckpointPut
from eventlog.hashing import content_digest
from eventlog.transfer import export_log, import_log
from projections.query import ViewQuery
from projections.threads import THREAD_VALUES, THREAD_WRITES
from tests.adapters import test_langgraph_graph as graph_tests
from tests.conftest import CITUS, PG_URL, PGBOUNCER, BackendTarget
from tests.test_tamper import sql

sql_targets = pytest.mark.parametrize("target", ["sqlite", "postgresql"], indirect=True)
every_target = pytest.mark.parametrize(
    "target", ["memory", "sqlite", "postgresql", PGBOUNCER, CITUS], indirect=True)
graph_targets = pytest.mark.parametrize("target", ["sqlite", "postgresql", CITUS],
                                        indirect=True)
T = "t"


@pytest.fixture
def keyring(tmp_path: Path) -> FileKeyring:
    return init_keyring(tmp_path / "keyring.json")


def message(n: int, thread: str = "") -> bytes:
    return f"MARKER-ELEMENT-{thread}{n} ".encode() * 40


def chat(length: int, thread: str = "") -> Elements:
    return Elements(tuple(Payload("b", message(n, thread)) for n in range(length)))


async def grow(log: Any, thread: str, steps: int, *, tenant: str = T, words: str = "") -> None:
    for step in range(steps):
        await log.threads.put(tenant, thread, f"c{step:04}", state=Payload("b", b"s"),
                              channels={"messages": ChannelValue(f"v{step:04}",
                                                                 chat(step + 1, words))},
                              run_key=f"run{step // 5}")


async def read_all_steps(log: Any, thread: str, steps: int, words: str = "") -> list[bool]:
    """Whether each checkpoint of ``thread`` reads its whole list back."""
    found = []
    for step in range(steps):
        got = await log.threads.get(T, thread, f"c{step:04}")
        found.append(got is not None and chat(step + 1, words) == got.channels["messages"])
    return found


async def message_refs(log: Any, thread: str) -> list[Any]:
    return [ref for recorded in [r async for r in log.read_stream(T, f"thread:{thread}")]
            if isinstance(recorded.event, ThreadCheckpointPut)
            for ref in recorded.event.channels if ref.name == "messages"]


@every_target
async def test_manifests_name_sealed_addresses_and_every_list_reads_whole(
        target: BackendTarget, keyring: FileKeyring) -> None:
    """Each element is stored once, sealed, under its keyed address; each manifest is
    sealed and names its elements and its base by sealed addresses (no plain digest);
    every checkpoint reads its whole list; verify holds."""
    async with open_log(target.url, keyring=keyring, **target.options()) as log:
        await grow(log, "chat", 12)
        address: Callable[[bytes], bytes] = await log.blob_addresses(T, "thread:chat")
        refs = await log.blob_refs(T)
        stored = await log.storage.get_blobs(T, list(refs))
        values = await message_refs(log, "chat")
        manifests = {digest: decode_manifest(data) for digest, data in (await log.get_blobs(
            T, [bytes.fromhex(ref.digest) for ref in values])).items()}
        last = manifests[bytes.fromhex(values[-1].digest)]
        assert last is not None
        assert ([1] * 12, [False] * 12, True, [(address(message(11)))],
                bytes.fromhex(values[-2].digest), [True] * 12, True) == (
            [refs.get(address(message(n))) for n in range(12)],
            [content_digest(message(n)) in refs for n in range(12)],
            all(data.startswith(MAGIC) for data in stored.values()),
            [digest for _, digest in last.add], last.chain[0],
            await read_all_steps(log, "chat", 12), (await log.verify()).ok)
        assert [address(message(11)).hex()] == values[-1].elements


@sql_targets
async def test_verify_and_lists_work_without_the_keyring(
        target: BackendTarget, keyring: FileKeyring) -> None:
    """Opened without its keyring, an element-stored encrypted thread verifies (every
    element and manifest hashed as stored) and lists; its values refuse to be read."""
    async with open_log(target.url, keyring=keyring, **target.options()) as log:
        await grow(log, "chat", 6)
    async with open_log(target.url, **target.options()) as log:
        report = await log.verify()
        listed = await log.threads.page(T, "chat", payloads=False)
        with pytest.raises(KeyringRequired):
            await log.threads.get(T, "chat")
        assert (True, 6) == (report.ok, len(listed))


class ChatState(TypedDict):
    messages: Annotated[list[Any], operator.add]
    notes: Annotated[list[str], operator.add]


def _chat_graph(saver: Any) -> Any:
    from langchain_core.messages import AIMessage
    from langgraph.graph import END, START, StateGraph

    def answer(state: ChatState) -> dict[str, Any]:
        step = len(state["messages"])
        return {"messages": [AIMessage(f"MARKER-LG-MESSAGE-{step} " * 20)],
                "notes": [f"MARKER-LG-WRITE-{step}"]}

    builder = StateGraph(ChatState)
    builder.add_node("answer", answer)
    builder.add_edge(START, "answer")
    builder.add_edge("answer", END)
    return builder.compile(checkpointer=saver)


async def _write_markers(log: Any) -> list[bytes]:
    """Marker lists put through the thread store and through LangGraph (messages and
    list-valued pending writes), all stored as elements; the plain digests of the
    store's elements, which must not be stored either."""
    from eventlog.adapters.langgraph import AsyncEventlogSaver

    await grow(log, "direct", 4)
    await log.threads.put_writes(T, "direct", "c0003", "task", [
        (0, "notes", Elements((Payload("b", b"MARKER-WRITE-ELEMENT-0"),
                               Payload("b", b"MARKER-WRITE-ELEMENT-1"))))])
    saver = AsyncEventlogSaver(log, tenant_id=T)
    graph = _chat_graph(saver)
    config = {"configurable": {"thread_id": "lg"}}
    for turn in range(3):
        await graph.ainvoke({"messages": [f"MARKER-LG-HUMAN-{turn}"], "notes": []}, config)
    state = await graph.aget_state(config)
    assert (True, 6, 3) == (saver.elements, len(state.values["messages"]),
                            len(state.values["notes"]))
    encodings = {row["encoding"] for view in (THREAD_VALUES, THREAD_WRITES)
                 for row in await log.query(ViewQuery(view, {"tenant_id": T}))}
    assert ELEMENTS_ENCODING in encodings
    return [content_digest(data) for data in (*(message(n) for n in range(4)),
                                             b"MARKER-WRITE-ELEMENT-0",
                                             b"MARKER-WRITE-ELEMENT-1")]


def _stored(directory: Path) -> bytes:
    """The database file and its WAL, as bytes."""
    return b"".join(path.read_bytes() for path in directory.glob("log.db*"))


def _found(stored: bytes, digests: list[bytes]) -> list[str]:
    markers = [marker for marker in (b"MARKER-ELEMENT", b"MARKER-WRITE-ELEMENT",
                                     b"MARKER-LG-MESSAGE", b"MARKER-LG-WRITE",
                                     b"MARKER-LG-HUMAN") if marker in stored]
    return [m.decode() for m in markers] + [
        digest.hex() for digest in digests
        if digest in stored or digest.hex().encode() in stored]


@pytest.mark.parametrize("target", ["sqlite"], indirect=True)
async def test_no_marker_or_plain_digest_is_in_the_sqlite_file_or_its_wal(
        target: BackendTarget, keyring: FileKeyring, tmp_path: Path) -> None:
    """Element-stored lists (the store's, LangGraph's messages and list-valued pending
    writes): no marker and no element's plain digest in the database file or its WAL."""
    async with open_log(target.url, keyring=keyring) as log:
        digests = await _write_markers(log)
        stored = _stored(tmp_path)
        assert ([], True) == (_found(stored, digests), (await log.verify()).ok)


@pytest.mark.parametrize("target", ["postgresql"], indirect=True)
async def test_no_marker_or_plain_digest_is_in_any_postgresql_table(
        target: BackendTarget, keyring: FileKeyring) -> None:
    """The same, over every table of the log's PostgreSQL schema read as text (bytea as
    hex, so the markers' hex is looked for too)."""
    async with open_log(target.url, keyring=keyring, **target.options()) as log:
        digests = await _write_markers(log)
        pg = await asyncpg.connect(PG_URL)
        try:
            tables = [row[0] for row in await pg.fetch(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = $1",
                target.schema)]
            text = "".join([str(row[0]) for table in tables for row in await pg.fetch(
                f'SELECT t::text FROM "{target.schema}"."{table}" t')])
        finally:
            await pg.close()
        stored = text.encode()
        hexed = [marker for marker in (b"MARKER-ELEMENT", b"MARKER-LG-MESSAGE",
                                       b"MARKER-LG-WRITE") if marker.hex().encode() in stored]
        assert (True, [], []) == (len(tables) > 10, _found(stored, digests), hexed)


async def _blob(target: BackendTarget, tenant: str, digest: bytes) -> bytes:
    async with open_log(target.url, **target.options()) as log:
        found = await log.storage.get_blobs(tenant, [digest])
    return found[digest]


@sql_targets
async def test_an_element_swapped_between_two_threads_is_refused(
        target: BackendTarget, keyring: FileKeyring) -> None:
    """The same message in two threads is two ciphertexts under two addresses; thread
    a's put in place of thread b's is refused on read (it is not b's address's bytes) and
    found by verify without the keyring."""
    async with open_log(target.url, keyring=keyring, **target.options()) as log:
        await grow(log, "a", 1)
        await grow(log, "b", 1)
        ours = (await log.blob_addresses(T, "thread:a"))(message(0))
        theirs = (await log.blob_addresses(T, "thread:b"))(message(0))
        assert ours != theirs
        await sql(target, "UPDATE blobs SET data = $1 WHERE digest = $2",
                  await _blob(target, T, ours), theirs)
        with pytest.raises(CorruptBlob):
            await log.threads.get(T, "b")
        assert chat(1) == (await log.threads.get(T, "a")).channels["messages"]  # type: ignore[union-attr]
    async with open_log(target.url, **target.options()) as log:  # no keyring: verify finds it
        assert not (await log.verify()).ok


@sql_targets
async def test_an_element_moved_to_another_tenant_is_refused(
        target: BackendTarget, keyring: FileKeyring) -> None:
    """An element's ciphertext copied into another tenant under its own address does not
    open there, though that tenant has a thread of the same id (and a key for it)."""
    async with open_log(target.url, keyring=keyring, **target.options()) as log:
        await grow(log, "a", 1)
        await grow(log, "a", 1, tenant="u", words="u")
        ours = (await log.blob_addresses(T, "thread:a"))(message(0))
        envelope = await _blob(target, T, ours)
        await sql(target, "INSERT INTO blobs (tenant_id, digest, size, refs, data) "
                          f"VALUES ('u', $1, {len(envelope)}, 1, $2)", ours, envelope)
        with pytest.raises(SealRefused, match="does not open in tenant 'u'"):
            await log.get_blobs("u", [ours])


@sql_targets
async def test_erasure_refuses_element_reads_and_keeps_lists_and_verify(
        target: BackendTarget, keyring: FileKeyring) -> None:
    """After the thread's subject is erased its lists raise SubjectErased (even those
    whose manifests were read before), its checkpoints still list, verify holds, and
    another thread holding the same messages reads on."""
    async with open_log(target.url, keyring=keyring, **target.options()) as log:
        await grow(log, "gone", 5)
        await grow(log, "kept", 5)
        assert [True] * 5 == await read_all_steps(log, "gone", 5)
        assert 1 == await log.erase(T, "gone", reason="asked")
        for step in range(5):
            with pytest.raises(SubjectErased):
                await log.threads.get(T, "gone", f"c{step:04}")
        assert (5, [True] * 5, True) == (
            len(await log.threads.page(T, "gone", payloads=False)),
            await read_all_steps(log, "kept", 5), (await log.verify()).ok)


@sql_targets
async def test_prune_delete_runs_and_delete_on_an_encrypted_element_thread(
        target: BackendTarget, keyring: FileKeyring) -> None:
    """A prune keeps what the kept lists rest on and releases the rest; delete_runs and
    delete_thread release every element; each step the rest reads whole, verify holds."""
    async with open_log(target.url, keyring=keyring, **target.options()) as log:
        await grow(log, "chat", 20)
        address = await log.blob_addresses(T, "thread:chat")
        await log.threads.prune(T, "chat", keep_latest=3)
        kept = [await log.threads.get(T, "chat", f"c{step:04}") for step in (17, 18, 19)]
        assert ([chat(18), chat(19), chat(20)], None, True) == (
            [found.channels["messages"] for found in kept if found is not None],
            await log.threads.get(T, "chat", "c0005"), (await log.verify()).ok)
        refs = await log.blob_refs(T)
        assert all(refs.get(address(message(n)), 0) >= 1 for n in range(20))
        await log.threads.delete_runs(T, ["run3"])
        assert [] == await log.threads.page(T, "chat", payloads=False)
        refs = await log.blob_refs(T)
        assert ([], True) == ([n for n in range(20) if address(message(n)) in refs],
                              (await log.verify()).ok)
        await grow(log, "other", 4)
        await log.threads.delete_thread(T, "other")
        assert ({}, True) == (await log.blob_refs(T), (await log.verify()).ok)


@sql_targets
async def test_a_copy_holds_its_own_sealed_elements(
        target: BackendTarget, keyring: FileKeyring) -> None:
    """A copy re-seals every element and manifest under the target thread's key and
    addresses (its manifests rebuilt, deltas kept): it reads whole after the source is
    deleted and its subject erased."""
    async with open_log(target.url, keyring=keyring, **target.options()) as log:
        await grow(log, "source", 8)
        await log.threads.put_writes(T, "source", "c0007", "task", [(0, "notes", chat(3))])
        assert 8 == await log.threads.copy_thread(T, "source", "copy")
        copied = await log.get_blobs(T, [bytes.fromhex(ref.digest)
                                         for ref in await message_refs(log, "copy")])
        deltas = [manifest.chain for manifest in map(decode_manifest, copied.values())
                  if manifest is not None and manifest.chain]
        await log.threads.delete_thread(T, "source")
        await log.erase(T, "source", reason="gone")
        address = await log.blob_addresses(T, "thread:copy")
        refs = await log.blob_refs(T)
        found = await log.threads.get(T, "copy", "c0007")
        assert found is not None
        # messages 0-2 are held by the write's list too
        assert ([True] * 8, [2, 2, 2, 1, 1, 1, 1, 1], 7, chat(3), True) == (
            await read_all_steps(log, "copy", 8),
            [refs.get(address(message(n))) for n in range(8)],
            len(deltas),
            found.writes[0].value, (await log.verify()).ok)


@sql_targets
async def test_export_import_of_an_encrypted_element_thread(
        target: BackendTarget, keyring: FileKeyring, tmp_path: Path) -> None:
    """Exported without the keyring, the thread's ciphertext travels as it is: the file
    holds no marker, the import verifies and lists, and its lists refuse to be read
    without the keyring."""
    async with open_log(target.url, keyring=keyring, **target.options()) as log:
        await grow(log, "chat", 6)
    sink = io.BytesIO()
    async with open_log(target.url, **target.options()) as log:
        await export_log(log, sink, tenant_id=T)
    async with open_log(f"sqlite:///{tmp_path / 'copy.db'}") as copy:
        sink.seek(0)
        await import_log(copy, sink)
        with pytest.raises(KeyringRequired):
            await copy.threads.get(T, "chat")
        assert (False, True, 6) == (
            b"MARKER" in sink.getvalue(), (await copy.verify()).ok,
            len(await copy.threads.page(T, "chat", payloads=False)))


class _Sealed(BackendTarget):
    """A target opened with a keyring (its ``options``), for tests written for any."""

    def __init__(self, target: BackendTarget, keyring: FileKeyring) -> None:
        super().__init__(target.name, target.url, target.schema)
        self.keyring = str(keyring.path)

    def options(self) -> dict[str, str]:
        return {**super().options(), "keyring": self.keyring}


@graph_targets
async def test_the_real_graph_tests_pass_on_an_encrypted_element_stored_log(
        target: BackendTarget, keyring: FileKeyring) -> None:
    """LangGraph's real-graph tests (interrupt, restart, resume, update, history; replay
    and fork; subgraph namespaces and delete) on an encrypted log, lists stored as
    elements."""
    sealed = _Sealed(target, keyring)
    await graph_tests.test_interrupt_restart_resume_update_and_history(sealed)
    await graph_tests.test_replay_fork_from_an_earlier_checkpoint(sealed)
    await graph_tests.test_subgraph_interrupt_keeps_namespaces_apart(sealed)
    async with open_log(target.url, keyring=keyring, **target.options()) as log:
        rows = await log.query(ViewQuery(THREAD_VALUES, {"tenant_id": graph_tests.TENANT}))
        assert ELEMENTS_ENCODING in {row["encoding"] for row in rows}


@pytest.mark.parametrize("target", [CITUS], indirect=True)
async def test_the_conformance_suite_passes_on_an_encrypted_element_stored_citus_log(
        target: BackendTarget, keyring: FileKeyring) -> None:
    """LangGraph's conformance suite on an encrypted distributed log, elements on (SQLite
    and PostgreSQL: tests/adapters/test_encrypted_adapters.py)."""
    from collections.abc import AsyncIterator

    from langgraph.checkpoint.conformance import checkpointer_test, validate

    from eventlog.adapters.langgraph import AsyncEventlogSaver

    @checkpointer_test(name="AsyncEventlogSaver[citus, encrypted, elements]")
    async def factory() -> AsyncIterator[AsyncEventlogSaver]:
        async with AsyncEventlogSaver.from_conn_string(
            target.url, tenant_id="conformance", keyring=keyring, **target.options()
        ) as saver:
            assert saver.elements
            yield saver

    report = await validate(factory)
    failures = {name: result.failures for name, result in report.results.items()
                if not result.passed}
    assert {} == failures


async def test_the_thread_story_shows_what_each_step_added_on_an_encrypted_log(
        keyring: FileKeyring) -> None:
    """The forensic thread story resolves sealed manifests (read with the keyring): each
    step's ``messages`` one longer than the last's, ending with the step's answer."""
    from langchain_core.messages import HumanMessage
    from langgraph.graph import START, StateGraph

    from eventlog.adapters.langgraph import AsyncEventlogSaver
    from eventlog.cli.thread_story import build_thread_story, read_payloads
    from tests.cli import test_story_elements as story_tests

    graph = StateGraph(story_tests.Chat)
    graph.add_node("talk", story_tests.talk)
    graph.add_edge(START, "talk")
    graph.add_conditional_edges("talk", story_tests.route)
    async with open_log("memory://", keyring=keyring) as log:
        await graph.compile(checkpointer=AsyncEventlogSaver(log, tenant_id=T)).ainvoke(
            {"messages": [HumanMessage("hello", id="h")], "steps": 0},
            {"configurable": {"thread_id": "chat"}})
        events = [event async for event in log.read_stream(T, "thread:chat")]
        payloads = await read_payloads(log, T, events)
    story, _ = build_thread_story("chat", events, payloads)
    shown = [change.value for step in story.steps for change in step.changed
             if change.name == "messages"]
    assert ([1, 2, 3, 4, 5], True) == ([len(value) for value in shown],
                                       "answer number 4" in repr(shown[-1][-1]))


async def test_the_manifests_a_store_put_are_not_read_again(keyring: FileKeyring) -> None:
    """The store remembers the manifests it put under their sealed addresses: reading a
    delta reads its elements only (one read), not its chain's manifests first."""
    async with open_log("memory://", keyring=keyring) as log:
        await grow(log, "chat", 5)
        reads: list[list[bytes]] = []
        inner = log.threads._log  # the EventLog the store reads through
        get_blobs = inner.get_blobs

        async def counted(tenant_id: str, digests: Any) -> dict[bytes, bytes]:
            reads.append(list(digests))
            return await get_blobs(tenant_id, reads[-1])

        inner.get_blobs = counted  # type: ignore[method-assign]
        found = await log.threads.get(T, "chat", "c0004")
        assert (chat(5), [5]) == (found.channels["messages"] if found else None,
                                  [len(digests) for digests in reads])


async def test_elements_false_stores_every_list_whole_on_an_encrypted_log(
        keyring: FileKeyring) -> None:
    """``elements=False`` on an encrypted log: no value or write is a manifest, and the
    graph's state reads back."""
    from eventlog.adapters.langgraph import AsyncEventlogSaver

    async with open_log("memory://", keyring=keyring) as log:
        saver = AsyncEventlogSaver(log, tenant_id=T, elements=False)
        graph = _chat_graph(saver)
        config = {"configurable": {"thread_id": "whole"}}
        await graph.ainvoke({"messages": ["MARKER-LG-HUMAN"], "notes": []}, config)
        state = await graph.aget_state(config)
        encodings = {row["encoding"] for view in (THREAD_VALUES, THREAD_WRITES)
                     for row in await log.query(ViewQuery(view, {"tenant_id": T}))}
        assert (False, 2, False) == (saver.elements, len(state.values["messages"]),
                                     ELEMENTS_ENCODING in encodings)
