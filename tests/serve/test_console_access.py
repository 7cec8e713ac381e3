"""Who may see what: the ``--tokens`` file is read strictly, and ``eventlog serve``
without it prints one random token that the served console accepts."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from eventlog.cli import EXIT_USAGE, main
from eventlog.cli.errors import CommandError
from eventlog.cli.serve.access import Access, Grant, read_tokens
from tests.serve.test_console_browser import EVENTLOG, ROOT, _free_port

GOOD = 'token = "0123456789abcdefXYZ"\ntenants = ["acme"]\n'


def test_a_tokens_file_maps_names_to_tokens_and_tenants(tmp_path: Path) -> None:
    file = tmp_path / "tokens.toml"
    file.write_text(f"[tokens.alice]\n{GOOD}[tokens.bob]\n"
                    'token = "another-token-of-bob"\ntenants = ["globex", "initech"]\n')
    access = read_tokens(str(file))
    alice = access.by_token("0123456789abcdefXYZ")
    bob = access.by_token("another-token-of-bob")
    assert alice is not None
    assert bob is not None
    assert ("alice", True, False) == (alice.name, alice.sees("acme"), alice.sees("globex"))
    assert (True, False) == (bob.sees("initech"), bob.sees("acme"))
    assert access.by_token("0123456789abcdefXY") is None


@pytest.mark.parametrize(("text", "said"), [
    ("[tokens.a]\ntoken = 1\ntenants = ['x']\n", "needs token"),
    ("[tokens.a]\ntoken = 'short'\ntenants = ['x']\n", "at least 16"),
    ("[tokens.a]\ntoken = '0123456789abcdefXYZ'\n", "must have tenants"),
    ("[tokens.a]\ntoken = '0123456789abcdefXYZ'\ntenants = []\n", "must have tenants"),
    ("[tokens.a]\n" + GOOD + "[tokens.b]\n" + GOOD, "has the token of another name"),
    ("[tokens.a]\n" + GOOD + "admin = true\n", "unknown keys: admin"),
    ("[other]\nx = 1\n", "no [tokens.NAME] tables"),
    ("not toml [", "is not TOML"),
], ids=["number", "short", "no-tenants", "empty-tenants", "repeated", "unknown", "none",
        "syntax"])
def test_a_bad_tokens_file_is_one_line_naming_what_is_wrong(
        tmp_path: Path, text: str, said: str) -> None:
    file = tmp_path / "tokens.toml"
    file.write_text(text)
    with pytest.raises(CommandError) as refused:
        read_tokens(str(file))
    assert said in str(refused.value)
    assert "\n" not in str(refused.value)


def test_serve_refuses_a_bad_tokens_file_before_it_listens(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert EXIT_USAGE == main(["serve", "--tokens", str(tmp_path / "missing.toml"),
                               "--url", f"sqlite:///{tmp_path / 'log.db'}"])
    assert "cannot read --tokens" in capsys.readouterr().err


def test_a_random_token_is_long_and_sees_every_tenant() -> None:
    access = Access.random()
    grant = access.grants[0]
    assert (True, True) == (len(grant.token) >= 40, grant.sees("any-tenant"))
    session = access.open_session(grant)
    assert (grant, None) == (access.by_session(session), access.by_session(grant.token))


def test_serve_prints_a_token_the_console_accepts(tmp_path: Path) -> None:
    """``eventlog serve`` on a log (loopback, a port of its own) prints the login URL
    and the token; the token opens the list, nothing else does."""
    url = f"sqlite:///{tmp_path / 'log.db'}"
    assert 0 == main(["migrate", "--url", url])
    port = _free_port()
    process = subprocess.Popen(
        [sys.executable, "-c", EVENTLOG, "serve", "--port", str(port), "--url", url],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stderr is not None
        lines = [process.stderr.readline() for _ in range(3)]
        token = lines[2].split("Bearer ", 1)[1].rstrip(")\n")
        assert f"http://127.0.0.1:{port}/login?token={token}" in lines[1]
        base = f"http://127.0.0.1:{port}/t/acme"
        deadline = time.monotonic() + 30
        while True:
            request = urllib.request.Request(base, headers={
                "authorization": f"Bearer {token}", "accept": "application/json"})
            try:
                with urllib.request.urlopen(request, timeout=5) as answer:
                    assert [] == json.loads(answer.read())["items"]
                break
            except urllib.error.URLError:
                assert time.monotonic() < deadline
                time.sleep(0.2)
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(base, timeout=5)
        assert 401 == refused.value.code
        rebound = urllib.request.Request(base, headers={
            "authorization": f"Bearer {token}", "host": "attacker.example"})
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(rebound, timeout=5)
        assert 400 == refused.value.code  # another name pointed here: not answered
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_an_interrupted_console_closes_its_live_feeds(tmp_path: Path) -> None:
    """Ctrl-C with a live feed open: the console stops within seconds (a feed never ends
    by itself; uvicorn would wait for it forever) with the interrupted status."""
    import asyncio
    import signal
    import uuid

    from eventlog import CheckpointRecord, open_log

    url = f"sqlite:///{tmp_path / 'log.db'}"

    async def write() -> None:
        async with open_log(url) as log:
            await log.checkpoints.create(CheckpointRecord(
                tenant_id="acme", session_id="s1", run_id=uuid.uuid4(), state={"n": 1}))

    asyncio.run(write())
    port = _free_port()
    process = subprocess.Popen(
        [sys.executable, "-c", EVENTLOG, "serve", "--port", str(port), "--url", url],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stderr is not None
        token = [process.stderr.readline() for _ in range(3)][2].split("Bearer ", 1)[1]
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}/t/acme/live/s1",
            headers={"authorization": f"Bearer {token.rstrip(')' + chr(10))}"})
        deadline = time.monotonic() + 30
        while True:
            try:
                feed = urllib.request.urlopen(request, timeout=10)
                break
            except urllib.error.URLError:
                assert time.monotonic() < deadline
                time.sleep(0.2)
        assert b"retry: 2000\n" == feed.readline()
        started = time.monotonic()
        process.send_signal(signal.SIGINT)
        status = process.wait(timeout=20)
        assert (130, True) == (status, time.monotonic() - started < 15)
        feed.close()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_a_browser_session_ends_after_its_lifetime(monkeypatch: pytest.MonkeyPatch) -> None:
    """A session answers until `SESSION_TTL_S` after its login, then never again, and
    the server no longer holds it; past `MAX_SESSIONS` the oldest is logged out."""
    from eventlog.cli.serve import access as module

    now = [1000.0]
    monkeypatch.setattr(module.time, "monotonic", lambda: now[0])
    access = Access([Grant("a", "t" * 20, None)])
    grant = access.grants[0]
    first = access.open_session(grant)
    now[0] += module.SESSION_TTL_S - 1
    second = access.open_session(grant)
    assert (grant, grant) == (access.by_session(first), access.by_session(second))
    now[0] += 1
    assert (None, grant) == (access.by_session(first), access.by_session(second))
    assert [second] == list(access._sessions)
    monkeypatch.setattr(module, "MAX_SESSIONS", 2)
    third, fourth = access.open_session(grant), access.open_session(grant)
    assert (None, grant, grant) == (access.by_session(second), access.by_session(third),
                                    access.by_session(fourth))
