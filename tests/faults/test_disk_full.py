"""A full disk under the SQLite and file stores: a clear error, nothing half-written, and
appends succeed again, without reopening, once space is freed.

The disk is a 2 MiB tmpfs this test mounts (it needs root or CAP_SYS_ADMIN). Where mounting
is impossible the test skips with the reason printed, except under ``CI=true``.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from eventlog import EventLog, StorageError, open_log
from projections import compare_views
from tests.conftest import IN_CI
from tests.events import Noted

pytestmark = pytest.mark.slow

BLOB = 48 * 1024


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 2 MiB tmpfs mounted for this test, unmounted afterwards."""
    mount_point = tmp_path / "disk"
    mount_point.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m,mode=0700", "tmpfs",
                           str(mount_point)], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        reason = f"cannot mount a tmpfs: {(done.stderr or done.stdout).strip()}"
        if IN_CI:
            pytest.fail(reason + "; CI=true requires it (run as root)")
        pytest.skip(reason)
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], check=False)


async def fill_until_full(log: EventLog, texts: list[str]) -> StorageError:
    """Append events with 48 KiB blobs until the disk is full; the error it raised."""
    for number in range(200):
        text = f"fill-{number}"
        try:
            await log.append("t", "s", [Noted(text=text)], attach=[os.urandom(BLOB)])
        except StorageError as error:
            return error
        texts.append(text)
    raise AssertionError("a 2 MiB disk never filled up")


def leftovers(disk: Path, blobs: int, scheme: str) -> list[str]:
    """Files a failed append left behind: temporary files, and on the file store blob
    files beyond the ``blobs`` the log references."""
    found = [str(path) for path in disk.rglob("*.tmp")]
    if scheme == "file":
        files = list((disk / "store" / "blobs").glob("*/*"))
        if len(files) != blobs:
            found.append(f"{len(files)} blob files for {blobs} referenced blobs")
    return found


async def stored_texts(log: EventLog) -> list[str]:
    events = [event async for event in log.read_stream("t", "s")]
    return [event.event.text for event in events]  # type: ignore[attr-defined]


@pytest.mark.parametrize("scheme", ["sqlite", "file"])
async def test_full_disk_is_a_clear_error_and_appends_resume_when_space_is_freed(
    small_disk: Path, scheme: str
) -> None:
    """ENOSPC is a StorageError naming it; the log holds exactly what was acknowledged,
    verifies, and takes appends again once a ballast file is removed."""
    ballast = small_disk / "ballast"
    ballast.write_bytes(b"\0" * 700 * 1024)
    url = {"sqlite": f"sqlite:///{small_disk / 'log.db'}",
           "file": f"file://{small_disk / 'store'}"}[scheme]
    acked: list[str] = []
    async with open_log(url) as log:
        error = await fill_until_full(log, acked)
        assert "full" in str(error) or "No space" in str(error), error
        for _ in range(3):  # still full: each attempt fails the same clear way
            with pytest.raises(StorageError):
                await log.append("t", "s", [Noted(text="refused")], attach=[os.urandom(BLOB)])
        assert acked == await stored_texts(log)
        assert [] == leftovers(small_disk, len(await log.storage.blob_refs("t")), scheme)
        ballast.unlink()
        await log.append("t", "s", [Noted(text="after")], attach=[os.urandom(BLOB)])
        acked.append("after")
        assert acked == await stored_texts(log)
        report = await log.verify()
        assert ([], []) == (report.problems, await compare_views(log))
    async with open_log(url) as log:
        assert acked == await stored_texts(log)
        report = await log.verify()
        assert ([], []) == (report.problems, await compare_views(log))
        assert len(acked) == len(await log.storage.blob_refs("t"))
