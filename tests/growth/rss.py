"""Peak resident memory of one ``eventlog`` command run in a process of its own."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

MB = 1024 * 1024

# The peak is the process's own VmHWM, read as it ends: ``wait4``'s ru_maxrss would carry
# the high-water mark of the forking test process across the exec.
_RUN = """\
import sys
peak = sys.argv.pop(1)
try:
    from eventlog.cli import main
    status = main()
finally:
    with open("/proc/self/status") as status_file, open(peak, "w") as out:
        out.write(next(line for line in status_file if line.startswith("VmHWM:")))
sys.exit(status)
"""


@dataclass(frozen=True)
class Measured:
    """A command's exit status, its output, and its peak RSS in MiB."""

    status: int
    out: str
    err: str
    peak_mb: float


def measure(*args: str, scratch: Path) -> Measured:
    """Run ``eventlog ARGS`` in a fresh interpreter and read its peak RSS."""
    peak = scratch / "peak"
    ran = subprocess.run([sys.executable, "-c", _RUN, str(peak), *args],
                         capture_output=True, text=True, stdin=subprocess.DEVNULL, check=False)
    kib = int(peak.read_text().split()[1])  # "VmHWM:   123456 kB"
    return Measured(ran.returncode, ran.stdout, ran.stderr, kib / 1024)
