"""A private, throwaway PostgreSQL cluster for WAL measurements.

``pg_current_wal_insert_lsn()`` is cluster-wide: on a server other clients write to, their
bytes land in our figure. So the write-cost benchmark measures on a cluster of its own:
``initdb`` into a temporary directory, listening on a free loopback port (as the
``postgres`` user when run as root: initdb refuses root), autovacuum off, removed
afterwards. Set ``EVENTLOG_BENCH_WAL_PG`` to a DSN to measure on a server you know is
quiet instead (its settings are left as they are; the benchmark makes and drops a
database of its own there).
``PG_BIN`` names the directory of initdb and pg_ctl (default: the newest
``/usr/lib/postgresql/*/bin``).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path


def pg_bin() -> Path | None:
    """The directory of initdb and pg_ctl, or None."""
    if os.environ.get("PG_BIN"):
        return Path(os.environ["PG_BIN"])
    versions = sorted(Path("/usr/lib/postgresql").glob("*/bin"),
                      key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0)
    if versions:
        return versions[-1]
    config = shutil.which("pg_config")
    if config:
        return Path(subprocess.run([config, "--bindir"], capture_output=True, text=True,
                                   check=True).stdout.strip())
    return None


def _run(command: list[str]) -> None:
    if os.geteuid() == 0:
        command = ["runuser", "-u", "postgres", "--", *command]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed: {done.stdout}{done.stderr}")


@contextlib.contextmanager
def private_cluster() -> Iterator[str]:
    """The DSN of a fresh cluster's ``postgres`` database, stopped and removed afterwards
    (or ``EVENTLOG_BENCH_WAL_PG`` as it is, when set)."""
    given = os.environ.get("EVENTLOG_BENCH_WAL_PG")
    if given:
        yield given
        return
    binaries = pg_bin()
    if binaries is None or not (binaries / "initdb").exists():
        raise RuntimeError("no initdb (set PG_BIN, or EVENTLOG_BENCH_WAL_PG to a quiet server)")
    root = Path(tempfile.mkdtemp(prefix="eventlog-wal-"))
    data = root / "data"
    try:
        if os.geteuid() == 0:
            shutil.chown(root, "postgres", "postgres")
        _run([str(binaries / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust",
              "-N", "--no-instructions"])
        with (data / "postgresql.conf").open("a") as conf:
            # Checkpoints only when we ask: the full-page images after one are counted
            # apart (see `bench_writecost`). No autovacuum writing WAL mid-measurement.
            conf.write(f"listen_addresses = '127.0.0.1'\n"
                       f"unix_socket_directories = '{root}'\nshared_buffers = 128MB\n"
                       "max_wal_size = 4GB\ncheckpoint_timeout = 1d\nautovacuum = off\n")
        port = _start(binaries, data, root)
        try:
            yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
        finally:
            _run([str(binaries / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop"])
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _start(binaries: Path, data: Path, root: Path, attempts: int = 3) -> int:
    """Start the cluster on a free loopback port; its port. A port found free can be
    taken before the server binds it (by any client connection's ephemeral port: a busy
    machine makes thousands), so a failed start tries another port."""
    for attempt in range(attempts):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = int(probe.getsockname()[1])
        with (data / "postgresql.conf").open("a") as conf:
            conf.write(f"port = {port}\n")  # the last setting of a name wins
        try:
            _run([str(binaries / "pg_ctl"), "-D", str(data), "-l", str(root / "log"), "-w",
                  "-t", "60", "start"])
        except RuntimeError:
            if attempt == attempts - 1:
                raise
            continue
        return port
    raise AssertionError("unreachable")


@contextlib.asynccontextmanager
async def scratch_database(prefix: str) -> AsyncIterator[tuple[str, int]]:
    """A new database on a `private_cluster`: its URL and the server's major version;
    dropped (and the cluster stopped) afterwards."""
    import asyncpg

    with private_cluster() as dsn:
        admin = await asyncpg.connect(dsn)
        database = f"{prefix}_{uuid.uuid4().hex[:8]}"
        await admin.execute(f'CREATE DATABASE "{database}"')
        try:
            yield dsn.rsplit("/", 1)[0] + f"/{database}", admin.get_server_version().major
        finally:
            await admin.execute(f'DROP DATABASE "{database}" WITH (FORCE)')
            await admin.close()
