"""The witness's cosignature on the command line (issue 31): ``witness --witness-key
--name`` writes the head it accepts with a C2SP ``cosignature/v1`` line (checked here by
the spec's own rules, `tests.transparency.test_cosignature.spec_check`), and only what it
accepts; ``check-proof`` and ``verify --head`` with ``--witness-key`` require that
cosignature."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from eventlog.cli import EXIT_FINDINGS, EXIT_OK, EXIT_USAGE
from eventlog.signing import generate_key_pair
from tests.cli.helpers import Run, make_runner
from tests.cli.test_digest import build
from tests.cli.test_transparency import append, event_ids, head, keys  # noqa: F401
from tests.conftest import BackendTarget
from tests.transparency.test_cosignature import spec_check

sqlite_only = pytest.mark.parametrize("target", ["sqlite"], indirect=True)
WITNESS = "witness.example.org/w1"


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str], target: BackendTarget) -> Run:
    return make_runner(capsys, target)


@pytest.fixture
def witness_keys(tmp_path: Path) -> tuple[str, str]:
    """The witness's own key pair's files: (private PEM, public PEM)."""
    private, public = generate_key_pair()
    (tmp_path / "w1.pem").write_bytes(private)
    (tmp_path / "w1.pub.pem").write_bytes(public)
    return str(tmp_path / "w1.pem"), str(tmp_path / "w1.pub.pem")


def private_key(file: str) -> Ed25519PrivateKey:
    key = serialization.load_pem_private_key(Path(file).read_bytes(), None)
    assert isinstance(key, Ed25519PrivateKey)
    return key


@sqlite_only
def test_the_witness_cosigns_what_it_accepts_and_nothing_else(
    target: BackendTarget, run: Run, tmp_path: Path, keys: tuple[str, str],  # noqa: F811
    witness_keys: tuple[str, str]
) -> None:
    """An accepted head comes back with one more line that holds by the spec, timestamped
    now; a rollback is refused and nothing is written."""
    asyncio.run(build(target))
    old = head(run, tmp_path, keys, "old.txt")
    append(target, "t", 2)
    new = head(run, tmp_path, keys, "new.txt")
    proof = str(tmp_path / "growth.json")
    assert EXIT_OK == run("prove", "t", "--from", old, "--head", new, "-o", proof).status
    state = str(tmp_path / "state")

    def witness(head_file: str, out: str, *more: str) -> int:
        return run("witness", "--head", head_file, "--state", state, "--key", keys[1],
                   "--witness-key", witness_keys[0], "--name", WITNESS, "-o", out, *more,
                   url=False).status

    before = int(time.time())
    first = str(tmp_path / "old.cosigned.txt")
    grown = str(tmp_path / "new.cosigned.txt")
    rolled = str(tmp_path / "rollback.cosigned.txt")
    assert [EXIT_OK, EXIT_OK, EXIT_FINDINGS] == [
        witness(old, first), witness(new, grown, "--proof", proof), witness(old, rolled)]
    assert not Path(rolled).exists()
    for signed, cosigned in ((old, first), (new, grown)):
        text, original = Path(cosigned).read_text(), Path(signed).read_text()
        assert text.startswith(original)
        body = original[: original.index("\n\n") + 1]
        stamp = spec_check(text[len(original):], private_key(witness_keys[0]), body)
        assert stamp is not None
        assert before <= stamp <= int(time.time())


@sqlite_only
def test_check_proof_and_verify_require_the_witness_cosignature(
    target: BackendTarget, run: Run, tmp_path: Path, keys: tuple[str, str],  # noqa: F811
    witness_keys: tuple[str, str]
) -> None:
    """With --witness-key, check-proof and verify --head hold only a head that witness
    cosigned: the bare head, another witness's key, or a cosigned head edited afterwards
    fail with status 1; the cosigned head passes and says who cosigned it, and when."""
    asyncio.run(build(target))
    signed = head(run, tmp_path, keys, "head.txt")
    cosigned = str(tmp_path / "cosigned.txt")
    assert EXIT_OK == run("witness", "--head", signed, "--state", str(tmp_path / "s"), "--key",
                          keys[1], "--witness-key", witness_keys[0], "--name", WITNESS, "-o",
                          cosigned, url=False).status
    proof = str(tmp_path / "proof.json")
    assert EXIT_OK == run("prove", "t", event_ids(target, "t")[2], "--head", cosigned,
                          "-o", proof).status
    other = tmp_path / "w2.pub.pem"
    other.write_bytes(generate_key_pair()[1])
    edited = tmp_path / "edited.txt"
    lines = Path(cosigned).read_text().splitlines(keepends=True)
    operator_line, witness_line = lines[-2], lines[-1]
    edited.write_text("".join(lines[:-2]) + witness_line + operator_line)  # order is free
    tampered = tmp_path / "tampered.txt"
    blob = witness_line.split(" ")[2]
    flipped = blob[:8] + ("A" if blob[8] != "A" else "B") + blob[9:]  # the timestamp changed
    tampered.write_text("".join(lines[:-1]) + " ".join(witness_line.split(" ")[:2]) + " "
                        + flipped)

    def check(head_file: str, *witness: str) -> int:
        extra = [flag for key in witness for flag in ("--witness-key", key)]
        return run("check-proof", proof, "--head", head_file, "--key", keys[1], *extra,
                   url=False).status

    assert [EXIT_OK, EXIT_FINDINGS, EXIT_FINDINGS, EXIT_OK, EXIT_FINDINGS, EXIT_OK] == [
        check(signed), check(signed, witness_keys[1]), check(cosigned, str(other)),
        check(str(edited), witness_keys[1]), check(str(tampered), witness_keys[1]),
        check(cosigned, witness_keys[1])]
    held = run("check-proof", proof, "--head", cosigned, "--key", keys[1], "--witness-key",
               witness_keys[1], "--json", url=False).json()
    assert [WITNESS] == [seen["name"] for seen in held["cosigned"]]
    assert held["cosigned"][0]["time"].endswith("Z")
    assert [EXIT_FINDINGS, EXIT_OK] == [
        run("verify", "--head", signed, "--key", keys[1], "--witness-key",
            witness_keys[1]).status,
        run("verify", "--head", cosigned, "--key", keys[1], "--witness-key",
            witness_keys[1]).status]
    bare = run("verify", "--witness-key", witness_keys[1])
    assert (EXIT_USAGE, True) == (bare.status, "give --head FILE" in bare.err)


@sqlite_only
def test_witness_cosigning_options_go_together(
    target: BackendTarget, run: Run, tmp_path: Path, keys: tuple[str, str],  # noqa: F811
    witness_keys: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    """--witness-key without --name, or --name without --witness-key, is bad input; to
    standard output the cosigned head is the output and the verdict goes to stderr."""
    asyncio.run(build(target))
    signed = head(run, tmp_path, keys, "head.txt")
    common = ["witness", "--head", signed, "--state", str(tmp_path / "s"), "--key", keys[1]]
    assert [EXIT_USAGE, EXIT_USAGE] == [
        run(*common, "--witness-key", witness_keys[0], url=False).status,
        run(*common, "--name", WITNESS, url=False).status]
    shown = run(*common, "--witness-key", witness_keys[0], "--name", WITNESS, url=False)
    assert (EXIT_OK, True, True) == (shown.status, shown.out.startswith(
        Path(signed).read_text()), "accepted:" in shown.err)
    as_json = run(*common, "--witness-key", witness_keys[0], "--name", WITNESS, "--json",
                  url=False)
    assert json.loads(as_json.out)["cosigned_head"].startswith(Path(signed).read_text())
