"""upgrade=False on a missing SQLite file. (The corrupt-event contract ships in
`eventlog.testing`.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from eventlog import SchemaError, open_log


async def test_sqlite_without_upgrade_does_not_create_a_database(tmp_path: Path) -> None:
    """upgrade=False on a missing SQLite file refuses and leaves no file behind."""
    path = tmp_path / "missing.db"
    with pytest.raises(SchemaError):
        async with open_log(f"sqlite:///{path}", upgrade=False):
            pass
    assert not path.exists()
