"""How close a person's whole indexed work is to the topic (``retrieval.scholars.work_similarity``)
and how it enters the ranking (``expertise.with_work_similarity``, ``collaborators.rank_experts``):
made-up papers and vectors with chosen cosines to the query, no model."""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import date

import numpy as np
import pytest

from retrieval.records.paper import Author, Paper
from retrieval.results import SearchHit
from retrieval.scholars.collaborators import WORK_DEPTH, rank_experts
from retrieval.scholars.expertise import WORK_WEIGHT, document_model_scores, with_work_similarity
from retrieval.scholars.people import PeopleDirectory
from retrieval.scholars.work_similarity import WORK_PAPERS, work_similarities, work_similarity

TODAY = date(2025, 1, 1)
DIMENSION = 512
QUERY = np.eye(DIMENSION, dtype=np.float32)[0]


class Stored:
    """Stored vectors by paper id, each at a chosen cosine to ``QUERY``; counts the lookups."""

    def __init__(self) -> None:
        self.vectors: dict[str, np.ndarray] = {}
        self.lookups: list[list[str]] = []

    def put(self, paper: Paper, cosine: float) -> Paper:
        vector = np.zeros(DIMENSION, dtype=np.float32)
        vector[0] = cosine
        vector[1 + len(self.vectors)] = math.sqrt(1 - cosine**2)  # its own direction: unit length
        self.vectors[paper.id] = vector
        return paper

    def __call__(self, ids: list[str]) -> Mapping[str, np.ndarray]:
        self.lookups.append(ids)
        return {i: self.vectors[i] for i in ids if i in self.vectors}


def _paper(title: str, *authors: str) -> Paper:
    return Paper(title=title, published="2024", venue="Made-up Proceedings", authors=[Author(name=a) for a in authors])


def _names(ranked) -> list[str]:
    return [e.person.name for e in ranked]


# --- the measure --------------------------------------------------------------------------------


def test_fewer_close_papers_than_five_count_as_zero():
    assert WORK_PAPERS == 5
    assert work_similarity([]) == 0.0
    assert work_similarity([0.7]) == pytest.approx(0.14)  # one paper on the topic
    assert work_similarity([0.5] * 5) == pytest.approx(0.5)  # a body of work near it
    assert work_similarity([0.5] * 40) == pytest.approx(0.5)  # only the five closest count
    assert work_similarity([0.6, -0.3]) == pytest.approx(0.12)  # a paper pointing away is no paper


def test_it_never_exceeds_the_closest_paper_and_a_farther_paper_never_lowers_it():
    cosines = [0.62, 0.41, 0.33]
    assert work_similarity(cosines) <= max(cosines)
    for farther in (0.3, 0.1, 0.0):
        assert work_similarity([*cosines, farther]) >= work_similarity(cosines)
    assert work_similarity([0.5] * 5 + [0.1]) == work_similarity([0.5] * 5)


def test_all_indexed_papers_count_in_one_lookup_and_a_missing_vector_is_no_paper():
    stored = Stored()
    papers = [stored.put(_paper(f"On the topic, part {i}", "Ada Body"), 0.6) for i in range(4)]
    papers.append(_paper("Not yet embedded", "Ada Body"))  # no stored vector
    papers.append(stored.put(_paper("Same topic, with Ada", "Cy Coauthor", "Ada Body"), 0.7))
    people = PeopleDirectory(papers)
    ada, cy = (people.compatible_with(name)[0] for name in ("Ada Body", "Cy Coauthor"))
    found = work_similarities([ada, cy], QUERY, stored)
    assert found[ada.key] == pytest.approx((0.7 + 4 * 0.6) / 5)
    assert found[cy.key] == pytest.approx(0.7 / 5)
    assert len(stored.lookups) == 1 and sorted(stored.lookups[0]) == sorted(p.id for p in papers)


# --- in the ranking -----------------------------------------------------------------------------


def _crowded() -> tuple[list[SearchHit], PeopleDirectory, Stored]:
    """The top hit is a paper by four people with nothing else indexed; Ada Body wrote the next
    one and four more close papers that were not retrieved."""
    stored = Stored()
    top = stored.put(_paper("Hand pose without annotation", "Bo One", "Di Two", "Ed Three", "Flo Four"), 0.7)
    hers = stored.put(_paper("Pose estimation from synthetic hands", "Ada Body"), 0.62)
    others = [stored.put(_paper(f"Hands and bodies, part {i}", "Ada Body"), 0.6) for i in range(4)]
    hits = [SearchHit(paper=top, score=0.62), SearchHit(paper=hers, score=0.55)]
    return hits, PeopleDirectory([top, hers, *others]), stored


def test_a_body_of_work_beats_the_coauthors_of_one_top_paper():
    hits, people, stored = _crowded()
    alone = document_model_scores(hits, people, TODAY)
    assert _names(alone)[:4] == ["Bo One", "Di Two", "Ed Three", "Flo Four"]  # the crowd of one paper
    ranked = rank_experts(hits, people, TODAY, query_vector=QUERY, vectors=stored)
    assert _names(ranked)[0] == "Ada Body"
    ada = ranked[0]
    before = next(e for e in alone if e.person.key == ada.person.key)
    assert ada.work_similarity is not None and ada.work_similarity == pytest.approx((0.62 + 4 * 0.6) / 5)
    assert ada.score == pytest.approx(before.score * math.exp(WORK_WEIGHT * ada.work_similarity))
    assert len({e.score for e in ranked[1:]}) == 1  # the four still alike among themselves


def test_many_papers_farther_from_the_topic_do_not_outweigh_two_on_it():
    """Issue #27's "mixture-of-experts" case with vectors: a prolific neighbour with forty papers
    at cosine 0.5 gains more from the factor than the specialist with two at 0.77, but not
    enough to pass them."""
    stored = Stored()
    top = [stored.put(_paper(f"Mixture-of-experts inference on GPUs, part {i}", "Ada Strong"), 0.77) for i in range(2)]
    far = [stored.put(_paper(f"Variational inference, variant {i}", "Hub Many"), 0.5) for i in range(40)]
    hits = [SearchHit(paper=p, score=0.77 - i / 100) for i, p in enumerate(top)]
    hits += [SearchHit(paper=p, score=0.5 - i / 1000) for i, p in enumerate(far)]
    ranked = rank_experts(hits, PeopleDirectory(top + far), TODAY, query_vector=QUERY, vectors=stored)
    assert _names(ranked) == ["Ada Strong", "Hub Many"]
    strong, many = (e.work_similarity for e in ranked)
    assert strong is not None and many is not None and many > strong


def test_only_the_people_measured_are_reordered_and_nothing_is_changed_in_place():
    hits, people, _ = _crowded()
    alone = document_model_scores(hits, people, TODAY)
    scores = [e.score for e in alone]
    ada = next(e.person.key for e in alone if e.person.name == "Ada Body")
    last_two = [e.person.key for e in alone if e.person.key != ada][-2:]
    similarity = {e.person.key: 0.5 for e in alone if e.person.key not in last_two}
    reranked = with_work_similarity(alone, similarity)
    assert [e.person.key for e in reranked][-2:] == last_two  # unmeasured: after, in their order
    assert all(e.work_similarity is None for e in reranked[-2:])
    assert [e.score for e in alone] == scores and all(e.work_similarity is None for e in alone)


def test_rank_experts_excludes_and_falls_back_to_the_document_model():
    hits, people, stored = _crowded()
    alone = document_model_scores(hits, people, TODAY)
    plain = rank_experts(hits, people, TODAY, query_vector=None, vectors=stored)
    assert [e.person.key for e in plain] == [e.person.key for e in alone]
    assert rank_experts(hits, people, TODAY, query_vector=QUERY, vectors=None)[0].person.name == "Bo One"
    ada = next(e.person.key for e in alone if e.person.name == "Ada Body")
    without = rank_experts(hits, people, TODAY, query_vector=QUERY, vectors=stored, excluded={ada})
    assert ada not in {e.person.key for e in without} and len(without) == len(alone) - 1


def test_only_the_first_work_depth_people_are_measured():
    stored = Stored()
    papers = [stored.put(_paper(f"Paper {i}", f"Author Number{i:03d}"), 0.5) for i in range(WORK_DEPTH + 5)]
    hits = [SearchHit(paper=p, score=0.8 - i / 1000) for i, p in enumerate(papers)]
    ranked = rank_experts(hits, PeopleDirectory(papers), TODAY, query_vector=QUERY, vectors=stored)
    assert sum(e.work_similarity is not None for e in ranked) == WORK_DEPTH
    assert all(e.work_similarity is None for e in ranked[WORK_DEPTH:])
    assert len(stored.lookups) == 1 and len(stored.lookups[0]) == WORK_DEPTH
