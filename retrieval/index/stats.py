"""What is indexed: counts by source and year (`paperbot stats`, the Slack App Home) and per
roster scholar."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from retrieval.records.names import names_compatible
from retrieval.records.paper import Paper
from retrieval.results import IndexStats, Scholar

if TYPE_CHECKING:
    from retrieval.index.paper_index import PaperIndex


def index_stats(index: PaperIndex, roster_size: int) -> IndexStats:
    """Papers, roster size, the last sync, and papers per source, per year and per file their
    entries were read from (each sorted)."""
    by_source: dict[str, int] = {}
    by_year: dict[int, int] = {}
    by_file: dict[str, int] = {}
    for paper in index.iter_papers():
        for source in paper.sources:
            by_source[source] = by_source.get(source, 0) + 1
        for file in {entry.file for entry in paper.provenance if entry.file}:
            by_file[file] = by_file.get(file, 0) + 1
        if paper.year is not None:
            by_year[paper.year] = by_year.get(paper.year, 0) + 1
    return IndexStats(
        papers=index.count(),
        scholars=roster_size,
        last_sync=index.store.get_meta("last_sync"),
        by_source=dict(sorted(by_source.items())),
        by_year=dict(sorted(by_year.items())),
        by_file=dict(sorted(by_file.items())),
    )


def papers_per_scholar(papers: Iterable[Paper], scholars: Sequence[Scholar]) -> dict[str, int]:
    """Per scholar, the papers with an author whose name agrees with the scholar's name or an alias."""
    counts = {scholar.name: 0 for scholar in scholars}
    if not scholars:
        return counts
    for paper in papers:
        for scholar in scholars:
            names = [scholar.name, *scholar.aliases]
            if any(names_compatible(a, n) for a in paper.author_names for n in names):
                counts[scholar.name] += 1
    return counts
