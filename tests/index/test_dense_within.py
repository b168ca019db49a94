"""Filters reach Chroma as the ids they allow: exact scoring of a few, Chroma's restricted search
of many, the same answer either way, and nothing but vectors and their text hash stored.

Real Chroma (embedded, and a ``chroma run`` server in the slow run), hash-seeded unit vectors.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

import numpy as np
import pytest

import retrieval.index.dense as dense_module
from retrieval.index.dense import DenseStore, record_metadata
from retrieval.index.paper_index import PaperIndex
from retrieval.records.paper import Author, Paper
from retrieval.results import SearchFilters

from .conftest import HashEncoder

RECORDS = 60
FAMILIES = ("Lovelace", "Turing", "Hopper", "Noether", "Curie", "Gauss", "Euler")


def _papers() -> list[Paper]:
    return [Paper(title=f"Study number {n} of sparse solvers", year=2000 + n % 20, venue=f"Venue {n % 3}",
                  authors=[Author(name=f"Alice {FAMILIES[n % 7]}"), Author(name="Bob Common")],
                  doi=f"10.1000/within.{n}")
            for n in range(RECORDS)]


@pytest.fixture
def dense(index_settings) -> Iterator[DenseStore]:
    store = DenseStore(index_settings)
    papers = _papers()
    store.upsert([p.id for p in papers], HashEncoder().encode([p.title for p in papers]),
                 [record_metadata(p) for p in papers])
    yield store
    store.close()


def _brute_force(dense: DenseStore, query: np.ndarray, ids: list[str], n: int) -> list[str]:
    stored = dense.vectors(ids)
    ranked = sorted(stored, key=lambda item: (-float(stored[item] @ query), item))
    return ranked[:n]


@pytest.mark.parametrize("exact_within", [0, 10_000], ids=["chroma-restricted", "exact"])
def test_both_paths_give_the_exact_ranking_of_the_allowed_ids(dense, monkeypatch, exact_within):
    monkeypatch.setattr(dense_module, "EXACT_WITHIN", exact_within)
    query = HashEncoder().encode(["sparse solvers"])[0]
    ids = [p.id for p in _papers()]
    for allowed in (ids[:1], ids[5:25], ids[::2], ids[1:]):
        hits = dense.query(query, 8, allowed)
        assert [item for item, _, _ in hits] == _brute_force(dense, query, allowed, 8)
        for item, similarity, vector in hits:
            assert item in allowed and similarity == pytest.approx(float(vector @ query), abs=1e-5)


@pytest.mark.parametrize("exact_within", [0, 10_000], ids=["chroma-restricted", "exact"])
def test_allowed_ids_without_a_vector_are_left_out(dense, monkeypatch, caplog, exact_within):
    monkeypatch.setattr(dense_module, "EXACT_WITHIN", exact_within)
    query = HashEncoder().encode(["sparse solvers"])[0]
    ids = [p.id for p in _papers()][:10]
    with caplog.at_level(logging.WARNING, logger="retrieval.index.dense"):
        hits = dense.query(query, 20, [*ids, "doi:10.1000/no-vector"])
    assert sorted(item for item, _, _ in hits) == sorted(ids)
    if exact_within == 0:  # Chroma refuses an unknown id: the query is retried without it, and said so
        assert "1 of the 11 records a filter allows have no vector" in caplog.text
    assert dense.query(query, 5, ["doi:10.1000/no-vector"]) == []
    assert dense.query(query, 5, []) == []


def test_chroma_stores_only_the_text_hash_and_legacy_metadata_is_ignored(index_settings):
    """Filters come from the record store's fields, never from Chroma: an index written by an
    older paperbot (title, year, authors, venue in Chroma) answers exactly as a new one."""
    papers = _papers()
    index = PaperIndex.open(index_settings, HashEncoder())
    try:
        index.upsert(papers)
        with index.dense._call() as collection:
            stored = collection.get(ids=[papers[0].id], include=["metadatas"])["metadatas"][0]
        assert stored == {"embedding_hash": papers[0].embedding_hash}

        questions = [("sparse solvers", SearchFilters(authors=["A. Noether"])),
                     ("sparse solvers", SearchFilters(since=2015, venue="Venue 1")),
                     ("study number", SearchFilters(until=2004, authors=["Bob Common"])),
                     ("sparse solvers", SearchFilters(authors=["Bob Common"]))]  # allows every record

        def answers() -> list[list[str]]:
            return [[hit.paper.id for hit in index.search(text, k=10, filters=filters)]
                    for text, filters in questions]

        before = answers()
        for hits, (_, filters) in zip(before, questions, strict=True):
            assert hits and set(hits) <= {p.id for p in index.matching_papers(filters)}
        legacy = [{"title": "misleading", "year": 1900, "authors": ["nobody"], "venue": "nowhere",
                   "embedding_hash": p.embedding_hash} for p in papers]
        index.dense.upsert([p.id for p in papers], _vectors_in_order(index, papers), legacy)
        assert answers() == before
    finally:
        index.close()


def _vectors_in_order(index: PaperIndex, papers: list[Paper]) -> np.ndarray:
    stored = index.dense.vectors([p.id for p in papers])
    return np.stack([stored[p.id] for p in papers])


def test_vectors_asked_twice_are_read_once(dense: DenseStore) -> None:
    ids = [p.id for p in _papers()[:3]]
    stored = dense.vectors([*ids, ids[0], ids[1]])  # Chroma itself refuses a get naming an id twice
    assert sorted(stored) == sorted(ids)
