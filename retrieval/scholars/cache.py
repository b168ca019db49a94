"""The people of an index and its background term statistics, built once per index state.

Grouping every author mention into people (``PeopleDirectory``) and counting the term
statistics themes are weighed against (``TermStats``) take about a second each on a few
hundred records, and every ``paperbot summarize`` needs both. Each is kept twice: in this
process, per index state (the Slack bot asks many times), and on disk, as JSON under
``<data dir>/cache/scholars/``, for the next process.

A file is used only when it was written for the same index state (the record store's path,
content ``digest`` and ``meta`` values: its write ``generation``, the encoder of the stored
vectors, pending migrations) by the same code (``FORMAT_VERSION`` and a digest of the source
of the modules that build it, ``code_version``). Every write to the index bumps the
generation, so the next read rebuilds. Anything else (another state, another version, a corrupt
or foreign file) is rebuilt and replaced atomically; a corrupt or foreign file is logged. A
grouping made while some stored vector could not be read is kept in this process only: it
lacks topic evidence that the next process may have.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import logging
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any
from weakref import WeakKeyDictionary

import numpy as np

from retrieval.records.paper import Paper
from retrieval.scholars.clustering import Vectors
from retrieval.scholars.people import Claim, Group, PeopleDirectory, stored_vectors_of
from retrieval.scholars.themes import TermStats
from retrieval.storage.atomic import atomic_write_text

log = logging.getLogger(__name__)

FORMAT_VERSION = 1
CACHE_FOLDER = "scholars"  # under ``Settings.cache_dir``
PEOPLE_BUILDERS = ("retrieval.scholars.people", "retrieval.scholars.clustering")
TERMS_BUILDERS = ("retrieval.scholars.themes",)
_MEMORY_SIZE = 2


class CorruptCache(ValueError):
    """A cache file that is not one of ours, or not whole."""


# --- what a cache file is valid for ----------------------------------------------------------


def _generation(index: Any) -> tuple[str, int] | None:
    """(which store, its write counter) when the index exposes one, else None."""
    source: Any = index
    counter: Callable[[], int] | None = getattr(index, "generation", None)
    if not callable(counter):
        source = getattr(index, "store", None)
        counter = getattr(source, "generation", None)
    if not callable(counter):
        return None
    return str(getattr(source, "path", id(source))), int(counter())


def index_state(index: Any) -> dict[str, Any] | None:
    """What a file derived from ``index`` is valid for, or None when the index has no record
    store to tell (nothing is kept on disk then)."""
    store: Any = getattr(index, "store", None)
    if not all(callable(getattr(store, name, None)) for name in ("digest", "meta")):
        return None
    where = str(Path(store.path).resolve()) if store.path is not None else str(store.where)
    return {"store": where, "digest": str(store.digest()), "meta": dict(store.meta())}


def _retrieval_owners(module: ModuleType) -> set[str]:
    """``module`` and every ``retrieval`` module it takes names from."""
    owners = {module.__name__}
    for value in vars(module).values():
        owner = value.__name__ if isinstance(value, ModuleType) else getattr(value, "__module__", None)
        if isinstance(owner, str) and owner.startswith("retrieval."):
            owners.add(owner)
    return owners


def _library_versions(module: ModuleType) -> set[str]:
    """``name==version`` of the libraries ``module`` imports (numpy, PyStemmer)."""
    found: set[str] = set()
    for value in vars(module).values():
        if isinstance(value, ModuleType) and not value.__name__.startswith("retrieval"):
            version = getattr(value, "__version__", None)
            file = getattr(value, "__file__", None)
            if not isinstance(version, str) and file:  # no version string (PyStemmer): its installed file
                stat = Path(file).stat()
                version = f"{stat.st_size}:{stat.st_mtime_ns}"
            if isinstance(version, str):
                found.add(f"{value.__name__}=={version}")
    return found


@cache
def code_version(modules: tuple[str, ...]) -> str:
    """Digest of ``FORMAT_VERSION``, of the source the named modules build with (theirs and that
    of the ``retrieval`` modules they take names from) and of the versions of the libraries
    those import: a file made by other code is never read as ours, even when nobody remembered
    to bump the version."""
    names = {owner for name in modules for owner in _retrieval_owners(importlib.import_module(name))}
    loaded = [sys.modules[name] for name in sorted(names) if name in sys.modules]
    digest = hashlib.sha256(f"format {FORMAT_VERSION}".encode())
    for module in loaded:
        file = getattr(module, "__file__", None)
        digest.update(f"\0{module.__name__}\0".encode())
        if file:
            digest.update(Path(file).read_bytes())
    digest.update(" ".join(sorted({v for module in loaded for v in _library_versions(module)})).encode())
    return digest.hexdigest()[:20]


# --- reading and writing ---------------------------------------------------------------------


def _header(kind: str, builders: tuple[str, ...], state: Mapping[str, Any], **key: Any) -> dict[str, Any]:
    return {"kind": kind, "format": FORMAT_VERSION, "code": code_version(builders), "state": dict(state), **key}


def _read(path: Path, expected: Mapping[str, Any]) -> dict[str, Any] | None:
    """The file's content when it was written for ``expected``; None (logged) otherwise."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        log.warning("Ignoring the unreadable cache file %s (%s): rebuilding it.", path, exc)
        return None
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if not isinstance(data, dict) or data.get("kind") != expected["kind"] or "format" not in data:
        log.warning("Ignoring the cache file %s: not a paperbot %s cache, or not whole. Rebuilding it.",
                    path, expected["kind"])
        return None
    if data.get("format") != expected["format"] or data.get("code") != expected["code"]:
        log.info("The cache file %s was written by another version of paperbot: rebuilding it.", path)
        return None
    if any(data.get(name) != value for name, value in expected.items()):
        log.info("The cache file %s is for another state of the index: rebuilding it.", path)
        return None
    return data


def _write(path: Path, data: Mapping[str, Any]) -> None:
    """Replace ``path`` atomically; a cache that cannot be written is only logged."""
    try:
        atomic_write_text(path, json.dumps(data, separators=(",", ":")), durable=False)
    except OSError as exc:
        log.info("Could not write the cache file %s (%s): it is rebuilt next time.", path, exc)


# --- the people of an index ------------------------------------------------------------------

_directories: OrderedDict[tuple[Any, ...], PeopleDirectory] = OrderedDict()
_directories_lock = threading.Lock()


def _claims_key(claims: Sequence[Claim]) -> list[list[Any]]:
    return [[c.name, list(c.names), c.orcid, c.openalex_id] for c in claims]


def _groups_from(raw: Any, papers: Mapping[str, Paper]) -> list[Group]:
    """The groups of a cache file, checked to place every author slot of ``papers`` once."""
    if not isinstance(raw, list):
        raise CorruptCache("groups is not a list")
    groups: list[Group] = []
    placed: set[tuple[str, int]] = set()
    for item in raw:
        family, slots, claimed_by, ids = item
        group = Group(str(family), tuple((str(p), int(n)) for p, n in slots),
                      None if claimed_by is None else str(claimed_by), tuple((str(k), str(v)) for k, v in ids))
        for paper_id, position in group.slots:
            paper = papers.get(paper_id)
            if paper is None or not 0 <= position < len(paper.authors) or (paper_id, position) in placed:
                raise CorruptCache(f"slot {paper_id}#{position} is not an author slot, or placed twice")
            placed.add((paper_id, position))
        if not group.slots:
            raise CorruptCache("a person without mentions")
        groups.append(group)
    if len(placed) != sum(len(p.authors) for p in papers.values()):
        raise CorruptCache("some author slots are not placed")
    return groups


def _groups_json(groups: Iterable[Group]) -> list[list[Any]]:
    return [[g.family, [list(s) for s in g.slots], g.claimed_by, [list(i) for i in g.ids]] for g in groups]


class _Watched:
    """A vector lookup that notes whether every vector asked for was found."""

    def __init__(self, lookup: Vectors) -> None:
        self._lookup = lookup
        self.complete = True

    def __call__(self, ids: list[str]) -> Mapping[str, np.ndarray]:
        found = self._lookup(ids)
        if any(i not in found for i in ids):
            self.complete = False
        return found


# The index state each directory was built at: its term statistics are filed under the same state
# (no second scan of the store, and a write in between cannot label them with a later state).
_built_at: WeakKeyDictionary[PeopleDirectory, dict[str, Any]] = WeakKeyDictionary()


def _load_or_build(index: Any, claims: Sequence[Claim], clustering: str, cache_dir: Path | None) -> PeopleDirectory:
    state = index_state(index) if cache_dir is not None else None
    directory = _directory_from(index, claims, clustering, cache_dir, state)
    if state is not None:
        _built_at[directory] = state
    return directory


def _directory_from(index: Any, claims: Sequence[Claim], clustering: str, cache_dir: Path | None,
                    state: dict[str, Any] | None) -> PeopleDirectory:
    lookup = stored_vectors_of(index)
    if state is None or cache_dir is None:
        return PeopleDirectory(index.iter_papers(), clustering=clustering, vectors=lookup, claims=claims)
    path = cache_dir / CACHE_FOLDER / f"people-{clustering}.json"
    expected = _header("people", PEOPLE_BUILDERS, state, clustering=clustering, claims=_claims_key(claims))
    papers: dict[str, Paper] = {}
    for paper in index.iter_papers():
        papers.setdefault(paper.id, paper)
    data = _read(path, expected)
    if data is not None:
        try:
            groups = _groups_from(data.get("groups"), papers)
        except (CorruptCache, TypeError, ValueError) as exc:
            log.warning("Ignoring the cache file %s (%s): rebuilding it.", path, exc)
        else:
            return PeopleDirectory(papers.values(), clustering=clustering, groups=groups)
    watched = _Watched(lookup) if lookup is not None else None
    directory = PeopleDirectory(papers.values(), clustering=clustering, vectors=watched, claims=claims)
    if watched is None or watched.complete:
        _write(path, {**expected, "groups": _groups_json(directory.groups)})
    return directory


def directory_for(
    index: Any, claims: Sequence[Claim] = (), clustering: str = "evidence", *, cache_dir: Path | None = None
) -> PeopleDirectory:
    """The people of everything ``index.iter_papers()`` yields, rebuilt only after a write.

    Kept per store generation and roster claims in this process, and, with ``cache_dir``
    (``Settings.cache_dir``), in a file there for other processes (see the module docstring).
    Indexes without a record store are grouped afresh. Topic evidence comes from the vectors
    the index stores.
    """
    generation = _generation(index)
    if generation is None:
        return PeopleDirectory(index.iter_papers(), clustering=clustering, vectors=stored_vectors_of(index),
                               claims=claims)
    key = (*generation, clustering, tuple(claims))
    with _directories_lock:
        cached = _directories.get(key)
        if cached is None:
            cached = _load_or_build(index, claims, clustering, cache_dir)
            _directories[key] = cached
            while len(_directories) > _MEMORY_SIZE:
                _directories.popitem(last=False)
        _directories.move_to_end(key)
        return cached


# --- background term statistics --------------------------------------------------------------

_backgrounds: WeakKeyDictionary[PeopleDirectory, TermStats] = WeakKeyDictionary()
_backgrounds_lock = threading.Lock()


def _load_or_count(directory: PeopleDirectory, index: Any, cache_dir: Path | None) -> TermStats:
    state = (_built_at.get(directory) or index_state(index)) if cache_dir is not None else None
    if state is None or cache_dir is None:
        return TermStats.from_papers(directory.papers.values())
    path = cache_dir / CACHE_FOLDER / "term-stats.json"
    expected = _header("term-stats", TERMS_BUILDERS, state)
    data = _read(path, expected)
    if data is not None:
        df, n = data.get("df"), data.get("n")
        if not isinstance(df, dict) or not all(isinstance(v, int) for v in df.values()) or n != len(directory.papers):
            log.warning("Ignoring the cache file %s (not the statistics of %d papers): rebuilding it.",
                        path, len(directory.papers))
        else:
            return TermStats(df=df, n=n)
    stats = TermStats.from_papers(directory.papers.values())
    _write(path, {**expected, "n": stats.n, "df": dict(stats.df)})
    return stats


def background_of(directory: PeopleDirectory, index: Any = None, *, cache_dir: Path | None = None) -> TermStats:
    """Term statistics of every paper of ``directory``, kept with it in this process (directories
    are rebuilt, not changed, when the index changes).

    With ``index`` and ``cache_dir``, for a ``directory`` that is ``directory_for(index)``'s,
    also kept in a file there for other processes.
    """
    with _backgrounds_lock:
        stats = _backgrounds.get(directory)
        if stats is None:
            stats = _load_or_count(directory, index, cache_dir)
            _backgrounds[directory] = stats
        return stats
