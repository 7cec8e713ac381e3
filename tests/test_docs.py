"""The documentation site builds as it is: `mkdocs build --strict` (mkdocs.yml), which fails
on a link to a page or an anchor that is not there and on a page left out of the nav; and
the README's own links (the README lies outside the site) reach files of the checkout.

The strict build takes about a second, so it runs in the default `pytest`; `.ci/run` also
runs it as a stage of its own (`docs`), so a broken link is named as such in CI."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tests.guide import DOCS, README, ROOT, guide_pages


def test_the_site_builds_strict(tmp_path: Path) -> None:
    """No warning: every link and anchor resolves, every page is in the nav."""
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert (0, []) == (built.returncode, [
        line for line in built.stderr.splitlines() if "WARNING" in line]), built.stderr[-3000:]


def test_the_readme_links_reach_files() -> None:
    """Every relative link of the README names a file of the checkout (GitHub shows them)."""
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", README.read_text())
    assert [] == [link for link in links
                  if "://" not in link and not (ROOT / link).is_file()]


def test_every_page_is_the_guide_or_a_decision() -> None:
    """Each Markdown file under docs/ is a guide page of the nav or a decisions page: a page
    nobody links would be left out of what the tests check (its examples, its tables)."""
    pages = {path.relative_to(DOCS).as_posix() for path in DOCS.rglob("*.md")}
    guide = {path.relative_to(DOCS).as_posix() for path in guide_pages()}
    assert set() == {page for page in pages - guide if not page.startswith("decisions/")}
