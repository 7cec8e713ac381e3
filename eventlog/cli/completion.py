"""``eventlog completion bash|zsh|fish``: a shell completion script, made from the parser.

The script lists the commands and each command's options as the parser has them, so it
never lags behind a new option; it completes file names where no option is being typed.
"""

from __future__ import annotations

import argparse
import shlex
from typing import Any

from eventlog.cli.context import Context, add_command
from eventlog.cli.errors import EXIT_OK

SHELLS = ("bash", "zsh", "fish")


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    """Add ``completion``."""
    parser = add_command(
        commands, common, "completion", "print a shell completion script", run,
        description="Print a completion script for bash, zsh or fish. Load it from your "
        "shell's start-up file, e.g. `eval \"$(eventlog completion bash)\"` in ~/.bashrc, "
        "`eval \"$(eventlog completion zsh)\"` in ~/.zshrc, or "
        "`eventlog completion fish > ~/.config/fish/completions/eventlog.fish`.",
    )
    parser.add_argument("shell", choices=SHELLS, metavar="SHELL", help="bash, zsh or fish")


async def run(context: Context) -> int:
    """Print the script for the shell asked for."""
    from eventlog.cli.app import build_parser

    context.out.file.write(script(context.args.shell, commands_of(build_parser())))
    return EXIT_OK


def commands_of(parser: argparse.ArgumentParser) -> dict[str, tuple[str, list[str]]]:
    """Each command's one-line summary and its long options, from the parser."""
    found: dict[str, tuple[str, list[str]]] = {}
    for action in parser._actions:
        if not isinstance(action, argparse._SubParsersAction):
            continue
        summaries = {choice.dest: choice.help or "" for choice in action._choices_actions}
        for name, sub in action.choices.items():
            options = sorted({option for sub_action in sub._actions
                              for option in sub_action.option_strings
                              if option.startswith("--")})
            found[name] = (summaries.get(name, ""), options)
    return found


def script(shell: str, commands: dict[str, tuple[str, list[str]]]) -> str:
    """The completion script for ``shell``."""
    if shell == "fish":
        return _fish(commands)
    bash = _bash(commands)
    if shell == "zsh":
        return "autoload -U +X bashcompinit && bashcompinit\n" + bash
    return bash


def _bash(commands: dict[str, tuple[str, list[str]]]) -> str:
    cases = "\n".join(f"    {name}) opts={shlex.quote(' '.join(options))} ;;"
                      for name, (_summary, options) in commands.items())
    names = " ".join(commands)
    return f"""# eventlog completion for bash (eval "$(eventlog completion bash)")
_eventlog() {{
  local cur="${{COMP_WORDS[COMP_CWORD]}}" opts=""
  if [ "$COMP_CWORD" -eq 1 ]; then
    COMPREPLY=($(compgen -W "{names} --help --version" -- "$cur"))
    return
  fi
  case "${{COMP_WORDS[1]}}" in
{cases}
  esac
  if [[ "$cur" == -* ]]; then
    COMPREPLY=($(compgen -W "$opts" -- "$cur"))
  else
    COMPREPLY=($(compgen -f -- "$cur"))
  fi
}}
complete -o default -F _eventlog eventlog
"""


def _fish(commands: dict[str, tuple[str, list[str]]]) -> str:
    lines = ["# eventlog completion for fish", "complete -c eventlog -f"]
    for name, (summary, options) in commands.items():
        lines.append(f"complete -c eventlog -n __fish_use_subcommand -a {shlex.quote(name)} "
                     f"-d {shlex.quote(summary)}")
        for option in options:
            lines.append(f"complete -c eventlog -n '__fish_seen_subcommand_from {name}' "
                         f"-l {shlex.quote(option[2:])}")
    return "\n".join(lines) + "\n"
