"""A paper's hubness (``retrieval.scholars.hubness``) and its discount in the document model
(``expertise.document_model_scores``) and in ``rank_experts``: made-up papers and vectors, no
model; the nearest-neighbour search of the real vector store (``DenseStore.nearest_many``)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date

import numpy as np
import pytest

from retrieval.records.paper import Author, Paper
from retrieval.results import SearchHit
from retrieval.scholars.collaborators import rank_experts
from retrieval.scholars.expertise import HUB_WEIGHT, document_model_scores
from retrieval.scholars.hubness import HUB_NEIGHBOURS, paper_hubness, stored_neighbours_of
from retrieval.scholars.people import PeopleDirectory

TODAY = date(2025, 1, 1)
DIMENSION = 64


def _paper(title: str, *authors: str) -> Paper:
    return Paper(title=title, published="2024", venue="Made-up Proceedings", authors=[Author(name=a) for a in authors])


def _unit(*weights: tuple[int, float]) -> np.ndarray:
    vector = np.zeros(DIMENSION, dtype=np.float32)
    for axis, value in weights:
        vector[axis] = value
    return vector / np.linalg.norm(vector)


class Stored:
    """Stored vectors by paper id; counts the lookups."""

    def __init__(self, vectors: dict[str, np.ndarray]) -> None:
        self.vectors = vectors
        self.lookups = 0

    def __call__(self, ids: list[str]) -> Mapping[str, np.ndarray]:
        self.lookups += 1
        return {i: self.vectors[i] for i in ids if i in self.vectors}


class Exact:
    """The nearest stored vectors by exact cosine: what the vector index's search approximates."""

    def __init__(self, stored: Stored) -> None:
        self.stored = stored
        self.calls: list[int] = []

    def __call__(self, vectors: np.ndarray, n: int) -> list[list[tuple[str, float]]]:
        self.calls.append(len(vectors))
        ids = sorted(self.stored.vectors)
        matrix = np.stack([self.stored.vectors[i] for i in ids])
        out = []
        for row in vectors @ matrix.T:
            order = np.argsort(-row, kind="stable")[:n]
            out.append([(ids[k], float(row[k])) for k in order])
        return out


def _crowd() -> tuple[list[Paper], Stored]:
    """A crowded topic (axis 0, twelve papers, each with a little of its own direction), one
    isolated paper (its own axis) and one paper without a stored vector."""
    crowd = [_paper(f"Crowded topic, part {i}", f"Author {i}") for i in range(12)]
    lonely = _paper("A topic of its own", "Lone Writer")
    unseen = _paper("Not yet embedded", "Lone Writer")
    vectors = {p.id: _unit((0, 1.0), (1 + i, 0.3)) for i, p in enumerate(crowd)}
    vectors[lonely.id] = _unit((40, 1.0))
    return [*crowd, lonely, unseen], Stored(vectors)


def test_a_paper_in_a_crowded_region_is_a_hub_and_its_own_vector_is_no_neighbour():
    assert HUB_NEIGHBOURS == 10
    papers, stored = _crowd()
    crowd, lonely, unseen = papers[:12], papers[12], papers[13]
    neighbours = Exact(stored)
    hubness = paper_hubness([crowd[0].id, lonely.id, unseen.id, crowd[0].id], stored, neighbours)
    assert set(hubness) == {crowd[0].id, lonely.id}  # no stored vector, no hubness
    cosine = 1.0 / (1.0 + 0.3**2)  # between two papers of the crowd
    assert hubness[crowd[0].id] == pytest.approx(cosine, abs=1e-5)  # not 1: itself is left out
    assert hubness[lonely.id] == pytest.approx(0.0, abs=1e-6)
    assert neighbours.calls == [2]  # one batched search for all the papers asked (each once)


def test_fewer_papers_than_neighbours_and_an_index_with_nothing_else():
    papers = [_paper("One", "A Writer"), _paper("Two", "B Writer")]
    stored = Stored({papers[0].id: _unit((0, 1.0)), papers[1].id: _unit((0, 0.6), (1, 0.8))})
    hubness = paper_hubness([p.id for p in papers], stored, Exact(stored))
    assert hubness == pytest.approx({papers[0].id: 0.6, papers[1].id: 0.6})
    alone = Stored({papers[0].id: _unit((0, 1.0))})
    assert paper_hubness([papers[0].id], alone, Exact(alone)) == {}
    assert paper_hubness([], stored, Exact(stored)) == {}


def test_rank_experts_discounts_hubs_only_with_neighbours():
    papers, stored = _crowd()
    crowd, lonely = papers[:12], papers[12]
    # the crowd's paper a little above the lonely one: without the discount its author leads
    hits = [SearchHit(paper=crowd[0], score=0.60), SearchHit(paper=lonely, score=0.58)]
    directory = PeopleDirectory(papers)
    plain = rank_experts(hits, directory, TODAY, query_vector=None, vectors=stored)
    assert plain[0].person.name == "Author 0"
    discounted = rank_experts(hits, directory, TODAY, query_vector=None, vectors=stored, neighbours=Exact(stored))
    assert discounted[0].person.name == "Lone Writer"


def test_the_vector_store_finds_the_same_neighbours(tmp_path):
    from retrieval.config import Settings
    from retrieval.index.dense import DenseStore

    papers, stored = _crowd()
    store = DenseStore(Settings(_env_file=None, data_dir=tmp_path, chroma_url=None))
    ids = sorted(stored.vectors)
    store.upsert(ids, np.stack([stored.vectors[i] for i in ids]), [{"embedding_hash": i} for i in ids])
    neighbours = stored_neighbours_of(store)  # a DenseStore answers as an index does
    assert neighbours is not None
    asked = [papers[0].id, papers[12].id]
    assert paper_hubness(asked, stored, neighbours) == pytest.approx(paper_hubness(asked, stored, Exact(stored)),
                                                                    abs=1e-5)
    assert store.nearest_many(np.zeros((0, DIMENSION), dtype=np.float32), 3) == []
    store.close()


def test_a_hub_paper_counts_as_a_hit_scoring_less():
    hub = _paper("Generic methods paper", "Hub Author")
    specific = _paper("Specific paper", "Niche Author")
    hits = [SearchHit(paper=hub, score=0.60), SearchHit(paper=specific, score=0.58)]
    directory = PeopleDirectory([hub, specific])
    assert [e.person.name for e in document_model_scores(hits, directory, TODAY)] == ["Hub Author", "Niche Author"]
    hubness = {hub.id: 0.7, specific.id: 0.4}
    ranked = document_model_scores(hits, directory, TODAY, hubness)
    assert [e.person.name for e in ranked] == ["Niche Author", "Hub Author"]
    # the best discounted hit has relevance 1; the other is relative to it
    assert HUB_WEIGHT == 0.3
    discounted = {hub.id: 0.60 - 0.3 * 0.7, specific.id: 0.58 - 0.3 * 0.4}
    best = max(discounted.values())
    assert ranked[0].evidence[0].contribution / ranked[1].evidence[0].contribution == pytest.approx(
        np.exp((best - discounted[hub.id]) / 0.1), rel=1e-6)
