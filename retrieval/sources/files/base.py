"""What every file parser returns, and the shared steps that turn raw fields into a ``Paper``.

A parser never raises for one bad item: it records a ``SkippedItem`` (what and why) and goes
on with the next one. Only a document that is unusable as a whole (unreadable file, hostile
XML, a JSON document that does not parse) raises ``ParseError``.

``build_paper`` is the single place where a parser's field dict becomes a validated ``Paper``
with its provenance. It also puts ``extra_fields`` into the one form the record keeps them in,
BibTeX source: the BibTeX reader keeps values as written, other parsers' plain text is escaped
(an ISSN or a RIS note "50% of cases" exports as valid LaTeX). A missing or empty title skips the item. An optional field that the
``Paper`` validators reject (say ``year = {in press}``) is dropped, the paper is kept and the
drop is reported in ``ParseOutcome.warnings``: the user learns about it and loses nothing
else.

Budgets: one file is read for at most ``MAX_ENTRIES_PER_FILE`` entries and
``MAX_SECONDS_PER_FILE`` seconds of CPU time (``FileBudget``, carried by each ``ParseOutcome``).
Every reader asks ``outcome.budget.take(item)`` before each entry and stops when it says no;
the budget then records one skipped item saying where reading stopped, why, and to split the
file. A file of tiny entries inside the size cap (150 MB of ``@misc{a,title={x}}`` is seven
million entries) so costs at most N entries of memory and a bounded time, not an afternoon. No
rule on the gzip compression ratio: a bibliography repeating one entry compresses a
thousandfold and is still legitimate, and the decompressed size is capped already
(``MAX_FILE_BYTES``); the two budgets bound what a small file can cost, whatever its ratio.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import date
from typing import Any, TypeVar

from pydantic import ValidationError

from retrieval.errors import ParseError
from retrieval.records.paper import Paper, Provenance, clean_authors, clean_text
from retrieval.results import SkippedItem
from retrieval.sources.markup.latex import text_to_latex

#: A single field longer than this skips its item ("absurd size"): no real title, abstract or
#: author list comes close, and it keeps one runaway value from swamping the index.
MAX_FIELD_CHARS = 100_000
#: A file larger than this (after decompression) is refused as a whole.
MAX_FILE_BYTES = 200 * 1024 * 1024
#: At most this many entries (good or broken) are read from one file; the rest are reported unread.
MAX_ENTRIES_PER_FILE = 200_000
#: CPU seconds (of the reading thread) one file may take; reading stops at the next entry.
MAX_SECONDS_PER_FILE = 120.0
#: The clock ``MAX_SECONDS_PER_FILE`` is counted on: CPU seconds of the reading thread.
cpu_seconds: Callable[[], float] = time.thread_time

# Paper fields whose value a source can supply; provenance lists the ones an item did supply
# (``authors_truncated`` is part of what "authors" supplied).
_SUPPLIABLE = tuple(name for name in Paper.model_fields if name not in {"provenance", "authors_truncated"})

# What holds no value. ``value or value not in _EMPTY`` tests it: a true value is none of these,
# so only false ones are compared (0 and False hold a value).
_EMPTY: tuple[object, ...] = (None, "", [], {})

RawItem = TypeVar("RawItem")
#: The reason an item whose values nest too deeply to walk is skipped.
NESTED_TOO_DEEPLY = "its values are nested too deeply to read"
#: The one source whose ``extra_fields`` are LaTeX already; other parsers give plain text.
BIBTEX_SOURCE = "bibtex"


class FileBudget:
    """How many entries of one file may still be read, and until when (CPU time of this thread).

    Built when a reader starts (``ParseOutcome`` makes one), from the module constants of that
    moment. ``take(item)`` counts one entry: False once the file holds more than ``limit``
    entries or its time is up; ``in_time(item)`` only checks the time (for a second pass over
    entries already counted). The first refusal adds one ``SkippedItem`` to the outcome's
    ``skipped`` naming ``item`` (where reading stopped), the reason and the remedy (split the file).
    """

    def __init__(self, skipped: list[SkippedItem], entries: int | None = None, seconds: float | None = None) -> None:
        self.limit = MAX_ENTRIES_PER_FILE if entries is None else entries
        self.seconds = MAX_SECONDS_PER_FILE if seconds is None else seconds
        self.deadline = cpu_seconds() + self.seconds
        self.used = 0
        self.full = False  # more than ``limit`` entries were asked for
        self.late = False  # the time ran out
        self._skipped = skipped
        self._notice: tuple[int, SkippedItem] | None = None  # the file's notice and its index in ``skipped``

    def take(self, item: str) -> bool:
        """Count ``item`` as one more entry of the file; False (reading must stop) when over budget."""
        if not self.full and self.used >= self.limit:
            self.full = True
            if not self.late:
                self._notice = self._stop(item, f"the file holds more than {self.limit:,} entries; only the "
                                                f"first {self.limit:,} were read: split it into files of at "
                                                f"most {self.limit:,} entries")
        if self.full or not self.in_time(item):
            return False
        self.used += 1
        return True

    def in_time(self, item: str) -> bool:
        """False (and reading must stop at ``item``) once the file's CPU time is up; counts nothing.

        Asked again after reading stopped, by the next pass of a reader over the entries it had
        collected (BibTeX, RIS), the time notice moves to ``item``: that pass stops there, earlier.
        A time-out in that pass replaces the entry-budget notice (fewer entries were read)."""
        if self.late:
            if self._notice is not None:
                self._notice = self._stop(item, self._notice[1].reason, at=self._notice[0])
        elif cpu_seconds() > self.deadline:
            self.late = True
            held = f" (it holds more than {self.limit:,} entries)" if self.full else ""
            self._notice = self._stop(item, f"reading the file took more than {self.seconds:g} s of CPU "
                                            f"time{held}; only the entries before this one were read: split "
                                            "it into smaller files", at=self._notice[0] if self._notice else None)
        return not self.late

    def _stop(self, item: str, reason: str, at: int | None = None) -> tuple[int, SkippedItem]:
        """Record (or, ``at`` an index of ``skipped``, replace) the one notice of the file."""
        notice = SkippedItem(f"{item} and every entry after it", reason)
        if at is None:
            at = len(self._skipped)
            self._skipped.append(notice)
        else:
            self._skipped[at] = notice
        return at, notice


@dataclass
class ParseOutcome:
    """The papers a document yielded and every item that was skipped, with the reason."""

    format: str  # a name of ``formats.FILE_FORMATS`` ("bibtex", "openalex", ...)
    papers: list[Paper] = field(default_factory=list)
    skipped: list[SkippedItem] = field(default_factory=list)
    # Items that were kept but lost an unusable optional field (e.g. a year that is no date).
    warnings: list[SkippedItem] = field(default_factory=list)
    # The reading budget of the document (file readers only; see ``FileBudget``).
    budget: FileBudget = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.budget = FileBudget(self.skipped)

    def add(self, other: ParseOutcome) -> None:
        """Append what ``other`` yielded (papers, skipped items, warnings) to this outcome: one
        item's parse (a provider's ``read_work``) collected into its document's outcome."""
        self.papers.extend(other.papers)
        self.skipped.extend(other.skipped)
        self.warnings.extend(other.warnings)

    @classmethod
    def of_items(cls, format: str, items: Iterable[RawItem], read: Callable[[RawItem, int], ParseOutcome]) -> ParseOutcome:
        """Every item read with ``read(item, position)`` (a provider's ``read_work``, positions from
        0) and collected: one API page, whose size the API bounds (file readers take ``budget``
        per item instead)."""
        outcome = cls(format=format)
        for position, item in enumerate(items):
            outcome.add(read(item, position))
        return outcome

    def only_paper(self, source: str) -> Paper:
        """The paper of one item's outcome; ``ParseError`` (of ``source``) naming the item and why
        it was skipped when there is none."""
        if not self.papers:
            skipped = self.skipped[0]
            raise ParseError(f"{skipped.item}: {skipped.reason}.", source=source, item=skipped.item)
        return self.papers[0]


class ItemRejected(Exception):
    """Internal signal: this item cannot become a paper; ``reason`` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def today_iso() -> str:
    """The ``retrieved`` date stamped on provenance of file ingests."""
    return date.today().isoformat()


# The file being read (its absolute path) while ``reading_file`` is in force: what an item's own
# provenance entry names (``Provenance.file``). None for API pages and text without a file.
_file_being_read: ContextVar[str | None] = ContextVar("file_being_read", default=None)


@contextmanager
def reading_file(file: str) -> Iterator[None]:
    """Within the block, every item's own provenance entry (``own_entry``) names ``file``; the
    entries an item carries (an exported record's) keep what they name."""
    token = _file_being_read.set(file)
    try:
        yield
    finally:
        _file_being_read.reset(token)


def own_entry(source: str, source_id: str | None, fields: list[str]) -> Provenance:
    """The provenance entry of the item being read: its source and key, the fields it supplied,
    today's date and, inside ``reading_file``, the file (when the item has a key: without one, the
    entry names nothing a later read could find again)."""
    return Provenance(source=source, source_id=source_id or None, fields=fields, retrieved=today_iso(),
                      file=_file_being_read.get() if source_id else None)


def summarize_validation_error(exc: ValidationError, limit: int = 3) -> str:
    """Pydantic's errors as one short line: "published: publication year 3020 is out of range"."""
    parts: list[str] = []
    for error in exc.errors()[:limit]:
        location = ".".join(str(part) for part in error.get("loc", ())) or "record"
        message = str(error.get("msg", "invalid")).removeprefix("Value error, ")
        parts.append(f"{location}: {message}")
    more = len(exc.errors()) - limit
    if more > 0:
        parts.append(f"and {more} more")
    return "; ".join(parts)


def check_field_sizes(fields: Mapping[str, Any], limit: int = MAX_FIELD_CHARS) -> None:
    """Reject an item whose any single text field is absurdly long."""
    for name, value in fields.items():
        if isinstance(value, str) and len(value) > limit:
            raise ItemRejected(f"field {name!r} exceeds {limit} characters")
        if isinstance(value, list):
            total = sum(len(str(item)) for item in value)
            if total > limit:
                raise ItemRejected(f"field {name!r} exceeds {limit} characters")


def person_name(family: str | None, given: str | None = None, suffix: str | None = None) -> str:
    """Display form "Given Family Suffix" from parts; any part may be missing."""
    parts = [clean_text(given), clean_text(family), clean_text(suffix)]
    return " ".join(part for part in parts if part)


def supplied_fields(paper: Paper) -> list[str]:
    """Names of the Paper fields that hold a value (what the item supplied)."""
    return [name for name in _SUPPLIABLE if (value := getattr(paper, name)) or value not in _EMPTY]


def _without_invalid(data: dict[str, Any], exc: ValidationError) -> dict[str, Any] | None:
    """``data`` minus the values pydantic rejected (one bad author, not all); None if fatal."""
    bad_fields: set[str] = set()
    bad_authors: set[int] = set()
    for error in exc.errors():
        loc = error.get("loc", ())
        if not loc or loc[0] == "title" or loc[0] not in data:
            return None
        if loc[0] == "authors" and len(loc) > 1 and isinstance(loc[1], int):
            bad_authors.add(loc[1])
        else:
            bad_fields.add(str(loc[0]))
    repaired = {key: value for key, value in data.items() if key not in bad_fields}
    if bad_authors and isinstance(repaired.get("authors"), list):
        # error positions count the authors that remain after cleaning (``Paper`` drops "et al.")
        authors, truncated = clean_authors(repaired["authors"])
        repaired["authors"] = [a for i, a in enumerate(authors) if i not in bad_authors]
        if truncated:
            repaired["authors_truncated"] = True
    return repaired


def build_paper(
    data: dict[str, Any],
    *,
    source: str,
    source_id: str | None,
    item: str,
    outcome: ParseOutcome,
) -> Paper | None:
    """Validate ``data`` into a Paper stamped with provenance, or record why it was skipped.

    Returns the paper (also appended to ``outcome.papers``) or None when skipped.
    """
    data = {key: value for key, value in data.items() if value or value not in _EMPTY}
    if source != BIBTEX_SOURCE and isinstance(data.get("extra_fields"), dict):
        data["extra_fields"] = {name: text_to_latex(clean_text(value)) for name, value in data["extra_fields"].items()
                                if isinstance(value, str)}
    if not clean_text(data.get("title") if isinstance(data.get("title"), str) else None):
        outcome.skipped.append(SkippedItem(item, "no title"))
        return None
    dropped: list[str] = []
    for _ in range(len(data) + 1):
        try:
            paper = Paper.model_validate(data)
        except ValidationError as exc:
            repaired = _without_invalid(data, exc)
            if repaired is None:
                outcome.skipped.append(SkippedItem(item, summarize_validation_error(exc)))
                return None
            dropped.append(summarize_validation_error(exc))
            data = repaired
            continue
        break
    else:  # pragma: no cover - each round removes at least one value, so this cannot loop on
        outcome.skipped.append(SkippedItem(item, "record could not be validated"))
        return None
    for reason in dropped:
        outcome.warnings.append(SkippedItem(item, f"dropped {reason}"))
    paper.provenance = [own_entry(source, source_id, supplied_fields(paper))]
    outcome.papers.append(paper)
    return paper


def build_item(
    fields_of: Callable[[RawItem], dict[str, Any]],
    raw: RawItem,
    *,
    source: str,
    source_id: str | None,
    item: str,
    outcome: ParseOutcome,
) -> Paper | None:
    """One parsed item to a paper: ``build_paper(fields_of(raw))``, or record why it was skipped.

    ``fields_of`` is the parser's own field mapping; the ``ItemRejected`` it raises becomes a
    ``SkippedItem`` with that reason. Returns the paper, or None when the item was skipped.
    """
    try:
        data = fields_of(raw)
        return build_paper(data, source=source, source_id=source_id, item=item, outcome=outcome)
    except ItemRejected as rejected:
        outcome.skipped.append(SkippedItem(item, rejected.reason))
    except RecursionError:  # a value nested thousands deep, walked by a mapping or a validator
        outcome.skipped.append(SkippedItem(item, NESTED_TOO_DEEPLY))
    return None


def json_object(value: Any) -> dict[str, Any]:
    """``value`` when the API sent an object there, else an empty one (schemas drift)."""
    return value if isinstance(value, dict) else {}


def json_array(value: Any) -> list[Any]:
    """``value`` when the API sent an array there, else an empty one."""
    return value if isinstance(value, list) else []
