"""Throwaway PostgreSQL clusters for tests that restart a server or need a replica.

The shared server (``EVENTLOG_TEST_PG``) is never stopped or restarted: other test runs
use it. A test that needs to restart a server, or a primary with a streaming hot standby,
makes its own here: ``initdb`` into a temporary directory, listening on a free loopback
port, as the ``postgres`` user when we are root (initdb refuses root), stopped and
removed afterwards. ``PG_BIN`` (default: the newest ``/usr/lib/postgresql/*/bin``, else
``pg_config --bindir``) names the server's programs.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path


def pg_bin() -> Path | None:
    """The directory of initdb, pg_ctl and pg_basebackup, or None if not installed."""
    if os.environ.get("PG_BIN"):
        return Path(os.environ["PG_BIN"])
    versions = sorted(Path("/usr/lib/postgresql").glob("*/bin"),
                      key=lambda path: int(path.parent.name) if path.parent.name.isdigit() else 0)
    if versions:
        return versions[-1]
    config = shutil.which("pg_config")
    if config:
        return Path(subprocess.run([config, "--bindir"], capture_output=True, text=True,
                                   check=True).stdout.strip())
    return None


def free_port() -> int:
    """A TCP port on 127.0.0.1 nobody listens on right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Cluster:
    """One PostgreSQL server in a directory of its own, on a port of its own."""

    def __init__(self, root: Path, name: str) -> None:
        self.directory = root / name
        self.port = free_port()
        self.log_file = root / f"{name}.log"

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def initdb(self) -> None:
        _run([_tool("initdb"), "-D", str(self.directory), "-U", "postgres", "--auth=trust",
              "-N", "--no-instructions"])
        self._configure()

    def base_backup_of(self, primary: Cluster) -> None:
        """Become a streaming hot standby of ``primary`` (``pg_basebackup -R``)."""
        _run([_tool("pg_basebackup"), "-h", "127.0.0.1", "-p", str(primary.port),
              "-U", "postgres", "-D", str(self.directory), "-R", "-X", "stream",
              "--checkpoint=fast"])
        self._configure()

    def _configure(self) -> None:
        settings = (
            f"port = {self.port}\nlisten_addresses = '127.0.0.1'\n"
            f"unix_socket_directories = '{self.directory}'\n"
            "max_connections = 60\nshared_buffers = 16MB\nhot_standby = on\n"
            "wal_level = replica\nmax_wal_senders = 4\n"
        )
        with (self.directory / "postgresql.conf").open("a") as conf:
            conf.write(settings)

    def start(self) -> None:
        _run([_tool("pg_ctl"), "-D", str(self.directory), "-l", str(self.log_file),
              "-w", "-t", "60", "start"])

    def stop(self, mode: str = "fast") -> None:
        _run([_tool("pg_ctl"), "-D", str(self.directory), "-m", mode, "-w", "stop"])

    def running(self) -> bool:
        return (self.directory / "postmaster.pid").exists()


@contextlib.contextmanager
def clusters_dir() -> Iterator[Path]:
    """A temporary directory the server's user may write, removed afterwards."""
    root = Path(tempfile.mkdtemp(prefix="eventlog-pg-"))
    try:
        if os.geteuid() == 0:
            shutil.chown(root, "postgres", "postgres")
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


def cluster_problem() -> str | None:
    """Why throwaway clusters cannot be made here, or None."""
    binaries = pg_bin()
    if binaries is None or not (binaries / "initdb").exists():
        return "PostgreSQL's initdb is not installed (set PG_BIN)"
    if os.geteuid() == 0 and shutil.which("runuser") is None:
        return "running as root without runuser to become the postgres user"
    return None


def wait_until_ready(cluster: Cluster, timeout: float = 60) -> None:
    """Block until ``cluster`` accepts connections."""
    deadline = time.monotonic() + timeout
    while subprocess.run([_tool("pg_isready"), "-h", "127.0.0.1", "-p", str(cluster.port),
                          "-q"], check=False).returncode != 0:
        if time.monotonic() > deadline:
            raise TimeoutError(f"the cluster on port {cluster.port} did not come up")
        time.sleep(0.1)


def _tool(name: str) -> str:
    binaries = pg_bin()
    assert binaries is not None
    return str(binaries / name)


def _run(command: list[str]) -> None:
    if os.geteuid() == 0:
        command = ["runuser", "-u", "postgres", "--", *command]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed: {done.stdout}{done.stderr}")
