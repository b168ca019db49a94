"""The scholar roster: the people whose publications paperbot keeps in sync.

Stored in the database (``storage.database``: the ``scholars`` table, SQLite in the data dir or
PostgreSQL), one row per scholar in the order they were added. Every change is one write
transaction that re-reads the roster under the database's writer lock, so two processes adding
at once both land and a sync that records its progress does not erase a scholar added meanwhile.
A data dir made before the database had ``roster.json``: the first upgrade imports it
(``storage.legacy``; the file stays, no longer read). A read-only data dir that was never
upgraded is read from that file, and refuses changes (``DataDirReadOnlyError``).

SQLAlchemy is imported when the roster is first read or changed, not with this module, and not
at all for a data dir without a roster (no database, no ``roster.json``): opening the index binds
``names_of``, and ``summarize`` loads the roster, without paying for it there.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from retrieval.config import Settings
from retrieval.errors import InputError, StorageError, UnknownScholarError
from retrieval.records.paper import clean_text, normalize_openalex_id, normalize_orcid
from retrieval.results import Scholar
from retrieval.storage.legacy import ROSTER_FILE, read_roster
from retrieval.text import fold

if TYPE_CHECKING:
    from sqlalchemy import Connection

    from retrieval.storage.database import Database

SOURCES = ("arxiv", "openalex", "crossref")
_CHANGE = "change the roster"
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


class Roster:
    """The roster of one installation; every change is committed before it returns."""

    def __init__(self, settings: Settings, scholars: list[Scholar]) -> None:
        self.settings = settings
        self._scholars = scholars

    # --- persistence -----------------------------------------------------------------------

    @classmethod
    def load(cls, settings: Settings) -> Roster:
        """The roster of these settings' database (upgraded first if it is behind); empty, without
        opening anything, for a data dir that has neither a database nor a ``roster.json``."""
        return cls(settings, [] if _nothing_stored(settings) else _read(_open_database(settings)))

    @property
    def database(self) -> Database:
        """The database the roster is in (opened, and upgraded if behind, on first use)."""
        return _open_database(self.settings)

    def reload(self) -> Roster:
        self._scholars = _read(self.database)
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
        from retrieval.storage.schema import scholars as table

        with self.database.writing(_CHANGE) as connection:
            rows = _rows(connection)
            for existing in rows.values():
                clash = _clash(existing, scholar)
                if clash:
                    raise InputError(
                        f"{clash} is already on the roster as {existing.name!r}.",
                        hint=f'Remove it first (paperbot scholars remove "{existing.name}") to re-add it differently.',
                    )
            connection.execute(table.insert().values(_columns(scholar)))
        self._scholars = [*rows.values(), scholar]
        return scholar

    def remove(self, name: str) -> Scholar:
        """Remove the scholar known by ``name`` (any of their names or ids)."""
        from retrieval.storage.schema import scholars as table

        with self.database.writing(_CHANGE) as connection:
            rows = _rows(connection)
            found = next(((row_id, scholar) for row_id, scholar in rows.items() if scholar.matches(name)), None)
            if found is None:
                raise self._unknown(name, list(rows.values()))
            connection.execute(table.delete().where(table.c.id == found[0]))
        self._scholars = [scholar for row_id, scholar in rows.items() if row_id != found[0]]
        return found[1]

    def mark_synced(self, name: str, source: str, when: str) -> None:
        """Record that ``source`` was fetched completely for this scholar up to ``when``."""
        self.update(name, lambda scholar: scholar.last_synced.__setitem__(source, when))

    def update(self, name: str, change: Callable[[Scholar], None]) -> Scholar:
        """Apply ``change`` to the scholar called ``name`` and persist it."""
        from retrieval.storage.schema import scholars as table

        with self.database.writing(_CHANGE) as connection:
            rows = _rows(connection)
            found = next(((row_id, scholar) for row_id, scholar in rows.items() if scholar.matches(name)), None)
            if found is None:
                raise self._unknown(name, list(rows.values()))
            row_id, scholar = found
            change(scholar)
            connection.execute(table.update().where(table.c.id == row_id).values(_columns(scholar)))
        self._scholars = list(rows.values())
        return scholar

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


def names_of(settings: Settings, query: str) -> list[str]:
    """Every name the roster knows the scholar ``query`` by, or just ``[query]``.

    ``query`` may be any of the scholar's names, aliases, arXiv name, ORCID or OpenAlex id:
    an author filter "by Lenny Guo" then also selects the papers written as "Luanzheng Guo".
    A data dir with neither a database nor a ``roster.json`` has no roster: a search there
    creates no database and imports no SQLAlchemy.
    """
    if _nothing_stored(settings):
        return [query]
    scholar = Roster.load(settings).find(query)
    return scholar.names if scholar else [query]


def _nothing_stored(settings: Settings) -> bool:
    """True when no roster can exist yet: SQLite in the data dir, no database file, no ``roster.json``."""
    return (settings.database_url is None and not settings.database_path.exists()
            and not (settings.data_dir / ROSTER_FILE).exists())


def _open_database(settings: Settings) -> Database:
    """``storage.database.open_database``, imported on first use (see the module docstring)."""
    from retrieval.storage.database import open_database

    return open_database(settings)


def _read(database: Database) -> list[Scholar]:
    """The scholars in the order they were added; from ``roster.json`` for a read-only data dir
    whose database was never upgraded to this code's schema."""
    from retrieval.storage.schema import HEAD

    if database.read_only is not None and database.revision() != HEAD:
        return read_roster(database.data_dir / ROSTER_FILE)
    with database.reading("read the roster") as connection:
        return list(_rows(connection).values())


def _rows(connection: Connection) -> dict[int, Scholar]:
    """Every scholar by row id, in the order they were added; a row that is no scholar (changed
    by hand) is a ``StorageError`` naming it."""
    from retrieval.storage.schema import scholars as table

    found = {}
    for row in connection.execute(table.select().order_by(table.c.id)).mappings():
        try:
            found[row["id"]] = Scholar.model_validate({key: value for key, value in row.items() if key != "id"})
        except ValidationError as exc:
            raise StorageError(f"The roster in the database is damaged: row {row['id']} of the scholars table "
                               f"({row['name']!r}) is not a scholar ({exc.errors()[0]['msg']}).",
                               hint="Correct or delete that row (docs/postgres.md), then run the command again.") from None
    return found


def _columns(scholar: Scholar) -> dict[str, Any]:
    """The ``scholars`` row of ``scholar`` (every field of the model is a column)."""
    return scholar.model_dump(mode="json")
