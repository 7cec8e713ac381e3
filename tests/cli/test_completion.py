"""``eventlog completion``: scripts made from the parser, that the shells accept."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from eventlog import open_log
from eventlog.checkpoints import Payload
from eventlog.cli import EXIT_OK, main
from eventlog.cli.completion import script
from tests.cli.helpers import Story, url_args
from tests.cli.test_errors import run_bare
from tests.conftest import BackendTarget

EVENTLOG = Path(sys.executable).with_name("eventlog")


def complete_in_bash(script: str, *words: str) -> list[str]:
    """What bash offers after ``eventlog WORDS`` (the last word being typed)."""
    line = " ".join(["eventlog", *words])
    program = (f"{script}\nCOMP_WORDS=(eventlog {' '.join(words)}); "
               f"COMP_CWORD={len(words)}; COMP_LINE='{line}'; _eventlog; "
               'printf "%s\\n" "${COMPREPLY[@]}"')
    result = subprocess.run(["bash", "-c", program], capture_output=True, text=True,
                            check=True)
    return result.stdout.split()


@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash")
def test_bash_completes_commands_and_their_options(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`eventlog tim<TAB>` → timeline; `eventlog report --as<TAB>` → --as-of."""
    ran = run_bare(capsys, "completion", "bash")
    assert EXIT_OK == ran.status
    assert ["timeline"] == complete_in_bash(ran.out, "tim")
    assert ["--as-of"] == complete_in_bash(ran.out, "report", "--as")
    assert "--full" in complete_in_bash(ran.out, "log", "--")


def test_zsh_loads_the_bash_script_through_bashcompinit(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """zsh gets the same function behind bashcompinit."""
    ran = run_bare(capsys, "completion", "zsh")
    assert ran.out.startswith("autoload -U +X bashcompinit && bashcompinit\n")
    assert "complete -F _eventlog eventlog" in ran.out


def test_fish_lists_commands_with_their_summaries_and_options(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """fish: one line per command (with its summary) and per option."""
    ran = run_bare(capsys, "completion", "fish")
    assert "-n __fish_use_subcommand -a report -d 'write the incident report" in ran.out
    assert "-n '__fish_seen_subcommand_from log' -l full" in ran.out


def bash_script() -> str:
    """The bash script `eventlog completion bash` prints."""
    from eventlog.cli.app import build_parser
    from eventlog.cli.completion import commands_of

    return script("bash", commands_of(build_parser()))


def complete_line(line: str, cwd: Path | None = None) -> list[str]:
    """What bash offers at the end of ``line`` (typed with the venv's eventlog, as a
    shell would pass it: COMP_LINE and COMP_POINT, the words split at blanks)."""
    program = (f"{bash_script()}\nCOMP_LINE={shlex_quote(line)}; COMP_POINT=${{#COMP_LINE}}; "
               'read -ra COMP_WORDS <<< "$COMP_LINE"; [[ "$COMP_LINE" == *" " ]] && '
               'COMP_WORDS+=(""); COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 )); _eventlog; '
               'printf "%s\\n" "${COMPREPLY[@]}"')
    result = subprocess.run(["bash", "-c", program], capture_output=True, text=True,
                            check=True, cwd=cwd)
    return result.stdout.split()


def shlex_quote(text: str) -> str:
    import shlex

    return shlex.quote(text)


def typed(target: BackendTarget, *words: str) -> str:
    """A command line naming ``target``'s log, ending where completion is asked."""
    return " ".join([str(EVENTLOG), words[0], *url_args(target), *words[1:]])


def with_thread(target: BackendTarget, story: Story) -> str:
    """Put a thread checkpoint (as the LangGraph adapter does) in the story's tenant."""
    async def put() -> None:
        async with open_log(target.url, **target.options()) as log:
            await log.checkpoints.threads.put(
                story.tenant, "graph-thread", "c-1", state=Payload("json", b"{}"))

    asyncio.run(put())
    return "graph-thread"


needs_bash = pytest.mark.skipif(shutil.which("bash") is None, reason="no bash")
on_sql = pytest.mark.parametrize("target", ["sqlite", "postgresql"], indirect=True)


@needs_bash
@on_sql
def test_a_tenant_is_completed_from_the_log(target: BackendTarget, own_story: Story) -> None:
    """`eventlog timeline --url URL <TAB>` offers the log's tenants."""
    assert sorted([own_story.tenant, own_story.other_tenant]) == complete_line(
        typed(target, "timeline", ""))


@needs_bash
@on_sql
def test_sessions_and_threads_of_the_tenant_are_completed(
    target: BackendTarget, own_story: Story
) -> None:
    """`eventlog timeline --url URL TENANT <TAB>` offers its sessions and its threads."""
    thread = with_thread(target, own_story)
    assert sorted([own_story.session, thread]) == complete_line(
        typed(target, "timeline", own_story.tenant, ""))


@needs_bash
@on_sql
def test_a_batch_is_completed_for_inspect(target: BackendTarget, own_story: Story) -> None:
    """`eventlog inspect --url URL TENANT <TAB>` offers the tenant's interrupt batches."""
    assert [own_story.batch_id] == complete_line(
        typed(target, "inspect", own_story.tenant, ""))


@needs_bash
@on_sql
def test_tenant_and_session_options_are_completed(
    target: BackendTarget, own_story: Story
) -> None:
    """`log --tenant <TAB>` offers tenants; `--tenant T --session <TAB>` its sessions."""
    assert (sorted([own_story.tenant, own_story.other_tenant]), [own_story.session]) == (
        complete_line(typed(target, "log", "--tenant", "")),
        complete_line(typed(target, "log", "--tenant", own_story.other_tenant, "--session",
                            "")))


@needs_bash
def test_no_file_names_where_a_tenant_goes(tmp_path: Path) -> None:
    """Without a log, `eventlog timeline <TAB>` offers nothing, never the files there."""
    (tmp_path / "notes.txt").write_text("not a tenant")
    assert [] == complete_line(f"{EVENTLOG} timeline ", cwd=tmp_path)


@needs_bash
def test_file_names_where_a_file_goes(tmp_path: Path) -> None:
    """`eventlog import <TAB>` offers the files there."""
    (tmp_path / "acme.jsonl").write_text("")
    assert ["acme.jsonl"] == complete_line(f"{EVENTLOG} import ", cwd=tmp_path)


@on_sql
def test_the_hidden_command_lists_tenants(
    target: BackendTarget, own_story: Story, capsys: pytest.CaptureFixture[str]
) -> None:
    """`eventlog __complete tenants` prints the log's tenants, one a line, sorted."""
    capsys.readouterr()
    assert EXIT_OK == main(["__complete", "tenants", *url_args(target)])
    assert sorted([own_story.tenant, own_story.other_tenant]) == (
        capsys.readouterr().out.splitlines())


def test_fish_completes_tenants_from_the_log(capsys: pytest.CaptureFixture[str]) -> None:
    """fish: --tenant's values and a first TENANT come from `eventlog __complete`."""
    ran = run_bare(capsys, "completion", "fish")
    assert ("-n '__fish_seen_subcommand_from log' -l tenant -x -a '(__eventlog_tenants)'"
            in ran.out)
    assert "-n '__fish_seen_subcommand_from timeline' -a '(__eventlog_tenants)'" in ran.out
