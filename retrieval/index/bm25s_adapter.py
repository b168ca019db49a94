"""What the lexical index needs of a ``bm25s.BM25`` beyond its public methods, in one module.

bm25s scores a corpus one document at a time inside ``BM25.index``; ``lexical.py`` computes the
same matrix for all documents at once (``term_counts.score_matrix``) and needs a retriever that
holds it, so that ``BM25.save`` writes, and ``BM25.load`` reads back, the files bm25s itself
would. bm25s has no constructor for that, so the matrix and vocabulary are set on the
retriever's attributes here; searching reads the same attributes (the CSC matrix whose column
``t`` lists the documents containing term ``t``). This module is the only one that knows those
attributes, so that a bm25s upgrade is reviewed here; ``tests/index/test_bm25_build_equivalence.py``
fails on a release whose retriever no longer matches: it compares everything a build leaves on
the retriever with what ``BM25.index`` leaves there, byte for byte.
"""

from __future__ import annotations

import numpy as np

from retrieval.index.bm25_library import bm25s
from retrieval.index.term_counts import TermPairs, score_matrix


def lucene_scoring(retriever: bm25s.BM25) -> bool:
    """Whether ``term_counts.score_matrix`` computes this retriever's scores (Lucene's formulas)."""
    return retriever.method == "lucene" and retriever.idf_method == "lucene"


def holding_scores(retriever: bm25s.BM25, numbering: dict[str, int], pairs: TermPairs) -> bm25s.BM25:
    """``retriever`` holding the scores of ``pairs``, whose terms ``numbering`` numbers 0, 1, ... in
    its order; ``numbering`` becomes the retriever's vocabulary (what ``BM25.index`` leaves)."""
    retriever.scores = score_matrix(pairs, len(numbering), retriever.k1, retriever.b)
    retriever.nonoccurrence_array = None
    if "" not in numbering:
        numbering[""] = len(numbering)  # bm25s' empty token, outside the matrix
    retriever.vocab_dict = numbering
    retriever.unique_token_ids_set = set(numbering.values())
    return retriever


def vocabulary(retriever: bm25s.BM25) -> dict[str, int]:
    """Each indexed token's column in the score matrix."""
    vocab: dict[str, int] = retriever.vocab_dict
    return vocab


def score_columns(retriever: bm25s.BM25) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The score matrix in CSC form: ``(data, indices, indptr)``; column ``t``'s documents are
    ``indices[indptr[t]:indptr[t + 1]]``, their scores the same slice of ``data``."""
    matrix = retriever.scores
    return matrix["data"], matrix["indices"], matrix["indptr"]
