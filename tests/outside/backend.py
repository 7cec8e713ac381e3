"""Registers ``outside-file://<dir>``: the file backend, as a third party would ship one.

Imported by tests/test_backend_schemes.py, which runs the shipped contract suite on it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from eventlog import register_backend
from eventlog.storage.base import StorageBackend
from eventlog.storage.files import FileBackend


def outside_file(url: str, *, schema: str, **options: Any) -> StorageBackend:
    """A file backend in the directory the URL names."""
    return FileBackend(Path(url.partition("://")[2]))


register_backend("outside-file", outside_file)
