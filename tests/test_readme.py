"""The README's Python examples run as written (each in a fresh directory, on SQLite)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parent.parent / "README.md"
EXAMPLES = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.DOTALL)


def test_the_readme_has_examples() -> None:
    """The guide shows the log, the checkpoint store and the interrupt store in code."""
    assert 3 <= len(EXAMPLES)


@pytest.mark.parametrize("example", EXAMPLES, ids=[f"example-{i}" for i in range(len(EXAMPLES))])
def test_readme_example_runs(example: str, tmp_path: Path) -> None:
    """A README example runs to completion (its own asserts included) in a new directory."""
    script = tmp_path / "example.py"
    script.write_text(example)
    result = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert 0 == result.returncode, result.stderr[-3000:]


def test_readme_examples_type_check(tmp_path: Path) -> None:
    """Every README example passes ``mypy --strict``, as tests/typing does (a reader
    copying one into a typed project gets no errors)."""
    from mypy import api

    files = []
    for number, example in enumerate(EXAMPLES):
        path = tmp_path / f"readme_example_{number}.py"
        path.write_text(example)
        files.append(str(path))
    stdout, stderr, status = api.run(
        ["--strict", "--no-incremental", "--python-version", "3.11", *files])
    assert 0 == status, stdout + stderr
