"""What every command prints through: a console that shows stored text without acting on
it, and counted nouns.

Light on purpose (rich alone): every command builds its consoles, the auditor's
``check-proof`` and ``witness`` too, which import nothing that opens a log. Rendering
library values is `eventlog.cli.render`'s.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from typing import Any

from rich.console import Console, ConsoleOptions, RenderableType
from rich.segment import Segment

_UNSAFE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
"""What a terminal would act on rather than show: C0 controls but tab and newline (ESC
among them), DEL, C1 controls (0x9B is a one-byte CSI), and the Unicode bidi overrides
and isolates, which reorder what is shown around them."""


def safe(text: str) -> str:
    """``text`` with every character a terminal would act on (see `_UNSAFE`) written as a
    visible escape (``\\x1b``, ``\\u202e``), so stored text cannot set the window
    title, clear the screen, move the cursor or reorder a line. Tab and newline stay."""
    if _UNSAFE.search(text) is None:
        return text
    return _UNSAFE.sub(_escape, text)


def _escape(found: re.Match[str]) -> str:
    code = ord(found.group())
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


class SafeConsole(Console):
    """A rich console that writes every piece of text through `safe`: whatever a
    command prints (tables, lines, values read from the log), no stored control
    character reaches the terminal. Rich's own control output (cursor moves of a
    progress display) passes as it is."""

    def render(
        self, renderable: RenderableType, options: ConsoleOptions | None = None
    ) -> Iterator[Segment]:
        """The segments of ``renderable``, each text one made `safe`."""
        for segment in super().render(renderable, options):
            if segment.control is None and _UNSAFE.search(segment.text) is not None:
                yield Segment(safe(segment.text), segment.style)
            else:
                yield segment


def plural(count: int, noun: str, nouns: str | None = None) -> str:
    """``1 batch``, ``2 batches``: a count with its noun."""
    return f"{count} {noun if count == 1 else nouns or noun + 's'}"


def print_plain_json(value: Any) -> None:
    """Write ``value`` (plain JSON data already: text, numbers, lists, objects) as one
    line of JSON to standard output; `Context.print_json` renders library values."""
    sys.stdout.write(json.dumps(value, ensure_ascii=False) + "\n")
    sys.stdout.flush()
