"""Names a package loads from their modules on first use (PEP 562).

A package writes the names it defers as imports under ``if TYPE_CHECKING:``, each
``from MODULE import NAME as NAME``: type checkers read them there, and `deferred_names`
reads the same block again from the package's source at import, as
``lazy_loader.attach_stub`` reads a stub, so no name is written twice. `attach` makes the
package's ``__getattr__``, which imports a name's module the first time the name is asked
for (``from eventlog import open_log``, ``eventlog.CheckpointStore``) and keeps the value.
"""

from __future__ import annotations

import ast
import importlib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any


def deferred_names(source: str) -> dict[str, str]:
    """Each name imported under the ``if TYPE_CHECKING:`` block of the module at path
    ``source``, and the module it is imported from."""
    tree = ast.parse(Path(source).read_text(encoding="utf-8"))
    block = next(node for node in tree.body if isinstance(node, ast.If)
                 and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING")
    return {alias.name: str(node.module) for node in block.body
            if isinstance(node, ast.ImportFrom) for alias in node.names}


def attach(namespace: dict[str, Any], homes: Mapping[str, str]) -> Callable[[str], Any]:
    """The ``__getattr__`` of the package whose globals are ``namespace``: a name of
    ``homes`` is imported from its module on first use and kept in ``namespace``."""
    package = namespace["__name__"]

    def __getattr__(name: str) -> Any:
        module = homes.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    return __getattr__
