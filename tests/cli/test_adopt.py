"""``eventlog adopt langgraph|maf`` and ``eventlog export langgraph|maf``: the command
around the adoption (the round trips themselves are tests/adapters' adoption tests)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from agent_framework import FileCheckpointStorage

from eventlog.cli import EXIT_OK, EXIT_USAGE, main
from tests.adapters.langgraph_stores import build, history, sqlite_saver, thread
from tests.adapters.test_maf import build as build_workflow

TENANT = "acme"


def _langgraph_source(path: Path, thread_id: str = "t-1") -> None:
    async def run() -> None:
        async with sqlite_saver(path) as saver:
            await build(saver).ainvoke({"items": []}, thread(thread_id))

    asyncio.run(run())


@pytest.mark.adopt
def test_adopt_langgraph_then_timeline_and_verify_tell_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A SqliteSaver database adopted by the command: the summary counts it, a re-run
    adopts nothing, the timeline says where the checkpoints came from, verify passes."""
    source = tmp_path / "langgraph.db"
    _langgraph_source(source)
    url = f"sqlite:///{tmp_path / 'log.db'}"
    assert EXIT_OK == main(["adopt", "langgraph", str(source), "--tenant", TENANT,
                            "--url", url, "--json"])
    first = json.loads(capsys.readouterr().out)
    assert ["t-1"] == first["threads"]
    assert 0 < first["checkpoints"]
    assert EXIT_OK == main(["adopt", "langgraph", f"sqlite:///{source}", "--tenant", TENANT,
                            "--url", url])
    out = capsys.readouterr().out
    assert "Adopted from" in out
    assert f"{first['checkpoints']} checkpoints" in out  # already there
    assert EXIT_OK == main(["timeline", "--url", url, TENANT, "t-1"])
    assert "0 deletions or copies, 1 adoption" in capsys.readouterr().out
    assert EXIT_OK == main(["timeline", "--url", url, TENANT, "t-1", "--json"])
    story = capsys.readouterr().out
    assert f"adopted from LangGraph sqlite:///{source}: " in story
    assert EXIT_OK == main(["verify", "--url", url])


def test_a_dry_run_writes_nothing_not_even_a_new_log(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "langgraph.db"
    _langgraph_source(source)
    log = tmp_path / "log.db"
    assert EXIT_OK == main(["adopt", "langgraph", str(source), "--tenant", TENANT,
                            "--url", f"sqlite:///{log}", "--dry-run"])
    assert "Would adopt from" in capsys.readouterr().out
    assert not log.exists()


def test_a_source_that_is_not_a_savers_store_is_exit_2_and_nothing_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "log.db"
    (tmp_path / "other.db").write_bytes(b"")
    assert EXIT_USAGE == main(["adopt", "langgraph", str(tmp_path / "other.db"), "--tenant",
                               TENANT, "--url", f"sqlite:///{log}", "--json"])
    error = json.loads(capsys.readouterr().err)
    assert "no LangGraph SqliteSaver checkpoints and writes table" in error["error"]
    assert EXIT_USAGE == main(["adopt", "maf", str(tmp_path), "--tenant", TENANT,
                               "--url", f"sqlite:///{log}"])
    assert "not an Agent Framework file checkpoint store" in capsys.readouterr().err
    assert EXIT_USAGE == main(["adopt", "langgraph", "redis://x", "--tenant", TENANT,
                               "--url", f"sqlite:///{log}"])
    assert "no LangGraph saver this command opens" in capsys.readouterr().err
    assert EXIT_USAGE == main(["adopt", "langgraph", str(tmp_path / "other.db"),
                               "--workflow", "w", "--tenant", TENANT, "--url",
                               f"sqlite:///{log}"])
    assert "--workflow is not for langgraph" in capsys.readouterr().err
    assert not log.exists()


@pytest.mark.adopt
def test_export_langgraph_writes_a_savers_database(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Adopted in, exported out to a new SqliteSaver file: the same history."""
    source = tmp_path / "langgraph.db"
    _langgraph_source(source)
    url = f"sqlite:///{tmp_path / 'log.db'}"
    assert EXIT_OK == main(["adopt", "langgraph", str(source), "--tenant", TENANT,
                            "--url", url])
    out = tmp_path / "out.db"
    assert EXIT_OK == main(["export", "langgraph", str(out), "--tenant", TENANT, "--url", url,
                            "--thread", "t-1"])
    assert "Exported to" in capsys.readouterr().out

    async def compare() -> None:
        async with sqlite_saver(source) as before, sqlite_saver(out) as after:
            assert await history(before, "t-1") == await history(after, "t-1")

    asyncio.run(compare())
    assert EXIT_USAGE == main(["export", "nope", str(out), "--tenant", TENANT, "--url", url])
    assert "export takes one FILE, or langgraph or maf" in capsys.readouterr().err
    assert EXIT_USAGE == main(["export", "x.jsonl", "--thread", "t-1", "--tenant", TENANT,
                               "--url", url])


@pytest.mark.adopt
def test_adopt_and_export_maf(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    files = tmp_path / "files"

    async def pause() -> None:
        await build_workflow(FileCheckpointStorage(files)).run("order")

    asyncio.run(pause())
    url = f"sqlite:///{tmp_path / 'log.db'}"
    assert EXIT_OK == main(["adopt", "maf", str(files), "--tenant", TENANT, "--url", url,
                            "--json"])
    assert ["payments"] == json.loads(capsys.readouterr().out)["threads"]
    assert EXIT_OK == main(["export", "maf", str(tmp_path / "out"), "--tenant", TENANT,
                            "--url", url, "--workflow", "payments"])
    assert sorted(p.name for p in files.glob("*.json")) == sorted(
        p.name for p in (tmp_path / "out").glob("*.json"))
    assert EXIT_OK == main(["verify", "--url", url])


def test_a_thread_that_changed_during_the_adoption_is_one_line_and_exit_3(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Another adoption (or a writer) moved the thread between the read and the append:
    the command says so and that a re-run continues (the race itself is
    tests/adapters/test_langgraph_adoption.py's two adoptions at once)."""
    from eventlog.adapters import langgraph_adoption
    from eventlog.errors import VersionConflict

    async def raced(*_args: object, **_kwargs: object) -> None:
        raise VersionConflict("thread:t-1", 0, 11)

    monkeypatch.setattr(langgraph_adoption, "adopt_langgraph", raced)
    source = tmp_path / "langgraph.db"
    _langgraph_source(source)
    assert 3 == main(["adopt", "langgraph", str(source), "--tenant", TENANT,
                      "--url", f"sqlite:///{tmp_path / 'log.db'}"])
    error = capsys.readouterr().err
    assert "a thread changed while it was being adopted" in error
    assert "run the same command again to continue" in error
