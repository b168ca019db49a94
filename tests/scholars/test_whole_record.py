"""A whole-record summary of a prolific scholar (records made here): every theme, every paper."""

from __future__ import annotations

import re
from datetime import date

import numpy as np

from retrieval.records.paper import Author, Paper
from retrieval.results import ScholarSummaryResult
from retrieval.scholars.people import PeopleDirectory
from retrieval.scholars.summary import build_summary, summarize_scholar
from retrieval.scholars.themes import OTHER_LABEL, TermStats
from tests.scholars.conftest import PaperList

# (phrase every title of the topic carries, words its titles and abstracts draw from, papers)
TOPICS = (
    ("glacier hydrology", "meltwater moraine crevasse firn ablation icefield", 80),
    ("protein folding", "chaperone peptide residue helix misfolding amyloid", 70),
    ("byzantine consensus", "quorum validator replica ledger gossip leader", 60),
    ("coral bleaching", "reef symbiont zooxanthellae lagoon atoll polyp", 50),
    ("medieval palaeography", "scribe parchment minuscule codex manuscript ligature", 40),
    ("tidal turbines", "rotor blade cavitation estuary mooring nacelle", 30),
)
TODAY = date(2026, 12, 1)


def prolific_scholar() -> tuple[list[Paper], dict[str, np.ndarray]]:
    """330 papers of "Ada Synthe" in six topics of distinct sizes, 2000-2024, with embeddings
    that point one way per topic."""
    rng = np.random.default_rng(5)
    papers: list[Paper] = []
    vectors: dict[str, np.ndarray] = {}
    for k, (phrase, words, count) in enumerate(TOPICS):
        pool = words.split()
        for i in range(count):
            a, b = pool[i % len(pool)], pool[(i // len(pool) + 1 + i) % len(pool)]
            paper = Paper(
                title=f"{phrase.capitalize()}: {a} and {b}, part {k}-{i}",
                abstract=f"We study {phrase} through {a} and {b} in the field. The {a} measurements "
                f"of {phrase} show how {b} changes over the seasons of observation.",
                published=str(2000 + (i * 7 + k) % 25),
                doi=f"10.5555/synthe.{k}.{i}",
                authors=[Author(name="Ada Synthe"), Author(name=f"Coauthor {phrase.title()}")],
            )
            papers.append(paper)
            direction = np.eye(8)[k] + rng.normal(scale=0.05, size=8)
            vectors[paper.id] = direction / np.linalg.norm(direction)
    return papers, vectors


def _check_every_theme_and_paper(result: ScholarSummaryResult, papers: list[Paper]) -> None:
    assert result.paper_count == len(papers) == 330
    head, *lines = result.summary.splitlines()
    assert head == "Recent work of Ada Synthe: 330 papers since 1900, published 2000–2024, in 4 themes:"
    # the four largest topics are themes of their own, the two smallest "Other topics", in that order
    assert len(lines) == len(result.themes) == 5
    for line, (phrase, _, count) in zip(lines, TOPICS[:4], strict=False):
        assert line.lower().startswith(f"- {phrase}") and f": {count} papers on {phrase}" in line.lower()
    assert lines[4].startswith(f"- {OTHER_LABEL}: 70 papers on various topics (2000–2024)")
    # every paper of the window cited exactly once, and listed
    cited = [int(n) for line in lines for n in re.findall(r"\[(\d+)\]", line.split(" From the abstract")[0])]
    assert sorted(cited) == list(range(1, 331))
    assert sorted(c.n for c in result.papers) == sorted(cited) and len({c.id for c in result.papers}) == 330
    assert sum(n for t in result.timeline for n in t.counts_by_year.values()) == 330


def test_a_whole_record_by_embeddings_has_every_theme_and_every_paper() -> None:
    papers, vectors = prolific_scholar()
    directory = PeopleDirectory(papers)
    person = directory.compatible_with("Ada Synthe")[0]
    result = build_summary(directory, person, today=TODAY, since=1900, background=TermStats.from_papers(papers),
                           vectors=vectors)
    _check_every_theme_and_paper(result, papers)


def test_a_whole_record_by_shared_terms_has_every_theme_and_every_paper(settings) -> None:
    papers, _ = prolific_scholar()
    result = summarize_scholar(PaperList(papers), settings, "Ada Synthe", since=1900, today=TODAY,
                               directory=PeopleDirectory(papers))
    assert isinstance(result, ScholarSummaryResult)
    _check_every_theme_and_paper(result, papers)
