"""The console in a real browser: `eventlog serve` as a process, Debian's headless
Chromium driven by Playwright (no browser downloaded: ``executable_path``, as the
report's browser test). With a token it logs in, searches by actor, by a question
nobody answered yet and by id, opens a
thread (timeline, checkpoint tree, a difference, the approver), downloads an event's
inclusion proof that `eventlog check-proof` accepts, and sees the thread update live
after another process appends. Screenshots of the list and the thread page go to
``$EVENTLOG_SCREENSHOTS`` (default: the test's temporary directory)."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from eventlog.cli import EXIT_OK, main
from eventlog.signing import generate_key_pair
from tests.cli.helpers import url_args
from tests.cli.test_report_browser import _chromium
from tests.cli.test_report_browser import screenshots as screenshots  # the fixture
from tests.serve.fixtures import APPROVER, TOKEN_A, Logged, logged_on

ROOT = Path(__file__).resolve().parents[2]
EVENTLOG = ("import sys\nfrom eventlog.cli import main\n"
            "sys.argv = ['eventlog', *sys.argv[1:]]\nsys.exit(main())\n")
APPEND = """
import asyncio, sys
from eventlog import open_log
from eventlog.checkpoints.thread_records import Payload
import msgspec
async def main(url, schema, tenant, thread):
    options = {"schema": schema} if url.startswith("postgresql") else {}
    async with open_log(url, **options) as log:
        await log.checkpoints.threads.put(
            tenant, thread, "1ff-appended-live", state=Payload("msgpack",
            msgspec.msgpack.encode({"items": ["live"]})), metadata={"source": "loop",
            "step": 99}, step=99)
asyncio.run(main(*sys.argv[1:]))
"""


@pytest.fixture(scope="module")
def logged(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Logged]:
    yield from logged_on("sqlite", tmp_path_factory)


@pytest.fixture(scope="module")
def browser(served: str) -> Iterator[Any]:
    """Chromium, started after the log is written and served (Playwright's sync API runs
    an event loop in this thread, where the writing's asyncio.run could not)."""
    executable = _chromium()
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=executable,
                                              args=["--no-sandbox"])
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = tmp_path_factory.mktemp("keys")
    private, public = generate_key_pair()
    (where / "op.pem").write_bytes(private)
    (where / "op.pub").write_bytes(public)
    return where


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@pytest.fixture(scope="module")
def served(logged: Logged, keys: Path) -> Iterator[str]:
    """`eventlog serve` on the log, Alice's token seeing the first tenant, with its head."""
    head = keys / "head"
    assert EXIT_OK == main(["tree-head", logged.tenant, "--key", str(keys / "op.pem"),
                            "--name", "example.org/console", "-o", str(head),
                            *url_args(logged.target)])
    tokens = keys / "tokens.toml"
    tokens.write_text(f'[tokens.alice]\ntoken = "{TOKEN_A}"\ntenants = ["{logged.tenant}"]\n')
    port = _free_port()
    process = subprocess.Popen(
        [sys.executable, "-c", EVENTLOG, "serve", "--port", str(port), "--tokens", str(tokens),
         "--head", str(head), *url_args(logged.target)],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"{base}/login", timeout=2).close()
                break
            except (urllib.error.URLError, ConnectionError):
                if process.poll() is not None or time.monotonic() > deadline:
                    process.kill()
                    _out, err = process.communicate()
                    pytest.fail(f"eventlog serve did not start: {err}")
                time.sleep(0.2)
        yield base
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def test_without_a_token_the_server_answers_401(served: str, logged: Logged) -> None:
    """The real server, as a script would ask it."""
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(f"{served}/t/{logged.tenant}", timeout=5)
    assert 401 == refused.value.code


def _search(page: Any) -> None:
    """Submit the search form and wait for its results page to have loaded: read before
    that, the list can be the page half-replaced (a CI run under load read an empty one)."""
    with page.expect_navigation(timeout=30_000):
        page.click("#search button[type=submit]")
    page.wait_for_selector("#search")


def test_search_open_prove_and_follow_a_thread(
        browser: Any, served: str, logged: Logged, keys: Path, screenshots: Path,
        tmp_path: Path) -> None:
    """Log in, find the thread by its approver and by its id, open it, download a proof
    `check-proof` accepts, and watch it update when another process appends."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000}, accept_downloads=True)
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(f"{served}/")
    assert "Log in" in page.content()  # 401 in a browser: the login page
    page.fill("#token", TOKEN_A)
    page.click("button[type=submit]")
    page.click(f"text={logged.tenant}")
    page.wait_for_selector("#search")
    page.screenshot(path=str(screenshots / "console-list.png"), full_page=True)

    page.fill("input[name=actor]", APPROVER)
    _search(page)
    found = page.locator("tr.item td:nth-child(2) a").all_inner_texts()
    assert [logged.trip] == found
    page.fill("input[name=actor]", "")
    page.select_option("select[name=state]", "question")
    _search(page)
    assert [logged.waiting] == page.locator("tr.item td:nth-child(2) a").all_inner_texts()
    page.select_option("select[name=state]", "")
    page.fill("input[name=q]", logged.trip[:2])
    _search(page)
    assert [logged.trip] == page.locator("tr.item td:nth-child(2) a").all_inner_texts()

    page.click(f"tr.item a:text-is('{logged.trip}')")
    page.wait_for_selector("svg.lanes")
    assert page.locator("svg.lanes g.lane").count() >= 1
    assert page.locator("td.answerer").first.inner_text() == APPROVER
    assert page.locator("details.diff, .state-note").count() >= 1
    page.screenshot(path=str(screenshots / "console-thread.png"), full_page=True)

    page.locator("tr.ev[data-pos] td.what").first.click()
    link = page.locator("a.proof-link")
    link.wait_for()
    with page.expect_download() as downloading:
        link.click()
    proof = tmp_path / "proof.json"
    downloading.value.save_as(str(proof))
    checked = subprocess.run(  # another process, with no database named
        [sys.executable, "-c", EVENTLOG, "check-proof", str(proof), "--head",
         str(keys / "head"), "--key", str(keys / "op.pub")],
        cwd=tmp_path, capture_output=True, text=True, check=False)
    assert (EXIT_OK, "") == (checked.returncode, checked.stderr)

    page.locator("tr.ev:has(td:text-is('thread_checkpoint_put')) td.what").last.click()
    page.locator("a.checkpoint-link").click()
    page.wait_for_selector("#checkpoint")
    assert "approved: yes, ship it" in page.locator("#checkpoint pre.changes").inner_text()
    page.goto(page.url.split("?")[0])

    schema = logged.target.schema
    with page.expect_navigation(timeout=30_000):
        subprocess.run([sys.executable, "-c", APPEND, logged.target.url, schema,
                        logged.tenant, logged.trip], check=True, cwd=ROOT)
    page.wait_for_selector("svg.lanes")
    assert "1ff-appended-live" in page.content()
    assert [] == errors


def test_the_page_url_quotes_a_crafted_id(browser: Any, served: str, logged: Logged) -> None:
    """The crafted thread's page opens by its quoted id and runs none of its strings."""
    page = browser.new_page()
    page.goto(f"{served}/login?token={TOKEN_A}")
    page.goto(f"{served}/t/{logged.tenant}/s/{quote(logged.crafted, safe='')}")
    page.wait_for_selector("svg.lanes")
    assert page.evaluate("() => window.__ran === undefined")
    page.goto(f"{served}/t/{logged.tenant}")
    assert page.evaluate("() => window.__ran === undefined")
