"""Hypothesis: for random sequences of appends (several streams, one to four events each,
two tenants interleaved), every inclusion proof under every head taken along the way, and
every consistency proof between any two of those heads, verifies with the independent
RFC 9162 implementation; on memory, SQLite and PostgreSQL. One open log per backend,
a fresh tenant per example."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eventlog import EventLog, open_log
from tests.conftest import PG_URL, drop_schema, require_postgres
from tests.events import Noted
from tests.transparency import rfc9162

APPENDS = st.lists(st.tuples(st.sampled_from(["a", "b", "c"]), st.integers(1, 4),
                             st.booleans(), st.booleans()), min_size=1, max_size=12)


@pytest.fixture(scope="module", params=["memory", "sqlite", "postgresql"])
def opened(request: pytest.FixtureRequest,
           tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[asyncio.Runner, EventLog]]:
    """One runner and one open log per backend for every example."""
    options: dict[str, Any] = {}
    if request.param == "memory":
        url = "memory://"
    elif request.param == "sqlite":
        url = f"sqlite:///{tmp_path_factory.mktemp('tree') / 'log.db'}"
    else:
        require_postgres()
        url, options = PG_URL, {"schema": f"t_{uuid.uuid4().hex[:12]}"}
    with asyncio.Runner() as runner:
        context = open_log(url, **options)
        log = runner.run(context.__aenter__())
        try:
            yield runner, log
        finally:
            runner.run(context.__aexit__(None, None, None))
            if options:
                runner.run(drop_schema(options["schema"]))


async def leaves_of(log: EventLog, tenant: str) -> list[tuple[uuid.UUID, bytes]]:
    page = await log.read_all(tenant_id=tenant, limit=10_000)
    return [(event.event_id, event.hash) for event in page.events]


async def check(log: EventLog, appends: list[tuple[str, int, bool, bool]]) -> None:
    tenant, other = f"t-{uuid.uuid4().hex}", f"o-{uuid.uuid4().hex}"
    heads = [await log.tree_head(tenant)]
    for stream, count, take_head, to_other in appends:
        await log.append(other if to_other else tenant, stream,
                         [Noted(text=str(n)) for n in range(count)])
        if take_head:
            heads.append(await log.tree_head(tenant))
    heads.append(await log.tree_head(tenant))
    leaves = await leaves_of(log, tenant)
    data = [digest for _, digest in leaves]
    for head in heads:
        assert rfc9162.mth(data[: head.size]) == head.root
        for index, (event_id, digest) in enumerate(leaves[: head.size]):
            proof = await log.prove_inclusion(tenant, event_id, head.size)
            assert proof is not None
            assert index == proof.leaf_index
            assert rfc9162.inclusion_ok(rfc9162.leaf(digest), index, head.size,
                                        list(proof.path), head.root)
        for newer in heads:
            if newer.size >= head.size:
                hashes = await log.prove_consistency(tenant, head.size, newer.size)
                assert rfc9162.consistency_ok(head.size, newer.size, head.root, newer.root,
                                              hashes)
    if heads[-1].size:
        for event_id, _ in await leaves_of(log, other):
            assert await log.prove_inclusion(tenant, event_id, heads[-1].size) is None


@pytest.mark.properties
@settings(max_examples=40)
@given(appends=APPENDS)
def test_every_proof_along_random_appends_verifies(
    opened: tuple[asyncio.Runner, EventLog], appends: list[tuple[str, int, bool, bool]]
) -> None:
    """Each head is the RFC root of its prefix; each proof between heads verifies; the
    other tenant's events have no proof in this tenant's tree."""
    runner, log = opened
    runner.run(check(log, appends))
