"""Reading framework payloads for people: decoding without running the writer's code,
rendering, and the difference between two checkpoints (pure, no database)."""

from __future__ import annotations

import base64
import json
import os
import pickle
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from eventlog.cli.thread_story.values import (
    MAF_ENCODING,
    decode,
    diff,
    one_line,
    plain,
    short,
)


@dataclass
class Approval:
    amount: int
    reason: str


class Trap:
    """Unpickling this with `pickle.loads` would run a shell command."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self) -> Any:
        return (os.system, (f"touch {self.path}",))


def _maf(value: Any) -> bytes:
    """A value as Agent Framework's checkpoint encoding stores a non-JSON value."""
    return json.dumps({"value": {
        "__pickled__": base64.b64encode(pickle.dumps(value)).decode(),
        "__type__": f"{type(value).__module__}:{type(value).__qualname__}",
    }}).encode()


def test_a_pickled_value_is_read_without_running_its_code(tmp_path: Path) -> None:
    """A pickle that would run a command is shown as the call it names, not run."""
    marker = tmp_path / "ran"
    decoded = decode(MAF_ENCODING, _maf(Trap(marker)))
    shown = short(decoded["value"])
    assert (False, f"<{os.system.__module__}.system('touch ", " not decoded>") == (
        marker.exists(), shown[:len(os.system.__module__) + 16], shown[-13:])


def test_a_pickled_object_keeps_its_class_name_and_fields() -> None:
    """An object of a class the reader never imports shows its name and fields."""
    decoded = decode(MAF_ENCODING, _maf(Approval(50, "over the limit")))
    assert {"__class__": "Approval", "amount": 50, "reason": "over the limit"} == plain(
        decoded["value"])


def test_without_langgraph_checkpoint_a_value_is_still_read(
    monkeypatch: pytest.MonkeyPatch
) -> None:
    """LangGraph's msgpack is read by our own reader: its serializer is not needed."""
    monkeypatch.setitem(sys.modules, "langgraph.checkpoint.serde.jsonplus", None)
    monkeypatch.setitem(sys.modules, "ormsgpack", None)
    assert "[1, 2]" == short(decode("msgpack", b"\x92\x01\x02"))


def test_a_long_value_is_shown_by_its_size() -> None:
    """A value longer than a line is its kind and stored size."""
    assert "<list, 4,000 B>" == short(["x" * 50] * 40, 4000)


def test_diff_names_added_removed_and_changed_channels() -> None:
    """Unchanged channels are left out."""
    assert ["+ c = 3", "- b (was 2)", "~ d: [1] → [1, 2]"] == sorted(
        diff({"a": 1, "b": 2, "d": [1]}, {"a": 1, "c": 3, "d": [1, 2]}),
        key=lambda line: "+-~".index(line[0]))


def test_diff_of_long_values_is_a_unified_diff_of_their_lines() -> None:
    """Only the changed lines of a long value's pretty rendering are shown."""
    before = {"items": [f"item {i:03}" for i in range(30)]}
    after = {"items": [*before["items"], "item 030"]}
    changed = [line.strip() for line in diff(before, after)
               if line.strip().startswith(("+", "-"))]
    assert ['-  "item 029"', '+  "item 029",', '+  "item 030"'] == changed


def _pickled_value(raw: bytes) -> bytes:
    return json.dumps({"value": {"__pickled__": base64.b64encode(raw).decode(),
                                 "__type__": "builtins:object"}}).encode()


def test_a_pickle_calling_bytearray_of_a_number_names_the_call() -> None:
    """46 bytes that would allocate a gigabyte: the call is shown, never made."""
    from tests.cli.test_stored_code import bytearray_pickle

    decoded = decode(MAF_ENCODING, _pickled_value(bytearray_pickle(2**30)))
    assert f"<builtins.bytearray({2**30}) not decoded>" == short(decoded["value"])


def test_shared_references_are_paid_for_each_time_they_are_shown() -> None:
    """2**40 references to one string: the first 20,000 values are shown, then a mark."""
    from tests.cli.test_stored_code import shared_pickle

    shown = json.dumps(plain(decode(MAF_ENCODING, _pickled_value(shared_pickle(40)))))
    assert "past the 20,000 values a payload shows" in shown
    assert shown.count('"x"') < 20_000


def test_a_value_that_contains_itself_is_cut() -> None:
    looped: list[Any] = [1]
    looped.append(looped)
    decoded = decode("pickle", pickle.dumps(looped))
    assert [1, "<a reference to a value that encloses it not decoded>"] == plain(decoded)


def test_nesting_past_the_bound_is_marked() -> None:
    deep: list[Any] = []
    for _ in range(100):
        deep = [deep]
    assert "nested deeper than 64 levels" in one_line(decode("pickle", pickle.dumps(deep)))


def test_everyday_pickled_values_are_read_in_every_protocol() -> None:
    """Dates, bytes, sets, ordered and default dicts read the same in protocols 2 and 5."""
    from collections import OrderedDict, defaultdict
    from datetime import UTC, datetime

    value = {"when": datetime(2030, 1, 2, tzinfo=UTC), "raw": b"ab", "tags": {"a"},
             "ordered": OrderedDict(a=1), "grouped": defaultdict(list, b=[2]),
             "approval": Approval(5, "ok")}
    for protocol in (2, 5):
        assert {"when": repr(datetime(2030, 1, 2, tzinfo=UTC)), "raw": "<2 bytes>",
                "tags": ["a"], "ordered": {"a": 1}, "grouped": {"b": [2]},
                "approval": {"__class__": "Approval", "amount": 5, "reason": "ok"}} == plain(
            decode("pickle", pickle.dumps(value, protocol=protocol)))


def test_a_pickle_needing_the_writers_code_is_not_decoded() -> None:
    """A persistent id can only be resolved by the writer: the payload is sized, not read."""
    assert short(decode("pickle", b"\x80\x02Pid\n.")).startswith("<7 B, not decoded: pickle:")


def test_langgraph_objects_are_shown_by_class_and_fields_without_importing_them() -> None:
    """A message, a dataclass and a ``Send`` in LangGraph's msgpack keep their class names;
    a constructor call is shown as a call."""
    from langchain_core.messages import HumanMessage
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
    from langgraph.types import Send

    encoding, data = JsonPlusSerializer().dumps_typed(
        [HumanMessage("hi", id="h"), Approval(1, "x"), Send("node", {"a": 1})])
    assert [{"__class__": "HumanMessage", "content": "hi", "additional_kwargs": {},
             "response_metadata": {}, "type": "human", "id": "h"},
            {"__class__": "Approval", "amount": 1, "reason": "x"},
            {"__class__": "Send", "node": "node", "arg": {"a": 1}}] == plain(
        decode(encoding, data))


def test_langgraph_extension_values_nest_only_so_deep() -> None:
    import ormsgpack

    inner = ormsgpack.packb(1)
    for _ in range(100):
        inner = ormsgpack.packb(ormsgpack.Ext(7, inner))
    assert "nested deeper than 32" in short(decode("msgpack", inner))


def test_a_payload_over_the_bound_is_not_decoded() -> None:
    big = b"\xc4\x00" * (8 * 1024 * 1024 + 1)
    assert "larger than the 16,777,216 bytes" in short(decode("msgpack", big))


def test_langchains_json_constructors_are_shapes_never_revived() -> None:
    data = json.dumps({"lc": 1, "type": "constructor", "id": ["os", "system"],
                       "kwargs": {"command": "touch x"}}).encode()
    assert {"__class__": "system", "command": "touch x"} == plain(decode("json", data))
