"""One table of exit statuses (issue 42 §3), kept: the guide shows it, every error maps
to the status its kind means, a signature that does not hold is the same finding on every
command, and no command returns a number of its own."""

from __future__ import annotations

import ast
import asyncio
import re
from pathlib import Path

import pytest

from eventlog.cli.errors import (
    EXIT_FINDINGS,
    EXIT_OK,
    EXIT_OPERATIONAL,
    EXIT_STATUSES,
    EXIT_USAGE,
    classify,
)
from eventlog.errors import (
    DigestRefused,
    InvalidInput,
    KeyringRequired,
    KeyUnavailable,
    SealRefused,
    StorageError,
    SubjectErased,
)
from eventlog.signing import generate_key_pair
from tests.cli.helpers import Run
from tests.cli.test_digest import build
from tests.conftest import BackendTarget
from tests.guide import guide_text

ROOT = Path(__file__).resolve().parents[2]


def test_the_readme_shows_the_one_table() -> None:
    """The guide's exit-status table (docs/cli.md) is `EXIT_STATUSES`, row for row."""
    readme = guide_text()
    rows = re.findall(r"^\| `(\d+)` (\w+) \| (.+) \|$", readme, flags=re.MULTILINE)
    assert list(EXIT_STATUSES) == [(int(status), kind, meaning) for status, kind, meaning in rows]


@pytest.mark.parametrize(("error", "status"), [
    (KeyUnavailable("t", "s", "no data key"), EXIT_USAGE),
    (KeyringRequired("t", "s"), EXIT_USAGE),
    (SubjectErased("t", "s"), EXIT_USAGE),
    (InvalidInput("x", "bad"), EXIT_USAGE),
    (DigestRefused("digest", "signature does not hold"), EXIT_FINDINGS),
    (SealRefused("t", "s", "moved ciphertext"), EXIT_FINDINGS),
    (StorageError("sqlite", "open", "refused"), EXIT_OPERATIONAL),
], ids=lambda value: type(value).__name__ if isinstance(value, Exception) else str(value))
def test_each_error_exits_as_the_table_says(error: Exception, status: int) -> None:
    """A key the data needs and nobody gave is the invocation's fault (2), not unreachable
    storage (3); a digest or sealed value that does not hold is a finding (1)."""
    assert status == classify(error)[0]


def _returned_numbers(path: Path) -> list[str]:
    """``return N`` and ``CommandError(..., N)`` with N an integer literal, in one module."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.AsyncFunctionDef) and node.name.startswith("run"):
            found += [f"{path.name}:{inner.lineno}" for inner in ast.walk(node)
                      if isinstance(inner, ast.Return) and isinstance(inner.value, ast.Constant)
                      and isinstance(inner.value.value, int)]
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "CommandError":
            statuses = [*node.args[1:], *(k.value for k in node.keywords)]
            found += [f"{path.name}:{node.lineno}" for value in statuses
                      if isinstance(value, ast.Constant)]
    return found


def test_no_command_returns_a_number_of_its_own() -> None:
    """Every command's status is one of the table's names (EXIT_OK, …), never a literal."""
    modules = sorted((ROOT / "eventlog" / "cli").rglob("*.py"))
    assert [] == [where for path in modules for where in _returned_numbers(path)]


@pytest.mark.parametrize("target", ["sqlite"], indirect=True)
def test_a_signature_that_does_not_hold_is_a_finding_everywhere(
    own_run: Run, target: BackendTarget, tmp_path: Path,
) -> None:
    """A digest, a head and a proof's head checked with another key than signed them: exit
    1 on verify --digest, verify --head and check-proof alike (verify --digest said 2)."""
    asyncio.run(build(target))
    private, public, other = (tmp_path / "op.pem", tmp_path / "op.pub.pem",
                              tmp_path / "other.pub.pem")
    private_pem, public_pem = generate_key_pair()
    private.write_bytes(private_pem)
    public.write_bytes(public_pem)
    other.write_bytes(generate_key_pair()[1])
    digest, head, proof = tmp_path / "d.json", tmp_path / "h.txt", tmp_path / "p.json"
    event = own_run("log", "--tenant", "t", "--json", "--limit", "1").json_lines()[0]["event_id"]
    assert [EXIT_OK] * 4 == [
        own_run("digest", "--key", str(private), "-o", str(digest)).status,
        own_run("tree-head", "t", "--key", str(private), "--name", "example.org/log",
                "-o", str(head)).status,
        own_run("prove", "t", event, "--head", str(head), "-o", str(proof)).status,
        own_run("check-proof", str(proof), "--head", str(head), "--key", str(public),
                url=False).status]
    assert [EXIT_FINDINGS] * 3 == [
        own_run("verify", "--digest", str(digest), "--key", str(other)).status,
        own_run("verify", "--head", str(head), "--key", str(other)).status,
        own_run("check-proof", str(proof), "--head", str(head), "--key", str(other),
                url=False).status]
