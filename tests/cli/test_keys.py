"""``eventlog keys init|rotate`` and ``eventlog erase``: a keyring made, a rotation killed
midway and run again, a subject erased from the command line."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from eventlog import CheckpointRecord, open_log
from eventlog.cli import EXIT_OK, EXIT_USAGE
from eventlog.crypto import FileKeyring, init_keyring
from eventlog.errors import KeyUnavailable, SubjectErased
from eventlog.storage.contracts.keys import KeyRow
from tests.cli.test_errors import run_bare

_MAIN = "import sys\nfrom eventlog.cli import main\nsys.exit(main(sys.argv[1:]))\n"


def _record(session: str) -> CheckpointRecord:
    return CheckpointRecord(tenant_id="t", session_id=session, run_id=uuid.uuid4(),
                            state={"who": session})


def test_keys_init_writes_a_private_keyring_and_prints_no_key(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """The file is 0600 and holds a KEK and a writer key; the output names their ids,
    never a key; a second init of the same file is refused."""
    path = tmp_path / "k.json"
    ran = run_bare(capsys, "keys", "init", str(path), "--json")
    secrets = [json.loads(path.read_text())[name] for name in ("kek", "writer")]
    again = run_bare(capsys, "keys", "init", str(path))
    assert (EXIT_OK, 0o600, False, True, True, True) == (
        ran.status, path.stat().st_mode & 0o777, any(s in ran.out for s in secrets),
        json.loads(ran.out)["key_id"] == FileKeyring(path).key_id,
        len(json.loads(ran.out)["writer_key_id"]) == 16,
        again.status != EXIT_OK and "never overwritten" in again.err)


@pytest.mark.parametrize("writer", [False, True], ids=["no_writer_key", "signed"])
def test_erase_from_the_command_line(capsys: pytest.CaptureFixture[str],
                                     tmp_path: Path, writer: bool) -> None:
    """`eventlog erase TENANT SUBJECT --reason` destroys the key and records who and why;
    the subject's state then raises SubjectErased. On a log that signs nothing no keyring
    is needed; on a signed one the keyring signs the erasure record."""
    url, ring = f"sqlite:///{tmp_path / 'log.db'}", tmp_path / "k.json"
    init_keyring(ring, writer=writer)
    created = asyncio.run(_create(url, ring, ["s1"]))[0]
    keyring = ["--keyring", str(ring)] if writer else []
    ran = run_bare(capsys, "erase", "t", "s1", "--reason", "request 42", "--actor", "dpo",
                   "--url", url, "--json", *keyring)

    async def check() -> tuple[object, ...]:
        async with open_log(url, keyring=ring) as log:
            with pytest.raises(SubjectErased):
                await log.checkpoints.read("t", "s1", created)
            [erased] = [e.event async for e in log.read_stream("t", "erasure:s1")]
            return erased.reason, erased.actor, (await log.verify()).ok  # type: ignore[attr-defined]

    assert (EXIT_OK, 1, ("request 42", "dpo", True)) == (
        ran.status, json.loads(ran.out)["destroyed"], asyncio.run(check()))


def test_erase_without_the_writer_key_of_a_signed_log_is_refused(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """In a tenant whose events are signed, `eventlog erase` without the keyring is refused
    (exit 2, naming the keyring) and destroys nothing: its record would be unsigned."""
    url, ring = f"sqlite:///{tmp_path / 'log.db'}", tmp_path / "k.json"
    init_keyring(ring)
    created = asyncio.run(_create(url, ring, ["s1"]))[0]
    ran = run_bare(capsys, "erase", "t", "s1", "--url", url)

    async def state() -> object:
        async with open_log(url, keyring=ring) as log:
            return await log.checkpoints.read("t", "s1", created)

    assert (EXIT_USAGE, True, {"who": "s1"}) == (ran.status, "signed" in ran.err,
                                                asyncio.run(state()))


async def _create(url: str, ring: Path, sessions: list[str]) -> list[str]:
    async with open_log(url, keyring=ring) as log:
        return [(await log.checkpoints.create(_record(s))).checkpoint_id or ""
                for s in sessions]


async def _many_keys(url: str, ring: Path, count: int) -> None:
    """``count`` subject keys, wrapped by ``ring`` (as many subjects' first writes make)."""
    keyring = FileKeyring(ring)
    from datetime import UTC, datetime

    from eventlog.log._sealing import context_of

    async with open_log(url, keyring=ring) as log:
        for n in range(count):
            subject = f"bulk-{n:05d}"
            await log.storage.add_subject_key(KeyRow(
                "t", subject, 1, keyring.key_id,
                keyring.wrap(os.urandom(32), context_of("t", subject, 1)), datetime.now(UTC)))


def _under(path: Path, key_id: str) -> int:
    with sqlite3.connect(path) as connection:
        return int(connection.execute("SELECT count(*) FROM subject_keys WHERE kek_id = ?",
                                      (key_id,)).fetchone()[0])


@pytest.mark.slow
def test_a_rotation_killed_midway_is_run_again_to_the_end(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """SIGKILL a real `eventlog keys rotate` once some keys are re-wrapped: every key is
    under one KEK or the other; the rerun finishes, the old keyring no longer opens the
    log and the new one reads every subject."""
    db = tmp_path / "log.db"
    url, old, new = f"sqlite:///{db}", tmp_path / "old.json", tmp_path / "new.json"
    run_bare(capsys, "keys", "init", str(old))
    run_bare(capsys, "keys", "init", str(new))
    created = asyncio.run(_create(url, old, ["s1", "s2"]))
    asyncio.run(_many_keys(url, old, 1500))
    old_id, new_id = FileKeyring(old).key_id, FileKeyring(new).key_id
    child = subprocess.Popen(
        [sys.executable, "-c", _MAIN, "keys", "rotate", "--url", url, "--keyring", str(old),
         "--to", str(new), "--page", "3"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while _under(db, new_id) == 0 and child.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    child.send_signal(signal.SIGKILL)
    child.wait()
    midway = (_under(db, old_id), _under(db, new_id))
    ran = run_bare(capsys, "keys", "rotate", "--url", url, "--keyring", str(old), "--to",
                   str(new), "--json")
    done = json.loads(ran.out)

    async def reads() -> list[object]:
        async with open_log(url, keyring=old) as log:
            with pytest.raises(KeyUnavailable):
                await log.checkpoints.read("t", "s1", created[0])
        async with open_log(url, keyring=new) as log:
            return [await log.checkpoints.read("t", s, c)
                    for s, c in zip(["s1", "s2"], created, strict=True)]

    assert (-9, True, 1502, EXIT_OK, 0, 1502, [{"who": "s1"}, {"who": "s2"}]) == (
        child.returncode, midway[0] > 0 and midway[1] > 0, sum(midway), ran.status,
        _under(db, old_id), done["rewrapped"] + done["already"], asyncio.run(reads()))


def test_a_keyring_without_a_writer_key_gets_one_and_rotates_it(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """`keys init-writer` gives a keyring made before writer keys its writer key (a second
    time is refused); `keys rotate-writer` replaces it keeping the old public key; `keys
    public` writes both (current first, PEM and verifier key) and never a secret; the file
    stays 0600 and its KEK unchanged."""
    path = tmp_path / "k.json"
    init_keyring(path, writer=False)
    kek = json.loads(path.read_text())["kek"]
    added = run_bare(capsys, "keys", "init-writer", str(path), "--json")
    again = run_bare(capsys, "keys", "init-writer", str(path))
    rotated = run_bare(capsys, "keys", "rotate-writer", str(path), "--json")
    public = run_bare(capsys, "keys", "public", "--keyring", str(path), "--json")
    body = json.loads(path.read_text())
    keys = json.loads(public.out)["keys"]
    assert (EXIT_OK, EXIT_USAGE, EXIT_OK, EXIT_OK) == (
        added.status, again.status, rotated.status, public.status)
    assert ([json.loads(rotated.out)["writer_key_id"], json.loads(added.out)["writer_key_id"]],
            [True, False], 0o600, kek, False) == (
        [key["key_id"] for key in keys], [key["current"] for key in keys],
        path.stat().st_mode & 0o777, body["kek"], body["writer"] in public.out)


def test_verify_takes_the_writer_key_file_keys_public_writes(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """`verify --writer-key FILE` (what `keys public -o FILE` wrote) checks every signature
    without the keyring; without it verify says the signatures were not checked."""
    url, ring = f"sqlite:///{tmp_path / 'log.db'}", tmp_path / "k.json"
    init_keyring(ring)
    asyncio.run(_create(url, ring, ["s1", "s2"]))
    writer = tmp_path / "writer.pub"
    assert EXIT_OK == run_bare(capsys, "keys", "public", str(ring), "-o", str(writer)).status
    checked = run_bare(capsys, "verify", "--url", url, "--writer-key", str(writer))
    blind = run_bare(capsys, "verify", "--url", url, "--json")
    assert (EXIT_OK, True, EXIT_OK, False, 2) == (
        checked.status, "checked against writer key" in checked.out, blind.status,
        json.loads(blind.out)["signatures"]["checked"],
        json.loads(blind.out)["signatures"]["signed_events"])
