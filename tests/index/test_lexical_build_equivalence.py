"""The BM25 build's shortcuts give exactly what the plain formula gives.

``LexicalIndex._build`` reads records through ``RecordStore.iter_texts`` (JSON fields, no
``Paper`` models) and tokenises with ``lexical.document_tokens`` (parts tokenised apart,
names cached). Both must equal ``bm25_tokens(document_text(paper))`` over ``iter_papers``,
which is what the index was built from before.
"""

from __future__ import annotations

import json
import sys
import unicodedata
from collections.abc import Iterator
from pathlib import Path

import pytest

from retrieval.index import lexical
from retrieval.index.lexical import LexicalIndex, document_text, document_tokens
from retrieval.records.names import author_key
from retrieval.records.paper import Author, Paper, Provenance
from retrieval.storage.records import RecordStore
from retrieval.text import bm25_tokens, fold


def _paper(title: str, abstract: str | None = None, names: tuple[str, ...] = (), venue: str | None = None) -> Paper:
    return Paper(title=title, abstract=abstract, authors=[Author(name=name) for name in names], venue=venue,
                 published="2021", provenance=[Provenance(source="bibtex", source_id=title[:12])])


# Texts where a line-by-line tokenisation could differ from the whole text's: scripts with
# bigrams, sigma at a line end, accents split from their letter, halfwidth kana, jamo.
AWKWARD = [
    _paper("Deep Learning for Graphs", "We study graphs; the results are good.", ("Zhang Wei", "A. Smith"), "NeurIPS"),
    _paper("深度学习 for BERT模型", None, ("韩放达", "Fangda Han"), "计算机学报"),
    _paper("ΟΔΟΣ ΚΑΙ ΛΟΓΟΣ", "ΣΟΦΟΣ", ("ΝΙΚΟΣ ΠΑΠΑΣ",), "ΕΛΛΑΣ"),
    _paper("Café résumé naïve", "e\u0301tude", ("\u0301Ange\u0301lique Müller",), "Acta\u0301"),
    _paper("ｶﾀｶﾅ title", None, ("ﾀﾛｳ",), None),
    _paper("jamo \u1100\u1161 and \u1112\u1161\u11ab", None, ("\u1100\u1161",), None),
    _paper("한국어 처리", "자연어 처리 연구", ("김민수",), "정보과학회"),
    _paper("Kangxi \u2f00 radical", None, (), "\u2e9f"),
    _paper("Compatibility \uf900 ideograph", None, ("Li \uf901",), None),
    _paper("A title – with “quotes” and ‘dashes’ — and … ellipsis", "x\u2028y", ("Jean-Luc Picard",), None),
    _paper("Нейронные сети", "Глубокое обучение", ("Иван Петров",), "Вестник"),
    _paper("التعلم العميق", "مُحَمَّد", ("محمد علي",), None),
    _paper("Title only"),
    _paper("!!!", None, ("Solo",), None),
]


@pytest.mark.parametrize("paper", AWKWARD, ids=range(len(AWKWARD)))
def test_document_tokens_are_the_tokens_of_the_document_text(paper: Paper):
    expected = bm25_tokens(document_text(paper))
    assert document_tokens(paper.title, paper.abstract, paper.author_names, paper.venue) == expected
    # again, now from the caches
    assert document_tokens(paper.title, paper.abstract, paper.author_names, paper.venue) == expected


def _code_points() -> Iterator[str]:
    """Every character ``document_tokens`` tokenises line by line (not ``_MAY_BE_CJK``)."""
    for code in range(sys.maxunicode + 1):
        char = chr(code)
        if unicodedata.category(char) != "Cs" and not lexical._MAY_BE_CJK.search(char):
            yield char


def test_no_character_tokenised_line_by_line_can_take_the_cjk_path():
    """``bm25_tokens`` lists CJK bigrams after all words, so for any character outside
    ``_MAY_BE_CJK`` a text's tokens must be its lines' tokens one after the other."""
    wrong = []
    for char in _code_points():
        first, second = f"ab{char}cd {char}", f"{char}ef gh{char}"
        if bm25_tokens(f"{first}\n{second}") != bm25_tokens(first) + bm25_tokens(second):
            wrong.append(f"U+{ord(char):04X}")
    assert not wrong, wrong[:20]


def test_the_cjk_check_is_needed():
    """The check is not vacuous: a CJK line changes the order of the whole text's tokens."""
    first, second = "ab 图", "cd"
    assert bm25_tokens(f"{first}\n{second}") != bm25_tokens(first) + bm25_tokens(second)


@pytest.fixture
def store(tmp_path: Path, arxiv_papers: list[Paper]) -> Iterator[RecordStore]:
    with RecordStore(tmp_path / "records.sqlite3") as opened:
        opened.put_many([*arxiv_papers, *AWKWARD])
        yield opened


def test_iter_texts_gives_the_fields_iter_papers_gives(store: RecordStore):
    texts = list(store.iter_texts(batch=7))
    papers = list(store.iter_papers(batch=7))
    assert [text.id for text in texts] == [paper.id for paper in papers]
    for text, paper in zip(texts, papers, strict=True):
        assert (text.year, text.title, text.abstract, text.author_names, text.venue) == (
            paper.year, paper.title, paper.abstract, paper.author_names, paper.venue)


def _store_raw(store: RecordStore, paper_id: str, record: dict) -> None:
    """A record as older code wrote it (``record`` is the JSON; the columns from this code)."""
    with store._writing() as conn:
        conn.exec_driver_sql(
            "INSERT INTO papers (id, fingerprint, title_key, year, content_hash, embedding_hash, updated_at, record)"
            " VALUES (?, '', '', NULL, '', '', '', ?)", (paper_id, json.dumps(record)))


def test_iter_texts_reads_records_of_an_older_shape_like_iter_papers(store: RecordStore):
    _store_raw(store, "doi:10.1/older", {"title": "An older record", "doi": "10.1/older", "retired_field": 1})
    _store_raw(store, "doi:10.1/extra", {"title": "Extra keys", "doi": "10.1/extra",
                                         "authors": [{"name": "Ada Lovelace", "retired": True}], "venue": "Nature"})
    texts = {text.id: text for text in store.iter_texts()}
    for paper_id in ("doi:10.1/older", "doi:10.1/extra"):
        paper = store.get(paper_id)
        assert paper is not None
        text = texts[paper_id]
        assert (text.title, text.abstract, text.author_names, text.venue) == (
            paper.title, paper.abstract, paper.author_names, paper.venue)
    assert texts["doi:10.1/older"].author_names == [] and texts["doi:10.1/extra"].author_names == ["Ada Lovelace"]


def test_iter_texts_falls_back_to_validation_like_iter_papers(store: RecordStore):
    """A record ``_decode`` cannot construct (names written as strings) is validated, by both."""
    _store_raw(store, "doi:10.1/names", {"title": "Written names", "doi": "10.1/names", "authors": ["Ada Lovelace"]})
    try:
        expected: object = [(p.title, p.author_names) for p in store.iter_papers() if p.id == "doi:10.1/names"]
    except ValueError as exc:
        expected = type(exc)
    try:
        found: object = [(t.title, t.author_names) for t in store.iter_texts() if t.id == "doi:10.1/names"]
    except ValueError as exc:
        found = type(exc)
    assert found == expected


def test_a_build_equals_the_index_of_the_plain_formula(tmp_path: Path, store: RecordStore):
    """Ids, filter fields, vocabulary and every (term, document) score of a build are those
    of bm25s over ``bm25_tokens(document_text(paper))`` of ``iter_papers``."""
    snapshot = LexicalIndex(tmp_path / "lexical", store).current()
    papers = list(store.iter_papers())
    assert snapshot.ids == [paper.id for paper in papers]
    assert snapshot.years.tolist() == [paper.year if paper.year is not None else -1 for paper in papers]
    assert snapshot.venues == [fold(paper.venue) if paper.venue else None for paper in papers]
    assert snapshot.authors == [[key for key in (author_key(a.name) for a in paper.authors) if key]
                                for paper in papers]
    reference = lexical.bm25s.BM25(**lexical._BM25_PARAMETERS)
    reference.index([bm25_tokens(document_text(paper)) for paper in papers], show_progress=False)
    built = snapshot.retriever
    assert built is not None and set(built.vocab_dict) == set(reference.vocab_dict)
    assert _postings(built) == _postings(reference)  # with the same ids, the same scores and rankings


def _postings(retriever) -> dict[str, list[tuple[int, float]]]:
    data, indices, indptr = (retriever.scores[key] for key in ("data", "indices", "indptr"))
    columns = len(indptr) - 1
    return {token: sorted(zip(indices[indptr[term]:indptr[term + 1]].tolist(),
                              data[indptr[term]:indptr[term + 1]].tolist(), strict=True))
            for token, term in retriever.vocab_dict.items() if term < columns}
