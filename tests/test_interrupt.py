"""Ctrl-C stops a test run and prints what ran: with and without pytest-xdist, and when
the run was started with SIGINT ignored (a background command of a shell without job
control)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TARGET = "tests/interrupt_target.py"


def _interrupted(workers: str) -> tuple[float, str]:
    """Run the target, its SIGINT ignored, in a process group of its own; once its first
    test has passed, send SIGINT to the group as a terminal's Ctrl-C does. How long it
    took to end after the signal, and what it printed."""
    env = {**os.environ, "EVENTLOG_INTERRUPT_TARGET": "1", "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(
        [sys.executable, "-m", "pytest", TARGET, "-n", workers, "-p", "no:cacheprovider",
         "-v", "-m", ""],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        preexec_fn=lambda: (signal.signal(signal.SIGINT, signal.SIG_IGN), os.setpgrp()))
    assert process.stdout is not None
    chunks: list[bytes] = []
    # Read what comes as it comes: pytest ends a test's "PASSED" line only when it starts
    # writing the next one, which here is two minutes later.
    reader = threading.Thread(target=lambda: chunks.extend(iter(
        lambda: os.read(process.stdout.fileno(), 4096), b"")), daemon=True)  # type: ignore[union-attr]
    reader.start()
    try:
        deadline = time.monotonic() + 120
        while not re.search(rb"PASSED[^\n]*test_passes_at_once|test_passes_at_once PASSED",
                            b"".join(chunks)):
            assert time.monotonic() < deadline, b"".join(chunks).decode(errors="replace")
            time.sleep(0.05)
        time.sleep(1.0)  # the waiting tests are running now
        os.killpg(process.pid, signal.SIGINT)
        interrupted = time.monotonic()
        process.wait(timeout=60)
        took = time.monotonic() - interrupted
        reader.join(timeout=10)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    return took, b"".join(chunks).decode(errors="replace")


@pytest.mark.parametrize("workers", ["0", "2"])
def test_ctrl_c_stops_the_run_and_prints_what_ran(workers: str) -> None:
    """One SIGINT ends the run within seconds, with pytest's own summary counting the test
    that passed, and no traceback of a teardown over it."""
    took, out = _interrupted(workers)
    summary = out.strip().splitlines()[-1]
    assert (True, True, True, False) == (
        took < 30, "KeyboardInterrupt" in out, "1 passed" in summary,
        "Traceback" in _without_unraisable_warnings(out)), out


def _without_unraisable_warnings(out: str) -> str:
    """``out`` less pytest's warnings of an exception ignored in a ``__del__``: the signal
    can land while the garbage collector finalizes an event loop's transport (under load,
    now and then), and Python reports that KeyboardInterrupt as unraisable; it is no
    traceback of the run's teardown."""
    return re.sub(r"PytestUnraisableExceptionWarning: Exception ignored in.*?"
                  r"warnings\.warn\(pytest\.PytestUnraisableExceptionWarning\(msg\)\)",
                  "", out, flags=re.DOTALL)
