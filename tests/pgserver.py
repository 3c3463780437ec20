"""A throwaway PostgreSQL server for fault-injection tests: its own data directory and loopback port.

Tests that stop, restart or kill a database server use this one, never a server shared with other
tests. The binaries are found with ``pg_config --bindir``, else the newest
``/usr/lib/postgresql/*/bin``; when they are missing, the test fails (it needs them). ``initdb`` refuses
to run as root: as root the server runs as the ``postgres`` user (``runuser``), with its data
directory in a temporary directory that user owns.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

__all__ = ["PrivatePostgres", "find_bindir"]


def find_bindir() -> Path | None:
    """The directory of PostgreSQL's server binaries (``initdb``, ``pg_ctl``), or None."""
    candidates = []
    pg_config = shutil.which("pg_config")
    if pg_config:
        try:
            out = subprocess.run(
                [pg_config, "--bindir"], capture_output=True, text=True, timeout=10, check=True
            )
            candidates.append(Path(out.stdout.strip()))
        except (OSError, subprocess.SubprocessError):
            pass

    def version(path: str) -> float:
        try:
            return float(Path(path).parent.name)
        except ValueError:
            return 0.0

    candidates += [
        Path(p) for p in sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=version, reverse=True)
    ]
    for path in candidates:
        if (path / "initdb").exists() and (path / "pg_ctl").exists():
            return path
    return None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PrivatePostgres:
    """A PostgreSQL server of one test module: ``start``, ``stop`` (fast or immediate), ``restart``.

    Parameters
    ----------
    bindir : Path
        PostgreSQL's server binaries.

    Attributes
    ----------
    port : int
        Its port on 127.0.0.1 (trust authentication, user ``postgres``).
    """

    def __init__(self, bindir: Path) -> None:
        self.bindir = bindir
        self.root = Path(tempfile.mkdtemp(prefix="freshcrawl-pg-"))
        self.data = self.root / "data"
        self.log = self.root / "server.log"
        self.port = _free_port()
        self._as_root = os.geteuid() == 0
        if self._as_root:
            shutil.chown(self.root, "postgres", "postgres")
        self._run(
            "initdb",
            "-D",
            str(self.data),
            "-U",
            "postgres",
            "--auth=trust",
            "-E",
            "UTF8",
            "--no-sync",
        )

    def _run(self, tool: str, *args: str, timeout: float = 60.0) -> subprocess.CompletedProcess:
        cmd = [str(self.bindir / tool), *args]
        if self._as_root:
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        out = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=timeout)
        if out.returncode != 0:
            raise RuntimeError(
                f"{tool} failed ({out.returncode}): {out.stderr.strip() or out.stdout.strip()}"
            )
        return out

    def server_url(self) -> str:
        """``postgresql+psycopg://postgres@127.0.0.1:<port>`` (append ``/dbname``)."""
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}"

    def start(self) -> None:
        """Start the server on its port (loopback only, no fsync: a test server) and wait until it answers."""
        options = (
            f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.root} -c fsync=off "
            "-c synchronous_commit=off -c full_page_writes=off -c max_connections=50"
        )
        self._run(
            "pg_ctl",
            "-D",
            str(self.data),
            "-l",
            str(self.log),
            "-o",
            options,
            "-w",
            "-t",
            "60",
            "start",
        )

    def stop(self, mode: str = "fast") -> None:
        """Stop the server: ``fast`` (connections cut, clean shutdown) or ``immediate`` (like a crash)."""
        self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "-t", "60", "stop")

    def restart(self, down_s: float = 0.0, mode: str = "fast") -> None:
        """Stop, stay down ``down_s`` seconds, start again."""
        self.stop(mode)
        time.sleep(down_s)
        self.start()

    def create_database(self, name: str) -> str:
        """Create database ``name``; return its URL."""
        from sqlalchemy import create_engine, text

        engine = create_engine(f"{self.server_url()}/postgres", isolation_level="AUTOCOMMIT")
        try:
            with engine.connect() as conn:
                conn.execute(text(f'CREATE DATABASE "{name}"'))
        finally:
            engine.dispose()
        return f"{self.server_url()}/{name}"

    def close(self) -> None:
        """Stop the server (if running) and delete its files."""
        try:
            self.stop("immediate")
        except RuntimeError:
            pass  # not running
        shutil.rmtree(self.root, ignore_errors=True)
