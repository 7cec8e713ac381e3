"""The layers at run time (import-linter checks them statically in CI): importing a lower
layer never loads a higher one."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

HIGHER = ("eventlog.checkpoints", "eventlog.interrupts", "eventlog.log", "eventlog.opening",
          "eventlog.storage", "eventlog.transfer", "eventlog.cli")


@pytest.mark.parametrize(
    "statement",
    [
        "import eventlog.events.checkpoints, eventlog.events.interrupts",
        "import projections",
        "import eventlog.records",
        "import eventlog",
    ],
)
def test_event_types_and_projections_load_no_store_log_or_backend(statement: str) -> None:
    """Event types, projections, the records and the bare package import nothing above
    them (the package's public names load on first use)."""
    script = (
        f"{statement}\nimport sys\n"
        f"print(sorted(m for m in sys.modules if m.startswith({HIGHER!r})))\n"
    )
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True,
                            text=True, timeout=60, check=True)
    assert "[]" == result.stdout.strip()


def test_the_log_loads_no_store() -> None:
    """The log is built without any store: open_log hands them to it."""
    script = (
        "import eventlog.log, sys\n"
        "print(sorted(m for m in sys.modules\n"
        "             if m.startswith(('eventlog.checkpoints', 'eventlog.interrupts'))))\n"
    )
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True,
                            text=True, timeout=60, check=True)
    assert "[]" == result.stdout.strip()
