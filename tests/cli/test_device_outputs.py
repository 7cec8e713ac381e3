"""Writing to a device replaces it no more (issue 42 §4): a command writes a regular file
whole (a temporary file renamed over it) but writes a device, a FIFO or ``-`` in place.
``export --force /dev/null`` and ``digest -o /dev/null`` renamed a regular file over the
device: as root, /dev/null became a file. Never tested on the real /dev/null: on a FIFO
and a character device node made in the test's directory (the null device's numbers),
and on a tmpfs."""

from __future__ import annotations

import asyncio
import os
import stat
import tempfile
import threading
from pathlib import Path

import pytest

from eventlog.cli import EXIT_OK
from tests.cli.helpers import Run
from tests.cli.test_digest import build
from tests.conftest import BackendTarget

sqlite_only = pytest.mark.parametrize("target", ["sqlite"], indirect=True)
COMMANDS = {
    "export": lambda file: ["export", "--tenant", "t", "--force", file],
    "digest": lambda file: ["digest", "-o", file],
}


def _drained(fifo: Path) -> tuple[threading.Thread, list[bytes]]:
    """A reader of ``fifo`` (the command's open blocks until one is there)."""
    got: list[bytes] = []

    def read() -> None:
        with fifo.open("rb") as source:
            got.append(source.read())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    return reader, got


@sqlite_only
@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_fifo_is_written_in_place(
    own_run: Run, target: BackendTarget, tmp_path: Path, command: str,
) -> None:
    """The FIFO is still a FIFO afterwards, and its reader got the whole document."""
    asyncio.run(build(target))
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    reader, got = _drained(fifo)
    ran = own_run(*COMMANDS[command](str(fifo)))
    reader.join(timeout=30)
    assert (EXIT_OK, True, True) == (
        ran.status, stat.S_ISFIFO(fifo.stat().st_mode), b"streams" in got[0]
        if command == "digest" else b'"kind":"end"' in got[0]), ran.err


def _null_device(directory: Path) -> Path:
    """A character device node with /dev/null's numbers, made in ``directory``."""
    node = directory / "null"
    try:
        os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("making a device node needs root (CI and containers run as root)")
    return node


@sqlite_only
@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_device_stays_a_device(
    own_run: Run, target: BackendTarget, tmp_path: Path, command: str,
) -> None:
    """A null device node given as the output is written (and discards it) and is still a
    character device with its numbers afterwards; nothing is left beside it."""
    asyncio.run(build(target))
    node = _null_device(tmp_path)
    ran = own_run(*COMMANDS[command](str(node)))
    after = node.stat()
    assert (EXIT_OK, True, os.makedev(1, 3), ["null"]) == (
        ran.status, stat.S_ISCHR(after.st_mode), after.st_rdev,
        sorted(path.name for path in tmp_path.iterdir() if path.name != "log.db" and
               not path.name.startswith("log.db-"))), ran.err


@sqlite_only
@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_regular_file_on_a_tmpfs_is_replaced_whole(
    own_run: Run, target: BackendTarget, command: str,
) -> None:
    """On a tmpfs (/dev/shm): an existing file is replaced by the whole document, a link
    to it stays a link (the file it names is replaced), nothing partial is left."""
    if not Path("/dev/shm").is_dir():
        pytest.skip("no /dev/shm tmpfs here")
    asyncio.run(build(target))
    with tempfile.TemporaryDirectory(dir="/dev/shm") as directory:
        real, link = Path(directory) / "kept.json", Path(directory) / "link.json"
        real.write_text("old")
        link.symlink_to(real)
        ran = own_run(*COMMANDS[command](str(link)))
        assert (EXIT_OK, True, True, ["kept.json", "link.json"]) == (
            ran.status, link.is_symlink(), real.read_text() != "old" and stat.S_ISREG(
                real.stat().st_mode), sorted(p.name for p in Path(directory).iterdir())), \
            ran.err


def test_a_head_written_to_a_device_stays_one(tmp_path: Path) -> None:
    """The transparency commands write their outputs the same way (one helper)."""
    from eventlog.cli.files import write_output

    node = _null_device(tmp_path)
    write_output(str(node), b"head\n")
    assert stat.S_ISCHR(node.stat().st_mode)


