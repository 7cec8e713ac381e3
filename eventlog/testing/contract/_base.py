"""The hooks and fixtures every contract mixin shares."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any, ClassVar

import pytest
import pytest_asyncio

from eventlog import OpenLog, open_log


class ContractBackend:
    """The backend under test, for one test: the URL to open and the options to open it with.

    ``open(**extra)`` opens it again (the same store: same URL, same options) with
    ``extra`` open_log options added, e.g. ``clock=`` or ``max_payload_bytes=``.
    """

    def __init__(self, url: str, options: dict[str, Any], persistent: bool) -> None:
        self.url = url
        self.options = options
        self.persistent = persistent

    def open(self, **extra: Any) -> AbstractAsyncContextManager[OpenLog]:
        """`open_log` on this backend's URL with its options and ``extra``."""
        return open_log(self.url, **{**self.options, **extra})

    def require_persistent(self) -> None:
        """Skip the test unless the store outlives closing it."""
        if not self.persistent:
            pytest.skip("this backend's store does not outlive closing it (persistent = False)")


class ContractBase:
    """The hooks a backend's test class fills in; see `eventlog.testing.BackendContract`.

    Every test of every suite is an asyncio test, marked here (a mark pytest finds on
    every subclass), so the host project needs no ``asyncio_mode = auto``."""

    pytestmark: ClassVar[list[pytest.MarkDecorator]] = [
        pytest.mark.asyncio(loop_scope="function")]

    persistent: ClassVar[bool] = True
    """True when a store closed and reopened at the same URL still holds what was written."""

    def backend_url(self, tmp_path: Path) -> str:
        """The URL of a fresh, empty store for one test (``tmp_path`` is that test's own
        temporary directory). Every test needs a store of its own."""
        raise NotImplementedError(f"{type(self).__name__} must define backend_url(tmp_path)")

    def open_options(self) -> dict[str, Any]:
        """Extra keyword options for `open_log` (e.g. ``{"schema": ...}``); none by default."""
        return {}

    @pytest.fixture
    def backend(self, tmp_path: Path) -> ContractBackend:
        """The backend under test, on a fresh store."""
        return ContractBackend(self.backend_url(tmp_path), self.open_options(), self.persistent)

    @pytest_asyncio.fixture(loop_scope="function")
    async def log(self, backend: ContractBackend) -> AsyncIterator[OpenLog]:
        """An open log on a fresh store of the backend under test, closed after the test."""
        async with backend.open() as opened:
            yield opened
