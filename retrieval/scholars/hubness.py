"""How generic a paper is in the index's embedding space: its *hubness*, the mean cosine of its
stored vector with its ``HUB_NEIGHBOURS`` nearest other indexed papers.

    hubness(d) = mean of the cosines between d and its HUB_NEIGHBOURS nearest other indexed papers

A paper in a dense region of the index (a broad topic many papers touch) has a high hubness and
comes up, moderately close, for many unrelated queries; its authors then collect many moderate
matches. The expert ranking discounts each retrieved paper's score by its hubness (the paper side
of CSLS, Conneau et al., "Word translation without parallel data", ICLR 2018:
``retrieval.scholars.expertise.document_model_scores``). It is measured on the indexed papers
themselves, never on queries: the retrieved papers' stored vectors are read and their nearest
neighbours found by the vector index's own (approximate) search, one batched query per ranking,
so the cost follows the number of hits, not the size of the index.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from retrieval.errors import PaperbotError
from retrieval.scholars.clustering import Vectors

HUB_NEIGHBOURS = 10

# unit vectors (m, d), n -> for each, its n nearest indexed records as (id, cosine), nearest first
Neighbours = Callable[[np.ndarray, int], list[list[tuple[str, float]]]]


@runtime_checkable
class StoredNeighbours(Protocol):
    """An index that finds the stored records nearest given vectors (``PaperIndex.nearest_many``)."""

    def nearest_many(self, vectors: np.ndarray, n: int) -> list[list[tuple[str, float]]]: ...


def stored_neighbours_of(index: object) -> Neighbours | None:
    """The index's nearest-neighbour search over stored vectors, when it is a ``StoredNeighbours``;
    a vector store that fails gives no neighbours rather than an error (the ranking then goes
    without the discount)."""
    if not isinstance(index, StoredNeighbours):
        return None
    source = index

    def neighbours(vectors: np.ndarray, n: int) -> list[list[tuple[str, float]]]:
        try:
            return list(source.nearest_many(vectors, n))
        except PaperbotError:
            return []

    return neighbours


def paper_hubness(paper_ids: Sequence[str], vectors: Vectors, neighbours: Neighbours) -> dict[str, float]:
    """``hubness`` of each of ``paper_ids`` that has a stored vector and at least one other indexed
    paper near it (the others are left out: no discount); with fewer than ``HUB_NEIGHBOURS`` other
    papers in the index, the mean over those there are."""
    wanted = list(dict.fromkeys(paper_ids))
    stored = vectors(wanted) if wanted else {}
    ids = [paper_id for paper_id in wanted if stored.get(paper_id) is not None]
    if not ids:
        return {}
    matrix = np.stack([np.asarray(stored[paper_id], dtype=np.float32).reshape(-1) for paper_id in ids])
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    found = neighbours(matrix / np.where(norms > 0, norms, 1.0), HUB_NEIGHBOURS + 1)
    hubness: dict[str, float] = {}
    for paper_id, near in zip(ids, found, strict=False):
        others = [cosine for other, cosine in near if other != paper_id][:HUB_NEIGHBOURS]
        if others:
            hubness[paper_id] = float(np.mean(others))
    return hubness
