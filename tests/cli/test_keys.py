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
from eventlog.cli import EXIT_NOTHING, EXIT_OK, EXIT_USAGE
from eventlog.crypto import FileKeyring, init_keyring
from eventlog.errors import KeyUnavailable, SubjectErased
from eventlog.storage.contracts.keys import KeyRow
from tests.cli.helpers import make_runner
from tests.cli.test_errors import run_bare
from tests.conftest import BackendTarget

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


# -- issue 40 §4: the newcomer's sequence, and an erasure that erased nothing ------------


def _env_keyring(monkeypatch: pytest.MonkeyPatch, ring: Path | None) -> None:
    if ring is None:
        monkeypatch.delenv("EVENTLOG_KEYRING", raising=False)
    else:
        monkeypatch.setenv("EVENTLOG_KEYRING", str(ring))


async def _count(target: BackendTarget) -> int:
    async with open_log(target.url, **target.options()) as log:
        assert await log.wait_readable()
        return len((await log.read_all(limit=10_000)).events)


@pytest.mark.parametrize("target", ["sqlite", "postgresql"], indirect=True)
def test_the_demo_without_the_keyring_cannot_write_into_an_encrypted_log(
        capsys: pytest.CaptureFixture[str], target: BackendTarget, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The guide's encryption page, then the demo again without EVENTLOG_KEYRING on
    the same log: refused (exit 3, naming the key-encryption key the log expects), nothing
    written; `verify` and `timeline` of the envelope still work without the keyring."""
    monkeypatch.chdir(tmp_path)  # where the demo writes its report
    ring = tmp_path / "keyring.json"
    run = make_runner(capsys, target)
    assert EXIT_OK == run("keys", "init", str(ring), url=False).status
    _env_keyring(monkeypatch, ring)
    first = run("demo", "--json")
    assert EXIT_OK == first.status, first.err
    before = asyncio.run(_count(target))
    _env_keyring(monkeypatch, None)
    again = run("demo")
    verified = run("verify")
    timeline = run("timeline", "demo", first.json()["session"], "--json")
    assert (EXIT_USAGE, True, before) == (
        again.status, FileKeyring(ring).key_id in again.err, asyncio.run(_count(target)))
    assert "would store its data in the clear" in again.err
    assert (EXIT_OK, EXIT_OK) == (verified.status, timeline.status), verified.out


@pytest.mark.parametrize("target", ["sqlite", "postgresql"], indirect=True)
def test_the_demo_with_a_keyring_cannot_write_into_a_plain_log(
        capsys: pytest.CaptureFixture[str], target: BackendTarget, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The README's set-up (a plain demo), then the encryption page's demo with a
    keyring on the same log: refused (LogNotEncrypted, exit 2), nothing written; the
    plain log's report still reads."""
    monkeypatch.chdir(tmp_path)
    _env_keyring(monkeypatch, None)
    run = make_runner(capsys, target)
    first = run("demo", "--json")
    assert EXIT_OK == first.status, first.err
    before = asyncio.run(_count(target))
    ring = tmp_path / "keyring.json"
    assert EXIT_OK == run("keys", "init", str(ring), url=False).status
    sealed = run("demo", "--keyring", str(ring))
    report = run("report", "demo", first.json()["session"], "--output",
                 str(tmp_path / "r.html"))
    assert (EXIT_USAGE, True, before, EXIT_OK) == (
        sealed.status, "written without a keyring" in sealed.err, asyncio.run(_count(target)),
        report.status), report.err


def test_erasing_nothing_is_an_error_unless_if_present(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """`erase` of a misspelled subject, or on a log never encrypted, exits 4 (nothing
    erased, saying why); with --if-present it exits 0; a subject erased before exits 0."""
    plain = f"sqlite:///{tmp_path / 'plain.db'}"
    sealed, ring = f"sqlite:///{tmp_path / 'sealed.db'}", tmp_path / "k.json"
    assert EXIT_OK == run_bare(capsys, "keys", "init", str(ring)).status
    asyncio.run(_create(sealed, ring, ["s1"]))

    async def write_plain() -> None:
        async with open_log(plain) as log:
            await log.checkpoints.create(_record("s1"))

    asyncio.run(write_plain())
    signed = ["--url", sealed, "--keyring", str(ring)]  # its writer key signs the record
    typo = run_bare(capsys, "erase", "t", "s-1", *signed)
    unencrypted = run_bare(capsys, "erase", "t", "s1", "--url", plain, "--json")
    present = run_bare(capsys, "erase", "t", "s-1", "--if-present", *signed)
    erased = run_bare(capsys, "erase", "t", "s1", *signed)
    again = run_bare(capsys, "erase", "t", "s1", *signed, "--json")
    assert (EXIT_NOTHING, EXIT_NOTHING, EXIT_OK, EXIT_OK, EXIT_OK) == (
        typo.status, unencrypted.status, present.status, erased.status, again.status)
    assert ("misspelled", "not encrypted") == (
        "misspelled" if "misspelled" in typo.err else typo.err,
        "not encrypted" if "not encrypted" in unencrypted.err else unencrypted.err)
    assert ({"exit_status": 4, "kind": "nothing"}, {"destroyed": 0, "erased_before": True}) == (
        {k: v for k, v in json.loads(unencrypted.err).items() if k != "error"},
        {k: v for k, v in json.loads(again.out).items() if k in ("destroyed", "erased_before")})
