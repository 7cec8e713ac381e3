"""The command on a distributed log: the demo writes it, and verify, digest, stats, log,
replay, report, export and import (into a second distributed log) all work there."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from eventlog.cli import EXIT_OK
from tests.citus import cluster
from tests.cli.test_errors import run_bare

pytestmark = pytest.mark.citus


def test_the_forensic_commands_work_on_a_distributed_log(
    citus_schema: str, capsys: pytest.CaptureFixture[str], tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every reading command exits 0 there; an export imported into another distributed
    log has the same digest and verifies."""
    monkeypatch.chdir(tmp_path)
    where = ["--url", cluster.URL, "--schema", citus_schema, "--distributed"]
    played = run_bare(capsys, "demo", *where)
    assert EXIT_OK == played.status, played.err
    assert "--distributed" in played.out  # the hints reach the same log the same way
    for command in (["verify"], ["digest"], ["stats"], ["log"],
                    ["replay", "--as-of", "8", "--tenant", "demo"],
                    ["report", "demo", "-o", str(tmp_path / "report.html")],
                    ["export", "--tenant", "demo", str(tmp_path / "demo.jsonl")]):
        ran = run_bare(capsys, *command, *where)
        assert EXIT_OK == ran.status, (command, ran.err)
    copy = cluster.fresh_schema()
    try:
        there = ["--url", cluster.URL, "--schema", copy, "--distributed"]
        assert EXIT_OK == run_bare(capsys, "migrate", *there).status
        imported = run_bare(capsys, "import", str(tmp_path / "demo.jsonl"), *there)
        assert EXIT_OK == imported.status, imported.err
        digests = [json.loads(run_bare(capsys, "digest", "--json", *args).out)["digest"]
                   for args in (where, there)]
        assert digests[0] == digests[1]
        assert EXIT_OK == run_bare(capsys, "verify", *there).status
    finally:
        asyncio.run(cluster.drop_schema(copy))
