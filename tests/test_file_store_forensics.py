"""The file store opened for forensics (``upgrade=False``) changes nothing on disk.

Opening for writing repairs what a crash leaves (a torn last line, orphan blobs). Opening
to look must not: a lost or damaged line is evidence, and the blobs it referenced are too.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from eventlog import open_log
from eventlog.errors import SchemaError, StorageError
from tests.events import Noted


def snapshot(root: Path) -> dict[str, str]:
    """Every file under ``root`` (but the lock file) and the SHA-256 of its bytes."""
    return {str(path.relative_to(root)): hashlib.sha256(path.read_bytes()).hexdigest()
            for path in sorted(root.rglob("*")) if path.is_file() and path.name != "lock"}


async def build(root: Path) -> None:
    """Two appends to stream a, the second attaching a blob; closed cleanly (index written)."""
    async with open_log(f"file://{root}") as log:
        await log.append("t", "a", [Noted(text="1")])
        await log.append("t", "a", [Noted(text="2")], attach=[b"evidence"])


def damage_last_line(root: Path) -> None:
    """Cut the last line of events.jsonl in half, as disk damage or tampering would."""
    path = root / "events.jsonl"
    raw = path.read_bytes()
    last = raw.rstrip(b"\n").rfind(b"\n") + 1
    path.write_bytes(raw[: last + (len(raw) - last) // 2])


async def test_read_only_open_of_a_damaged_store_changes_nothing(tmp_path: Path) -> None:
    """A torn line that heads.json proves was acknowledged, and the blob only it named,
    are still on disk after a read-only open and verify; verify reports the loss."""
    root = tmp_path / "store"
    await build(root)
    damage_last_line(root)
    before = snapshot(root)
    async with open_log(f"file://{root}", upgrade=False) as log:
        report = await log.verify()
        assert ["1"] == [e.event.text async for e in log.read_stream("t", "a")]  # type: ignore[attr-defined]
    assert [("t", "a", "truncated")] == [(p.tenant_id, p.stream_id, p.kind)
                                         for p in report.problems]
    assert before == snapshot(root)
    assert any(name.startswith("blobs/") for name in before)


async def test_opening_for_writing_refuses_to_cut_an_acknowledged_line(tmp_path: Path) -> None:
    """With upgrade=True, a damaged line the index proves was acknowledged is not cut away
    (nor written after): opening fails, naming the way to inspect it, and nothing changes."""
    root = tmp_path / "store"
    await build(root)
    damage_last_line(root)
    before = snapshot(root)
    with pytest.raises(StorageError, match="upgrade=False"):
        async with open_log(f"file://{root}"):
            pass
    assert before == snapshot(root)


async def test_a_crash_torn_line_is_still_cut_when_opening_for_writing(tmp_path: Path) -> None:
    """A half-written line the index never recorded is the append that did not happen."""
    root = tmp_path / "store"
    await build(root)
    with (root / "events.jsonl").open("ab") as handle:
        handle.write(b'{"tenant":"t","stream":"a","ev')
    async with open_log(f"file://{root}") as log:
        result = await log.append("t", "a", [Noted(text="3")])
        assert 3 == result.version
        assert (await log.verify()).ok


async def test_read_only_store_refuses_appends(tmp_path: Path) -> None:
    """A store opened with upgrade=False says so when asked to append."""
    root = tmp_path / "store"
    await build(root)
    async with open_log(f"file://{root}", upgrade=False) as log:
        with pytest.raises(StorageError, match="read-only"):
            await log.append("t", "a", [Noted(text="x")])


async def test_read_only_open_of_a_missing_store_creates_nothing(tmp_path: Path) -> None:
    """upgrade=False on a directory that holds no store refuses, leaving no directory."""
    with pytest.raises(SchemaError, match="no file store"):
        async with open_log(f"file://{tmp_path / 'absent'}", upgrade=False):
            pass
    assert not (tmp_path / "absent").exists()


@pytest.mark.parametrize("manifest", [b"{not json", b"[1, 2]", b"\xff\xfe"])
async def test_a_corrupt_manifest_is_a_clear_storage_error(tmp_path: Path, manifest: bytes
                                                           ) -> None:
    """manifest.json that does not parse is named, not an unexpected JSONDecodeError."""
    root = tmp_path / "store"
    await build(root)
    (root / "manifest.json").write_bytes(manifest)
    with pytest.raises(StorageError, match=r"manifest\.json"):
        async with open_log(f"file://{root}", upgrade=False):
            pass
    assert manifest == (root / "manifest.json").read_bytes()
    assert json.loads((root / "heads.json").read_bytes())["heads"]
