"""What one API call delivered, as a value: the items, and what could not be used.

A client method returns one of these instead of leaving skip lists on the client, so each
call's report belongs to that call (two calls never mix or reset each other's):

- ``Fetched[T]``: a call answered at once (arXiv ids, an OpenAlex author search, one DOI):
  ``items``, ``skipped`` (items that could not become records, and ids the API did not know)
  and ``warnings`` (records kept without a value that could not be read);
- ``PaperStream``: a paged call (a search, an author's works). Pages are fetched as it is
  iterated, so a caller can index what arrived before a later page fails; ``skipped`` and
  ``warnings`` grow with each page and are complete once the iteration ends (or fails).
  ``collect()`` drains it into a ``Fetched``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from retrieval.records.paper import Paper
from retrieval.results import SkippedItem

T = TypeVar("T")


@dataclass
class Fetched(Generic[T]):
    """The items one API call delivered, the items it skipped and the values it dropped."""

    items: list[T] = field(default_factory=list)
    skipped: list[SkippedItem] = field(default_factory=list)
    warnings: list[SkippedItem] = field(default_factory=list)

    def __iter__(self) -> Iterator[T]:
        """The items, as a ``PaperStream`` iterates its papers."""
        return iter(self.items)


class PaperStream(Iterator[Paper]):
    """The papers of one paged API call, fetched page by page as they are iterated.

    ``pages(stream)`` is the client's generator: it yields papers and records each page's
    skipped items and warnings on ``stream``. It starts only when the stream is first iterated.
    """

    def __init__(self, pages: Callable[[PaperStream], Iterator[Paper]]) -> None:
        self.skipped: list[SkippedItem] = []
        self.warnings: list[SkippedItem] = []
        self._papers = pages(self)

    def __next__(self) -> Paper:
        return next(self._papers)

    def __iter__(self) -> PaperStream:
        return self

    def note(self, skipped: list[SkippedItem], warnings: list[SkippedItem]) -> None:
        """Record what one page could not use (the client calls this for each page read)."""
        self.skipped.extend(skipped)
        self.warnings.extend(warnings)

    def collect(self) -> Fetched[Paper]:
        """Every remaining paper and the whole call's skipped items and warnings; a page that
        fails raises (``SourceError``) as iterating would."""
        papers = list(self)
        return Fetched(papers, self.skipped, self.warnings)
