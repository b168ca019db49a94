"""One writer at a time per data dir, or per database when it is a PostgreSQL server.

An ingest, a sync and a repair each read stored records, merge what they bring and write the
result back. Two of them on one data dir at once (two terminals, a cron sync during an ingest,
the Slack bot's scheduled sync) would each merge with what the other has not written yet, and
the later write would drop the other's provenance. So every write path of the facade
(``retrieval.assistant``) runs inside ``hold_writer_lock``; readers (search, ask, summarize,
export) never take it and never wait.

The lock is an OS file lock (``filelock``: ``flock`` on POSIX, ``LockFileEx`` on Windows) on
``<data dir>/writer.lock``, which stays in place. The kernel drops it when its holder exits in
any way, SIGKILL included, so a killed run never blocks the next one; for that reason the
soft-lock fallback (a file whose mere existence means "locked") is switched off. Next to it,
``writer.json`` says who holds it (pid, "ingest" / "sync" / "repair", since when) for the
waiter's messages: written by each new holder, removed on release, only ever advisory.

Policy. One attempt at once; when another process holds the lock, ``notice`` is told once
("Waiting for another paperbot ingest ... (pid 12345, since 14:02) ..."), then the call waits up
to ``settings.writer_wait_seconds`` (PAPERBOT_WRITER_WAIT_SECONDS, default 600) and raises
``BusyError`` naming the holder. The lock is taken before anything is written, so that error
always means nothing was changed. Within a process the lock is re-entrant for the thread that
holds it and keeps other threads out. A data dir this process cannot write (a read-only snapshot,
``config.unwritable_reason``) is refused before anything is tried: ``DataDirReadOnlyError``
names the cause ("Cannot ingest: the data dir /snap is read-only (a read-only file system)").

A PostgreSQL database (``PAPERBOT_DATABASE_URL``) holds the records of every host that uses it,
so there the writers coordinate through the database instead of the file: a session advisory
lock (``pg_advisory_lock(SERVER_WRITERS)``, ``ServerWriterLock``) on a connection of its own,
held for the whole ingest, sync, repair or removal and released at its end (the server releases
it when the connection drops: a killed writer blocks nobody). Two ingests on two hosts, or two
data dirs, then merge with each other's records instead of overwriting them. The holder names
itself in its connection's ``application_name`` ("paperbot ingest pid 12345"), which a waiter
reads from ``pg_locks``; the policy (one notice, ``BusyError`` after the wait) is the same.
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from filelock import FileLock, Timeout

from retrieval.config import Settings, unwritable_reason
from retrieval.errors import BusyError, DataDirReadOnlyError, StorageError
from retrieval.storage.atomic import atomic_write_text

log = logging.getLogger(__name__)

Activity = Literal["ingest", "sync", "repair", "remove"]
SERVER_WRITERS = 0x70627772_0001  # pg_advisory_lock key of the writers of a PostgreSQL database
_DOING: dict[str, str] = {"ingest": "ingest", "sync": "sync", "repair": "repair the index",
                          "remove": "remove records"}  # "Cannot <doing>: ..."
NOTHING_CHANGED = "Wait for it to finish, or stop it; nothing was changed."


@dataclass(frozen=True)
class Holder:
    """Who holds the lock, as its ``writer.json`` says (all None when it does not say)."""

    pid: int | None = None
    activity: str | None = None
    since: datetime | None = None

    @property
    def what(self) -> str:
        """ "paperbot ingest" (or "paperbot process" when the holder did not say)."""
        return f"paperbot {self.activity}" if self.activity else "paperbot process"

    @property
    def details(self) -> str:
        """ " (pid 12345, since 14:02)", the date added when it is not today; "" when unknown."""
        parts = [f"pid {self.pid}"] if self.pid else []
        if self.since is not None:
            local = self.since.astimezone()
            same_day = local.date() == datetime.now().astimezone().date()
            parts.append("since " + local.strftime("%H:%M" if same_day else "%Y-%m-%d %H:%M"))
        return f" ({', '.join(parts)})" if parts else ""


def read_holder(settings: Settings) -> Holder:
    """The holder ``writer.json`` names; an empty ``Holder`` when it is missing, unreadable or
    names a process that no longer exists (left by a killed holder, before the next one wrote)."""
    try:
        data = json.loads(settings.writer_holder_path.read_text(encoding="utf-8"))
        pid = int(data["pid"]) if data.get("pid") is not None else None
        since = datetime.fromisoformat(data["since"]) if data.get("since") else None
        activity = str(data["activity"]) if data.get("activity") else None
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return Holder()
    if pid is not None and not _alive(pid):
        return Holder()
    return Holder(pid, activity, since)


def _alive(pid: int) -> bool:
    if os.name != "posix":  # os.kill(pid, 0) would terminate the process on Windows
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: it exists, run by another user
        return True
    return True


class _Guard:
    """This process's hold on one data dir's lock: a thread lock in front of the file lock."""

    def __init__(self, path: Path) -> None:
        self.thread_lock = threading.Lock()
        # one instance per path and process: a second FileLock on the same file would wait for the first
        self.file_lock = FileLock(path, mode=0o600, thread_local=False, fallback_to_soft=False,
                                  preserve_lock_file=True)
        self.owner: int | None = None  # the thread holding both locks
        self.depth = 0  # its nested holds


_guards: dict[Path, _Guard] = {}
_guards_lock = threading.Lock()


def _guard(settings: Settings) -> _Guard:
    path = settings.writer_lock_path.absolute()
    with _guards_lock:
        if path not in _guards:
            _guards[path] = _Guard(path)
        return _guards[path]


def _storage_error(settings: Settings, exc: OSError) -> StorageError:
    return StorageError(
        f"Cannot lock the data dir {settings.data_dir} for writing: {exc.strerror or exc}.",
        hint="Check that PAPERBOT_DATA_DIR points to a writable directory.",
    )


def _busy(holder: Holder, waited: float, where: str = "on this data dir") -> BusyError:
    return BusyError(
        f"Another {holder.what} is still running {where}{holder.details} after {waited:g} s of waiting.",
        hint=NOTHING_CHANGED,
        pid=holder.pid,
        activity=holder.activity,
        since=holder.since.isoformat(timespec="seconds") if holder.since else None,
    )


def _acquire(settings: Settings, guard: _Guard, wait: float, notice: Callable[[str], None],
             server: ServerWriterLock | None = None) -> None:
    """Take the thread lock and then the file lock (or ``server``'s) within ``wait`` seconds,
    telling ``notice`` once when another holder makes it wait; ``BusyError`` when the wait runs out."""
    deadline = time.monotonic() + wait
    told = False

    def tell(holder: Holder, where: str = "on this data dir") -> None:
        nonlocal told
        if not told and wait > 0:  # no wait, no "waiting": the error follows at once
            told = True
            notice(f"Waiting for another {holder.what} {where}{holder.details} to finish "
                   f"(giving up after {wait:g} s) ...")

    if not guard.thread_lock.acquire(blocking=False):  # another thread of this process writes
        tell(read_holder(settings))
        if not guard.thread_lock.acquire(timeout=max(0.0, deadline - time.monotonic())):
            raise _busy(read_holder(settings), wait)
    if server is not None:
        try:
            server.acquire(deadline, wait, tell)
        except BaseException:
            guard.thread_lock.release()
            raise
        return
    try:
        try:
            guard.file_lock.acquire(blocking=False)
            return
        except Timeout:
            tell(read_holder(settings))
        try:
            guard.file_lock.acquire(timeout=max(0.0, deadline - time.monotonic()))
        except Timeout:
            raise _busy(read_holder(settings), wait) from None
    except OSError as exc:
        guard.thread_lock.release()
        raise _storage_error(settings, exc) from None
    except BaseException:
        guard.thread_lock.release()
        raise


def _write_holder(settings: Settings, activity: Activity) -> None:
    record = {"pid": os.getpid(), "activity": activity,
              "since": datetime.now().astimezone().isoformat(timespec="seconds")}
    try:
        atomic_write_text(settings.writer_holder_path, json.dumps(record) + "\n", durable=False)
    except OSError as exc:  # only the waiters' messages lose their details
        log.warning("Could not write %s: %s", settings.writer_holder_path, exc)


def refuse_read_only(settings: Settings, activity: Activity) -> None:
    """Raise ``DataDirReadOnlyError`` when ``activity`` could not write to the data dir at all
    (``config.unwritable_reason``): before a fetch spends minutes on the network, say; the
    writer lock checks it too."""
    reason = unwritable_reason(settings.data_dir)
    if reason is not None:
        raise DataDirReadOnlyError(_DOING[activity], data_dir=str(settings.data_dir), reason=reason)


@contextmanager
def hold_writer_lock(
    settings: Settings,
    activity: Activity,
    *,
    notice: Callable[[str], None] | None = None,
    wait: float | None = None,
) -> Iterator[None]:
    """Hold the data dir's writer lock for the block (see the module docstring for the policy).

    ``wait`` overrides ``settings.writer_wait_seconds``; ``notice`` receives the one "waiting"
    line (default: the log). Raises ``BusyError`` when the lock stays taken,
    ``DataDirReadOnlyError`` when the data dir cannot be written at all, ``StorageError`` when
    the lock file cannot be created.
    """
    seconds = settings.writer_wait_seconds if wait is None else wait
    say = notice or log.info
    guard = _guard(settings)
    if guard.owner == threading.get_ident():  # re-entered by the holding thread
        guard.depth += 1
        try:
            yield
        finally:
            guard.depth -= 1
        return
    refuse_read_only(settings, activity)
    try:
        settings.data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        raise _storage_error(settings, exc) from None
    server = ServerWriterLock(settings, activity) if _on_server(settings) else None
    _acquire(settings, guard, seconds, say, server)
    guard.owner, guard.depth = threading.get_ident(), 1
    try:
        if server is None:
            _write_holder(settings, activity)
        yield
    finally:
        guard.owner, guard.depth = None, 0
        if server is None:
            with suppress(OSError):
                settings.writer_holder_path.unlink(missing_ok=True)
            guard.file_lock.release()
        else:
            server.release()
        guard.thread_lock.release()


def _on_server(settings: Settings) -> bool:
    """Whether the settings' database is a PostgreSQL server (its URL is checked when it is opened)."""
    url = settings.database_url.get_secret_value() if settings.database_url is not None else ""
    return url.startswith(("postgresql:", "postgresql+"))


class ServerWriterLock:
    """The writer lock of a PostgreSQL database (module docstring): one connection holding
    ``pg_advisory_lock(SERVER_WRITERS)`` from ``acquire`` to ``release``."""

    def __init__(self, settings: Settings, activity: Activity) -> None:
        from retrieval.storage.database import open_database

        self.database = open_database(settings)
        self.activity = activity
        self._connection: Any = None

    def holder(self) -> Holder:
        """Who holds the lock, as its connection's ``application_name`` says (empty when unknown)."""
        from sqlalchemy import text

        with self.database.reading("find the holder of the writer lock") as connection:
            name = connection.execute(text(
                "SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid"
                " WHERE l.locktype = 'advisory' AND l.granted"
                " AND l.classid = :high AND l.objid = :low AND l.objsubid = 1"),
                {"high": SERVER_WRITERS >> 32, "low": SERVER_WRITERS & 0xFFFFFFFF}).scalar()
        match = re.fullmatch(r"paperbot (\w+) pid (\d+)", name or "")
        return Holder(int(match[2]), match[1]) if match else Holder()

    def acquire(self, deadline: float, wait: float, tell: Callable[[Holder, str], None]) -> None:
        """Take the lock by ``deadline`` (``time.monotonic``), telling ``tell`` once if it must wait."""
        from sqlalchemy import text
        from sqlalchemy.exc import DBAPIError

        where = f"on the database {self.database.where}"
        doing = "take the writer lock of the database"
        try:
            connection = self.database.engine.connect()
        except DBAPIError as exc:
            raise self.database.error(exc, doing) from exc
        try:
            connection.execute(text("SELECT set_config('application_name', :name, false)"),
                               {"name": f"paperbot {self.activity} pid {os.getpid()}"})
            while True:
                taken = connection.execute(text("SELECT pg_try_advisory_lock(:key)"), {"key": SERVER_WRITERS}).scalar()
                connection.commit()  # held by the session, not by an open transaction
                if taken:
                    self._connection = connection
                    return
                holder = self.holder()
                if time.monotonic() >= deadline:
                    raise _busy(holder, wait, where)
                tell(holder, where)
                time.sleep(min(0.2, max(0.0, deadline - time.monotonic())))
        except DBAPIError as exc:
            connection.close()
            raise self.database.error(exc, doing) from exc
        except BaseException:
            connection.close()
            raise

    def release(self) -> None:
        """Let the lock go (closing the connection would too: the server drops a session's locks)."""
        from sqlalchemy import text
        from sqlalchemy.exc import DBAPIError

        connection, self._connection = self._connection, None
        if connection is None:
            return
        try:
            connection.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": SERVER_WRITERS})
            connection.commit()
        except DBAPIError as exc:  # the connection is gone, and with it the lock
            log.warning("Could not release the writer lock of the database cleanly: %s", exc)
        finally:
            connection.close()
