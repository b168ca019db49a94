"""The dense side of the index: Chroma, embedded (``PersistentClient``) or a ``chroma run`` server.

``DenseStore`` connects lazily and drops a connection that failed, so a restarted server is
picked up by the next call; every request to a server is bounded by ``PAPERBOT_CHROMA_TIMEOUT``
(chromadb sets no timeout of its own: ``chromadb_adapter.bound_requests``). The collection is in cosine space with
no embedding function (our encoder makes the vectors); each vector's metadata is the hash of
the text it was computed from, and filters reach ``query`` as the ids they allow. ``refresh``
reopens an embedded index that another process wrote to; on a full disk the embedded index is
read from a temporary copy (writes raise ``DiskFullError``); damaged files raise
``IndexDamagedError`` and ``move_aside`` keeps them for ``PaperIndex.repair``.

A read-only data dir (``config.unwritable_reason``: a snapshot on a read-only mount, a backup).
chromadb 1.5.9 has no read-only mode: ``PersistentClient`` writes to its directory when it
starts, whatever its settings (``migrations="validate"`` too: "attempt to write a readonly
database"; chroma-core/chroma#1438 asks for one). The embedded index is then read from a copy
in the temporary directory (up to ``MAX_SNAPSHOT_BYTES``, where there is room: else
``DataDirReadOnlyError`` says why), and its writes raise ``DataDirReadOnlyError``.

Why each of these, and what chromadb 1.5.9 does that forces them: ``docs/index.md`` ("The
dense index"). This is the only module that uses chromadb, besides ``chromadb_adapter`` (what it needs
of chromadb's private names).
"""

from __future__ import annotations

import atexit
import logging
import os
import shutil
import sqlite3
import stat
import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import httpx
import numpy as np

from retrieval.config import Settings, unwritable_reason
from retrieval.errors import (
    ConfigError,
    DataDirReadOnlyError,
    IndexDamagedError,
    IndexDiskFullError,
    IndexUnavailableError,
    PaperbotError,
    StorageError,
)
from retrieval.index.chromadb_adapter import bound_requests, forget_system
from retrieval.records.paper import Paper
from retrieval.storage.sqlite import LOW_SPACE, free_bytes, report_read_only
from retrieval.storage.sqlite import disk_is_full as _disk_is_full

log = logging.getLogger(__name__)


def _chromadb() -> Any:
    """chromadb, imported on first use: the import takes about 0.8 s here, which commands that
    never reach Chroma (``stats``, ``export``) do not pay, and ``paperbot ingest`` pays while its
    encoding process already encodes (``docs/encoders.md``, "Encoding ahead in a child process (kept)")."""
    import chromadb

    return chromadb


def _chroma_error() -> type[Exception]:
    """chromadb's error base class (an ``except`` clause evaluates it only when an exception is raised)."""
    from chromadb.errors import ChromaError

    return ChromaError


def _chroma_settings() -> Any:
    """Client settings: chromadb's product telemetry off."""
    from chromadb.config import Settings as ChromaSettings

    return ChromaSettings(anonymized_telemetry=False)

BATCH = 5000  # below Chroma's max batch size (5461 here)
_PAGE = 5000
EXACT_WITHIN = 1000  # a restricted query of at most this many ids is scored exactly (see ``query``)
MAX_SNAPSHOT_BYTES = 1 << 30  # a full disk's or read-only dir's index is copied elsewhere for reading up to this size


def parse_chroma_url(url: str) -> tuple[str, int, bool]:
    """``(host, port, ssl)`` from ``http(s)://host[:port]``; the port defaults to 8000 / 443."""
    parsed = urlparse(url)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise ConfigError(f"Invalid setting PAPERBOT_CHROMA_URL: {url!r} is not an http(s) URL.",
                          hint="Use e.g. http://127.0.0.1:8000, or unset it for the embedded index.")
    ssl = parsed.scheme == "https"
    try:
        port = parsed.port or (443 if ssl else 8000)
    except ValueError:
        raise ConfigError(f"Invalid setting PAPERBOT_CHROMA_URL: {url!r} has an invalid port.",
                          hint="Use e.g. http://127.0.0.1:8000.") from None
    return parsed.hostname, port, ssl


_DISK_FULL = ("disk i/o error", "database or disk is full", "no space left", "file too large", "quota exceeded")


def disk_is_full(detail: str) -> bool:
    """True when a storage error's text means the disk (or a size limit) ran out.

    Chroma's SQLite reports a failed write as "disk I/O error" or "database or disk is full";
    the OS as ENOSPC "No space left on device", EFBIG "File too large" or EDQUOT.
    """
    text = detail.lower()
    return any(marker in text for marker in _DISK_FULL)


# What Chroma says when its own files are damaged (SQLite codes 11 and 26, a broken HNSW segment)
_DAMAGED = ("malformed", "not a database", "(code: 11)", "(code: 26)", "file is encrypted",
            "error loading hnsw", "failed to load hnsw", "hnsw segment reader", "corrupt")


def is_damaged(detail: str) -> bool:
    """True when a failure's text means the embedded index's files are damaged (not the disk)."""
    text = detail.lower()
    return any(marker in text for marker in _DAMAGED)


def record_metadata(paper: Paper) -> dict[str, Any]:
    """Chroma metadata for one record: the hash of the text its vector was computed from.

    That hash is all Chroma is asked about (``embedding_hashes``: is a vector still of its
    record's text?). Filters are answered by the ids the caller passes to ``query``, so no
    filter field is stored here: author keys alone, a list metadata field, took about 40 % of
    an ingest's Chroma time (``docs/index.md``, "The dense index"). An index written by an
    older paperbot still carries title, year, authors, venue, DOI and arXiv id per record;
    nothing reads them.
    """
    return {"embedding_hash": paper.embedding_hash}


def _close_quietly(client: Any) -> None:
    """Close a chromadb client; a failure to close must not stop what comes next."""
    if client is None:
        return
    try:
        client.close()
    except Exception:
        log.debug("closing the Chroma client failed", exc_info=True)


def _tree_size(path: Path) -> int:
    return sum(item.stat().st_size for item in path.rglob("*") if item.is_file())


def _owner_writes(tree: Path) -> None:
    """Let the owner write every directory and file under ``tree`` (``tree`` included)."""
    for path in (tree, *tree.rglob("*")):
        if not path.is_symlink():
            mode = stat.S_IMODE(path.stat().st_mode)
            os.chmod(path, mode | stat.S_IRUSR | stat.S_IWUSR | (stat.S_IXUSR if path.is_dir() else 0))


class _NoCopy(Exception):
    """The embedded index cannot be copied for reading; the message says why."""


def _copy_to_temporary(source: Path, *, same_disk: bool) -> Path:
    """A copy of the directory ``source`` in a new temporary directory, removed when the process exits.

    Refused (``_NoCopy``, saying why) past ``MAX_SNAPSHOT_BYTES``, without room for it plus
    some slack, or on the disk of ``source`` unless ``same_disk`` (a full disk has no room).
    """
    try:
        size = _tree_size(source)
        temporary = Path(tempfile.gettempdir())
        room = free_bytes(temporary)
        if size > MAX_SNAPSHOT_BYTES:
            raise _NoCopy(f"it holds {size >> 20} MB, more than the {MAX_SNAPSHOT_BYTES >> 20} MB paperbot copies")
        if not same_disk and os.stat(temporary).st_dev == os.stat(source).st_dev:
            raise _NoCopy(f"the temporary directory {temporary} is on the same disk")
        if room is None or room < size + 8 * LOW_SPACE:
            raise _NoCopy(f"the temporary directory {temporary} has no room for its {max(size >> 20, 1)} MB "
                          "(set TMPDIR to a directory with room)")
        copy = Path(tempfile.mkdtemp(prefix="paperbot-chroma-copy-"))
    except OSError as exc:
        raise _NoCopy(f"it could not be copied: {exc.strerror or exc}") from exc
    try:
        shutil.copytree(source, copy, dirs_exist_ok=True)
        _owner_writes(copy)  # a copy of read-only files is read-only too, and Chroma writes to it
    except OSError as exc:
        shutil.rmtree(copy, ignore_errors=True)
        raise _NoCopy(f"it could not be copied to {copy}: {exc.strerror or exc}") from exc
    atexit.register(shutil.rmtree, copy, True)  # a process that never closes the index leaves nothing behind
    return copy


class _Gate:
    """Any number of calls at once, or one refresh alone: a refresh waits for the running calls
    and holds new ones back until it is done."""

    def __init__(self) -> None:
        self._condition = threading.Condition()
        self._running = 0
        self._refreshing = False

    @contextmanager
    def call(self) -> Iterator[None]:
        with self._condition:
            self._condition.wait_for(lambda: not self._refreshing)
            self._running += 1
        try:
            yield
        finally:
            with self._condition:
                self._running -= 1
                self._condition.notify_all()

    @contextmanager
    def alone(self) -> Iterator[None]:
        with self._condition:
            self._condition.wait_for(lambda: not self._refreshing)
            self._refreshing = True
            self._condition.wait_for(lambda: self._running == 0)
        try:
            yield
        finally:
            with self._condition:
                self._refreshing = False
                self._condition.notify_all()


class DenseStore:
    """One Chroma collection of paper vectors, with reconnect-on-next-call semantics."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._lock = threading.RLock()
        self._gate = _Gate()
        self._client: Any = None
        self._collection: Any = None
        self._snapshot: Path | None = None  # a full disk's or read-only dir's index, copied elsewhere for reading only
        self._read_only: str | None = None  # why the data dir cannot be written, while reading a copy for that

    @property
    def location(self) -> str:
        return self._settings.chroma_url or str(self._settings.chroma_dir)

    # --- connection --------------------------------------------------------------------------

    def _unreachable(self) -> IndexUnavailableError:
        return IndexUnavailableError(
            f"Cannot reach the Chroma server at {self._settings.chroma_url}.",
            hint="Start it (e.g. `chroma run --path DIR --host 127.0.0.1 --port 8000`) or unset "
                 "PAPERBOT_CHROMA_URL to use the embedded index.",
        )

    def _failed(self, detail: str) -> PaperbotError:
        if not self._settings.chroma_url and disk_is_full(detail):
            if _disk_is_full(detail, self._settings.chroma_dir):  # ENOSPC itself, not a size limit
                return IndexDiskFullError(f"write the vector index in {self._settings.chroma_dir}",
                                     where=str(self._settings.data_dir))
            return IndexUnavailableError(
                f"Cannot write the vector index in {self._settings.chroma_dir}: the disk is full "
                f"(the storage said {detail!r}).",
                hint="Free some disk space, then run `paperbot doctor --repair` and the command again.",
            )
        if not self._settings.chroma_url and is_damaged(detail):
            where = (f"Copy the data dir to a writable place (it is read-only: {self._read_only}) and run "
                     "`paperbot doctor --repair` there" if self._read_only else "Run `paperbot doctor --repair`")
            return IndexDamagedError(
                f"The vector index in {self._settings.chroma_dir} is damaged ({detail}).",
                hint=f"{where} to rebuild it from the record store (the damaged copy is kept aside).",
                detail=detail,
            )
        if self._settings.chroma_url:
            return IndexUnavailableError(f"The Chroma server at {self._settings.chroma_url} failed: {detail}.",
                                         hint="Check the server's log; `paperbot doctor` checks the index.")
        return IndexUnavailableError(
            f"Cannot use the vector index in {self._settings.chroma_dir}: {detail}.",
            hint="Check that PAPERBOT_DATA_DIR is writable and has free space; `paperbot doctor` can repair the index.",
        )

    def _timed_out(self) -> IndexUnavailableError:
        return IndexUnavailableError(
            f"The Chroma server at {self._settings.chroma_url} did not answer within "
            f"{self._settings.chroma_timeout:g} s.",
            hint="Check that it is running and not overloaded (restart it if it hangs), or raise "
                 "PAPERBOT_CHROMA_TIMEOUT.",
        )

    def _connect(self) -> Any:
        chroma_settings = _chroma_settings()
        if self._settings.chroma_url:
            host, port, ssl = parse_chroma_url(self._settings.chroma_url)
            self._heartbeat()
            client = self._within_timeout(
                lambda: _chromadb().HttpClient(host=host, port=port, ssl=ssl, settings=chroma_settings))
            bound_requests(client, self._settings.chroma_timeout)
            return client
        self._drop_snapshot()
        reason = unwritable_reason(self._settings.chroma_dir)
        if reason is not None:
            return self._persistent(self._copy_read_only(reason))
        self._settings.chroma_dir.mkdir(parents=True, exist_ok=True)
        try:
            return self._persistent(self._settings.chroma_dir)
        except _chroma_error() as exc:
            if not _disk_is_full(str(exc), self._settings.chroma_dir):
                raise
            return self._persistent(self._copy_for_reading(exc))

    @staticmethod
    def _persistent(path: Path) -> Any:
        try:
            return _chromadb().PersistentClient(path=str(path), settings=_chroma_settings())
        except BaseException:
            forget_system(path)  # or the next attempt gets the broken system back
            raise

    def _disk_full(self) -> IndexDiskFullError:
        return IndexDiskFullError(f"write the vector index in {self._settings.chroma_dir}",
                             where=str(self._settings.data_dir))

    def _copy_for_reading(self, failure: Exception) -> Path:
        """Copy a full disk's index to the temporary directory to read it there (module docstring)."""
        source = self._settings.chroma_dir
        try:
            copy = _copy_to_temporary(source, same_disk=False)
        except _NoCopy:
            raise IndexDiskFullError(f"open the vector index in {source} (Chroma writes to it even to search, and "
                                     "there is no room to read a copy elsewhere)",
                                     where=str(self._settings.data_dir)) from failure
        self._snapshot = copy
        report_read_only(str(self._settings.data_dir),
                         f"the vector index is read from a temporary copy in {copy}")
        return copy

    def _copy_read_only(self, reason: str) -> Path:
        """Copy the index of a read-only data dir to the temporary directory to read it there
        (module docstring); ``reason``: why the data dir cannot be written."""
        source = self._settings.chroma_dir
        if not source.is_dir():
            raise self._read_only_error(f"create the vector index in {source}", reason)
        try:
            copy = _copy_to_temporary(source, same_disk=True)
        except _NoCopy as refused:
            raise self._read_only_error(
                f"open the vector index in {source}: chromadb writes to its directory even to search, so paperbot "
                f"reads a temporary copy, but {refused}", reason) from refused
        self._snapshot, self._read_only = copy, reason
        log.info("The data dir %s is read-only (%s): the vector index is read from a temporary copy in %s.",
                 self._settings.data_dir, reason, copy)
        return copy

    def _read_only_error(self, doing: str, reason: str) -> DataDirReadOnlyError:
        return DataDirReadOnlyError(doing, data_dir=str(self._settings.data_dir), reason=reason)

    def _drop_snapshot(self) -> None:
        copy, self._snapshot, self._read_only = self._snapshot, None, None
        if copy is not None:
            forget_system(copy)
            shutil.rmtree(copy, ignore_errors=True)

    def _writable(self) -> None:
        """Raise while reading a copy (a full disk's, a read-only dir's): a write there would be lost."""
        if self._snapshot is None:
            return
        if self._read_only is not None:
            raise self._read_only_error(f"write the vector index in {self._settings.chroma_dir}", self._read_only)
        raise self._disk_full()

    def _within_timeout(self, build: Callable[[], Any]) -> Any:
        """``build()`` given at most ``chroma_timeout`` seconds, for ``HttpClient()``'s unbounded requests.

        A server can answer the heartbeat and then hang. The builder runs in a daemon thread;
        past the timeout the caller gets ``_timed_out`` and the abandoned thread ends with the
        server's answer, the reset of its connection, or the process.
        """
        outcome: dict[str, Any] = {}

        def run() -> None:
            try:
                outcome["value"] = build()
            except BaseException as exc:  # noqa: BLE001 (handed to the caller below, re-raised there)
                outcome["error"] = exc

        worker = threading.Thread(target=run, name="chroma-connect", daemon=True)
        worker.start()
        worker.join(self._settings.chroma_timeout)
        if worker.is_alive():
            raise self._timed_out()
        if "error" in outcome:
            raise outcome["error"]
        return outcome["value"]

    def _heartbeat(self) -> None:
        """One bounded request before ``HttpClient()``, whose own requests have no timeout yet."""
        url = f"{self._settings.chroma_url}/api/v2/heartbeat"
        try:
            httpx.get(url, timeout=self._settings.chroma_timeout)
        except httpx.TimeoutException as exc:
            raise self._timed_out() from exc
        except httpx.TransportError as exc:
            raise self._unreachable() from exc

    def _get_collection(self) -> Any:
        if self._collection is None:
            client = self._connect()
            collection = client.get_or_create_collection(
                self._settings.collection,
                configuration={"hnsw": {"space": "cosine"}},
                embedding_function=None,
            )
            space = (collection.configuration or {}).get("hnsw", {}) or {}
            if space.get("space", "cosine") != "cosine":
                raise IndexUnavailableError(
                    f"The Chroma collection {self._settings.collection!r} uses {space.get('space')} distance, not cosine.",
                    hint="Set PAPERBOT_COLLECTION to a new name and re-ingest, or delete that collection.",
                )
            self._client, self._collection = client, collection
        return self._collection

    def reset(self) -> None:
        """Forget the connection; the next call reconnects."""
        with self._lock:
            self._client = None
            self._collection = None

    def close(self) -> None:
        """Release the client (the embedded one's in-process Chroma system stops when it was the
        last user); a later call reconnects."""
        with self._gate.alone(), self._lock:  # closed before any call can reconnect
            client, self._client, self._collection = self._client, None, None
            _close_quietly(client)
            self._drop_snapshot()

    def move_aside(self) -> Path | None:
        """Close the embedded index and rename its directory to ``chroma.damaged-<UTC time>``.

        The damaged files are kept for inspection; the next call creates a new, empty index.
        Returns the new name (None when there was no directory). Embedded index only.
        """
        if self._settings.chroma_url:
            raise IndexUnavailableError("A Chroma server's index cannot be moved aside from here.",
                                        hint="Repair or recreate it on the server.")
        source = self._settings.chroma_dir
        with self._gate.alone(), self._lock:
            client, self._client, self._collection = self._client, None, None
            _close_quietly(client)
            self._drop_snapshot()
            forget_system(source)
            if not source.exists():
                return None
            stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
            target = source.with_name(f"{source.name}.damaged-{stamp}")
            number = 1
            while target.exists():
                number += 1
                target = source.with_name(f"{source.name}.damaged-{stamp}-{number}")
            try:
                source.rename(target)
            except OSError as exc:
                raise StorageError(f"Cannot move the damaged vector index {source} aside: {exc.strerror or exc}.",
                                   hint="Check the permissions of PAPERBOT_DATA_DIR, or move it yourself.") from exc
        log.warning("Moved the damaged vector index %s to %s (kept for inspection).", source, target)
        return target

    def refresh(self) -> None:
        """Reopen the embedded index from disk, so that what other processes wrote is seen.

        An embedded client keeps the vector index in memory: records another process added
        afterwards are neither found by its queries nor fetchable by id ("Error finding id").
        Closing the client releases chromadb's shared in-process system; the next call loads
        a fresh one. Waits for running calls first. A server needs none of this (no-op).
        """
        if not self._settings.chroma_url:
            self.close()

    @contextmanager
    def _call(self) -> Iterator[Any]:
        """Yield the collection; translate connection and storage failures, reset on loss.

        The lock only guards connecting: chromadb clients serve concurrent calls, so a long
        upsert does not hold up searches from other threads.
        """
        try:
            with self._gate.call():
                with self._lock:
                    collection = self._get_collection()
                yield collection
        except IndexUnavailableError:
            raise
        except httpx.TimeoutException as exc:
            self.reset()
            raise self._timed_out() from exc
        except httpx.TransportError as exc:
            self.reset()
            raise self._unreachable() from exc
        except ValueError as exc:
            # chromadb.HttpClient turns failures of its first request into ValueError:
            # "Could not connect to a Chroma server..." or the text of the httpx error ("timed out").
            text = str(exc).lower()
            if self._settings.chroma_url and "timed out" in text:
                self.reset()
                raise self._timed_out() from exc
            if self._settings.chroma_url and "connect" in text:
                self.reset()
                raise self._unreachable() from exc
            raise
        except _chroma_error() as exc:
            raise self._failed(str(exc) or type(exc).__name__) from exc
        except (OSError, sqlite3.Error) as exc:
            self.reset()
            raise self._failed(str(exc)) from exc

    # --- operations --------------------------------------------------------------------------

    def ping(self) -> None:
        """Raise ``IndexUnavailableError`` unless the collection can be reached."""
        with self._call() as collection:
            collection.count()

    def count(self) -> int:
        with self._call() as collection:
            return int(collection.count())

    def upsert(self, ids: Sequence[str], vectors: np.ndarray, metadatas: Sequence[dict[str, Any]]) -> None:
        """Insert or replace vectors with their metadata, in batches of at most ``BATCH``."""
        with self._call() as collection:
            self._writable()
            for start in range(0, len(ids), BATCH):
                end = start + BATCH
                collection.upsert(ids=list(ids[start:end]), embeddings=vectors[start:end],
                                  metadatas=list(metadatas[start:end]))

    def delete(self, ids: Sequence[str]) -> None:
        with self._call() as collection:
            self._writable()
            for start in range(0, len(ids), BATCH):
                collection.delete(ids=list(ids[start : start + BATCH]))

    def vectors(self, ids: Sequence[str]) -> dict[str, np.ndarray]:
        """Stored vectors by id (missing ids are absent; an id asked twice is read once)."""
        found: dict[str, np.ndarray] = {}
        ids = list(dict.fromkeys(ids))  # Chroma refuses a get that names an id twice
        if not ids:
            return found
        with self._call() as collection:
            for start in range(0, len(ids), BATCH):
                got = collection.get(ids=list(ids[start : start + BATCH]), include=["embeddings"])
                for item, vector in zip(got["ids"], got["embeddings"], strict=True):
                    found[item] = np.asarray(vector, dtype=np.float32)
        return found

    def embedding_hashes(self) -> dict[str, str | None]:
        """``id -> embedding_hash`` metadata of every stored vector (paged)."""
        result: dict[str, str | None] = {}
        with self._call() as collection:
            offset = 0
            while True:
                got = collection.get(include=["metadatas"], limit=_PAGE, offset=offset)
                for item, metadata in zip(got["ids"], got["metadatas"], strict=True):
                    result[item] = (metadata or {}).get("embedding_hash")
                if len(got["ids"]) < _PAGE:
                    return result
                offset += _PAGE

    def query(
        self, vector: np.ndarray, n: int, within: Sequence[str] | None = None
    ) -> list[tuple[str, float, np.ndarray]]:
        """Nearest ``n`` records as ``(id, cosine similarity, vector)``, best first.

        ``within``: only these ids (the records a filter allows; None = all). Up to
        ``EXACT_WITHIN`` of them are scored exactly from their fetched vectors, which is
        faster than Chroma's restricted search there (its fixed cost is ~70 ms at 100k
        vectors); more go to Chroma as ``ids``, its restricted HNSW search. Ids without a
        vector are left out.
        """
        if within is not None and len(within) <= EXACT_WITHIN:
            return self._exact(vector, n, within)
        with self._call() as collection:
            got = self._nearest(collection, vector, n, within)
        ids = got["ids"][0]
        distances = got["distances"][0]
        vectors = got["embeddings"][0] if got.get("embeddings") is not None else [None] * len(ids)
        return [
            (item, 1.0 - float(distance), np.asarray(vec, dtype=np.float32))
            for item, distance, vec in zip(ids, distances, vectors, strict=True)
        ]

    def nearest_many(self, vectors: np.ndarray, n: int) -> list[list[tuple[str, float]]]:
        """For each row of ``vectors`` (unit length), its ``n`` nearest stored records as ``(id,
        cosine similarity)``, nearest first: one batched search of the whole index (approximate,
        as every unrestricted search here)."""
        if not len(vectors):
            return []
        rows = np.asarray(vectors, dtype=np.float32).reshape(len(vectors), -1)
        with self._call() as collection:
            size = collection.count()
            if not size:
                return [[] for _ in range(len(rows))]
            got = collection.query(query_embeddings=rows, n_results=max(1, min(n, size)), include=["distances"])
        return [[(item, 1.0 - float(distance)) for item, distance in zip(ids, distances, strict=True)]
                for ids, distances in zip(got["ids"], got["distances"], strict=True)]

    def _nearest(self, collection: Any, vector: np.ndarray, n: int, within: Sequence[str] | None) -> Any:
        """Chroma's query; ids of ``within`` that have no vector are dropped (Chroma refuses them)."""
        arguments = {"query_embeddings": np.asarray(vector, dtype=np.float32).reshape(1, -1),
                     "n_results": max(1, n), "include": ["distances", "embeddings"]}
        if within is None:
            return collection.query(**arguments)
        try:
            return collection.query(ids=list(within), **arguments)
        except _chroma_error() as exc:
            if "error finding id" not in str(exc).lower():
                raise
        present = self._present(collection, within)
        log.warning("%d of the %d records a filter allows have no vector; run `paperbot doctor`.",
                    len(within) - len(present), len(within))
        if not present:
            return {"ids": [[]], "distances": [[]], "embeddings": [[]]}
        return collection.query(ids=present, **arguments)

    @staticmethod
    def _present(collection: Any, ids: Sequence[str]) -> list[str]:
        found: set[str] = set()
        for start in range(0, len(ids), BATCH):
            found.update(collection.get(ids=list(ids[start : start + BATCH]), include=[])["ids"])
        return [item for item in ids if item in found]

    def _exact(self, vector: np.ndarray, n: int, ids: Sequence[str]) -> list[tuple[str, float, np.ndarray]]:
        """The ``n`` most similar of ``ids`` by exact cosine (vectors are unit length)."""
        stored = self.vectors(list(dict.fromkeys(ids)))
        if not stored:
            return []
        names = sorted(stored)  # ties go to the smaller id, whatever order Chroma returned
        matrix = np.stack([stored[name] for name in names])
        query = np.asarray(vector, dtype=np.float32).reshape(-1)
        similarities = matrix @ query
        order = np.argsort(-similarities, kind="stable")[: max(1, n)]
        return [(names[i], float(similarities[i]), matrix[i]) for i in order]
