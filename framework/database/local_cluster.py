"""A throwaway PostgreSQL cluster in a folder: for trying the database backend on one machine,
for the tests and for the benchmarks (never for production: it trusts every local user).

``python -m framework.database.local_cluster start FOLDER`` creates the cluster (``initdb``)
the first time, starts it on 127.0.0.1 at a free port (and on a unix socket in FOLDER) and
prints its URL; ``stop FOLDER`` stops it. In Python::

    with LocalCluster(folder) as cluster:
        url = cluster.create_database("t1")

PostgreSQL refuses to run as root, so when this process is root the server runs as the
``postgres`` user (``runuser -u postgres``), which must own FOLDER (it is chowned here).
The binaries are looked up on ``$PATH`` (``pg_ctl``), then in Debian's
``/usr/lib/postgresql/<version>/bin``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

from framework.errors import StorageError

__all__ = ["LocalCluster", "find_bin_dir"]

DEBIAN_ROOT = Path("/usr/lib/postgresql")


def find_bin_dir() -> Path:
    """The folder holding ``initdb`` and ``pg_ctl``; a :class:`StorageError` saying how to
    install PostgreSQL when there is none."""
    found = shutil.which("pg_ctl")
    if found:
        return Path(found).parent
    versions = sorted(
        (p for p in DEBIAN_ROOT.glob("*/bin") if (p / "pg_ctl").exists()),
        key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0,
    )
    if versions:
        return versions[-1]
    raise StorageError(
        "PostgreSQL's server programs (initdb, pg_ctl) are not installed; install them "
        "(Debian: apt-get install postgresql) or point --database at a server you run"
    )


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class LocalCluster:
    """A PostgreSQL cluster in ``folder`` (``data/``, ``server.log``, the socket, ``port``)."""

    folder: Path
    port: int = 0
    """0: the port it used before, else a free one."""
    bin_dir: Path = field(default_factory=find_bin_dir)

    @property
    def data(self) -> Path:
        return self.folder / "data"

    @property
    def _as_root(self) -> bool:
        return hasattr(os, "geteuid") and os.geteuid() == 0

    def _run(self, *argv: str) -> subprocess.CompletedProcess[str]:
        command = list(argv)
        if self._as_root:  # initdb and postgres refuse root
            command = ["runuser", "-u", "postgres", "--", *command]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            said = done.stderr.strip() or done.stdout.strip()
            raise StorageError(f"{Path(argv[0]).name} failed in {self.folder}: {said}")
        return done

    def _own(self) -> None:
        if self._as_root:
            shutil.chown(self.folder, "postgres", "postgres")
            for path in self.folder.rglob("*"):
                shutil.chown(path, "postgres", "postgres")

    def start(self) -> LocalCluster:
        """Create the cluster if new and start it; ``url()`` then reaches it."""
        self.folder.mkdir(parents=True, exist_ok=True)
        port_file = self.folder / "port"
        if not self.port:
            saved = port_file.read_text().strip() if port_file.exists() else ""
            self.port = int(saved) if saved.isdigit() else _free_port()
        port_file.write_text(str(self.port))
        self._own()
        if not (self.data / "PG_VERSION").exists():
            self._run(
                str(self.bin_dir / "initdb"),
                "-D",
                str(self.data),
                "-U",
                "postgres",
                "-A",
                "trust",
                "-E",
                "UTF8",
                "--no-locale",
            )
        if not self.running():
            options = (
                f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.folder} "
                "-c max_connections=300 -c fsync=on"
            )
            self._run(
                str(self.bin_dir / "pg_ctl"),
                "-D",
                str(self.data),
                "-l",
                str(self.folder / "server.log"),
                "-o",
                options,
                "-w",
                "start",
            )
        return self

    def running(self) -> bool:
        """Whether the cluster's server is up."""
        if not (self.data / "postmaster.pid").exists():
            return False
        command = [str(self.bin_dir / "pg_ctl"), "-D", str(self.data), "status"]
        if self._as_root:
            command = ["runuser", "-u", "postgres", "--", *command]
        return subprocess.run(command, capture_output=True, check=False).returncode == 0

    def stop(self, mode: str = "fast") -> None:
        """Stop the server (``fast``: clients are disconnected; ``immediate``: a crash)."""
        if self.running():
            self._run(str(self.bin_dir / "pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "stop")

    def restart(self) -> None:
        """Stop and start the server on the same port (clients see their connections drop)."""
        self.stop()
        self.start()

    def url(self, database: str = "postgres") -> str:
        """The URL of ``database`` on this cluster (user ``postgres``, no password)."""
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def create_database(self, name: str) -> str:
        """Create the database ``name`` (dropped first if it exists); its URL."""
        import psycopg  # the `postgres` extra

        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def __enter__(self) -> LocalCluster:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m framework.database.local_cluster",
        description="A throwaway local PostgreSQL cluster (trusts local users: for trying "
        "Staffroom's database backend, not for production).",
    )
    parser.add_argument("action", choices=["start", "stop", "url"])
    parser.add_argument("folder", type=Path, nargs="?", default=Path(".staffroom-pg"))
    args = parser.parse_args(argv)
    try:
        cluster = LocalCluster(args.folder.resolve())
        if args.action == "start":
            cluster.start()
            print(cluster.url())
            print(f"export STAFFROOM_DATABASE_URL={cluster.url()}", file=sys.stderr)
        elif args.action == "stop":
            cluster.stop()
        else:
            cluster.port = int((cluster.folder / "port").read_text().strip())
            print(cluster.url())
    except (StorageError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
