"""Output that fits the terminal without cutting an id or breaking a header mid-word."""

from __future__ import annotations

import re

import pytest
from rich.cells import cell_len

from eventlog.cli import EXIT_OK
from eventlog.cli.render import fit_pairs
from tests.cli.helpers import Run, Story

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


@pytest.fixture
def narrow(monkeypatch: pytest.MonkeyPatch) -> None:
    """An 80-column terminal."""
    monkeypatch.setenv("COLUMNS", "80")


@pytest.mark.usefixtures("narrow")
def test_log_lines_fit_80_columns_and_cut_no_id(story: Story, run: Run) -> None:
    """Every line fits; nothing is cut with an ellipsis; left-out fields are counted."""
    ran = run("log", "--tenant", story.tenant)
    assert EXIT_OK == ran.status
    lines = ran.out.splitlines()
    assert all(cell_len(line) <= 80 for line in lines), max(lines, key=cell_len)
    assert "…" not in ran.out
    assert "(--full)" in ran.out
    for line in lines:  # an id-looking value is always whole
        for value in re.findall(r"=([0-9a-f-]{20,})", line):
            assert UUID.fullmatch(value) or re.fullmatch(r"[0-9a-f]{64}", value), line


@pytest.mark.usefixtures("narrow")
def test_full_shows_every_field_whole(story: Story, run: Run) -> None:
    """--full: each claim line carries its answers and its lease, whole."""
    ran = run("log", "--tenant", story.tenant, "--type", "interrupt.batch_claimed", "--full")
    claims = [line for line in ran.out.splitlines() if "interrupt.batch_claimed" in line]
    assert 2 == len(claims)
    assert all("responses=" in line and "lease_expires_at=" in line for line in claims)
    assert "(--full)" not in ran.out


@pytest.mark.usefixtures("narrow")
def test_wide_replay_tables_become_records_not_broken_headers(story: Story, run: Run) -> None:
    """A view too wide for 80 columns is printed row by row, column names whole."""
    ran = run("replay", "--as-of", str(story.positions["claim 1"]), "--tenant", story.tenant,
              "--table", "interrupt_batches")
    assert EXIT_OK == ran.status
    assert all(cell_len(line) <= 80 for line in ran.out.splitlines())
    for name in ("lease_expires_at", "effect_started", "capture_state", "reconciled_by"):
        assert re.search(rf"^\s*{name}\s", ran.out, re.MULTILINE), name
    assert story.batch_id in ran.out


def test_fit_pairs_leaves_out_whole_pairs_and_counts_them() -> None:
    """A pair that does not fit is left out whole, a shorter later one still fits."""
    assert (["a=1", "c=3"], 1) == fit_pairs(["a=1", "b=" + "x" * 30, "c=3"], 20)
    assert (["a=1", "b=2"], 0) == fit_pairs(["a=1", "b=2"], 8)
