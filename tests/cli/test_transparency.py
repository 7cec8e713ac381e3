"""The transparency commands (issue 31): tree-head, prove, check-proof, witness and
verify --head, on SQLite and PostgreSQL; check-proof and witness open no log at all."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from eventlog import open_log
from eventlog.cli import EXIT_FINDINGS, EXIT_OK, EXIT_USAGE
from eventlog.signing import generate_key_pair
from eventlog.testing.events import Noted
from tests.cli.helpers import Run, make_runner
from tests.cli.test_digest import build, cut_tail, rewrite_consistently
from tests.conftest import BackendTarget
from tests.transparency import rfc9162

sql_stores = pytest.mark.parametrize("target", ["sqlite", "postgresql"], indirect=True)
sqlite_only = pytest.mark.parametrize("target", ["sqlite"], indirect=True)
NAME = "example.org/eventlog"
EVENTLOG = str(Path(sys.executable).with_name("eventlog"))


@pytest.fixture
def keys(tmp_path: Path) -> tuple[str, str]:
    """A key pair's files: (private PEM, public PEM)."""
    private, public = generate_key_pair()
    (tmp_path / "op.pem").write_bytes(private)
    (tmp_path / "op.pub.pem").write_bytes(public)
    return str(tmp_path / "op.pem"), str(tmp_path / "op.pub.pem")


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str], target: BackendTarget) -> Run:
    return make_runner(capsys, target)


def event_ids(target: BackendTarget, tenant: str) -> list[str]:
    async def read() -> list[str]:
        async with open_log(target.url, **target.options()) as log:
            page = await log.read_all(tenant_id=tenant, limit=1000)
            return [str(event.event_id) for event in page.events]
    return asyncio.run(read())


def append(target: BackendTarget, tenant: str, count: int) -> None:
    async def write() -> None:
        async with open_log(target.url, **target.options()) as log:
            for n in range(count):
                await log.append(tenant, "more", [Noted(text=str(n))])
    asyncio.run(write())


def head(run: Run, tmp_path: Path, keys: tuple[str, str], name: str, tenant: str = "t") -> str:
    file = str(tmp_path / name)
    assert EXIT_OK == run("tree-head", tenant, "--key", keys[0], "--name", NAME, "-o", file).status
    return file


def check(run: Run, proof: str, head_file: str, key: str) -> tuple[int, str]:
    ran = run("check-proof", proof, "--head", head_file, "--key", key, url=False)
    return ran.status, ran.out + ran.err


@sql_stores
def test_an_inclusion_proof_holds_and_a_forged_one_fails(
    target: BackendTarget, run: Run, tmp_path: Path, keys: tuple[str, str]
) -> None:
    """prove writes a proof check-proof accepts (and an independent RFC 9162 check too);
    a forged path, another head's size or another key fail with status 1."""
    asyncio.run(build(target))
    signed = head(run, tmp_path, keys, "head.txt")
    ids = event_ids(target, "t")
    proof = tmp_path / "proof.json"
    assert EXIT_OK == run("prove", "t", ids[3], "--head", signed, "-o", str(proof)).status
    document = json.loads(proof.read_text())
    lines = Path(signed).read_text().splitlines()
    root = base64.b64decode(lines[2])
    path = [base64.b64decode(h) for h in document["path"]]
    leaf = rfc9162.leaf(bytes.fromhex(document["event_hash"]))
    assert (3, 8) == (document["leaf_index"], document["tree_size"])
    assert rfc9162.inclusion_ok(leaf, 3, 8, path, root)
    assert (EXIT_OK, True) == (lambda r: (r[0], "is leaf 3 of the 8-event tree" in r[1]))(
        check(run, str(proof), signed, keys[1]))

    forged = dict(document, path=[base64.b64encode(bytes(32)).decode(), *document["path"][1:]])
    (tmp_path / "forged.json").write_text(json.dumps(forged))
    edited = dict(document, event=dict(document["event"], stream_id="forged"))
    (tmp_path / "edited.json").write_text(json.dumps(edited))
    append(target, "t", 1)
    later = head(run, tmp_path, keys, "later.txt")
    other_key = tmp_path / "other.pub.pem"
    other_key.write_bytes(generate_key_pair()[1])
    assert [EXIT_FINDINGS] * 4 == [
        check(run, str(tmp_path / "forged.json"), signed, keys[1])[0],
        check(run, str(tmp_path / "edited.json"), signed, keys[1])[0],
        check(run, str(proof), later, keys[1])[0],
        check(run, str(proof), signed, str(other_key))[0],
    ]


@sqlite_only
def test_another_tenants_event_has_no_proof(
    target: BackendTarget, run: Run, tmp_path: Path, keys: tuple[str, str]
) -> None:
    """prove under tenant t's head refuses tenant u's event as unknown (status 2)."""
    asyncio.run(build(target))
    signed = head(run, tmp_path, keys, "head.txt")
    ran = run("prove", "t", event_ids(target, "u")[0], "--head", signed)
    assert (EXIT_USAGE, True) == (ran.status, "tenant 't' has no event" in ran.err)


@sqlite_only
def test_check_proof_is_bad_input_for_a_file_that_is_no_proof(
    target: BackendTarget, run: Run, tmp_path: Path, keys: tuple[str, str]
) -> None:
    """A proof that is not JSON, or a head that is not a signed note, exits 2."""
    asyncio.run(build(target))
    signed = head(run, tmp_path, keys, "head.txt")
    (tmp_path / "junk.json").write_text("not json")
    (tmp_path / "proof.json").write_text(json.dumps({"type": "eventlog.inclusion_proof/v1"}))
    (tmp_path / "junk.txt").write_text("no note here\n")
    assert [EXIT_USAGE] * 3 == [
        check(run, str(tmp_path / "junk.json"), signed, keys[1])[0],
        check(run, str(tmp_path / "proof.json"), signed, keys[1])[0],
        check(run, str(tmp_path / "proof.json"), str(tmp_path / "junk.txt"), keys[1])[0],
    ]


@sqlite_only
def test_check_proof_opens_no_log(
    target: BackendTarget, run: Run, tmp_path: Path, keys: tuple[str, str]
) -> None:
    """In an empty directory with EVENTLOG_URL unreachable (or a SQLite file there),
    check-proof and witness answer, and leave the directory as empty as it was."""
    asyncio.run(build(target))
    signed = head(run, tmp_path, keys, "head.txt")
    proof = str(tmp_path / "proof.json")
    assert EXIT_OK == run("prove", "t", event_ids(target, "t")[0], "--head", signed,
                          "-o", proof).status
    empty = tmp_path / "auditor"
    empty.mkdir()
    statuses = []
    for url in ("postgresql://nobody@127.0.0.1:9/none?connect_timeout=1",
                f"sqlite:///{empty / 'would-be.db'}"):
        env = {**os.environ, "EVENTLOG_URL": url}
        done = subprocess.run([EVENTLOG, "check-proof", proof, "--head", signed, "--key",
                               keys[1]], cwd=empty, env=env, capture_output=True, text=True,
                              timeout=60)
        statuses.append(done.returncode)
    assert ([EXIT_OK, EXIT_OK], []) == (statuses, list(empty.iterdir()))


@sql_stores
def test_consistency_proofs_and_the_witness(
    target: BackendTarget, run: Run, tmp_path: Path, keys: tuple[str, str]
) -> None:
    """prove --from writes a proof check-proof accepts; the witness keeps the first head,
    refuses growth without a proof, accepts it with one, and refuses a rollback."""
    asyncio.run(build(target))
    old = head(run, tmp_path, keys, "old.txt")
    append(target, "t", 5)
    new = head(run, tmp_path, keys, "new.txt")
    proof = str(tmp_path / "consistency.json")
    assert EXIT_OK == run("prove", "t", "--from", old, "--head", new, "-o", proof).status
    document = json.loads(Path(proof).read_text())
    assert rfc9162.consistency_ok(
        8, 13, base64.b64decode(Path(old).read_text().splitlines()[2]),
        base64.b64decode(Path(new).read_text().splitlines()[2]),
        [base64.b64decode(h) for h in document["proof"]])
    assert EXIT_OK == check(run, proof, new, keys[1])[0]
    state = str(tmp_path / "witness")

    def witness(head_file: str, *more: str) -> tuple[int, str]:
        ran = run("witness", "--head", head_file, "--state", state, "--key", keys[1], *more,
                  url=False)
        return ran.status, ran.out + ran.err

    first, bare, proven, again, rollback = (
        witness(old), witness(new), witness(new, "--proof", proof), witness(new), witness(old))
    assert [EXIT_OK, EXIT_FINDINGS, EXIT_OK, EXIT_OK, EXIT_FINDINGS] == [
        first[0], bare[0], proven[0], again[0], rollback[0]]
    assert "rollback: the new head is of 8 events, smaller than the 13" in rollback[1]


@sqlite_only
def test_the_witness_refuses_a_fork(
    target: BackendTarget, run: Run, capsys: pytest.CaptureFixture[str], tmp_path: Path,
    keys: tuple[str, str]
) -> None:
    """Two logs under one name and tenant: the witness that kept one's head refuses the
    other's, of the same size or larger with a proof from the other log, naming sizes."""
    asyncio.run(build(target))
    kept = head(run, tmp_path, keys, "kept.txt")
    other = BackendTarget("sqlite", f"sqlite:///{tmp_path / 'other.db'}")
    append(other, "t", 9)
    run_other = make_runner(capsys, other)
    small = head(run_other, tmp_path, keys, "small.txt")  # 9 events, another history
    append(other, "t", 3)
    big = head(run_other, tmp_path, keys, "big.txt")
    proof = str(tmp_path / "fork.json")
    assert EXIT_OK == run_other("prove", "t", "--from", small, "--head", big, "-o", proof).status
    state = str(tmp_path / "witness")
    run("witness", "--head", kept, "--state", state, "--key", keys[1], url=False)
    forged = json.loads(Path(proof).read_text())
    forged["old_size"] = 8
    Path(proof).write_text(json.dumps(forged))
    ran = run("witness", "--head", big, "--state", state, "--key", keys[1], "--proof", proof,
              url=False)
    assert (EXIT_FINDINGS, True) == (
        ran.status, "fork: the tree of 12 events does not extend the tree of 8" in ran.err)


@sql_stores
@pytest.mark.parametrize(("tamper", "kind"), [(cut_tail, "cut"),
                                              (rewrite_consistently, "rewritten")])
def test_verify_head_names_a_cut_or_a_rechained_rewrite(
    target: BackendTarget, run: Run, tmp_path: Path, keys: tuple[str, str],
    tamper: object, kind: str
) -> None:
    """A head kept before the log was cut, or rewritten and re-chained (which the hash
    chains alone no longer show), fails verify --head, saying which; an untouched log
    passes."""
    asyncio.run(build(target))
    signed = head(run, tmp_path, keys, "head.txt")
    untouched = run("verify", "--head", signed, "--key", keys[1])
    asyncio.run(tamper(target))  # type: ignore[operator]
    ran = run("verify", "--head", signed, "--key", keys[1], "--json")
    problems = ran.json()["tree_head"]["problems"]
    assert (EXIT_OK, EXIT_FINDINGS, kind) == (
        untouched.status, ran.status, problems[0]["kind"])


@sqlite_only
def test_prove_refuses_a_head_the_log_no_longer_gives(
    target: BackendTarget, run: Run, tmp_path: Path, keys: tuple[str, str]
) -> None:
    """After a re-chained rewrite, prove under the old head exits 1 instead of proving."""
    asyncio.run(build(target))
    signed = head(run, tmp_path, keys, "head.txt")
    asyncio.run(rewrite_consistently(target))
    ran = run("prove", "t", event_ids(target, "t")[3], "--head", signed)  # t/b v2, forged
    assert (EXIT_FINDINGS, True) == (ran.status, "the log was rewritten" in ran.err)
