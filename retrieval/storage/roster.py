"""The scholar roster: the people whose publications paperbot keeps in sync.

Stored as JSON in ``<data dir>/roster.json``. Every change re-reads the file under an exclusive
lock and replaces it atomically (write to a temporary file in the same directory, fsync,
rename), so a crash never leaves half a roster and a sync that records its progress does not
erase a scholar added meanwhile from another process. A roster file that cannot be read is never
overwritten: the error names it and says how to fix it.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from pydantic import BaseModel, Field, ValidationError

from retrieval.config import Settings, unwritable_reason
from retrieval.errors import DataDirReadOnlyError, InputError, StorageError, UnknownScholarError
from retrieval.records.paper import clean_text, normalize_openalex_id, normalize_orcid
from retrieval.results import Scholar
from retrieval.storage.atomic import atomic_write_text
from retrieval.text import fold

try:  # POSIX advisory locks; elsewhere the atomic rename alone protects the file
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

ROSTER_FILE = "roster.json"
FORMAT_VERSION = 1
SOURCES = ("arxiv", "openalex", "crossref")


class _RosterFile(BaseModel):
    version: int = FORMAT_VERSION
    scholars: list[Scholar] = Field(default_factory=list)


def _check_orcid(value: str | None) -> str | None:
    if value is None or not value.strip():
        return None
    orcid = normalize_orcid(value)
    if orcid is None:
        raise InputError(
            f"{value!r} is not an ORCID.",
            hint="An ORCID looks like 0000-0002-1825-0097 (or https://orcid.org/0000-0002-1825-0097).",
        )
    return orcid


def _check_openalex_author(value: str | None) -> str | None:
    if value is None or not value.strip():
        return None
    openalex = normalize_openalex_id(value)
    if openalex is None or not openalex.startswith("A"):
        raise InputError(
            f"{value!r} is not an OpenAlex author id.",
            hint="An OpenAlex author id looks like A5023888391 (or https://openalex.org/A5023888391).",
        )
    return openalex


def roster_path(settings: Settings) -> Path:
    return settings.data_dir / ROSTER_FILE


class Roster:
    """The roster of one installation; every mutating call is persisted before it returns."""

    def __init__(self, path: Path, scholars: list[Scholar]) -> None:
        self.path = path
        self._scholars = scholars

    # --- persistence -----------------------------------------------------------------------

    @classmethod
    def load(cls, settings: Settings) -> Roster:
        """The roster in the settings' data dir (empty when no roster file exists yet)."""
        path = roster_path(settings)
        return cls(path, _read(path))

    @contextmanager
    def _locked(self) -> Iterator[list[Scholar]]:
        """Re-read under an exclusive lock, let the caller change the list, then save it atomically.

        A data dir this process cannot write is a ``DataDirReadOnlyError`` before anything is tried."""
        reason = unwritable_reason(self.path.parent)
        if reason is not None:
            raise DataDirReadOnlyError("change the roster", data_dir=str(self.path.parent), reason=reason)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            lock = open(self.path.with_name(self.path.name + ".lock"), "a+")  # noqa: SIM115
        except OSError as exc:
            raise StorageError(
                f"Cannot write the roster in {self.path.parent}: {exc.strerror or exc}.",
                hint="Check that PAPERBOT_DATA_DIR points to a writable directory.",
            ) from None
        with lock:
            if fcntl is not None:
                fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
            scholars = _read(self.path)
            yield scholars
            _write(self.path, scholars)
            self._scholars = scholars

    def reload(self) -> Roster:
        self._scholars = _read(self.path)
        return self

    # --- queries ---------------------------------------------------------------------------

    def list(self) -> list[Scholar]:
        """Every scholar, sorted by name."""
        return sorted(self._scholars, key=lambda scholar: fold(scholar.name))

    def find(self, query: str) -> Scholar | None:
        """The scholar with this name, alias, arXiv name, ORCID or OpenAlex id, or None."""
        for scholar in self._scholars:
            if scholar.matches(query):
                return scholar
        return None

    def get(self, query: str) -> Scholar:
        """Like ``find``, but an unknown name raises ``UnknownScholarError`` with suggestions."""
        scholar = self.find(query)
        if scholar is None:
            raise self._unknown(query)
        return scholar

    def __len__(self) -> int:
        return len(self._scholars)

    # --- changes ---------------------------------------------------------------------------

    def add(
        self,
        name: str,
        *,
        orcid: str | None = None,
        openalex_id: str | None = None,
        arxiv_name: str | None = None,
        aliases: Sequence[str] = (),
    ) -> Scholar:
        """Add a scholar; a name, alias or id already on the roster is an ``InputError``."""
        if not clean_text(name):
            raise InputError("The scholar's name is empty.", hint='Try: paperbot scholars add "Zhao Zhang"')
        scholar = Scholar(
            name=name,
            orcid=_check_orcid(orcid),
            openalex_id=_check_openalex_author(openalex_id),
            arxiv_name=clean_text(arxiv_name) or None,
            aliases=list(aliases),
        )
        with self._locked() as scholars:
            for existing in scholars:
                clash = _clash(existing, scholar)
                if clash:
                    raise InputError(
                        f"{clash} is already on the roster as {existing.name!r}.",
                        hint=f'Remove it first (paperbot scholars remove "{existing.name}") to re-add it differently.',
                    )
            scholars.append(scholar)
        return scholar

    def remove(self, name: str) -> Scholar:
        """Remove the scholar known by ``name`` (any of their names or ids)."""
        with self._locked() as scholars:
            for position, scholar in enumerate(scholars):
                if scholar.matches(name):
                    return scholars.pop(position)
            raise self._unknown(name, scholars)

    def mark_synced(self, name: str, source: str, when: str) -> None:
        """Record that ``source`` was fetched completely for this scholar up to ``when``."""
        self.update(name, lambda scholar: scholar.last_synced.__setitem__(source, when))

    def update(self, name: str, change: Callable[[Scholar], None]) -> Scholar:
        """Apply ``change`` to the scholar called ``name`` and persist it."""
        with self._locked() as scholars:
            for scholar in scholars:
                if scholar.matches(name):
                    change(scholar)
                    return scholar
            raise self._unknown(name, scholars)

    def _unknown(self, name: str, scholars: Sequence[Scholar] | None = None) -> UnknownScholarError:
        pool = scholars if scholars is not None else self._scholars
        names = [n for scholar in pool for n in scholar.names]
        by_fold = {fold(n): n for n in names}
        close = difflib.get_close_matches(fold(name), list(by_fold), n=3, cutoff=0.6)
        suggestions = list(dict.fromkeys(_owner(pool, by_fold[c]) for c in close))
        return UnknownScholarError(
            name,
            suggestions,
            message=f"{name!r} is not on the roster.",
            hint="See `paperbot scholars list`, or add them with `paperbot scholars add NAME`.",
        )


def _owner(scholars: Sequence[Scholar], name: str) -> str:
    for scholar in scholars:
        if name in scholar.names:
            return scholar.name
    return name


def _clash(existing: Scholar, new: Scholar) -> str | None:
    """What of ``new`` is already taken by ``existing`` (a name or an id), or None."""
    if new.orcid and new.orcid == existing.orcid:
        return f"ORCID {new.orcid}"
    if new.openalex_id and new.openalex_id == existing.openalex_id:
        return f"OpenAlex id {new.openalex_id}"
    taken = {fold(n) for n in existing.names}
    for name in new.names:
        if fold(name) in taken:
            return repr(name)
    return None


_LOADED: dict[Path, tuple[tuple[int, int], list[Scholar]]] = {}  # path -> (mtime_ns, size), scholars


def _current(path: Path) -> list[Scholar]:
    """The roster's scholars, re-read only when the file changed (searches consult it often)."""
    try:
        stat = path.stat()
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise StorageError(f"Cannot read the roster {path}: {exc.strerror or exc}.") from None
    signature = (stat.st_mtime_ns, stat.st_size)
    cached = _LOADED.get(path)
    if cached is None or cached[0] != signature:
        cached = (signature, _read(path))
        _LOADED[path] = cached
    return cached[1]


def names_of(settings: Settings, query: str) -> list[str]:
    """Every name the roster knows the scholar ``query`` by, or just ``[query]``.

    ``query`` may be any of the scholar's names, aliases, arXiv name, ORCID or OpenAlex id:
    an author filter "by Lenny Guo" then also selects the papers written as "Luanzheng Guo".
    """
    path = roster_path(settings)
    scholar = Roster(path, _current(path)).find(query)
    return scholar.names if scholar else [query]


def _read(path: Path) -> list[Scholar]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise StorageError(f"Cannot read the roster {path}: {exc.strerror or exc}.") from None
    try:
        return _RosterFile.model_validate(json.loads(text)).scholars
    except (json.JSONDecodeError, ValidationError) as exc:
        detail = exc.msg if isinstance(exc, json.JSONDecodeError) else exc.errors()[0]["msg"]
        raise StorageError(
            f"The roster {path} is damaged ({detail}); it was left untouched.",
            hint="Fix the JSON by hand, or move the file away to start an empty roster.",
        ) from None


def _write(path: Path, scholars: list[Scholar]) -> None:
    payload = _RosterFile(scholars=scholars).model_dump_json(indent=2)
    try:
        atomic_write_text(path, payload + "\n")
    except OSError as exc:
        raise StorageError(
            f"Cannot write the roster {path}: {exc.strerror or exc}; the previous roster is unchanged.",
            hint="Free some disk space or fix the directory's permissions, then retry.",
        ) from None
