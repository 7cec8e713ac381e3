"""Counts in the command's output agree with their nouns: 1 stream, 2 streams."""

from __future__ import annotations

import ast
import asyncio
import json
import re
import uuid
from pathlib import Path

import pytest

from eventlog import open_log
from eventlog.checkpoints import CheckpointRecord, Payload
from eventlog.cli import EXIT_OK, main

CLI = Path(__file__).resolve().parents[2] / "eventlog" / "cli"
_PLURAL_NOUN = re.compile(r"^ (?:[a-z]+ )?([a-z]+s)\b(?!=)")  # not "name=" (a shell variable)
_VERBS = {"is", "was", "has", "does", "exists", "asks", "needs", "holds"}


def _blind_plurals(path: Path) -> list[str]:
    """f-string parts that put a value right before a plural noun ("{n} streams")."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.JoinedStr):
            continue
        for value, text in zip(node.values, node.values[1:], strict=False):
            if not (isinstance(value, ast.FormattedValue) and isinstance(text, ast.Constant)):
                continue
            if isinstance(value.value, ast.Name) and value.value.id.isupper():
                continue  # a constant (a command's name), not a count
            noun = _PLURAL_NOUN.match(str(text.value))
            if noun and noun.group(1) not in _VERBS and not noun.group(1).endswith("ss"):
                found.append(f"{path.name}:{node.lineno} {{{ast.unparse(value.value)}}}"
                             f"{noun.group(0)}")
    return found


def test_no_count_is_followed_by_a_plural_noun_in_the_source() -> None:
    """The command says counts through `plural` (render.py), never "{n} things"."""
    assert [] == [hit for path in sorted(CLI.rglob("*.py")) for hit in _blind_plurals(path)]


def test_verify_says_one_stream_and_one_event(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A log of one checkpoint: "Hash chains: 1 stream, 1 event: ok"."""
    url = f"sqlite:///{tmp_path / 'one.db'}"

    async def seed() -> None:
        async with open_log(url) as log:
            await log.checkpoints.create(CheckpointRecord(
                tenant_id="acme", session_id="s", run_id=uuid.uuid4(), state={"n": 1}))

    asyncio.run(seed())
    capsys.readouterr()
    assert EXIT_OK == main(["verify", "--url", url])
    assert "Hash chains: 1 stream, 1 event: ok" == capsys.readouterr().out.splitlines()[0]


def test_a_thread_checkpoint_with_one_channel_says_one_channel(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The timeline of a put that stores one channel value names it, never "1 channels"."""
    url = f"sqlite:///{tmp_path / 'thread.db'}"

    async def seed() -> None:
        async with open_log(url) as log:
            await log.checkpoints.threads.put(
                "acme", "t-1", "c-1", state=Payload("json", b"{}"),
                channels={"messages": Payload("json", b"[]")})

    asyncio.run(seed())
    capsys.readouterr()
    assert EXIT_OK == main(["timeline", "--url", url, "--json", "acme", "t-1"])
    told = json.dumps(json.loads(capsys.readouterr().out))
    assert (True, False) == ("messages" in told, "1 channels" in told)
