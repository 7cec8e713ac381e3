"""open_log refuses bad options, URLs and targets, naming what is wrong. (The per-backend
bad-input contract ships in `eventlog.testing`.)"""

from __future__ import annotations

from typing import Any

import pytest

from eventlog import InvalidId, InvalidInput, InvalidURL, open_log


@pytest.mark.parametrize("bad", [0, -1, True, 1.5, "10"])
async def test_bad_max_payload_bytes_is_refused(bad: Any) -> None:
    """max_payload_bytes must be a whole number ≥ 1."""
    with pytest.raises(InvalidInput, match="max_payload_bytes"):
        async with open_log("memory://", max_payload_bytes=bad):
            pass


@pytest.mark.parametrize(
    "url",
    [
        "nosuch://x",
        "mysql://user@host/db",
        "sqlite:/relative.db",
        "sqlite://host/path.db",
        "sqlite:///",
        "postgresql://",
        "postgresql:///db",
        "postgresql://host:notaport/db",
        "file://",
        "file://host/dir",
        "just-a-path.db",
        "",
    ],
)
async def test_bad_url_is_refused(url: str) -> None:
    """A malformed URL or unknown scheme raises InvalidURL carrying the URL."""
    with pytest.raises(InvalidURL) as caught:
        async with open_log(url):
            pass
    assert url == caught.value.url


@pytest.mark.parametrize("bad", [3, b"sqlite:///x.db", object()])
async def test_target_that_is_no_url_nor_engine_is_refused(bad: Any) -> None:
    """open_log takes a URL string or an AsyncEngine."""
    with pytest.raises(InvalidInput, match="target"):
        async with open_log(bad):
            pass


async def test_unknown_backend_option_is_refused() -> None:
    """An option the backend does not take is named in the error."""
    with pytest.raises(InvalidInput, match="pool_size"):
        async with open_log("memory://", pool_size=3):
            pass


@pytest.mark.parametrize("bad", ["", "a\x00b", "x" * 256])
async def test_bad_schema_name_is_refused(bad: str) -> None:
    """The PostgreSQL schema option is checked like an id."""
    with pytest.raises(InvalidId, match="schema"):
        async with open_log("memory://", schema=bad):
            pass
