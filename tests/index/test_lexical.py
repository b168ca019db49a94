"""BM25 index: tokenizer, filtered search, persistence and automatic rebuilds."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from retrieval.index import lexical
from retrieval.index.filters import ResolvedFilters
from retrieval.index.lexical import LexicalIndex, document_text
from retrieval.records.paper import Paper
from retrieval.storage.records import RecordStore
from retrieval.text import bm25_tokens

from .conftest import by_arxiv


@pytest.fixture
def store(tmp_path: Path, arxiv_papers: list[Paper]) -> Iterator[RecordStore]:
    with RecordStore(tmp_path / "records.sqlite3") as opened:
        opened.put_many(arxiv_papers)
        yield opened


@pytest.fixture
def builds(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts real rebuilds of any LexicalIndex during the test."""
    calls: list[int] = []
    original = LexicalIndex._build

    def counted(self, digest, generation):
        calls.append(generation)
        return original(self, digest, generation)

    monkeypatch.setattr(LexicalIndex, "_build", counted)
    return calls


def test_tokenizer_stems_folds_and_drops_stopwords():
    assert bm25_tokens("The Convergence of Discrete Dipole Approximations") == ["converg", "discret", "dipol", "approxim"]
    assert bm25_tokens("Café résumé") == ["cafe", "resum"]
    assert bm25_tokens("ｆｕｌｌwidth") == ["fullwidth"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("深度学习", ["深度", "度学", "学习"]),
        ("图 and BERT模型", ["bert", "图", "模型"]),
        ("التعلم العميق", ["التعلم", "العميق"]),
        ("مُحَمَّد", ["محمد"]),  # vowel signs are folded away
        ("한국어 처리", ["한국", "국어", "처리"]),
        ("Нейронные сети", ["неиронные", "сети"]),
        ("!!! ??? ...", []),
        ("", []),
    ],
)
def test_tokenizer_handles_every_script_without_crashing(text, expected):
    assert bm25_tokens(text) == expected


def test_document_text_weights_the_title_and_includes_authors_and_venue(arxiv_papers):
    paper = by_arxiv(arxiv_papers, "0704.0033")
    text = document_text(paper)
    assert text.count(paper.title) == lexical.TITLE_WEIGHT
    assert paper.abstract is not None
    assert "Maxim A. Yurkin" in text and "J.Opt.Soc.Am.A" in text and paper.abstract in text


def test_search_finds_the_paper_by_title_words_author_and_venue(tmp_path, store, arxiv_papers):
    snapshot = LexicalIndex(tmp_path / "lexical", store).current()
    assert snapshot.search("doubly charmed baryons lifetime", 3)[0][0] == by_arxiv(arxiv_papers, "0704.0016").id
    assert {item for item, _ in snapshot.search("Yurkin", 10)} == {
        p.id for p in arxiv_papers if any("Yurkin" in a.name for a in p.authors)}
    assert snapshot.search("JHEP", 5)[0][0] == by_arxiv(arxiv_papers, "0704.0015").id
    scores = [score for _, score in snapshot.search("quantum", 20)]
    assert scores == sorted(scores, reverse=True) and all(score > 0 for score in scores)


def test_search_never_crashes_on_unknown_words_or_other_scripts(tmp_path, store):
    snapshot = LexicalIndex(tmp_path / "lexical", store).current()
    assert snapshot.search("zzzqqq", 5) == []
    assert snapshot.search("深度学习的图神经网络", 5) == []
    assert snapshot.search("التعلم العميق", 5) == []
    assert snapshot.search("dipole", 0) == []


def test_mask_filters_inside_scoring(tmp_path, store, arxiv_papers):
    snapshot = LexicalIndex(tmp_path / "lexical", store).current()
    unfiltered = [item for item, _ in snapshot.search("discrete dipole approximation", 10)]
    assert len(unfiltered) >= 4
    mask = snapshot.mask(ResolvedFilters(since=2007, until=2007))
    filtered = snapshot.search("discrete dipole approximation", 10, mask)
    papers = {p.id: p for p in arxiv_papers}
    assert filtered and all(papers[item].year == 2007 for item, _ in filtered)
    # a venue filter keeps the 2006 JOSA A papers only
    josa = snapshot.mask(ResolvedFilters(venue_keys=frozenset({"j opt soc am a"})))
    assert {papers[item].year for item, _ in snapshot.search("dipole", 10, josa)} == {2006}
    # authors: exact indexed keys
    by_author = snapshot.mask(ResolvedFilters(author_keys=frozenset({"maxim a yurkin"})))
    assert len(snapshot.search("approximation light scattering", 10, by_author)) == 4
    assert snapshot.mask(ResolvedFilters()) is None
    nothing = snapshot.mask(ResolvedFilters(author_keys=frozenset({"nobody here"})))
    assert snapshot.search("dipole", 10, nothing) == []


def test_index_is_persisted_and_reused_without_rebuilding(tmp_path, store, builds):
    directory = tmp_path / "lexical"
    first = LexicalIndex(directory, store).current()
    assert builds == [store.generation()]
    manifest = json.loads((directory / "manifest.json").read_text())
    assert manifest["digest"] == store.digest() and manifest["documents"] == len(first)
    second = LexicalIndex(directory, store).current()  # e.g. another process
    assert builds == [store.generation()]  # loaded from disk, not rebuilt
    assert second.ids == first.ids
    assert second.search("dipole", 3) == first.search("dipole", 3)


def test_index_follows_the_store_without_rebuilding(tmp_path, store, arxiv_papers, builds):
    index = LexicalIndex(tmp_path / "lexical", store)
    assert index.current().search("charmed baryons", 1)
    store.put_many(arxiv_papers[:3])  # same content, new generation: nothing to change
    same = index.current()
    assert len(builds) == 1 and same.generation == store.generation()
    gone = by_arxiv(arxiv_papers, "0704.0016")
    store.delete_many([gone.id])
    assert index.is_current()  # the build on disk catches up from the change feed: no rebuild is needed
    followed = index.current()
    assert len(builds) == 1 and gone.id not in followed.ids and len(followed) == len(arxiv_papers) - 1
    assert gone.id not in [item for item, _ in followed.search("charmed baryons lifetime", 5)]
    other = LexicalIndex(tmp_path / "lexical", store).current()  # another process: the saved build, followed
    assert len(builds) == 1 and other.ids == followed.ids
    assert other.search("charmed baryons lifetime", 5) == followed.search("charmed baryons lifetime", 5)


def test_an_index_too_far_behind_the_feed_is_rebuilt(tmp_path, store, arxiv_papers, builds, monkeypatch):
    index = LexicalIndex(tmp_path / "lexical", store)
    index.current()
    monkeypatch.setattr(lexical, "FOLLOW_AT_LEAST", 1)
    monkeypatch.setattr(lexical, "FOLLOW_FRACTION", 0.0)
    store.delete_many([arxiv_papers[0].id])
    assert index.current().ids == sorted(store.ids()) and len(builds) == 1  # one change: followed
    store.delete_many([arxiv_papers[1].id, arxiv_papers[2].id])
    assert not index.is_current()
    assert index.current().ids == sorted(store.ids()) and len(builds) == 2  # two: rebuilt


def test_an_index_ahead_of_its_store_is_rebuilt(tmp_path, store, arxiv_papers, builds):
    """A store restored from an older backup: its generation went back, and the index does not
    pretend to be current."""
    index = LexicalIndex(tmp_path / "lexical", store)
    store.put_many(arxiv_papers[:1])
    assert len(index.current()) == len(arxiv_papers)
    store.set_meta("generation", "0")  # as the backup had it
    store.delete_many([arxiv_papers[0].id])  # generation 1, behind the index's 2
    assert index.current().ids == sorted(store.ids()) and len(builds) == 2
    assert LexicalIndex(tmp_path / "lexical", store).current().ids == sorted(store.ids())


def test_an_index_of_another_database_is_rebuilt(tmp_path, store, arxiv_papers, builds):
    LexicalIndex(tmp_path / "lexical", store).current()
    with RecordStore(tmp_path / "other" / "records.sqlite3") as other:  # the data dir now names another database
        other.put_many(arxiv_papers[:5])
        for _ in range(store.generation()):  # at the same generation: only the feed tells them apart
            other.put_many(arxiv_papers[:1])
        assert other.generation() >= store.generation() and other.feed() != store.feed()
        index = LexicalIndex(tmp_path / "lexical", other)
        assert not index.is_current()
        assert index.current().ids == sorted(other.ids()) and len(builds) == 2


def test_index_is_rebuilt_when_files_are_missing_or_damaged(tmp_path, store, builds):
    directory = tmp_path / "lexical"
    LexicalIndex(directory, store).current()
    shutil.rmtree(directory)
    reopened = LexicalIndex(directory, store)
    assert not reopened.is_current()
    assert reopened.current().search("dipole", 1)
    assert len(builds) == 2 and reopened.is_current()
    (directory / "manifest.json").write_text("{not json")
    assert LexicalIndex(directory, store).current().search("dipole", 1)
    assert len(builds) == 3
    # the build directory named by the manifest disappeared
    build = json.loads((directory / "manifest.json").read_text())["build"]
    shutil.rmtree(directory / build)
    assert LexicalIndex(directory, store).current().search("dipole", 1)
    assert len(builds) == 4
    assert len(list(directory.glob("build-*"))) == 1  # old builds are cleaned up


def test_unwritable_directory_still_serves_from_memory(tmp_path, store):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    index = LexicalIndex(blocker / "lexical", store)
    assert index.current().search("dipole", 1)
    assert not index.is_current()


def test_empty_store_gives_empty_results(tmp_path):
    with RecordStore(tmp_path / "records.sqlite3") as empty:
        snapshot = LexicalIndex(tmp_path / "lexical", empty).current()
        assert len(snapshot) == 0 and snapshot.search("anything", 5) == []
        assert LexicalIndex(tmp_path / "lexical", empty).current().search("anything", 5) == []


def test_scores_match_bm25s_and_coverage_weighs_the_query_terms_present(tmp_path, store, arxiv_papers):
    snapshot = LexicalIndex(tmp_path / "lexical", store).current()
    assert snapshot.retriever is not None
    query = "dipole dipole approximation of light scattering by a sphere"  # a repeated term counts twice
    tokens = [t for t in bm25_tokens(query) if t in snapshot.retriever.vocab_dict]
    scored = snapshot.score_all(query)
    assert scored is not None
    assert np.allclose(scored.bm25, snapshot.retriever.get_scores(tokens), rtol=1e-5)
    # coverage, recomputed from the documents' own tokens
    documents = [set(bm25_tokens(document_text(p))) for p in (store.get(i) for i in snapshot.ids)]
    distinct = list(dict.fromkeys(tokens))
    df = {t: sum(t in doc for doc in documents) for t in distinct}
    idf = {t: np.log1p((len(documents) - df[t] + 0.5) / (df[t] + 0.5)) for t in distinct}
    expected = [sum(idf[t] for t in distinct if t in doc) / sum(idf.values()) for doc in documents]
    assert np.allclose(scored.coverage, expected, rtol=1e-5)
    assert scored.coverage.max() <= 1.0 + 1e-6 and (scored.coverage[scored.bm25 == 0] == 0).all()
    everything = [n for n, doc in enumerate(documents) if set(distinct) <= doc]
    assert everything and np.allclose(scored.coverage[everything], 1.0)
    # a filter zeroes both signals of the excluded documents
    mask = snapshot.mask(ResolvedFilters(since=2007, until=2007))
    masked = snapshot.score_all(query, mask)
    assert masked is not None
    assert (masked.bm25[mask == 0] == 0).all() and (masked.coverage[mask == 0] == 0).all()
    assert snapshot.score_all("zzzqqq") is None


def test_bm25_parameters_are_recorded_and_a_change_rebuilds(tmp_path, store, builds):
    directory = tmp_path / "lexical"
    snapshot = LexicalIndex(directory, store).current()
    assert snapshot.retriever is not None
    assert (snapshot.retriever.k1, snapshot.retriever.b) == (lexical.BM25_K1, lexical.BM25_B)
    manifest = json.loads((directory / "manifest.json").read_text())
    assert manifest["bm25"] == {"k1": lexical.BM25_K1, "b": lexical.BM25_B, "method": "lucene"}
    manifest["bm25"] = {"k1": 1.5, "b": 0.75, "method": "lucene"}  # built by an older version
    (directory / "manifest.json").write_text(json.dumps(manifest))
    reopened = LexicalIndex(directory, store)
    assert not reopened.is_current()
    rebuilt = reopened.current().retriever
    assert rebuilt is not None
    assert rebuilt.k1 == lexical.BM25_K1 and len(builds) == 2
