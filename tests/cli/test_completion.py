"""``eventlog completion``: scripts made from the parser, that the shells accept."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from eventlog.cli import EXIT_OK
from tests.cli.test_errors import run_bare


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
    assert "complete -o default -F _eventlog eventlog" in ran.out


def test_fish_lists_commands_with_their_summaries_and_options(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """fish: one line per command (with its summary) and per option."""
    ran = run_bare(capsys, "completion", "fish")
    assert "-n __fish_use_subcommand -a report -d 'write the incident report" in ran.out
    assert "-n '__fish_seen_subcommand_from log' -l full" in ran.out
