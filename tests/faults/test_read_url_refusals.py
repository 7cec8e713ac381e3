"""`read_url` is for PostgreSQL logs only, and a clear refusal elsewhere."""

from __future__ import annotations

from pathlib import Path

import pytest

from eventlog import InvalidInput, open_log


@pytest.mark.parametrize("read_url", ["sqlite:///{tmp}/b.db", "memory://"])
async def test_a_replica_that_is_not_postgresql_is_refused(tmp_path: Path, read_url: str) -> None:
    """A SQLite log reading from a replica makes no sense: InvalidInput naming read_url."""
    with pytest.raises(InvalidInput) as caught:
        async with open_log(f"sqlite:///{tmp_path}/a.db", read_url=read_url.format(
                tmp=tmp_path)):
            pass
    assert "read_url" == caught.value.field
    assert not (tmp_path / "a.db").exists()
