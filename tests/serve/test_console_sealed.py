"""Sealed fields in the console: opened with the server's keyring, sealed without it,
erased ones as erased with when, by whom and why; the erased filter lists them."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager

from starlette.testclient import TestClient

from eventlog import open_log
from eventlog.cli.lenient import LenientRegistry
from eventlog.cli.serve.access import Access, Grant
from eventlog.cli.serve.app import build_app
from eventlog.events import default_registry
from eventlog.log import EventLog
from tests.cli.test_sealed_views import ERASED, RAW, SEALED
from tests.cli.test_sealed_views import encrypted as encrypted

TOKEN = "sealed-console-token-0123"
HEADERS = {"authorization": f"Bearer {TOKEN}"}


def _opener(url: str, ring: str | None) -> Callable[[], AbstractAsyncContextManager[EventLog]]:
    @asynccontextmanager
    async def opened() -> AsyncIterator[EventLog]:
        async with open_log(url, registry=LenientRegistry(default_registry),
                            keyring=ring) as log:
            yield log

    return opened


def _client(encrypted: tuple[str, str], keyring: bool) -> TestClient:
    url, ring = encrypted
    return TestClient(build_app(_opener(url, ring if keyring else None),
                                Access([Grant("t", TOKEN, None)]), {}, "sealed"))


def test_the_page_opens_erases_or_seals_each_field(encrypted: tuple[str, str]) -> None:
    with _client(encrypted, keyring=True) as client:
        live = client.get("/t/t/s/live", headers=HEADERS).text
        gone = client.get("/t/t/s/gone", headers=HEADERS).text
    assert ("MARKER-live" in live, "MARKER-gone" in gone, ERASED in gone) == (
        True, False, True)
    with _client(encrypted, keyring=False) as client:
        sealed = client.get("/t/t/s/live", headers=HEADERS).text
    assert ("MARKER-live" in sealed, SEALED in sealed) == (False, True)
    assert [] == [raw for raw in RAW for text in (live, gone, sealed) if raw in text]


def test_the_erased_filter_lists_the_erased_subjects(encrypted: tuple[str, str]) -> None:
    with _client(encrypted, keyring=False) as client:
        found = client.get("/t/t?state=erased",
                           headers={**HEADERS, "accept": "application/json"}).json()
    assert {("gone", "session"), ("gone", "thread")} == {
        (item["id"], item["kind"]) for item in found["items"]}
    assert all("by dpo: GDPR 17" in item["state"] for item in found["items"])
