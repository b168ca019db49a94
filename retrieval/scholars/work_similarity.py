"""How close a person's body of indexed work is to a query: their papers' stored vectors
against the query's vector (nothing is encoded but the query, and that by the search itself).

    work_similarity(p) = mean of the WORK_PAPERS highest cosines between the query and p's
                         indexed papers, a missing paper (p has fewer) counting 0

It reads *all* of a person's indexed papers, retrieved or not, so it separates the person whose
work is about the topic (several close papers) from a co-author whose one paper is: a person with
one paper at cosine 0.7 has 0.14, one with five papers at 0.5 has 0.5. It is not the share of a
person's papers that are close (a broad expert is not penalised for also working on other
topics), nor the centroid of all their papers. How it enters the ranking and why five:
``retrieval.scholars.expertise.with_work_similarity``, ``docs/scholars.md``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from retrieval.scholars.clustering import Vectors
from retrieval.scholars.people import Person

WORK_PAPERS = 5


def work_similarity(cosines: Iterable[float], papers: int = WORK_PAPERS) -> float:
    """Mean of the ``papers`` highest of ``cosines``, missing ones and negative cosines counting
    0: in [0, max(cosines)], and never more when a paper is added that is farther than those."""
    best = sorted((max(0.0, float(c)) for c in cosines), reverse=True)[:papers]
    return sum(best) / papers


def work_similarities(people: Sequence[Person], query_vector: np.ndarray, vectors: Vectors) -> dict[str, float]:
    """``work_similarity`` of each of ``people`` by key, their papers' vectors read in one lookup.

    A paper without a stored vector counts as missing. ``query_vector`` and the stored vectors
    are unit length (the index's), so their dot product is the cosine.
    """
    wanted = list(dict.fromkeys(paper_id for person in people for paper_id in person.paper_ids))
    stored = vectors(wanted) if wanted else {}
    query = np.asarray(query_vector, dtype=np.float32).reshape(-1)
    cosine = {paper_id: float(np.asarray(vector, dtype=np.float32) @ query) for paper_id, vector in stored.items()}
    return {
        person.key: work_similarity(cosine[paper_id] for paper_id in person.paper_ids if paper_id in cosine)
        for person in people
    }
