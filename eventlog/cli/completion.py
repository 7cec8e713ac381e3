"""``eventlog completion bash|zsh|fish``: a shell completion script, made from the parser.

The script lists the commands and each command's options as the parser has them, so it
never lags behind a new option. Where a tenant, a session (or thread) or an interrupt
batch is typed — a positional ``TENANT``/``SESSION``/``BATCH``, or the value of
``--tenant``/``--session`` — it asks the log, through the hidden command
``eventlog __complete KIND [TENANT]`` run with the ``--url``/``--schema`` typed so far;
it completes file names only where a file is expected.
"""

from __future__ import annotations

import argparse
import shlex
from dataclasses import dataclass
from typing import Any

from eventlog.cli.context import Context
from eventlog.cli.errors import EXIT_OK
from eventlog.cli.parsers.completion import HIDDEN
from eventlog.log import EventLog
from projections.checkpoints import SESSIONS
from projections.interrupts import BATCHES
from projections.query import ViewQuery
from projections.threads import THREAD_CHECKPOINTS
from projections.views import STREAM_HEADS

MAX_CANDIDATES = 200
"""At most this many names of one kind are offered (each is one index seek)."""
_FROM_LOG = {"tenant": "tenants", "session": "sessions", "batch": "batches"}


@dataclass(frozen=True)
class Shape:
    """What the scripts need to know of one command."""

    summary: str
    options: list[str]
    valued: list[str]
    positionals: list[str]


async def run(context: Context) -> int:
    """Print the script for the shell asked for, from the command's own parser."""
    context.out.file.write(script(context.args.shell, commands_of(context.parser)))
    return EXIT_OK


async def run_candidates(context: Context) -> int:
    """Print the names of one kind, one a line (nothing when there are none)."""
    args = context.args
    async with context.open() as log:
        names = await candidates(log, args.kind, args.tenant)
    context.out.file.write("".join(f"{name}\n" for name in names))
    return EXIT_OK


async def candidates(log: EventLog, kind: str, tenant: str | None) -> list[str]:
    """The tenants of the log, or a tenant's sessions and threads, or its batches."""
    if kind == "tenants":
        return await _distinct(log, STREAM_HEADS, {}, "tenant_id")
    if tenant is None:
        return []
    where = {"tenant_id": tenant}
    if kind == "batches":
        return await _distinct(log, BATCHES, where, "batch_id")
    sessions = await _distinct(log, SESSIONS, where, "session_id")
    threads = await _distinct(log, THREAD_CHECKPOINTS, where, "thread_id")
    return sorted(set(sessions) | set(threads))[:MAX_CANDIDATES]


async def _distinct(
    log: EventLog, table: str, where: dict[str, Any], column: str
) -> list[str]:
    """The distinct values of ``column``, sorted: one index seek past the last one each,
    so a tenant with a million rows costs no more than one with ten."""
    found: list[str] = []
    after: tuple[Any, ...] | None = None
    while len(found) < MAX_CANDIDATES:
        rows = await log.query(ViewQuery(table, where, order_by=(column,), after=after,
                                         limit=1, columns=(column,)))
        if not rows:
            break
        found.append(str(rows[0][column]))
        after = (rows[0][column],)
    return found


def commands_of(parser: argparse.ArgumentParser) -> dict[str, Shape]:
    """Each listed command's summary, long options, options taking a value, positionals."""
    found: dict[str, Shape] = {}
    for action in parser._actions:
        if not isinstance(action, argparse._SubParsersAction):
            continue
        summaries = {choice.dest: choice.help or "" for choice in action._choices_actions}
        for name, sub in action.choices.items():
            if name == HIDDEN:
                continue
            actions = sub._actions
            found[name] = Shape(
                summaries.get(name, ""),
                sorted({o for a in actions for o in a.option_strings if o.startswith("--")}),
                sorted({o for a in actions if a.nargs != 0 for o in a.option_strings}),
                [a.dest for a in actions if not a.option_strings],
            )
    return found


def script(shell: str, commands: dict[str, Shape]) -> str:
    """The completion script for ``shell``."""
    if shell == "fish":
        return _fish(commands)
    bash = _bash(commands)
    if shell == "zsh":
        return "autoload -U +X bashcompinit && bashcompinit\n" + bash
    return bash


def _bash(commands: dict[str, Shape]) -> str:
    cases = "\n".join(
        f"    {name}) opts={shlex.quote(' '.join(shape.options))}"
        f" valued={shlex.quote(' '.join(shape.valued))}"
        f" pos={shlex.quote(' '.join(_FROM_LOG.get(p, 'files') for p in shape.positionals))}"
        " ;;"
        for name, shape in commands.items())
    names = " ".join(commands)
    return f"""# eventlog completion for bash (eval "$(eventlog completion bash)")
_eventlog() {{
  # The words are re-read from the line: bash's own split breaks a URL at its colons.
  local upto="${{COMP_LINE:0:${{COMP_POINT:-${{#COMP_LINE}}}}}}" line=() i
  read -ra line <<< "$upto"
  [[ "$upto" == *[[:space:]] ]] && line+=("")
  local last=$(( ${{#line[@]}} - 1 ))
  local cur="${{line[last]}}" prev="${{line[last-1]}}" word="${{COMP_WORDS[COMP_CWORD]}}"
  if [ "$last" -eq 1 ]; then
    COMPREPLY=($(compgen -W "{names} --help --version" -- "$word"))
    return
  fi
  local opts="" valued="" pos="" tenant="" connection=() typed=()
  case "${{line[1]}}" in
{cases}
  esac
  for ((i=2; i<last; i++)); do  # the positionals typed so far, --tenant, --url, --schema
    if [[ " $valued " == *" ${{line[i]}} "* ]]; then
      case "${{line[i]}}" in
        --tenant) tenant="${{line[i+1]}}" ;;
        --url|--schema) connection+=("${{line[i]}}" "${{line[i+1]}}") ;;
      esac
      i=$((i+1))
    elif [[ "${{line[i]}}" != -* ]]; then
      typed+=("${{line[i]}}")
    fi
  done
  local kind=files
  case "$prev" in
    --tenant) kind=tenants ;;
    --session) kind=sessions ;;
    *) if [[ " $valued " == *" $prev "* ]]; then kind=files
       elif [[ "$cur" == -* ]]; then kind=options
       else
         local kinds=($pos)
         kind="${{kinds[${{#typed[@]}}]:-files}}"
         [ "${{#typed[@]}}" -gt 0 ] && tenant="${{typed[0]}}"
       fi ;;
  esac
  local names=""
  case "$kind" in
    options) COMPREPLY=($(compgen -W "$opts" -- "$word")); return ;;
    files) compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -f -- "$word")); return ;;
    tenants) names="$("${{line[0]}}" {HIDDEN} tenants "${{connection[@]}}" 2>/dev/null)" ;;
    *) [ -n "$tenant" ] && names="$("${{line[0]}}" {HIDDEN} "$kind" "$tenant" \
         "${{connection[@]}}" 2>/dev/null)" ;;
  esac
  COMPREPLY=($(compgen -W "$names" -- "$cur"))
}}
complete -F _eventlog eventlog
"""


def _fish(commands: dict[str, Shape]) -> str:
    lines = ["# eventlog completion for fish", "complete -c eventlog -f",
             f"function __eventlog_tenants; eventlog {HIDDEN} tenants 2>/dev/null; end"]
    for name, shape in commands.items():
        lines.append(f"complete -c eventlog -n __fish_use_subcommand -a {shlex.quote(name)} "
                     f"-d {shlex.quote(shape.summary)}")
        seen = f"'__fish_seen_subcommand_from {name}'"
        for option in shape.options:
            values = " -x -a '(__eventlog_tenants)'" if option == "--tenant" else ""
            lines.append(f"complete -c eventlog -n {seen} -l {shlex.quote(option[2:])}{values}")
        if shape.positionals[:1] == ["tenant"]:
            lines.append(f"complete -c eventlog -n {seen} -a '(__eventlog_tenants)'")
        elif shape.positionals:
            lines.append(f"complete -c eventlog -n {seen} -F")
    return "\n".join(lines) + "\n"
