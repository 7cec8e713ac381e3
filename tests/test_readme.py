"""The guide's Python examples (the README's and the documentation pages', tests/guide.py)
run as written: one after another in one directory, twice, as a reader trying them would;
and what they import comes with what the guide installs."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.guide import README, guide_pages, guide_text, python_examples, sections

EXAMPLES = python_examples()


def test_the_readme_has_examples() -> None:
    """The guide shows the log, the checkpoint store and the interrupt store in code (18
    examples when the guide moved from the README into docs/: none may go untested), and
    the README, the front door, shows one per use, each a copy of its page's (the pages
    are the guide: an example only the README had would be left out of the site)."""
    front_door = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.DOTALL)
    pages = "\n".join(path.read_text() for path in guide_pages())
    assert (True, True, []) == (18 <= len(EXAMPLES), 2 <= len(front_door), [
        example[:60] for example in front_door if f"```python\n{example}```" not in pages])


@pytest.fixture(scope="module")
def tried(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """Every example run in the guide's order in one directory, then all again, as a reader
    trying them would: the directory and what failed."""
    directory = tmp_path_factory.mktemp("readme")
    failures = []
    for round_ in (1, 2):
        for number, example in enumerate(EXAMPLES):
            script = directory / f"example_{number}.py"
            script.write_text(example)
            result = subprocess.run([sys.executable, script.name], cwd=directory,
                                    capture_output=True, text=True, timeout=120)
            if result.returncode != 0:
                failures.append(f"round {round_}, example {number}: {result.stderr[-2000:]}")
    return directory, failures


@pytest.mark.examples
def test_readme_examples_run_one_after_another_twice(tried: tuple[Path, list[str]]) -> None:
    """Every example runs to completion (its own asserts included): none trips over what
    another, or itself, left in the directory."""
    assert [] == tried[1]


@pytest.mark.examples
def test_what_the_examples_write_is_ignored_by_git(tried: tuple[Path, list[str]]) -> None:
    """The files the examples leave where they ran never show in `git status`."""
    written = sorted(path.name for path in tried[0].iterdir()
                     if not path.name.startswith("example_"))
    ignored = subprocess.run(["git", "check-ignore", "--no-index", *written],
                             cwd=README.parent, capture_output=True, text=True,
                             check=False).stdout.split()
    assert written == sorted(ignored)


def _distributions(requirements: list[str]) -> set[str]:
    """The distributions these requirements install, with everything they require."""
    found: set[str] = set()
    pending = [Requirement(text) for text in requirements]
    while pending:
        requirement = pending.pop()
        name = canonicalize_name(requirement.name)
        if name in found:
            continue
        found.add(name)
        for text in importlib.metadata.requires(requirement.name) or []:
            nested = Requirement(text)
            if nested.marker is None or nested.marker.evaluate({"extra": ""}):
                pending.append(nested)
    return found


def _owner(module: str) -> str:
    """The distribution that installs a dotted module (namespace packages such as
    ``langgraph`` are shared by several distributions: the module's own files decide)."""
    candidates = importlib.metadata.packages_distributions()[module.split(".")[0]]
    path = module.replace(".", "/")
    for candidate in candidates:
        files = importlib.metadata.files(candidate) or []
        if any(str(file).startswith((path + "/", path + ".py")) for file in files):
            return canonicalize_name(candidate)
    return canonicalize_name(candidates[0])


def _imported_distributions(example: str) -> set[str]:
    """The third-party distributions an example's imports come from."""
    modules = set()
    for node in ast.walk(ast.parse(example)):
        if isinstance(node, ast.Import):
            modules.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            modules.add(node.module)
    return {_owner(module) for module in modules
            if module.split(".")[0] not in sys.stdlib_module_names | {"eventlog", "projections"}}


def test_each_example_imports_only_what_its_install_line_brings() -> None:
    """A section's `pip install "checkpoint-eventlog[extra]"` installs every distribution
    its examples import (the LangGraph examples import `langgraph` itself)."""
    project = tomllib.loads((README.parent / "pyproject.toml").read_text())["project"]
    missing = []
    for section in sections():
        extras = re.findall(r"checkpoint-eventlog\[(\w+)\]", section)
        installed = _distributions(project["dependencies"] + [
            text for extra in extras for text in project["optional-dependencies"][extra]])
        for example in re.findall(r"```python\n(.*?)```", section, flags=re.DOTALL):
            missing += sorted(_imported_distributions(example) - installed)
    assert [] == missing


@pytest.mark.examples
def test_readme_examples_type_check(tmp_path: Path) -> None:
    """Every guide example passes ``mypy --strict``, as tests/typing does (a reader
    copying one into a typed project gets no errors)."""
    from mypy import api

    files = []
    for number, example in enumerate(EXAMPLES):
        path = tmp_path / f"readme_example_{number}.py"
        path.write_text(example)
        files.append(str(path))
    # Incremental, in the project's own cache: the packages' modules (and the frameworks')
    # are already there from `mypy` (CI runs it first), so only the examples are checked
    # anew (48 s cold, a few seconds warm). The options are the project's (--strict, 3.11),
    # so the cached results are the ones these files need.
    stdout, stderr, status = api.run(
        ["--strict", "--python-version", "3.11", "--cache-dir", str(README.parent / ".mypy_cache"),
         *files])
    assert 0 == status, stdout + stderr


def test_every_published_install_has_its_checkout_form_beside_it() -> None:
    """The package is not published yet: each ``pip install "checkpoint-eventlog[X]"`` is
    given beside ``pip install -e ".[X]"`` (installing from the checkout), for an extra
    that pyproject.toml declares."""
    text = guide_text()
    extras = tomllib.loads((README.parent / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    published = re.findall(r'pip install "checkpoint-eventlog\[(\w+)\]"', text)
    checkout = re.findall(r'pip install -e "\.\[(\w+)\]"', text)
    assert ([], True) == (
        [extra for extra in published if extra not in checkout or extra not in extras],
        {"langgraph", "maf", "adopt", "testing"} <= set(published))


def test_the_opening_is_the_set_up_alone() -> None:
    """What a newcomer reads first (before the first section) gives the two commands and
    says what they do; the campaigns and CI are told on the Development page."""
    opening = README.read_text().partition("\n## ")[0]
    commands = re.findall(r"```sh\n(.*?)```", opening, flags=re.DOTALL)
    assert (1, 2, []) == (len(commands), len(commands[0].splitlines()), [
        word for word in ("campaign", "CI=true", ".ci/run", "pytest -m", "Hypothesis", "soak")
        if word in opening])
    development = (README.parent / "docs" / "development.md").read_text()
    assert (True, True) == ("deselected from the default `pytest` run" in development,
                            "](docs/development.md)" in opening)


_NO_TEST_FRAMEWORK = """
import importlib, pkgutil, sys

class NoTestFramework:
    \"\"\"A plain install: pytest, its plugins and hypothesis are not there.\"\"\"

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("pytest", "_pytest", "pytest_asyncio", "hypothesis"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, NoTestFramework())
"""


def test_every_module_a_user_imports_loads_without_a_test_framework(tmp_path: Path) -> None:
    """Every shipped module but the test support (`eventlog.testing`, the [testing]
    extra) imports on a plain install: none pulls in pytest or hypothesis."""
    done = subprocess.run([sys.executable, "-c", _NO_TEST_FRAMEWORK + """
import eventlog, projections
failed = []
for package in (eventlog, projections):
    for module in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        if module.name.startswith("eventlog.testing"):
            continue
        try:
            importlib.import_module(module.name)
        except ImportError as error:
            failed.append(f"{module.name}: {error}")
print("\\n".join(failed))
"""], cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False)
    assert (0, "") == (done.returncode, done.stdout.strip()), done.stderr[-2000:]


def test_the_subscriptions_example_runs_on_a_plain_install(tmp_path: Path) -> None:
    """The subscriptions example declares its own event type: it runs where no test
    framework is installed (it imported ``eventlog.testing.events``, and with it pytest)."""
    [example] = [example for example in EXAMPLES if 'log.subscribe("billing"' in example]
    done = subprocess.run([sys.executable, "-c", _NO_TEST_FRAMEWORK + example],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          check=False)
    assert 0 == done.returncode, done.stderr[-2000:]
    assert "refused:" in done.stdout
