"""Expert-finding arithmetic on real records with a given ranking (no model; see
test_with_index.py for the same over the real index)."""

from __future__ import annotations

from datetime import date

import pytest

from retrieval.results import SearchHit
from retrieval.scholars.collaborators import reason
from retrieval.scholars.expertise import (
    FIRST_AUTHOR_WEIGHT,
    LAST_AUTHOR_WEIGHT,
    OTHER_AUTHOR_WEIGHT,
    document_model_scores,
    position_weight,
    rank_relevance,
    recency_weight,
    single_best_scores,
)
from retrieval.scholars.people import PeopleDirectory
from tests.scholars.conftest import load_papers

TODAY = date(2025, 1, 1)


@pytest.fixture(scope="module")
def mlsys():
    papers = [p for p in load_papers("conference_authors_slice.jsonl") if (p.venue or "").startswith("MLSys")]
    return papers, PeopleDirectory(papers)


def _hits(papers, titles):
    by_start = [next(p for p in papers if p.title.startswith(t)) for t in titles]
    return [SearchHit(paper=p, score=1.0 - i / 100) for i, p in enumerate(by_start)]


def test_weights():
    assert rank_relevance(1) == 1.0 and rank_relevance(11) == pytest.approx(0.368, abs=1e-3)
    assert recency_weight(2025, TODAY) == 1.0
    assert recency_weight(2015, TODAY) == pytest.approx(0.625)
    assert recency_weight(1900, TODAY) == pytest.approx(0.5, abs=1e-6)
    assert recency_weight(None, TODAY) == 0.5


def test_positions(mlsys):
    papers, directory = mlsys
    paper = next(p for p in papers if p.title.startswith("Cuttlefish"))
    first, middle, last = (directory.person_at(paper.id, i) for i in (0, 4, len(paper.authors) - 1))
    assert [first.name, middle.name] == ["Hongyi Wang", "Eric Xing"]
    weights = [position_weight(p.mention_in(paper.id)) for p in (first, middle, last)]
    assert weights == [FIRST_AUTHOR_WEIGHT, OTHER_AUTHOR_WEIGHT, LAST_AUTHOR_WEIGHT]
    assert FIRST_AUTHOR_WEIGHT > LAST_AUTHOR_WEIGHT > OTHER_AUTHOR_WEIGHT


def test_three_good_papers_beat_the_single_top_hit(mlsys):
    papers, directory = mlsys
    # Eric Xing is a middle author of ranks 1-3; Yonghao Zhuang first author of rank 1
    hits = _hits(papers, [
        "On Optimizing the Communication of Model Parallelism",
        "Does Compressing Activations Help Model Parallel Training?",
        "Cuttlefish",
        "FedTree",
    ])
    ranked = document_model_scores(hits, directory, TODAY)
    baseline = single_best_scores(hits, directory, TODAY)
    xing = ranked[0]
    assert xing.person.name == "Eric Xing" and len(xing.evidence) == 3
    expected = sum(OTHER_AUTHOR_WEIGHT * rank_relevance(e.rank) * recency_weight(e.hit.paper.year, TODAY) for e in xing.evidence)
    assert xing.score == pytest.approx(expected)
    assert baseline[0].person.name == "Yonghao Zhuang"
    assert [e.person.name for e in baseline].index("Eric Xing") > 0
    zhuang = next(e for e in ranked if e.person.name == "Yonghao Zhuang")
    assert zhuang.score < xing.score


def test_many_weak_papers_do_not_beat_one_strong_one(mlsys):
    papers, directory = mlsys
    hits = _hits(papers, ["FedTree"]) + [
        SearchHit(paper=p, score=0.1) for p in papers if "Eric Xing" in p.author_names
    ]
    # Xing's three papers come after 1 strong hit, but push them down the ranking; the filler
    # holds no paper of a FedTree author (Bingsheng He's other MLSys papers are his: one person)
    fedtree = next(p for p in papers if p.title.startswith("FedTree"))
    filler = [SearchHit(paper=p, score=0.2) for p in papers
              if not ({"Eric Xing", *fedtree.author_names} & set(p.author_names))][:40]
    hits = hits[:1] + filler + hits[1:]
    ranked = document_model_scores(hits, directory, TODAY)
    first_fedtree_author = next(p for p in papers if p.title.startswith("FedTree")).author_names[0]
    assert ranked[0].person.name == first_fedtree_author
    xing = next(e for e in ranked if e.person.name == "Eric Xing")
    assert xing.score < 0.05 and xing.best_rank > 40


def test_reason_line(mlsys):
    papers, directory = mlsys
    hits = _hits(papers, ["On Optimizing the Communication", "Does Compressing Activations", "Cuttlefish"])
    ranked = {e.person.name: e for e in document_model_scores(hits, directory, TODAY)}
    assert reason(ranked["Eric Xing"], 150) == "3 papers among the 20 closest (best #1); latest 2024"
    assert reason(ranked["Hongyi Wang"], 150) == (
        "2 papers among the 20 closest (best #2); latest 2024; first author on 1"
    )
    assert reason(ranked["Hexu Zhao"], 150).endswith("last author on 1")
