"""The BM25 build's own matrix code and the tokeniser's fast paths give what the general code gives.

``lexical._bm25_index`` scores a corpus in numpy instead of calling ``bm25s.BM25.index``:
its vocabulary (in order), arrays (dtype and bytes) and other attributes must be bm25s' own,
or a rebuilt index would rank differently from one built before. ``bm25_tokens`` takes a
word cache and, for ASCII text, a split instead of its word pattern: both must give the tokens
of the general formula (find words, drop short words and stopwords, ``stem_words``).
"""

from __future__ import annotations

import sys
import threading

import numpy as np
import pytest

from retrieval import text
from retrieval.index import lexical
from retrieval.index.lexical import document_text
from retrieval.records.paper import Paper
from retrieval.text import BM25_STOPWORDS, bm25_tokens, stem_words, strip_accents

from .test_lexical_build_equivalence import AWKWARD


def _bm25s_index(corpus: list[list[str]]) -> lexical.bm25s.BM25:
    retriever = lexical.bm25s.BM25(**lexical._BM25_PARAMETERS)
    retriever.index(corpus, show_progress=False)
    return retriever


def _state(retriever: lexical.bm25s.BM25) -> dict:
    """Everything a build leaves on the retriever, arrays as (dtype, shape, bytes)."""
    state = {}
    for name, value in vars(retriever).items():
        if name == "scores":
            value = {key: (item.dtype.str, item.shape, item.tobytes()) if isinstance(item, np.ndarray)
                     else (type(item), item) for key, item in value.items()}
        elif name == "vocab_dict":
            value = list(value.items())  # the order too: it numbers the matrix columns
        elif isinstance(value, np.ndarray):
            value = (value.dtype.str, value.shape, value.tobytes())
        state[name] = value
    return state


def _corpora(arxiv_papers: list[Paper]) -> list[list[list[str]]]:
    papers = [*arxiv_papers, *AWKWARD]
    documents = [bm25_tokens(document_text(paper)) for paper in papers]
    return [
        documents,
        documents[:1],
        [[], *documents[:5], [], ["ab"]],  # documents without a token count in the average length
        [["same"] * 7, ["same", "other"], ["other"] * 3],  # repeated terms
        [["x" + str(i % 13) for i in range(n)] for n in range(1, 40)],  # many lengths and counts
    ]


def test_the_numpy_build_is_bm25s_index_byte_for_byte(arxiv_papers: list[Paper]):
    for corpus in _corpora(arxiv_papers):
        assert _state(lexical._bm25_index(corpus)) == _state(_bm25s_index(corpus))


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
def test_a_corpus_without_tokens_fails_as_bm25s_fails():
    with pytest.raises(ValueError):
        _bm25s_index([[], []])
    with pytest.raises(ValueError):
        lexical._bm25_index([[], []])


def _general_tokens(value: str) -> list[str]:
    """``bm25_tokens`` of a text without CJK, by the general formula."""
    found = text._UNICODE_WORD.findall(strip_accents(value))
    return stem_words([word for word in found if len(word) >= 2 and word not in BM25_STOPWORDS])


TRICKY = [
    "", " ", "a", "A b C", "The theory of everything, and a THEORY of nothing.", "x-ray state-of-the-art e-mail",
    "snake_case __init__ 3D 5G GPT-4o", r"{\'e}tude $\alpha$-stable \textbf{Bold} \\ \cite{x}", "naïve café Ölçü",
    "Kelvin \u212a ſtraße ﬁnance ǅemal", "İstanbul ı", "ΣΟΦΟΣ σοφός", "Нейронные сети", "مُحَمَّد", "e\u0301tude",
    "running runs ran runner", "it's don't", "tab\tnew\nline\r\x00null", "１２３ ｆｕｌｌ", "42 7 a1 b 2b", "— … ‘ ’ “ ”",
]


@pytest.mark.parametrize("value", TRICKY, ids=range(len(TRICKY)))
def test_bm25_tokens_are_the_general_formula(value: str):
    assert bm25_tokens(value) == _general_tokens(value)
    assert bm25_tokens(value) == _general_tokens(value)  # again, from the word cache


def test_ascii_text_splits_into_the_words_of_the_unicode_pattern():
    for code in range(128):
        for sample in (f"ab{chr(code)}cd {chr(code)}e{chr(code)}{chr(code)}", chr(code), f"{chr(code)}x"):
            assert sample.translate(text._ASCII_SEPARATORS).split() == text._UNICODE_WORD.findall(sample), code


def test_the_word_cache_starting_over_changes_no_token(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(text, "_STEM_CACHE_LIMIT", 5)
    monkeypatch.setattr(text, "_BM25_WORDS", {})
    for value in TRICKY:
        assert bm25_tokens(value) == _general_tokens(value)
    assert len(text._BM25_WORDS) <= max(5, *(len(set(text._UNICODE_WORD.findall(strip_accents(v)))) for v in TRICKY))


def test_threads_share_the_word_cache_safely(monkeypatch: pytest.MonkeyPatch):
    """Workers tokenising at once, with the cache starting over all the time, get every token."""
    monkeypatch.setattr(text, "_STEM_CACHE_LIMIT", 20)
    monkeypatch.setattr(text, "_BM25_WORDS", {})
    values = [f"{value} word{i} words{i} theory{i % 3}" for i, value in enumerate(TRICKY * 3)]
    expected = [_general_tokens(value) for value in values]
    wrong: list[str] = []
    barrier = threading.Barrier(4)

    def work() -> None:
        barrier.wait()
        for _ in range(20):
            wrong.extend(value for value, tokens in zip(values, expected, strict=True) if bm25_tokens(value) != tokens)

    workers = [threading.Thread(target=work) for _ in range(4)]
    previous = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
    finally:
        sys.setswitchinterval(previous)
    assert not wrong
