"""The guide the tests hold to what they check: the README (the front door) and the pages
of the documentation site (docs/, in mkdocs.yml's nav order; the decisions excepted).

A test that checks what the README used to say reads `guide_text()`; the examples a reader
runs are `python_examples()`, from the README and every page."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"


def guide_pages() -> list[Path]:
    """The site's guide pages in nav order (what `mkdocs.yml` lists, the decisions left out:
    they hold no example a reader runs)."""
    nav = re.findall(r"^\s*- [^:\n]+: (\S+\.md)$", (ROOT / "mkdocs.yml").read_text(),
                     flags=re.MULTILINE)
    return [DOCS / name for name in nav if not name.startswith("decisions")]


def guide_files() -> list[Path]:
    """The README, then every guide page."""
    return [README, *guide_pages()]


def guide_text() -> str:
    """Everything the guide says, the README's front door first."""
    return "\n\n".join(path.read_text() for path in guide_files())


def sections() -> list[str]:
    """The guide's sections, each with the install line its examples rely on: the README's
    `## ` sections, and each page whole (a page is one section of the guide)."""
    found = README.read_text().split("\n## ")
    return found + [path.read_text() for path in guide_pages()]


def python_examples() -> list[str]:
    """Every ```python block of the guide, in reading order, each once: the README's
    examples are copies of the pages' (the front door shows one per use)."""
    examples: list[str] = []
    for path in guide_files():
        for example in re.findall(r"```python\n(.*?)```", path.read_text(), flags=re.DOTALL):
            if example not in examples:
                examples.append(example)
    return examples
