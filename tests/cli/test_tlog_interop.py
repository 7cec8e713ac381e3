"""Heads and proofs any tlog tool reads (issue 42 §3): what ``tree-head``, ``verifier-key``
and ``prove`` write holds by a verifier written from the C2SP and RFC 9162 texts
(`tests.transparency.spec`, which imports none of our tree or note code), for tenant ids
with a space, a ``+``, a ``/`` and non-ASCII letters; and ``check-proof`` and
``witness`` accept a standard checkpoint signed by someone else's code, key name = origin,
among signatures of keys they do not know."""

from __future__ import annotations

import asyncio
import base64
import json
from pathlib import Path
from urllib.parse import quote

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from eventlog import open_log
from eventlog.cli import EXIT_FINDINGS, EXIT_OK, EXIT_USAGE
from eventlog.testing.events import Noted
from tests.cli.helpers import Run
from tests.conftest import BackendTarget
from tests.transparency import spec

sqlite_only = pytest.mark.parametrize("target", ["sqlite"], indirect=True)
NAME = "example.org/eventlog"
TENANTS = ("acme", "a b+c", "zürich/ops 100%")


@pytest.fixture
def keys(tmp_path: Path) -> tuple[Ed25519PrivateKey, str, str]:
    """The operator's key, and its files: (key, private PEM file, public PEM file)."""
    key = Ed25519PrivateKey.generate()
    private, public = tmp_path / "op.pem", tmp_path / "op.pub.pem"
    private.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                          serialization.PrivateFormat.PKCS8,
                                          serialization.NoEncryption()))
    public.write_bytes(key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    return key, str(private), str(public)


def append(target: BackendTarget, tenant: str, count: int) -> list[str]:
    """``count`` events appended to ``tenant``: their ids."""
    async def write() -> list[str]:
        async with open_log(target.url, **target.options()) as log:
            return [str((await log.append(tenant, f"s-{n % 2}", [Noted(text=str(n))]))
                        .event_ids[0]) for n in range(count)]
    return asyncio.run(write())


def signed_head(own_run: Run, tenant: str, private: str, file: Path) -> bytes:
    assert EXIT_OK == own_run("tree-head", tenant, "--key", private, "--name", NAME,
                              "-o", str(file)).status
    return file.read_bytes()


@sqlite_only
def test_our_heads_and_proofs_hold_by_the_specs(
    own_run: Run, target: BackendTarget, tmp_path: Path,
    keys: tuple[Ed25519PrivateKey, str, str],
) -> None:
    """Each tenant's head opens with the verifier key verifier-key prints, whose name is
    the head's origin (``NAME/`` and the tenant percent-encoded); every event's inclusion
    proof and the consistency proof to a later head hold by RFC 9162's algorithms, each
    leaf computed from the proof's envelope by the guide's recipe."""
    _, private, public = keys
    checked = []
    for number, tenant in enumerate(TENANTS):
        ids = append(target, tenant, 3 + number)
        old_file = tmp_path / f"old-{number}.txt"
        signed_head(own_run, tenant, private, old_file)
        append(target, tenant, 4)
        new_file = tmp_path / f"new-{number}.txt"
        new_note = signed_head(own_run, tenant, private, new_file)
        printed = own_run("verifier-key", tenant, "--key", public, "--name", NAME, url=False)
        verifier = spec.parse_verifier(printed.out)
        head = spec.parse_checkpoint(spec.open_note(new_note, verifier))
        old = spec.parse_checkpoint(spec.open_note(old_file.read_bytes(), verifier))
        for event_id in ids:
            proof_file = tmp_path / "proof.json"
            assert EXIT_OK == own_run("prove", tenant, event_id, "--head", str(new_file),
                                      "-o", str(proof_file)).status
            proof = json.loads(proof_file.read_text())
            hashed = spec.proof_event_hash(proof["event"])
            checked.append(hashed.hex() == proof["event_hash"] and spec.inclusion_holds(
                spec.leaf(hashed), proof["leaf_index"], head.size,
                [base64.b64decode(h) for h in proof["path"]], head.root))
        growth = tmp_path / "growth.json"
        assert EXIT_OK == own_run("prove", tenant, "--from", str(old_file), "--head",
                                  str(new_file), "-o", str(growth)).status
        hashes = [base64.b64decode(h) for h in json.loads(growth.read_text())["proof"]]
        checked.append(spec.consistency_holds(old.size, head.size, old.root, head.root, hashes))
        assert (f"{NAME}/{quote(tenant, safe='')}", True, (old.size, head.size)) == (
            verifier.name, verifier.name == head.origin and spec.valid_key_name(head.origin),
            (3 + number, 7 + number))
    assert [True] * len(checked) == checked


def _their_head(note: bytes, key: Ed25519PrivateKey, *, strangers: int = 3) -> str:
    """Our head's checkpoint signed again by someone else's code under its origin, with
    signature lines of keys no verifier here knows before and after it."""
    body = note.decode()[: note.decode().rindex("\n\n") + 1]
    origin = body.split("\n")[0]
    lines = [spec.sign_note(body, f"stranger.example/{n}", Ed25519PrivateKey.generate())
             .split("\n\n")[-1] for n in range(strangers)]
    ours = spec.sign_note(body, origin, key).split("\n\n")[-1]
    return body + "\n" + lines[0] + ours + "".join(lines[1:])


@sqlite_only
def test_check_proof_and_the_witness_accept_a_standard_checkpoint_of_another_signer(
    own_run: Run, target: BackendTarget, tmp_path: Path,
    keys: tuple[Ed25519PrivateKey, str, str],
) -> None:
    """A head signed by code written from the spec, key name = origin, among three
    signatures of unknown keys: check-proof holds with its PEM key or its verifier key,
    the witness keeps it; a checkpoint of another log (no eventlog origin) is kept too. A
    copy whose known signature no longer verifies is refused (exit 1)."""
    _, private, _ = keys
    [event_id] = append(target, "a b+c", 1)
    ours = signed_head(own_run, "a b+c", private, tmp_path / "ours.txt")
    proof = tmp_path / "proof.json"
    assert EXIT_OK == own_run("prove", "a b+c", event_id, "--head", str(tmp_path / "ours.txt"),
                              "-o", str(proof)).status
    theirs_key = Ed25519PrivateKey.generate()
    theirs = tmp_path / "theirs.txt"
    theirs.write_text(_their_head(ours, theirs_key))
    pem = tmp_path / "theirs.pub.pem"
    pem.write_bytes(theirs_key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    origin = ours.decode().split("\n")[0]
    vkey = tmp_path / "theirs.vkey"
    vkey.write_text(spec.verifier_of(origin, theirs_key) + "\n")
    sofa = tmp_path / "sofa.txt"
    sofa.write_text(spec.sign_note(
        "example.com/behind-the-sofa\n20852163\n" + base64.b64encode(bytes(32)).decode() + "\n",
        "example.com/behind-the-sofa", theirs_key))
    broken = tmp_path / "broken.txt"
    broken.write_text(theirs.read_text().replace("\n1\n", "\n2\n", 1))

    def check(head: Path, key: Path) -> int:
        return own_run("check-proof", str(proof), "--head", str(head), "--key", str(key),
                       url=False).status

    def witness(head: Path) -> int:
        return own_run("witness", "--head", str(head), "--state", str(tmp_path / "w"),
                       "--key", str(pem), url=False).status

    assert [EXIT_OK] * 4 + [EXIT_FINDINGS] == [
        check(theirs, pem), check(theirs, vkey), witness(theirs), witness(sofa),
        check(broken, pem)]


@sqlite_only
def test_tree_head_refuses_an_unknown_tenant(
    own_run: Run, target: BackendTarget, tmp_path: Path,
    keys: tuple[Ed25519PrivateKey, str, str],
) -> None:
    """As every other command does: exit 2, one line, no head written (it signed an empty
    head of a tenant that does not exist, exit 0)."""
    append(target, "acme", 1)
    ran = own_run("tree-head", "nobody", "--key", keys[1], "--name", NAME,
                  "-o", str(tmp_path / "head.txt"))
    assert (EXIT_USAGE, ["error: unknown tenant 'nobody': it has no events in this log"],
            False) == (ran.status, ran.err.splitlines(), (tmp_path / "head.txt").exists())


def test_check_proof_refuses_the_operators_private_key(
    capsys: pytest.CaptureFixture[str], tmp_path: Path,
    keys: tuple[Ed25519PrivateKey, str, str],
) -> None:
    """The private key given where the public one belongs: exit 2, one line saying so and
    how to get the public key (it was silently used as its public key)."""
    from tests.cli.test_errors import run_bare

    for name in ("proof.json", "head.txt"):
        (tmp_path / name).write_text('{"type": "eventlog.inclusion_proof/v1"}')
    ran = run_bare(capsys, "check-proof", str(tmp_path / "proof.json"), "--head",
                   str(tmp_path / "head.txt"), "--key", keys[1])
    assert (EXIT_USAGE, 1, True) == (
        ran.status, len(ran.err.splitlines()),
        f"key file {keys[1]} is a private key: give the operator's public key "
        f"(`openssl pkey -in {keys[1]} -pubout`)" in ran.err)


def test_the_witness_says_it_is_an_offline_cosigner(capsys: pytest.CaptureFixture[str]) -> None:
    """``witness --help`` says what it is, and that it does not speak tlog-witness's HTTP
    protocol (it named that protocol as what it was)."""
    from tests.cli.test_errors import run_bare

    shown = " ".join(run_bare(capsys, "witness", "--help").out.split())
    assert (True, True, False) == ("An offline witness: a cosigner" in shown,
                                   "does not speak the HTTP protocol of C2SP tlog-witness"
                                   in shown, "(C2SP tlog-witness)" in shown)
