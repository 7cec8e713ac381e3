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
