"""`eventlog serve`'s HTTP rules, through Starlette's TestClient on SQLite and PostgreSQL:
401 without a token; another tenant's thread, search, proof and live feed the same 404,
byte for byte, as a missing id; crafted stored strings escaped, huge values bounded; no
write endpoint; a strict Content-Security-Policy on every response."""

from __future__ import annotations

import asyncio
import json
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast
from urllib.parse import quote

import pytest
from starlette.testclient import TestClient

from eventlog.cli import EXIT_OK, main
from eventlog.cli.serve import find as finding
from eventlog.cli.serve.app import CSP, NOT_FOUND, build_app
from eventlog.cli.transparency import read_head
from eventlog.face import OpenLog
from eventlog.signing import generate_key_pair
from tests.cli.helpers import url_args
from tests.forensic_threads import QUESTION
from tests.serve.fixtures import (
    APPROVER,
    JS_URL,
    SCRIPT,
    TOKEN_A,
    TOKEN_B,
    Logged,
    access,
    logged_on,
    opener,
    scoped,
)

A = {"authorization": f"Bearer {TOKEN_A}"}
B = {"authorization": f"Bearer {TOKEN_B}"}
PAGE_BUDGET_S = 10.0
"""A hostile thread's page on a busy 2-core machine (it takes well under 1 s here)."""


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def logged(request: pytest.FixtureRequest,
           tmp_path_factory: pytest.TempPathFactory) -> Iterator[Logged]:
    yield from logged_on(request.param, tmp_path_factory)


@pytest.fixture(scope="module")
def client(logged: Logged) -> Iterator[TestClient]:
    """The console with Alice seeing the first tenant and Bob the second."""
    with TestClient(build_app(opener(logged.target), scoped(logged), {}, "test")) as client:
        yield client


def url(logged: Logged, tenant: str, *parts: str) -> str:
    return "/t/" + "/".join(quote(p, safe="") for p in (tenant, *parts))


def event_ids(logged: Logged, tenant: str) -> list[str]:
    async def read() -> list[str]:
        async with logged.target.open() as log:
            page = await log.read_all(tenant_id=tenant, limit=1000)
            return [str(event.event_id) for event in page.events]

    return asyncio.run(read())


def test_without_a_token_every_route_is_401(logged: Logged, client: TestClient) -> None:
    """No token, a wrong one, a wrong scheme or a forged cookie: 401 everywhere."""
    event = event_ids(logged, logged.tenant)[0]
    paths = ["/", url(logged, logged.tenant), url(logged, logged.tenant, "s", logged.trip),
             url(logged, logged.tenant, "live", logged.trip),
             url(logged, logged.tenant, "e", event, "proof")]
    for path in paths:
        for headers, cookies in [({}, {}), ({"authorization": "Bearer nope"}, {}),
                                 ({"authorization": f"Basic {TOKEN_A}"}, {}),
                                 ({}, {"eventlog_console": TOKEN_A})]:
            client.cookies.clear()
            client.cookies.update(cookies)
            response = client.get(path, headers=headers)
            assert (path, 401) == (path, response.status_code)
            assert TOKEN_A not in response.text
            assert logged.target.url not in response.text  # where the log is: not said
    client.cookies.clear()
    login = client.get("/", headers={"accept": "text/html"})
    assert (401, True, False) == (login.status_code, "Log in" in login.text,
                                  "log test" in login.text)
    assert 200 == client.get(url(logged, logged.tenant), headers=A).status_code


def _same(response: Any) -> tuple[int, bytes, list[tuple[str, str]]]:
    return (response.status_code, response.content,
            sorted((k, v) for k, v in response.headers.items() if k != "date"))


def test_another_tenants_data_is_the_same_404_as_a_missing_id(
        logged: Logged, client: TestClient) -> None:
    """Alice (first tenant) asking for the second tenant's thread by URL, by search, its
    proof or its live feed, or for the second tenant's thread id under her own tenant,
    gets what a missing id gets: the same status, bytes and headers."""
    missing = client.get(url(logged, logged.tenant, "s", "no-such-thread"), headers=A)
    assert (404, NOT_FOUND) == (missing.status_code, missing.content)
    theirs = event_ids(logged, logged.other)[0]
    asked = [
        url(logged, logged.other, "s", logged.secret),  # their tenant, their thread
        url(logged, logged.other, "s", logged.trip),  # their tenant, a shared id
        url(logged, logged.tenant, "s", logged.secret),  # her tenant, their thread's id
        url(logged, logged.other),  # their list
        url(logged, logged.other) + "?q=secret",  # a search of it
        url(logged, logged.other, "live", logged.secret),
        url(logged, logged.tenant, "live", logged.secret),
        url(logged, logged.other, "e", theirs, "proof"),
        url(logged, logged.tenant, "e", theirs, "proof"),  # their event under her tenant
        url(logged, "no-such-tenant"),
        "/no/such/route",
    ]
    for path in asked:
        assert (path, _same(missing)) == (path, _same(client.get(path, headers=A)))
    # and her own search never lists their thread
    listed = client.get(url(logged, logged.tenant) + "?q=secret", headers=A)
    assert logged.secret not in listed.text


def test_a_token_for_every_tenant_sees_both(logged: Logged) -> None:
    """Without scoping (the printed token), both tenants' threads open."""
    with TestClient(build_app(opener(logged.target), access(), {}, "test")) as client:
        for tenant in (logged.tenant, logged.other):
            assert 200 == client.get(url(logged, tenant, "s", logged.trip),
                                     headers=A).status_code


def test_a_browser_exchanges_the_token_once_for_a_cookie(
        logged: Logged, client: TestClient) -> None:
    """The login form sets an HttpOnly, SameSite=Strict cookie that is not the token and
    ends in 12 hours;
    the printed ``/login?token=`` URL does the same; a wrong token is 401."""
    client.cookies.clear()
    wrong = client.post("/login", data={"token": "wrong"}, follow_redirects=False)
    assert 401 == wrong.status_code
    done = client.post("/login", data={"token": TOKEN_A}, follow_redirects=False)
    cookie = done.headers["set-cookie"]
    assert (303, True, True, False, True) == (
        done.status_code, "httponly" in cookie.lower(), "samesite=strict" in cookie.lower(),
        TOKEN_A in cookie, "max-age=43200" in cookie.lower())
    assert 200 == client.get(url(logged, logged.tenant, "s", logged.trip)).status_code
    client.cookies.clear()
    again = client.get(f"/login?token={TOKEN_B}", follow_redirects=False)
    assert 303 == again.status_code
    assert 200 == client.get(url(logged, logged.other, "s", logged.secret)).status_code
    assert 404 == client.get(url(logged, logged.tenant, "s", logged.trip)).status_code
    client.cookies.clear()


def test_there_is_no_write_endpoint(logged: Logged, client: TestClient) -> None:
    """Every route refuses every method but GET (the login form's POST aside)."""
    paths = ["/", url(logged, logged.tenant), url(logged, logged.tenant, "s", logged.trip),
             url(logged, logged.tenant, "live", logged.trip), "/static/console.js"]
    for path in paths:
        for method in ("POST", "PUT", "PATCH", "DELETE"):
            assert (path, method, 405) == (
                path, method, client.request(method, path, headers=A).status_code)


def test_every_response_carries_the_strict_policy(logged: Logged, client: TestClient) -> None:
    """Pages, errors, assets and the login page: the CSP allows only the package's own
    script and style sheets, no inline script, no frames."""
    for response in [client.get("/login"), client.get("/", headers=A),
                     client.get(url(logged, logged.tenant, "s", logged.trip), headers=A),
                     client.get(url(logged, "nope"), headers=A), client.get("/"),
                     client.get("/static/console.js", headers=A)]:
        assert CSP == response.headers["content-security-policy"]
        assert "nosniff" == response.headers["x-content-type-options"]
    assert "'unsafe-inline'" not in CSP
    assert "script-src 'self'" in CSP
    page = client.get(url(logged, logged.tenant, "s", logged.trip), headers=A).text
    # every script is the package's own file, or data (JSON, not run)
    for tag in re.findall(r"<script[^>]*>", page):
        assert 'src="/static/' in tag or 'type="application/json"' in tag, tag


def test_crafted_strings_are_escaped_and_huge_values_do_not_stall(
        logged: Logged, client: TestClient) -> None:
    """A thread whose id is markup and whose metadata holds a script, an ``onerror``
    image and a ``javascript:`` URL, with a 5 MB value and a list naming one element
    10,000 times: its list line and page show them as text, and the page comes quickly
    and small."""
    listed = client.get(url(logged, logged.tenant), headers=A).text
    started = time.monotonic()
    page = client.get(url(logged, logged.tenant, "s", logged.crafted), headers=A)
    took = time.monotonic() - started
    assert (200, True) == (page.status_code, took < PAGE_BUDGET_S)
    assert len(page.content) < 2_000_000
    for text in (listed, page.text):
        assert SCRIPT not in text
        assert "<img" not in text
        assert 'href="javascript:' not in text.lower()
        assert "onerror=\"window" not in text
    assert "&lt;img src=x onerror=" in listed
    # a stored constructor call is shown as not decoded, never run
    assert ("os.system" in page.text, "not decoded" in page.text) == (True, True)
    assert not Path(logged.marker).exists()
    assert JS_URL in page.text or JS_URL.replace(":", "&#58;") in page.text or (
        "javascript" in page.text)


def test_the_thread_page_shows_the_reports_model(logged: Logged, client: TestClient) -> None:
    """The page is the report's section of the thread: its timeline, checkpoint tree, the
    question with who asked (the node) and who answered (the approver)."""
    page = client.get(url(logged, logged.tenant, "s", logged.trip), headers=A).text
    assert "<svg" in page
    assert "Checkpoint tree" in page
    assert "Questions and answers" in page
    assert APPROVER in page
    assert "approve" in page
    assert str(QUESTION["question"]) in page
    data = re.search(r'<script type="application/json" id="event-data">(.*?)</script>',
                     page, re.S)
    assert data is not None
    assert all("event_id" in event for event in json.loads(data.group(1)).values())


def test_search_finds_by_actor_prefix_framework_and_kind(
        logged: Logged, client: TestClient) -> None:
    """Each filter narrows the list to what it names (JSON for scripts)."""

    def ids(query: str) -> list[str]:
        response = client.get(url(logged, logged.tenant) + query,
                              headers={**A, "accept": "application/json"})
        assert 200 == response.status_code, response.text
        return [item["id"] for item in response.json()["items"]]

    assert [logged.waiting, logged.crafted, logged.trip] == ids("")
    assert [logged.trip] == ids(f"?actor={quote(APPROVER)}")
    assert [] == ids("?actor=nobody")
    assert [logged.trip] == ids("?q=tr")
    assert [logged.waiting, logged.crafted, logged.trip] == ids("?framework=langgraph")
    assert [logged.waiting] == ids("?state=question")
    assert [] == ids("?framework=agent-framework")
    assert [] == ids("?kind=session")
    assert [] == ids("?state=pending")
    assert [logged.trip] == ids("?state=held")
    assert [] == ids("?state=erased")
    assert [] == ids("?since=2999-01-01T00:00")
    assert 400 == client.get(url(logged, logged.tenant) + "?since=yesterday",
                             headers=A).status_code


def test_pages_follow_the_cursor_newest_first(
        logged: Logged, client: TestClient, monkeypatch: pytest.MonkeyPatch) -> None:
    """One item a page: the pages together list each subject once, newest first."""
    monkeypatch.setattr(finding, "PAGE_SIZE", 1)
    seen: list[tuple[str, int]] = []
    cursor = ""
    for _ in range(10):
        body = client.get(url(logged, logged.tenant) + (f"?after={cursor}" if cursor else ""),
                          headers={**A, "accept": "application/json"}).json()
        seen += [(item["id"], item["position"]) for item in body["items"]]
        if body["cursor"] is None:
            break
        cursor = str(body["cursor"])
    assert [logged.waiting, logged.crafted, logged.trip] == [ident for ident, _ in seen]
    assert sorted((p for _, p in seen), reverse=True) == [p for _, p in seen]


def test_a_downloaded_proof_passes_check_proof(
        logged: Logged, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """With the tenant's signed head, an event's proof downloads as a file that
    `eventlog check-proof` accepts with the operator's public key; without a head the
    console says so (409); the other tenant's event stays a 404."""
    private, public = generate_key_pair()
    (tmp_path / "op.pem").write_bytes(private)
    (tmp_path / "op.pub").write_bytes(public)
    head_file = str(tmp_path / "head")
    assert EXIT_OK == main(["tree-head", logged.tenant, "--key", str(tmp_path / "op.pem"),
                            "--name", "example.org/console", "-o", head_file,
                            *url_args(logged.target)])
    heads = {logged.tenant: read_head(head_file)}
    event = event_ids(logged, logged.tenant)[3]
    with TestClient(build_app(opener(logged.target), scoped(logged), heads, "t")) as client:
        got = client.get(url(logged, logged.tenant, "e", event, "proof"), headers=A)
        assert 200 == got.status_code, got.text
        assert "attachment" in got.headers["content-disposition"]
        theirs = event_ids(logged, logged.other)[0]
        assert NOT_FOUND == client.get(url(logged, logged.other, "e", theirs, "proof"),
                                       headers=A).content
    proof = tmp_path / "proof.json"
    proof.write_bytes(got.content)
    capsys.readouterr()
    assert EXIT_OK == main(["check-proof", str(proof), "--head", head_file, "--key",
                            str(tmp_path / "op.pub")])
    with TestClient(build_app(opener(logged.target), scoped(logged), {}, "t")) as client:
        assert 409 == client.get(url(logged, logged.tenant, "e", event, "proof"),
                                 headers=A).status_code


def test_the_live_feed_tells_of_an_append(logged: Logged, client: TestClient) -> None:
    """A thread's feed sends an ``appended`` event when another connection appends to
    it (server-sent events on the log's watch)."""
    from eventlog.checkpoints.thread_records import Payload

    thread = f"live-{time.monotonic_ns()}"

    async def put(checkpoint: str) -> None:
        async with logged.target.open() as opened:
            log = cast(OpenLog, opened)
            await log.checkpoints.threads.put(logged.tenant, thread, checkpoint,
                                              state=Payload("msgpack", b"\x80"),
                                              metadata={"source": "loop", "step": 1})

    asyncio.run(put("1f0-a"))
    later = threading.Timer(1.0, lambda: asyncio.run(put("1f0-b")))
    later.start()
    try:
        with client.stream("GET", url(logged, logged.tenant, "live", thread),
                           headers=A) as feed:
            assert feed.headers["content-type"].startswith("text/event-stream")
            lines: list[str] = []
            for line in feed.iter_lines():
                lines.append(line)
                if line.startswith("data: {"):
                    break
    finally:
        later.join()
    assert "event: appended" in lines
    assert json.loads(lines[-1].removeprefix("data: "))["type"] == "thread_checkpoint_put"


def _verified(client: TestClient, path: str) -> dict[str, Any]:
    """Start the tenant's verify and poll its status until it is done."""
    json_headers = {**A, "accept": "application/json"}
    started = client.get(f"{path}?run=1", headers=json_headers).json()
    deadline = time.monotonic() + 60
    status = started
    while status["running"]:
        assert time.monotonic() < deadline
        # other pages are answered while it runs
        assert 200 == client.get(path.removesuffix("/verify"), headers=A).status_code
        time.sleep(0.05)
        status = client.get(path, headers=json_headers).json()
    return dict(status)


def test_verify_runs_on_request_in_the_background(logged: Logged, client: TestClient) -> None:
    """The tenant's verify, started by a request, reported when done; the other tenant's
    verify is the same 404 as a missing tenant."""
    status = _verified(client, url(logged, logged.tenant, "verify"))
    assert (True, None, []) == (status["ok"], status["error"], status["problems"])
    assert status["events"] > 0
    page = client.get(url(logged, logged.tenant, "verify"), headers=A).text
    assert "verified" in page
    missing = client.get(url(logged, "no-such-tenant", "verify"), headers=A)
    theirs = client.get(url(logged, logged.other, "verify") + "?run=1", headers=A)
    assert _same(missing) == _same(theirs)


def test_verify_names_a_changed_event(tmp_path: Path) -> None:
    """An event changed behind the log's back (sqlite3, outside the library) is named, and
    the ``failing`` filter lists its thread with the problem (before any verify: a note
    saying to run one)."""
    import sqlite3

    from eventlog.checkpoints.thread_records import Payload
    from eventlog.cli.serve.access import Access, Grant
    from tests.conftest import BackendTarget

    target = BackendTarget("sqlite", f"sqlite:///{tmp_path / 'log.db'}")

    async def write() -> None:
        async with target.open() as opened:
            log = cast(OpenLog, opened)
            for n in range(3):
                await log.checkpoints.threads.put("acme", "t", f"1f0-{n}",
                                                  state=Payload("msgpack", bytes([n])))

    asyncio.run(write())
    with sqlite3.connect(tmp_path / "log.db") as db:
        db.execute("UPDATE events SET data = CAST('{}' AS BLOB) WHERE stream_version = 2")
    access = Access([Grant("a", TOKEN_A, frozenset({"acme"}))])
    as_json = {**A, "accept": "application/json"}
    with TestClient(build_app(opener(target), access, {}, "t")) as client:
        before = client.get("/t/acme?state=failing", headers=as_json).json()
        status = _verified(client, "/t/acme/verify")
        page = client.get("/t/acme/verify", headers=A).text
        failing = client.get("/t/acme?state=failing", headers=as_json).json()
        listed = client.get("/t/acme?state=failing", headers=A).text
    assert (False, {"thread:t"}) == (status["ok"], {p["stream"] for p in status["problems"]})
    assert ("problems" in page, "thread:t" in page) == (True, True)
    assert ([], "no verify of this tenant has finished: run it, then ask again") == (
        before["items"], before["note"])
    assert [("thread", "t")] == [(i["kind"], i["id"]) for i in failing["items"]]
    assert failing["items"][0]["state"].startswith(status["problems"][0]["kind"])
    assert status["problems"][0]["kind"] in listed


def test_a_thread_as_of_an_earlier_position(logged: Logged, client: TestClient) -> None:
    """``?as_of=POSITION`` draws the thread as it stood then: the later events are left
    out and counted; the live feed is off; a bad position is 400."""
    page = client.get(url(logged, logged.tenant, "s", logged.trip), headers=A).text
    positions = sorted({int(p) for p in re.findall(r'id="ev-(\d+)"', page)})
    cut = positions[len(positions) // 2]
    earlier = client.get(url(logged, logged.tenant, "s", logged.trip) + f"?as_of={cut}",
                         headers=A).text
    shown = sorted({int(p) for p in re.findall(r'id="ev-(\d+)"', earlier)})
    assert [p for p in positions if p <= cut] == shown
    later = len([p for p in positions if p > cut])
    assert f"As of position {cut}: {later} later events" in earlier
    assert "data-live" not in earlier
    assert 400 == client.get(url(logged, logged.tenant, "s", logged.trip) + "?as_of=x",
                             headers=A).status_code


def test_a_page_links_the_clis_report_of_it(logged: Logged, client: TestClient) -> None:
    """The report link downloads what ``eventlog report TENANT THREAD`` writes (the same
    model, verified), with its name; another tenant's is the same 404."""
    page = client.get(url(logged, logged.tenant, "s", logged.trip), headers=A).text
    link = url(logged, logged.tenant, "report", logged.trip)
    assert f'href="{link}"' in page
    got = client.get(link, headers=A)
    assert (200, True) == (got.status_code, "attachment" in got.headers["content-disposition"])
    assert f"eventlog-report-{logged.tenant}-{logged.trip}.html" in got.headers[
        "content-disposition"]
    assert "Incident report: LangGraph thread trip" in got.text
    assert APPROVER in got.text
    missing = client.get(url(logged, logged.tenant, "report", "nope"), headers=A)
    theirs = client.get(url(logged, logged.other, "report", logged.secret), headers=A)
    assert _same(missing) == _same(theirs)


def test_an_id_prefix_pages_too(
        logged: Logged, client: TestClient, monkeypatch: pytest.MonkeyPatch) -> None:
    """A prefix search (a range of ids) pages by the same cursor: the page after the last
    match is empty, and a kind outside the prefix's finds nothing."""
    monkeypatch.setattr(finding, "PAGE_SIZE", 1)
    json_headers = {**A, "accept": "application/json"}
    first = client.get(url(logged, logged.tenant) + "?q=tri", headers=json_headers).json()
    assert [logged.trip] == [item["id"] for item in first["items"]]
    after = client.get(url(logged, logged.tenant) + f"?q=tri&after={first['cursor']}",
                       headers=json_headers).json()
    assert ([], None) == (after["items"], after["cursor"])
    assert [] == client.get(url(logged, logged.tenant) + "?q=tri&kind=session",
                            headers=json_headers).json()["items"]


def test_an_id_no_stream_can_have_is_absent(logged: Logged) -> None:
    """A tenant or thread id the log refuses as input (too long, a control character) is
    the same 404 as a missing one, for a token that sees every tenant too."""
    with TestClient(build_app(opener(logged.target), access(), {}, "test")) as client:
        missing = client.get(url(logged, logged.tenant, "s", "nope"), headers=A)
        for path in [url(logged, "x" * 300), url(logged, "x" * 300, "s", "a"),
                     url(logged, logged.tenant, "s", "y" * 5000),
                     url(logged, "a\x01b") + "?q=t", url(logged, "x" * 300, "verify")]:
            assert (path[:60], _same(missing)) == (path[:60], _same(client.get(path,
                                                                              headers=A)))


def test_any_checkpoint_of_a_thread_opens_with_its_difference(
        logged: Logged, client: TestClient) -> None:
    """``?checkpoint=ID``: the checkpoint's step, nodes, values and what changed since its
    parent (as `eventlog inspect --checkpoint` tells it); the crafted thread's 5 MB value
    is cut, its markup escaped; an unknown id is the same 404."""
    page = client.get(url(logged, logged.tenant, "s", logged.trip), headers=A).text
    ids = re.findall(r'"checkpoint_id":"([^"]+)"', page)
    assert ids
    last = client.get(url(logged, logged.tenant, "s", logged.trip) + f"?checkpoint={ids[-1]}",
                      headers=A).text
    assert f"Checkpoint {ids[-1]}" in last
    assert "What changed since its parent" in last
    assert "approved: yes, ship it" in last
    crafted = client.get(url(logged, logged.tenant, "s", logged.crafted)
                         + "?checkpoint=1f0-crafted-2", headers=A)
    assert (200, True) == (crafted.status_code, len(crafted.content) < 2_000_000)
    assert SCRIPT not in crafted.text
    assert "more characters" in crafted.text
    missing = client.get(url(logged, logged.tenant, "s", "nope"), headers=A)
    unknown = client.get(url(logged, logged.tenant, "s", logged.trip) + "?checkpoint=nope",
                         headers=A)
    assert _same(missing) == _same(unknown)
