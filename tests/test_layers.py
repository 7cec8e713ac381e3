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
    """The log is built without any store: `OpenLog`, what open_log yields, owns them."""
    script = (
        "import eventlog.log, sys\n"
        "print(sorted(m for m in sys.modules\n"
        "             if m.startswith(('eventlog.checkpoints', 'eventlog.interrupts'))))\n"
    )
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True,
                            text=True, timeout=60, check=True)
    assert "[]" == result.stdout.strip()


CIRCLES_LEFT: set[frozenset[str]] = set()
"""No circle is left (issue 24 §1 and §4); nothing may join this set."""


def test_the_import_graph_has_no_circle() -> None:
    """No module imports, even for type checkers or inside a function, one that imports
    it back (the log and the stores, the command and its completion script)."""
    import grimp

    graph = grimp.build_graph("eventlog", "projections")
    circles = set()
    for module in graph.modules:
        for imported in graph.find_modules_directly_imported_by(module):
            if graph.chain_exists(importer=imported, imported=module):
                back = graph.find_shortest_chain(importer=imported, imported=module) or ()
                circles.add(frozenset({module, *back}))
    assert circles <= CIRCLES_LEFT, sorted(sorted(circle) for circle in circles)
