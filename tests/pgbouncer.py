"""A real PgBouncer in transaction mode in front of the test server, for one test session.

Debian's ``pgbouncer`` package (1.18: no ``max_prepared_statements``) runs from a temporary
directory holding its config, auth file, log and pid file, on a free loopback port, with
``pool_mode = transaction`` and trust authentication, pointing every database name at the
test server. PgBouncer refuses to run as root, so as root it runs as the ``postgres``
user. `start_pgbouncer` returns the URL of the test database through it.

Without the program the tests that need it skip with the reason, except under ``CI=true``
(`.ci/run` installs it), where they fail instead.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

POOL_SIZE = 20
"""Server connections PgBouncer keeps per database and user: far fewer than its clients
(the reproduction's 200 creates), so server connections change hands between transactions
all the time, which is what transaction pooling does to a client."""

START_TIMEOUT_S = 15.0


def pgbouncer_program() -> str | None:
    """The pgbouncer executable (Debian installs it in /usr/sbin), or None."""
    return shutil.which("pgbouncer") or shutil.which("pgbouncer", path="/usr/sbin:/usr/bin")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _config(directory: Path, port: int, upstream_host: str, upstream_port: int, user: str) -> str:
    return f"""\
[databases]
* = host={upstream_host} port={upstream_port}

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = {port}
unix_socket_dir =
auth_type = trust
auth_file = {directory / 'userlist.txt'}
pool_mode = transaction
default_pool_size = {POOL_SIZE}
max_client_conn = 2000
logfile = {directory / 'pgbouncer.log'}
pidfile = {directory / 'pgbouncer.pid'}
admin_users = {user}
server_lifetime = 3600
"""


@contextmanager
def start_pgbouncer(upstream_url: str) -> Iterator[str]:
    """Run PgBouncer (transaction pooling) in front of ``upstream_url``'s server; yields the
    URL of the same database and user through it, and stops PgBouncer on exit."""
    program = pgbouncer_program()
    if program is None:
        raise FileNotFoundError("pgbouncer is not installed (Debian: apt-get install pgbouncer)")
    upstream = urlsplit(upstream_url)
    user = upstream.username or "postgres"
    as_root = os.geteuid() == 0
    directory = Path(tempfile.mkdtemp(prefix="pgbouncer-"))
    try:
        port = _free_port()
        (directory / "userlist.txt").write_text(f'"{user}" ""\n')
        config = directory / "pgbouncer.ini"
        config.write_text(_config(directory, port, upstream.hostname or "127.0.0.1",
                                  upstream.port or 5432, user))
        command = [program, str(config)]
        if as_root:
            shutil.chown(directory, "postgres")
            for name in ("userlist.txt", "pgbouncer.ini"):
                shutil.chown(directory / name, "postgres")
            command = ["runuser", "-u", "postgres", "--", *command]
        # Its output goes to a file: it logs every login and close to stderr as well as to
        # its log file, and a pipe nobody reads fills up (64 KiB, ~130 contract tests) and
        # stops PgBouncer dead in the middle of a write.
        with open(directory / "output.log", "wb") as output:
            process = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT,
                                       start_new_session=True)
        # A test run killed outright (a timeout's SIGKILL) skips the `finally` below; this
        # stops PgBouncer once this process is gone (and removes its directory), so none
        # outlives the run.
        watchdog = subprocess.Popen(
            ["sh", "-c", f"while [ -d /proc/{os.getpid()} ]; do sleep 1; done; "
                         f"kill -TERM -{process.pid} 2>/dev/null; sleep 1; rm -rf '{directory}'"],
            start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            _wait_listening(port, process, directory)
            netloc = f"{user}@127.0.0.1:{port}"
            yield urlunsplit(upstream._replace(netloc=netloc))
        finally:
            _stop(process)
            watchdog.kill()
            watchdog.wait()
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def _wait_listening(port: int, process: subprocess.Popen[bytes], directory: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            output = (directory / "output.log").read_text(errors="replace")
            raise RuntimeError(f"pgbouncer exited with {process.returncode}: {output}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.05)
    _stop(process)
    raise RuntimeError(f"pgbouncer did not listen on 127.0.0.1:{port} "
                       f"within {START_TIMEOUT_S:.0f} s")


def _stop(process: subprocess.Popen[bytes]) -> None:
    """SIGINT: PgBouncer's "safe shutdown" would wait for clients; SIGTERM stops it now."""
    if process.poll() is None:
        # runuser passes the signal on to pgbouncer, its child.
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
