"""A DOI or arXiv id a file gives to two different papers never merges or overwrites them.

Real publication lists copy entries: one al-folio file gives "Elastic CRFs for Open-Ontology
Slot Filling" and "Improved Learning of Word Embeddings ..." the same ``arxiv = {1811.01331}``.
Whether the two arrive in one ingest or in two, both papers stay in the index, the first one
keeps the id and the user is told which entry lost it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from retrieval.index.paper_index import PaperIndex
from retrieval.ingest.pipeline import ingest_papers
from retrieval.records.paper import Paper

from .conftest import HashEncoder, make_settings

ELASTIC = Paper(title="Elastic CRFs for Open-Ontology Slot Filling", arxiv_id="1811.01331", published="2021",
                authors=[{"name": "Yinpei Dai"}], venue="Applied Sciences")
WORD_EMBEDDINGS = Paper(title="Improved Learning of Word Embeddings with Word Definitions and Semantic Injection",
                        arxiv_id="1811.01331", published="2020", authors=[{"name": "Yichi Zhang"}], venue="INTERSPEECH")


@pytest.mark.parametrize("together", [True, False], ids=["one ingest", "two ingests"])
def test_both_papers_are_kept_and_the_first_keeps_the_id(tmp_path: Path, together: bool) -> None:
    index = PaperIndex.open(make_settings(tmp_path / "data"), HashEncoder())
    try:
        if together:
            reports = [ingest_papers(index, [ELASTIC, WORD_EMBEDDINGS])]
        else:
            reports = [ingest_papers(index, [ELASTIC]), ingest_papers(index, [WORD_EMBEDDINGS])]
        stored = {paper.title: paper for paper in index.store.iter_papers()}
        assert set(stored) == {ELASTIC.title, WORD_EMBEDDINGS.title}
        assert stored[ELASTIC.title].id == "arxiv:1811.01331" and stored[ELASTIC.title].venue == "Applied Sciences"
        moved = stored[WORD_EMBEDDINGS.title]
        assert moved.id.startswith("hash:") and moved.arxiv_id is None and moved.venue == "INTERSPEECH"
        warnings = [w for report in reports for w in report.warnings]
        assert len(warnings) == 1 and "has the arxiv 1811.01331 of another paper" in warnings[0].reason
        assert "Elastic CRFs" in warnings[0].reason
        # a re-ingest changes nothing and warns again
        again = ingest_papers(index, [WORD_EMBEDDINGS])
        assert again.unchanged == [moved.id] and len(again.warnings) == 1
    finally:
        index.close()
