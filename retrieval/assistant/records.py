"""The indexed records read back (``Assistant.records``): by id, as BibTeX, all of them for an
export, counted, and the index's statistics. Reads only: nothing here takes the writer lock."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from retrieval.assistant.installation import Installation
from retrieval.records.paper import Paper
from retrieval.results import IndexStats


class Records:
    """What one installation's index holds."""

    def __init__(self, installation: Installation) -> None:
        self._installation = installation

    def papers(self, ids: Sequence[str]) -> list[Paper]:
        """The indexed records of ``ids``, in that order; ids not indexed are left out."""
        found = self._installation.index.get_many(list(ids))
        return [found[i] for i in ids if i in found]

    @staticmethod
    def to_bibtex(papers: Sequence[Paper]) -> str:
        """``papers`` as one BibTeX text (``retrieval.sources.files.bibtex_writer``)."""
        from retrieval.sources.files.bibtex_writer import to_bibtex

        return to_bibtex(papers)

    def export(self, fmt: str = "jsonl") -> Iterator[str]:
        """Every indexed record with its provenance: JSON lines, or one BibTeX text."""
        papers = self._installation.index.iter_papers()
        if fmt == "bibtex":
            yield self.to_bibtex(list(papers))
            return
        for paper in papers:
            yield paper.model_dump_json(exclude_none=True) + "\n"

    def count(self) -> int:
        """How many records are indexed."""
        return self._installation.index.count()

    def stats(self) -> IndexStats:
        """The index's statistics (``retrieval.index.stats``), with the roster's size."""
        from retrieval.index.stats import index_stats
        from retrieval.storage.roster import Roster

        return index_stats(self._installation.index, len(Roster.load(self._installation.settings).list()))

    def papers_per_scholar(self) -> dict[str, int]:
        """Per roster scholar, the indexed papers one of whose authors could be them (`paperbot stats`)."""
        from retrieval.index.stats import papers_per_scholar
        from retrieval.storage.roster import Roster

        scholars = Roster.load(self._installation.settings).list()
        return papers_per_scholar(self._installation.index.iter_papers() if scholars else iter(()), scholars)
