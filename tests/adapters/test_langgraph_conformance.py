"""LangGraph's own conformance suite (langgraph-checkpoint-conformance) against our saver."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.capabilities import ALL_CAPABILITIES

from eventlog.adapters.langgraph import AsyncEventlogSaver
from tests.conftest import CITUS, BackendTarget


@pytest.mark.parametrize("target", ["sqlite", "postgresql", "memory", "file", CITUS],
                         indirect=True)
async def test_every_capability_passes(target: BackendTarget) -> None:
    """Every capability, base and extended, is detected and passes every test."""

    @checkpointer_test(name=f"AsyncEventlogSaver[{target.name}]")
    async def factory() -> AsyncIterator[AsyncEventlogSaver]:
        async with AsyncEventlogSaver.from_conn_string(
            target.url, tenant_id="conformance", **target.options()
        ) as saver:
            yield saver

    report = await validate(factory)
    failures = {
        name: result.failures for name, result in report.results.items() if not result.passed
    }
    assert {} == failures
    assert all(result.tests_passed > 0 for result in report.results.values())
    assert {cap.value for cap in ALL_CAPABILITIES} == {
        name for name, result in report.results.items() if result.detected
    }


def test_adapter_exports_resolve() -> None:
    """The adapter's public names are sorted and importable."""
    from eventlog.adapters import langgraph

    assert sorted(langgraph.__all__) == langgraph.__all__
    assert [] == [name for name in langgraph.__all__ if not hasattr(langgraph, name)]
