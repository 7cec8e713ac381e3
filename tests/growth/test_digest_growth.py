"""``verify --digest`` reads its file with a bound: /dev/zero is refused, not a MemoryError."""

from __future__ import annotations

from pathlib import Path

import pytest

from eventlog.cli import EXIT_USAGE
from eventlog.cli.digest import MAX_DIGEST_FILE_BYTES
from tests.growth.rss import MB, measure

pytestmark = pytest.mark.growth


def test_verify_refuses_dev_zero_having_read_no_more_than_a_digest(tmp_path: Path) -> None:
    """Exit 2 naming the file and the limit; the peak stays within the limit and the
    interpreter (it ended in "unexpected MemoryError" when the file was read whole)."""
    ran = measure("verify", "--digest", "/dev/zero", "--url",
                  f"sqlite:///{tmp_path / 'log.db'}", scratch=tmp_path)
    assert EXIT_USAGE == ran.status, ran.err
    assert f"digest /dev/zero is larger than {MAX_DIGEST_FILE_BYTES} bytes" in ran.err
    assert ran.peak_mb < MAX_DIGEST_FILE_BYTES / MB + 200, ran.peak_mb
