"""``eventlog tree-rebuild`` (issue 31): a tree damaged behind the log's back (a stored
node changed with SQL) is found by verify --head and repaired; a rebuild never hides a
rewrite of the events: past a kept head, or against the stored tree's own leaves, it is
refused (exit 1) and writes nothing. On SQLite and PostgreSQL, each damaged with SQL."""

from __future__ import annotations

import asyncio
import base64
from pathlib import Path

import pytest

from eventlog.cli import EXIT_FINDINGS, EXIT_OK, EXIT_USAGE
from eventlog.signing import generate_key_pair
from tests.cli.helpers import Run, make_runner
from tests.cli.test_digest import build, rewrite_consistently, sql
from tests.cli.test_transparency import head, keys  # noqa: F401  (a fixture)
from tests.conftest import BackendTarget
from tests.transparency import rfc9162

sql_stores = pytest.mark.parametrize("target", ["sqlite", "postgresql"], indirect=True)


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str], target: BackendTarget) -> Run:
    return make_runner(capsys, target)


def stored_node(target: BackendTarget, level: int, idx: int) -> bytes:
    """The stored hash of one node of tenant t's tree, read behind the log's back."""
    async def read() -> bytes:
        async with target.open() as log:
            return (await log.storage.tree_nodes("t", [(level, idx)]))[(level, idx)]
    return asyncio.run(read())


def leaves(target: BackendTarget) -> list[bytes]:
    """Tenant t's leaf data (each event's chain hash), for the test's own RFC 9162 MTH."""
    async def read() -> list[bytes]:
        async with target.open() as log:
            page = await log.read_all(tenant_id="t", limit=1000)
            return [event.hash for event in page.events]
    return asyncio.run(read())


def damage(target: BackendTarget, level: int, idx: int) -> None:
    asyncio.run(sql(target, "UPDATE tree_nodes SET hash = $1 WHERE tenant_id = 't' AND "
                    "level = $2 AND idx = $3", b"\x5a" * 32, level, idx))


@sql_stores
def test_a_damaged_node_is_found_then_repaired_under_the_kept_head(
    target: BackendTarget, run: Run, tmp_path: Path, keys: tuple[str, str]  # noqa: F811
) -> None:
    """verify --head names the changed node; tree-rebuild --head repairs it (the head
    still holds, checked by the test's own RFC 9162 root); verify passes again."""
    asyncio.run(build(target))
    signed = head(run, tmp_path, keys, "head.txt")
    healthy = stored_node(target, 1, 1)
    damage(target, 1, 1)
    found = run("verify", "--head", signed, "--key", keys[1], "--json")
    assert (EXIT_FINDINGS, "node") == (found.status,
                                       found.json()["tree_head"]["problems"][0]["kind"])
    rebuilt = run("tree-rebuild", "t", "--head", signed, "--key", keys[1], "--json")
    document = rebuilt.json()
    root = base64.b64decode(Path(signed).read_text().splitlines()[2])
    assert (EXIT_OK, 8, 8, 1, 1, []) == (
        rebuilt.status, document["size"], document["old_size"], document["repaired"],
        document["heads_held"], document["discarded"])
    assert base64.b64decode(document["root"]) == root == rfc9162.mth(leaves(target))
    assert healthy == stored_node(target, 1, 1)
    assert EXIT_OK == run("verify", "--head", signed, "--key", keys[1]).status
    plain = run("tree-rebuild", "t")
    assert (EXIT_OK, True) == (plain.status, "0 stored nodes of the old tree of 8 leaves "
                                             "repaired" in plain.out)


@sql_stores
def test_a_rebuild_cannot_launder_a_rechained_rewrite(
    target: BackendTarget, run: Run, tmp_path: Path, keys: tuple[str, str]  # noqa: F811
) -> None:
    """Events rewritten and re-chained after a head was signed: tree-rebuild --head is
    refused naming the rewrite, even with --accept-new-root; without a head the stored
    tree itself refuses it; nothing is written either way, and verify --head still
    fails. Only --accept-new-root without a head rebuilds, and warns what it discarded."""
    asyncio.run(build(target))
    signed = head(run, tmp_path, keys, "head.txt")
    asyncio.run(rewrite_consistently(target))
    kept_leaf = stored_node(target, 0, 3)
    refusals = [run("tree-rebuild", "t", "--head", signed, "--key", keys[1]),
                run("tree-rebuild", "t", "--head", signed, "--key", keys[1],
                    "--accept-new-root"),
                run("tree-rebuild", "t")]
    assert [EXIT_FINDINGS] * 3 == [r.status for r in refusals]
    assert "do not give the head's root" in refusals[0].err
    assert "--accept-new-root" not in refusals[1].err
    assert "rewritten after they were integrated" in refusals[2].err
    assert "--accept-new-root" in refusals[2].err
    assert kept_leaf == stored_node(target, 0, 3)
    assert EXIT_FINDINGS == run("verify", "--head", signed, "--key", keys[1]).status
    forced = run("tree-rebuild", "t", "--accept-new-root")
    assert (EXIT_OK, True) == (forced.status, "warning: discarded as evidence" in forced.err)
    assert kept_leaf != stored_node(target, 0, 3)
    # The kept head still catches it: the events give another root.
    assert EXIT_FINDINGS == run("verify", "--head", signed, "--key", keys[1]).status


@pytest.mark.parametrize("target", ["sqlite"], indirect=True)
def test_tree_rebuild_refuses_bad_heads_as_bad_input(
    target: BackendTarget, run: Run, tmp_path: Path, keys: tuple[str, str]  # noqa: F811
) -> None:
    """--head without --key, or a head of another tenant, is bad input (exit 2); a head
    another key signed is a finding (exit 1)."""
    asyncio.run(build(target))
    signed = head(run, tmp_path, keys, "head.txt")
    other = head(run, tmp_path, keys, "u.txt", tenant="u")
    (tmp_path / "x.pub.pem").write_bytes(generate_key_pair()[1])
    assert [EXIT_USAGE, EXIT_USAGE, EXIT_FINDINGS] == [
        run("tree-rebuild", "t", "--head", signed).status,
        run("tree-rebuild", "t", "--head", other, "--key", keys[1]).status,
        run("tree-rebuild", "t", "--head", signed, "--key", str(tmp_path / "x.pub.pem")).status]



@sql_stores
def test_a_deleted_node_is_one_line_and_a_finding_then_repaired(
    target: BackendTarget, run: Run, tmp_path: Path, keys: tuple[str, str]  # noqa: F811
) -> None:
    """A node row deleted with SQL: tree-head and prove say which node is missing and how
    to repair it, in one line, exit 1 (they died with "unexpected KeyError: (3, 0)", exit
    3); tree-rebuild puts it back and both work again."""
    asyncio.run(build(target))
    old = head(run, tmp_path, keys, "old.txt")
    asyncio.run(sql(target, "DELETE FROM tree_nodes WHERE tenant_id = 't' AND level = 3 "
                    "AND idx = 0"))
    signed, proved = (run("tree-head", "t", "--key", keys[0], "--name", "example.org/log"),
                      run("prove", "t", "--from", old, "--head", old))
    said = ("error: tenant 't': the stored transparency tree has no node (level 3, index 0), "
            "which the head or proof needs")
    assert [(EXIT_FINDINGS, 1, True)] * 2 == [
        (ran.status, len(ran.err.splitlines()), ran.err.startswith(said))
        for ran in (signed, proved)]
    assert EXIT_OK == run("tree-rebuild", "t", "--head", old, "--key", keys[1]).status
    assert [EXIT_OK, EXIT_OK] == [
        run("tree-head", "t", "--key", keys[0], "--name", "example.org/log").status,
        run("prove", "t", "--from", old, "--head", old).status]
