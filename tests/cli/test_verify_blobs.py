"""``eventlog verify`` reports state blobs in a section of their own, each naming the
blob and every stream whose events reference it (not one stream, at "version 0", counted
among the broken hash chains)."""

from __future__ import annotations

import asyncio

import pytest

from eventlog.cli import EXIT_FINDINGS
from tests.cli.helpers import make_runner
from tests.conftest import BackendTarget
from tests.test_blob_tamper import build, shared_digest
from tests.test_tamper import sql

sql_stores = pytest.mark.parametrize("target", ["sqlite", "postgresql"], indirect=True)


@sql_stores
def test_an_undercounted_blob_names_every_stream_that_references_it(
    capsys: pytest.CaptureFixture[str], target: BackendTarget
) -> None:
    """A shared blob's count lowered: no chain is broken, one blob finding naming the blob
    and both sessions whose checkpoints reference it."""
    asyncio.run(build(target))
    asyncio.run(sql(target, "UPDATE blobs SET refs = 1 WHERE digest = $1", shared_digest()))
    ran = make_runner(capsys, target)("verify", "--json")
    report = ran.json()
    assert (EXIT_FINDINGS, []) == (ran.status, report["chain_problems"])
    assert [("t", shared_digest().hex(), "blob_refs", ["session:s1", "session:s2"])] == [
        (p["tenant_id"], p["blob"], p["kind"], p["streams"]) for p in report["blob_problems"]]


@sql_stores
def test_a_deleted_event_is_a_chain_finding_and_its_blob_a_blob_finding(
    capsys: pytest.CaptureFixture[str], target: BackendTarget
) -> None:
    """The event of s2 that referenced the shared blob deleted: the chains count s2 as
    broken, the blob section counts the blob, naming s1, whose events still reference it."""
    asyncio.run(build(target))
    asyncio.run(sql(target, "DELETE FROM events WHERE stream_id = 'session:s2'"))
    ran = make_runner(capsys, target)("verify")
    lines = ran.out.splitlines()
    assert EXIT_FINDINGS == ran.status
    assert [True, True] == [
        any(line.startswith("Hash chains: 4 streams, 4 events: 1 broken") for line in lines),
        any(line.startswith("State blobs: 2 checked: 1 wrong") for line in lines)]
    row = next(line for line in lines if "blob_refs" in line)
    assert "session:s1" == row.split("│")[-2].strip()
