"""The forensic commands on an encrypted log (issue 32): every field and payload shows its
value (keyring given, key live), ``erased`` with when, by whom and why (the subject's key
destroyed), or ``sealed`` (no keyring given); never the stored marker, never a failure."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import pytest

from eventlog import CheckpointRecord
from eventlog.adapters.langgraph import AsyncEventlogSaver
from eventlog.cli import EXIT_OK
from eventlog.crypto import init_keyring
from tests.adapters.langgraph_stores import build, thread
from tests.cli.test_errors import run_bare

ERASED = "by dpo: GDPR 17]"
SEALED = "[sealed: no keyring given]"
RAW = ("$sealed", "$erased")


@pytest.fixture(scope="module")
def encrypted(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """A LangGraph thread and a session for each of ``live`` and ``gone`` (erased by dpo,
    "GDPR 17"), with their values and metadata sealed: (url, keyring path)."""
    directory = tmp_path_factory.mktemp("sealed")
    ring = init_keyring(directory / "keyring.json")
    url = f"sqlite:///{directory / 'log.db'}"

    async def seed() -> None:
        async with AsyncEventlogSaver.from_conn_string(url, keyring=ring,
                                                       tenant_id="t") as saver:
            for name in ("live", "gone"):
                await build(saver).ainvoke({"items": [f"MARKER-{name}"]}, thread(name))
                await saver.log.checkpoints.create(CheckpointRecord(
                    tenant_id="t", session_id=name, run_id=uuid.uuid4(),
                    state={"x": f"MARKER-{name}"}, metadata={"who": f"MARKER-{name}"}))
            await saver.log.erase("t", "gone", reason="GDPR 17", actor="dpo")

    asyncio.run(seed())
    return url, str(ring.path)


_CASES = [("live", False), ("live", True), ("gone", True), ("gone", False)]


def _shown(capsys: pytest.CaptureFixture[str], encrypted: tuple[str, str], keyring: bool,
           *args: str) -> str:
    url, ring = encrypted
    ran = run_bare(capsys, *args, "--url", url, *(["--keyring", ring] if keyring else []))
    assert EXIT_OK == ran.status, ran.err
    return ran.out


def _check(text: str, subject: str, keyring: bool) -> None:
    """The value with a keyring and a live key; erased (when/why) once erased; sealed
    without a keyring; the stored markers never."""
    marker = f"MARKER-{subject}"
    expected = (marker in text, ERASED in text, SEALED in text)
    if not keyring:
        assert (False, False, True) == expected
    elif subject == "live":
        assert (True, False, False) == expected
    else:
        assert (False, True, False) == expected
    assert [] == [raw for raw in RAW if raw in text]


@pytest.mark.parametrize(("subject", "keyring"), _CASES)
def test_log_shows_each_sealed_field_as_its_value_erased_or_sealed(
        capsys: pytest.CaptureFixture[str], encrypted: tuple[str, str], subject: str,
        keyring: bool) -> None:
    """``eventlog log`` (text and JSON): metadata, interrupt messages and the rest."""
    for json in ([], ["--json"]):
        _check(_shown(capsys, encrypted, keyring, "log", "--full", *json, "--tenant", "t",
                      "--session", subject), subject, keyring)


@pytest.mark.parametrize(("subject", "keyring"), _CASES)
def test_timeline_tells_the_thread_with_values_erased_or_sealed(
        capsys: pytest.CaptureFixture[str], encrypted: tuple[str, str], subject: str,
        keyring: bool) -> None:
    """``eventlog timeline`` (the thread's story: its channel values and writes)."""
    _check(_shown(capsys, encrypted, keyring, "timeline", "t", subject), subject, keyring)
    _check(_shown(capsys, encrypted, keyring, "timeline", "t", subject, "--json"), subject,
           keyring)


@pytest.mark.parametrize(("subject", "keyring"), _CASES)
def test_inspect_shows_a_checkpoints_values_erased_or_sealed(
        capsys: pytest.CaptureFixture[str], encrypted: tuple[str, str], subject: str,
        keyring: bool) -> None:
    """``eventlog inspect TENANT THREAD``: the checkpoint's values and pending writes."""
    _check(_shown(capsys, encrypted, keyring, "inspect", "t", subject), subject, keyring)


@pytest.mark.parametrize(("subject", "keyring"), _CASES)
def test_the_report_shows_values_erased_or_sealed(
        capsys: pytest.CaptureFixture[str], encrypted: tuple[str, str], tmp_path: Path,
        subject: str, keyring: bool) -> None:
    """``eventlog report TENANT SESSION``: the HTML page's events, states and steps."""
    page = tmp_path / "report.html"
    _shown(capsys, encrypted, keyring, "report", "t", subject, "-o", str(page))
    _check(page.read_text(), subject, keyring)


@pytest.mark.parametrize(("subject", "keyring"), _CASES)
def test_replay_rebuilds_an_encrypted_log_without_showing_markers(
        capsys: pytest.CaptureFixture[str], encrypted: tuple[str, str], subject: str,
        keyring: bool) -> None:
    """``eventlog replay`` rebuilds the views from the sealed events, with or without the
    keyring, and its tables (ids, steps, times) hold no sealed text to show."""
    text = _shown(capsys, encrypted, keyring, "replay", "--as-of", "1000", "--tenant", "t",
                  "--session", subject)
    assert ([], False, True) == ([raw for raw in RAW if raw in text], "MARKER" in text,
                                 "thread_checkpoints (5 rows)" in text)
