"""Stored text never reaches the terminal raw (issue 21, item 8).

A capture snapshot, a reconciliation note and an application event's field are written
by whoever writes the log; each holds escape sequences a terminal would act on (an OSC
window title, clear screen, a carriage return hiding a fake "ok", a C1 CSI, a bidi
override). Every command that prints them must show them as visible escapes.
"""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import pytest

from eventlog import open_log
from eventlog.checkpoints import CheckpointRecord
from eventlog.interrupts import Interrupt, Reconciliation, Resume, ResumeInput
from tests.cli.helpers import TRIP, Run, TickingClock, make_runner
from tests.conftest import BackendTarget
from tests.events import Noted

HOSTILE = "\x1b]0;pwned\x07\x1b[2J\r ok \x9b31m \u202egnp.exe"
"""An OSC window title, clear screen, a carriage return before a fake "ok", a one-byte
(C1) CSI and a right-to-left override."""
RAW = ("\x1b", "\x07", "\r", "\x9b", "\u202e")


def test_safe_writes_controls_as_visible_escapes() -> None:
    """Each control a terminal acts on becomes its escape; tab, newline and text stay."""
    from eventlog.cli.render import safe

    assert safe(HOSTILE) == ("\\x1b]0;pwned\\x07\\x1b[2J\\x0d ok \\x9b31m "
                             "\\u202egnp.exe")
    assert safe("tab\there\nnext line, café, 東京") == "tab\there\nnext line, café, 東京"
    assert safe("\x00\x7f\u2066\u2069") == "\\x00\\x7f\\u2066\\u2069"


async def _hostile_log(target: BackendTarget) -> tuple[str, str, str]:
    tenant, session = "acme", "s1"
    clock = TickingClock()
    async with open_log(target.url, clock=clock, **target.options()) as log:
        checkpoint = await log.checkpoints.create(CheckpointRecord(
            tenant_id=tenant, session_id=session, run_id=uuid.uuid4(), step=0,
            state={"s": 1}))
        assert checkpoint.checkpoint_id is not None
        await log.append(tenant, f"session:{session}", [Noted(text=HOSTILE, number=1)])
        batch = await log.interrupts.create(
            tenant, session, [Interrupt(id="ok", reason="confirmation")],
            checkpoint.checkpoint_id, operation=TRIP)
        answer = ResumeInput(thread_id=session, batch_id=batch.batch_id, responses=[
            Resume(interrupt_id="ok", status="resolved", payload={"approved": True})])
        claimed = await log.interrupts.try_claim(tenant, answer)
        assert claimed.claim is not None
        capture = await log.interrupts.start_capture(claimed.claim)
        assert capture is not None
        assert await log.interrupts.try_start_effect(claimed.claim)
        assert await log.interrupts.complete_capture(capture, "completed", HOSTILE)
        await log.interrupts.reconcile({tenant}, batch.batch_id, "ops", Reconciliation(
            resolution="abandoned", evidence={"ticket": HOSTILE}, note=HOSTILE))
    return tenant, session, batch.batch_id


@pytest.fixture
def hostile(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[Run, str, str, str]:
    target = BackendTarget("sqlite", f"sqlite:///{tmp_path / 'log.db'}")
    tenant, session, batch = asyncio.run(_hostile_log(target))
    return make_runner(capsys, target), tenant, session, batch


@pytest.mark.parametrize("command", ["timeline", "inspect", "log --full", "log", "replay"])
def test_no_stored_control_character_reaches_the_terminal(
    hostile: tuple[Run, str, str, str], command: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The snapshot, the note and the event's field are printed as escapes: no ESC, BEL,
    CR, C1 CSI or bidi override is written, and the escaped text is there to read (on a
    terminal wide enough for `log` to show the field)."""
    monkeypatch.setenv("COLUMNS", "200")
    run, tenant, session, batch = hostile
    args = {"timeline": ["timeline", tenant, session],
            "inspect": ["inspect", tenant, batch],
            "log --full": ["log", "--full", "--tenant", tenant],
            "log": ["log", "--tenant", tenant],
            "replay": ["replay", "--as-of", "8", "--tenant", tenant]}[command]
    ran = run(*args)
    assert ran.status == 0, ran.err
    for raw in RAW:
        assert raw not in ran.out + ran.err, f"{command} printed {raw!r} raw"
    if command != "replay":
        assert "\\x1b]0;pwned" in ran.out


def test_json_output_keeps_the_text_as_it_was_stored(
    hostile: tuple[Run, str, str, str]
) -> None:
    """--json is for scripts: the JSON encoder escapes the controls, and the decoded
    value is the stored text, unchanged."""
    run, tenant, _session, batch = hostile
    ran = run("inspect", tenant, batch, "--json")
    assert ran.status == 0, ran.err
    assert "\x1b" not in ran.out
    notes = [entry["details"].get("note") for entry in ran.json()["audit"]]
    assert HOSTILE in notes


def test_the_report_holds_no_stored_control_character(
    hostile: tuple[Run, str, str, str], tmp_path: Path
) -> None:
    """The HTML report escaped its text as HTML only: an ESC, a C1 CSI and a bidi
    override reached the file (a browser reorders text around U+202E; `cat` acts on
    ESC). Now they are visible escapes, in the page and in the events' JSON."""
    run, tenant, session, _batch = hostile
    page = tmp_path / "report.html"
    ran = run("report", tenant, session, "-o", str(page))
    assert ran.status == 0, ran.err
    text = page.read_text(encoding="utf-8")
    for raw in RAW:
        assert raw not in text, f"the report holds {raw!r} raw"
    assert "\\x1b]0;pwned" in text  # in the table
    assert "\\\\x1b]0;pwned" in text  # in the events' JSON: it shows as \x1b too
