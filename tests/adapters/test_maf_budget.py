"""Stored Agent Framework pickles are walked by our own reader before MAF's unpickler.

MAF's restricted unpickler allows ``bytearray``, ``bytes`` and ``range``, and sizes its memo
by the index a PUT names, so a pickle of a few dozen bytes can ask it for 16 GiB. The
adapter's loads and ``eventlog adopt maf`` refuse such a pickle with the budget it is past;
the child-process tests run under a 1 GiB address-space limit (as tests/cli's stored-code
tests), where MAF's own decoding of the same bytes fails with a bare MemoryError.
"""

from __future__ import annotations

import asyncio
import base64
import collections
import copyreg
import dataclasses
import datetime as dt
import decimal
import enum
import json
import pickle
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from agent_framework import FileCheckpointStorage, WorkflowCheckpointException

from eventlog import open_log
from eventlog.adapters._maf_guard import MAX_DOCUMENT_DEPTH, check_document, read_document
from eventlog.adapters._safe_pickle import MAX_MADE, PastBudget, check_pickle
from eventlog.adapters._safe_values import Unreadable
from eventlog.adapters.maf import EventlogCheckpointStorage
from eventlog.checkpoints.thread_records import Payload
from tests.adapters.test_maf import build

TENANT = "acme"
LIMIT = 1024**3
"""The child's address space."""
MAX_RSS_KB = 400 * 1024
TIMEOUT = 120


def sized_call(callable_: bytes, size: int) -> bytes:
    """A protocol-2 pickle of ``builtins.<callable_>(size)`` (size in 8 bytes: LONG1)."""
    return (b"\x80\x02cbuiltins\n" + callable_ + b"\nq\x00\x8a\x08" + size.to_bytes(8, "little")
            + b"\x85q\x01Rq\x02.")


BYTEARRAY_16_GIB = sized_call(b"bytearray", 2**34)
"""``bytearray(2**34)`` in 41 bytes."""


def pickled(value: bytes, type_key: str = "builtins:bytearray") -> dict[str, str]:
    return {"__pickled__": base64.b64encode(value).decode(), "__type__": type_key}


class Colour(enum.Enum):
    RED = 1


class Bits(enum.IntFlag):
    HIGH = 1 << 40


@dataclasses.dataclass
class Node:
    value: int
    child: Any


class Cents(int):
    pass


class Blob(bytes):
    pass


class Items(list[int]):
    pass


ORDINARY = [
    1, 2**100, "text", b"b" * 100, bytearray(b"x" * 100), (1, 2), {1, 2}, frozenset({3}),
    collections.deque([1, 2], maxlen=5), collections.OrderedDict(a=1),
    collections.Counter("abc"), collections.defaultdict(list, a=[1]),
    dt.datetime.now(dt.UTC), dt.date(2030, 1, 1), dt.time(1, 2), dt.timedelta(days=3),
    uuid.uuid4(), decimal.Decimal("1.5"), range(10**12), slice(1, 2), complex(1, 2),
    Colour.RED, Bits.HIGH, Node(1, [Node(2, None)]), Cents(10**12), Blob(b"abc"),
    Items([1, 2]), type(None), {"__pickled__": 1},
]


@pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
def test_ordinary_values_are_within_the_budgets(protocol: int) -> None:
    """What the pickler writes for standard values and plain classes, at every protocol
    (a range of 10**12 and an int flag of 2**40 included: sizes nobody iterates)."""
    for value in ORDINARY:
        check_pickle(pickle.dumps(value, protocol=protocol))


@pytest.mark.parametrize(("name", "data"), [
    ("bytearray", BYTEARRAY_16_GIB),
    ("bytes", sized_call(b"bytes", 2**34)),
    ("list of a range", b"\x80\x02cbuiltins\nlist\ncbuiltins\nrange\n\x8a\x06"
     + (2**40).to_bytes(6, "little") + b"\x85R\x85R."),
    ("bytes.__new__", b"\x80\x02cbuiltins\nbytes\n\x8a\x05" + (2**34).to_bytes(5, "little")
     + b"\x85\x81."),
    ("type(b'')", b"\x80\x03cbuiltins\ntype\nC\x00\x85R\x8a\x05" + (2**34).to_bytes(5, "little")
     + b"\x85R."),
    ("_reconstructor", b"\x80\x02ccopyreg\n_reconstructor\ncbuiltins\nbytearray\ncbuiltins\n"
     b"bytearray\n\x8a\x05" + (2**34).to_bytes(5, "little") + b"\x87R."),
    ("many small calls", b"\x80\x02(" + b"cbuiltins\nbytearray\nJ\x00\x00\x02\x00\x85R" * 9
     + b"l."),
])
def test_a_call_making_more_than_it_is_given_is_refused(name: str, data: bytes) -> None:
    """Sizes given to bytes and bytearray (also through ``__new__``, ``type(x)`` and
    copyreg), ranges handed to a call, all calls of one pickle together."""
    with pytest.raises(PastBudget, match=r"MAX_MADE") as refused:
        check_pickle(data)
    assert f"the {MAX_MADE:,}" in str(refused.value)


INT_OF_TEXT = b"cbuiltins\nint\nX\x0b\x00\x00\x0017179869184\x85R"
"""``int('17179869184')``: a size this reader does not compute."""


@pytest.mark.parametrize(("name", "data"), [
    ("bytearray of an int call", b"\x80\x02cbuiltins\nbytearray\n" + INT_OF_TEXT + b"\x85R."),
    ("list of a range of an int call", b"\x80\x02cbuiltins\nlist\ncbuiltins\nrange\n"
     + INT_OF_TEXT + b"\x85R\x85R."),
    ("list of a reconstructed range", b"\x80\x02cbuiltins\nlist\nccopyreg\n_reconstructor\n"
     b"cbuiltins\nrange\ncbuiltins\nrange\n\x8a\x06" + (2**40).to_bytes(6, "little")
     + b"\x87R\x85R."),
])
def test_a_size_only_running_code_would_tell_is_refused(name: str, data: bytes) -> None:
    """MAF allows ``int``: a size that is a call's result is refused, not guessed."""
    with pytest.raises(PastBudget, match=r"whose size only running it tells.*MAX_MADE"):
        check_pickle(data)


def test_a_memo_index_past_the_opcodes_read_is_refused() -> None:
    """LONG_BINPUT 2**32-1 in 8 bytes: an unpickler would size its memo to twice that."""
    with pytest.raises(PastBudget, match="a memo index of 4,294,967,295, past the memo's"):
        check_pickle(b"\x80\x02Nr\xff\xff\xff\xff.")


def test_a_counted_length_past_the_end_is_refused() -> None:
    """BYTEARRAY8 saying 16 GiB with 3 bytes behind it: an unpickler allocates first."""
    with pytest.raises(Unreadable, match="expected 17179869184 bytes"):
        check_pickle(b"\x80\x05\x96" + (2**34).to_bytes(8, "little") + b"abc.")


def test_a_document_nested_past_its_depth_is_refused() -> None:
    """`MAX_DOCUMENT_DEPTH` nested lists and objects are read, one more is refused (also
    100,000, which JSON itself cannot read)."""
    deep: Any = "leaf"
    for _ in range(MAX_DOCUMENT_DEPTH - 1):
        deep = [deep]
    check_document({"state": deep})
    with pytest.raises(PastBudget, match="MAX_DOCUMENT_DEPTH"):
        check_document({"state": [deep]})
    with pytest.raises(PastBudget, match="MAX_DOCUMENT_DEPTH"):
        read_document("[" * 100_000 + "]" * 100_000)


def test_a_pickle_in_a_document_is_checked() -> None:
    with pytest.raises(PastBudget, match=r"a pickled value of 41 bytes: builtins\.bytearray"):
        check_document({"state": {"a": [pickled(BYTEARRAY_16_GIB)]}})


class Inflating(bytearray):
    """A bytearray whose pickle asks for 2 MiB of zeros (past the budget) when loaded:
    ``copyreg._reconstructor(Inflating, bytearray, 2 * MAX_MADE)``."""

    def __reduce_ex__(self, protocol: Any) -> tuple[Any, ...]:
        return copyreg._reconstructor, (Inflating, bytearray, 2 * MAX_MADE)  # type: ignore[attr-defined]  # typeshed omits it


async def test_a_save_that_would_not_load_again_is_refused(tmp_path: Path) -> None:
    """Refused at save, as a value MAF would not decode is, and nothing is written."""
    from agent_framework import WorkflowCheckpoint

    async with open_log(f"sqlite:///{tmp_path / 'log.db'}") as log:
        storage = EventlogCheckpointStorage(
            log, tenant_id=TENANT,
            allowed_checkpoint_types=[f"{__name__}:{Inflating.__qualname__}"])
        checkpoint = WorkflowCheckpoint(workflow_name="w", graph_signature_hash="h",
                                        state={"big": Inflating()})
        with pytest.raises(WorkflowCheckpointException, match=r"would not load again.*MAX_MADE"):
            await storage.save(checkpoint)
        assert [] == await storage.list_checkpoint_ids(workflow_name="w")


# -- in child processes under an address-space limit -------------------------------------------

LOADING = """
import asyncio, resource, sys
resource.setrlimit(resource.RLIMIT_AS, (int(sys.argv[1]), int(sys.argv[1])))
from agent_framework import WorkflowCheckpointException
from eventlog import open_log
from eventlog.adapters.maf import EventlogCheckpointStorage

async def main():
    async with open_log(sys.argv[2]) as log:
        storage = EventlogCheckpointStorage(log, tenant_id="acme")
        for load in (lambda: storage.load("bomb-1"),
                     lambda: storage.get_latest(workflow_name="bomb"),
                     lambda: storage.list_checkpoints(workflow_name="bomb")):
            try:
                await load()
            except WorkflowCheckpointException as error:
                print("refused:", error)
            else:
                print("loaded")

asyncio.run(main())
print("rss", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""

ADOPTING = """
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, (int(sys.argv[1]), int(sys.argv[1])))
from eventlog.cli import main
status = main(sys.argv[2:])
print("rss", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
sys.exit(status)
"""


def run_limited(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run([sys.executable, "-c", script, str(LIMIT), *args],
                              capture_output=True, text=True, timeout=TIMEOUT, check=False)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the child was still running after {TIMEOUT} s")


def rss_kb(out: str) -> int:
    return int(out.rsplit("rss ", 1)[1])


def bomb_document() -> bytes:
    return json.dumps({
        "workflow_name": "bomb", "checkpoint_id": "bomb-1", "graph_signature_hash": "h",
        "timestamp": "2030-01-01T00:00:00+00:00", "messages": {}, "state": {
            "value": pickled(BYTEARRAY_16_GIB)},
        "pending_request_info_events": {}, "iteration_count": 0,
    }).encode()


async def _store_bomb(url: str) -> None:
    async with open_log(url) as log:
        await log.threads.put(TENANT, "bomb", "bomb-1", run_key="bomb-1", step=0,
                              state=Payload("maf-checkpoint+json", bomb_document()))


@pytest.mark.slow
def test_loading_a_stored_16_gib_bytearray_is_refused_naming_the_budget(tmp_path: Path) -> None:
    """load, get_latest and list_checkpoints each refuse it with the budget it is past;
    the child stays small (MAF's own decoding would raise MemoryError here)."""
    url = f"sqlite:///{tmp_path / 'log.db'}"
    asyncio.run(_store_bomb(url))
    child = run_limited(LOADING, url)
    assert 0 == child.returncode, child.stderr
    lines = child.stdout.splitlines()[:3]
    assert 3 == len(lines), child.stdout
    for line in lines:
        assert line.startswith("refused: Checkpoint bomb-1 of bomb is not loaded: "), line
        assert "builtins.bytearray(17179869184)" in line
        assert f"past the {MAX_MADE:,}" in line
        assert "(MAX_MADE)" in line
    assert 0 < rss_kb(child.stdout) < MAX_RSS_KB


async def _file_store_with_a_bomb(directory: Path) -> tuple[list[str], str]:
    """A paused workflow in a file store, its latest checkpoint's state replaced by the
    16 GiB pickle: (the ids before it, its id)."""
    files = FileCheckpointStorage(directory)
    await build(files).run("order")
    saved = sorted(await files.list_checkpoints(workflow_name="payments"),
                   key=lambda c: c.timestamp)
    path = directory / f"{saved[-1].checkpoint_id}.json"
    data = json.loads(path.read_text())
    data["state"] = {"value": pickled(BYTEARRAY_16_GIB)}
    path.write_text(json.dumps(data))
    return [c.checkpoint_id for c in saved[:-1]], saved[-1].checkpoint_id


@pytest.mark.slow
def test_adopting_a_file_store_holding_a_16_gib_bytearray_names_it_and_the_budget(
    tmp_path: Path,
) -> None:
    """``eventlog adopt maf``: the file is never handed to MAF; it is named with the budget,
    the workflow's checkpoints before it are adopted, and the child stays small."""
    before, bomb = asyncio.run(_file_store_with_a_bomb(tmp_path / "files"))
    url = f"sqlite:///{tmp_path / 'log.db'}"
    child = run_limited(ADOPTING, "adopt", "maf", str(tmp_path / "files"), "--tenant", TENANT,
                        "--url", url)
    assert 0 != child.returncode
    assert f"checkpoint {bomb}" in child.stderr, child.stderr
    assert "builtins.bytearray(17179869184)" in child.stderr
    assert "(MAX_MADE)" in child.stderr
    assert 0 < rss_kb(child.stdout) < MAX_RSS_KB

    async def adopted() -> list[str]:
        async with open_log(url) as log:
            return await EventlogCheckpointStorage(log, tenant_id=TENANT).list_checkpoint_ids(
                workflow_name="payments")

    assert before == asyncio.run(adopted())
