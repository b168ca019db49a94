"""Expert-finding arithmetic (``retrieval.scholars.expertise``) on given rankings, no model: real
records of the conference slice, and small made-up lists where the property is the point."""

from __future__ import annotations

import math
from datetime import date

import pytest

from retrieval.records.paper import Author, Paper
from retrieval.results import SearchHit
from retrieval.scholars.expertise import (
    FIRST_AUTHOR_WEIGHT,
    LAST_AUTHOR_WEIGHT,
    NEXT_PAPER_FACTOR,
    OTHER_AUTHOR_WEIGHT,
    SCORE_SCALE,
    document_model_scores,
    position_weight,
    rank_relevance,
    rank_sum_scores,
    recency_weight,
    saturating_sum,
    score_relevance,
    single_best_scores,
)
from retrieval.scholars.people import PeopleDirectory
from tests.scholars.conftest import ranked_hits

TODAY = date(2025, 1, 1)


def _paper(title: str, *authors: str) -> Paper:
    return Paper(title=title, published="2024", venue="Made-up Proceedings", authors=[Author(name=a) for a in authors])


def _hits(scored: list[tuple[Paper, float]]) -> tuple[list[SearchHit], PeopleDirectory]:
    """Hits in the given order with the given scores, and the people of their papers."""
    return [SearchHit(paper=p, score=s) for p, s in scored], PeopleDirectory([p for p, _ in scored])


def _names(ranked) -> list[str]:
    return [e.person.name for e in ranked]


# --- the pieces ---------------------------------------------------------------------------------


def test_weights():
    assert rank_relevance(1) == 1.0 and rank_relevance(11) == pytest.approx(0.368, abs=1e-3)
    assert recency_weight(2025, TODAY) == 1.0
    assert recency_weight(2015, TODAY) == pytest.approx(0.625)
    assert recency_weight(1900, TODAY) == pytest.approx(0.5, abs=1e-6)
    assert recency_weight(None, TODAY) == 0.5


def test_relevance_is_relative_to_the_best_hit():
    assert score_relevance(0.79, 0.79) == 1.0 and score_relevance(0.9, 0.79) == 1.0
    assert score_relevance(0.79 - SCORE_SCALE, 0.79) == pytest.approx(math.exp(-1))
    # a 0.37 match next to a 0.79 one adds next to nothing; the same 0.37 as the best counts fully
    assert score_relevance(0.37, 0.79) < 0.02 and score_relevance(0.37, 0.37) == 1.0


def test_the_sum_saturates():
    assert saturating_sum([]) == 0.0
    assert saturating_sum([0.5, 1.0]) == pytest.approx(1.0 + 0.5 * NEXT_PAPER_FACTOR)  # strongest first
    many = saturating_sum([1.0] * 200)
    assert 5.0 < many < 1 / (1 - NEXT_PAPER_FACTOR)
    assert saturating_sum([1.0, 1.0]) > saturating_sum([1.0])  # a second strong paper still counts


def test_positions(mlsys):
    papers, directory = mlsys
    paper = next(p for p in papers if p.title.startswith("Cuttlefish"))
    first, middle, last = (directory.person_at(paper.id, i) for i in (0, 4, len(paper.authors) - 1))
    assert [first.name, middle.name] == ["Hongyi Wang", "Eric Xing"]
    weights = [position_weight(p.mention_in(paper.id)) for p in (first, middle, last)]
    assert weights == [FIRST_AUTHOR_WEIGHT, OTHER_AUTHOR_WEIGHT, LAST_AUTHOR_WEIGHT]
    assert FIRST_AUTHOR_WEIGHT > LAST_AUTHOR_WEIGHT > OTHER_AUTHOR_WEIGHT


# --- the ranking --------------------------------------------------------------------------------


def test_two_strong_specific_papers_beat_three_weak_ones():
    """Issue #27's "neologisms" case: two papers exactly on the topic (0.79) against three that
    merely share its field (0.35-0.38) and rank right after them. The previous sum over ranks put
    the three weak ones first."""
    hits, people = _hits([
        (_paper("Where new words are born", "Ada Strong", "Ben Other"), 0.79),
        (_paper("From sunblock to softblock: neologisms", "Ada Strong", "Cy Else"), 0.78),
        (_paper("A survey on evaluating language models", "Wes Weak"), 0.38),
        (_paper("Prompting with negative emotions", "Wes Weak"), 0.36),
        (_paper("An interactive evaluation of knowledge", "Wes Weak"), 0.35),
    ])
    ranked = document_model_scores(hits, people, TODAY)
    assert _names(ranked)[0] == "Ada Strong"
    assert _names(ranked).index("Wes Weak") > _names(ranked).index("Ada Strong")
    strong, weak = (next(e for e in ranked if e.person.name == n) for n in ("Ada Strong", "Wes Weak"))
    assert weak.score < 0.1 * strong.score
    assert [round(e.hit.score, 2) for e in strong.evidence] == [0.79, 0.78]  # strongest first
    assert _names(rank_sum_scores(hits, people, TODAY))[0] == "Wes Weak"


def test_many_papers_well_below_the_best_do_not_outweigh_two_at_the_top():
    top = [(_paper(f"Mixture-of-experts inference on GPUs, part {i}", "Ada Strong"), 0.77 - i / 100) for i in range(2)]
    far = [(_paper(f"Variational inference, variant {i}", "Hub Many"), 0.5 - i / 1000) for i in range(40)]
    hits, people = _hits(top + far)
    ranked = document_model_scores(hits, people, TODAY)
    assert _names(ranked)[:2] == ["Ada Strong", "Hub Many"]
    assert _names(rank_sum_scores(hits, people, TODAY))[0] == "Hub Many"


def test_several_strong_papers_beat_one_top_hit(mlsys):
    papers, directory = mlsys
    # Eric Xing is a middle author of ranks 1-3; Yonghao Zhuang first author of rank 1
    hits = ranked_hits(papers, [
        "On Optimizing the Communication of Model Parallelism",
        "Does Compressing Activations Help Model Parallel Training?",
        "Cuttlefish",
        "FedTree",
    ])
    ranked = document_model_scores(hits, directory, TODAY)
    baseline = single_best_scores(hits, directory, TODAY)
    xing = ranked[0]
    assert xing.person.name == "Eric Xing" and len(xing.evidence) == 3
    best = hits[0].score
    expected = saturating_sum(score_relevance(e.hit.score, best) * recency_weight(e.hit.paper.year, TODAY)
                              for e in xing.evidence)
    assert xing.score == pytest.approx(expected)
    assert baseline[0].person.name == "Yonghao Zhuang"
    assert [e.person.name for e in baseline].index("Eric Xing") > 0
    zhuang = next(e for e in ranked if e.person.name == "Yonghao Zhuang")
    assert zhuang.score < xing.score


def test_many_weak_papers_do_not_beat_one_strong_one(mlsys):
    papers, directory = mlsys
    hits = ranked_hits(papers, ["FedTree"]) + [
        SearchHit(paper=p, score=0.1) for p in papers if "Eric Xing" in p.author_names
    ]
    # Xing's three papers come after 1 strong hit, but push them down the ranking; the filler
    # holds no paper of a FedTree author (Bingsheng He's other MLSys papers are his: one person)
    fedtree = next(p for p in papers if p.title.startswith("FedTree"))
    filler = [SearchHit(paper=p, score=0.2) for p in papers
              if not ({"Eric Xing", *fedtree.author_names} & set(p.author_names))][:40]
    hits = hits[:1] + filler + hits[1:]
    ranked = document_model_scores(hits, directory, TODAY)
    assert ranked[0].person.name in fedtree.author_names  # every author of the one strong paper alike
    xing = next(e for e in ranked if e.person.name == "Eric Xing")
    assert xing.score < 0.05 and xing.best_rank > 40


def test_every_author_counts_alike_and_ties_go_to_more_indexed_papers():
    shared = _paper("Optical interconnects for training", "Zed First", "Amy Middle", "Lu Last")
    elsewhere = _paper("Crop rotation in the Neolithic", "Amy Middle")  # not retrieved
    hits = [SearchHit(paper=shared, score=0.6)]
    people = PeopleDirectory([shared, elsewhere])
    ranked = document_model_scores(hits, people, TODAY)
    assert len({e.score for e in ranked}) == 1  # first, middle and last author: one weight
    assert _names(ranked) == ["Amy Middle", "Lu Last", "Zed First"]  # then by name
