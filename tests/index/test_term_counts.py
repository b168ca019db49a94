"""BM25 rebuilds reuse the term counts of the last build for records whose text did not change.

The promise: a rebuild that reuses counts gives the index a build from scratch gives (the same
documents in the same order, the same vocabulary, the same scores for every term and document,
the same search results), tokenising only the records whose text is new; and a counts file that
is missing, damaged, of another format or of another tokenizer is never trusted.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from retrieval.index import lexical
from retrieval.index.lexical import LexicalIndex, LexicalSnapshot
from retrieval.index.term_counts import COUNTS_FILE, TermCounts, document_key, pairs_of_tokens, reused_pairs
from retrieval.records.paper import Author, Paper
from retrieval.storage.records import RecordStore

from .test_lexical_build_equivalence import AWKWARD


@pytest.fixture
def store(tmp_path: Path, arxiv_papers: list[Paper]) -> Iterator[RecordStore]:
    with RecordStore(tmp_path / "records.sqlite3") as opened:
        opened.put_many([*arxiv_papers, *AWKWARD])
        yield opened


@pytest.fixture
def index(tmp_path: Path, store: RecordStore) -> LexicalIndex:
    built = LexicalIndex(tmp_path / "lexical", store)
    built.rebuild()
    return built


class Tokenised:
    """Counts the documents ``lexical`` tokenises."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.titles: list[str] = []
        real = lexical.document_tokens

        def counting(title: str, *rest: object) -> list[str]:
            self.titles.append(title)
            return real(title, *rest)  # type: ignore[arg-type]

        monkeypatch.setattr(lexical, "document_tokens", counting)


def _from_scratch(index: LexicalIndex) -> LexicalSnapshot:
    """The same store's index, built without the counts of any earlier build."""
    build = index._build_dir()
    assert build is not None
    (build / COUNTS_FILE).unlink()
    return index.rebuild()


def _assert_same_index(reused: LexicalSnapshot, scratch: LexicalSnapshot) -> None:
    assert reused.ids == scratch.ids
    assert reused.years.tolist() == scratch.years.tolist()
    assert (reused.venues, reused.authors) == (scratch.venues, scratch.authors)
    assert reused.retriever is not None and scratch.retriever is not None
    ours, theirs = reused.retriever.vocab_dict, scratch.retriever.vocab_dict
    assert set(ours) == set(theirs)
    a, b = reused.retriever.scores, scratch.retriever.scores
    assert a["num_docs"] == b["num_docs"] and len(a["data"]) == len(b["data"])
    for token in theirs:
        if token == "":
            continue
        mine = slice(int(a["indptr"][ours[token]]), int(a["indptr"][ours[token] + 1]))
        other = slice(int(b["indptr"][theirs[token]]), int(b["indptr"][theirs[token] + 1]))
        assert a["indices"][mine].tolist() == b["indices"][other].tolist(), token
        assert a["data"][mine].tobytes() == b["data"][other].tobytes(), token  # the same floats, bit for bit
        assert reused.idf(token) == scratch.idf(token)


QUERIES = ["graph neural networks", "deep learning", "深度学习", "café", "quantum error correction",
           "zyxwvut revisited", "Zhang Wei"]


def test_a_rebuild_after_changes_tokenises_only_the_changed_records_and_equals_one_from_scratch(
    index: LexicalIndex, store: RecordStore, arxiv_papers: list[Paper], monkeypatch: pytest.MonkeyPatch
) -> None:
    edited = [paper.model_copy(update={"title": paper.title + " revisited"}) for paper in arxiv_papers[:3]]
    moved = arxiv_papers[3].model_copy(update={"venue": "Zyxwvut Letters"})  # only the venue changes
    added = [Paper(title="Zyxwvut spectroscopy of quokkas", abstract="Quokka " * 5, doi="10.9999/new.1",
                   authors=[Author(name="Ada Lovelace")]),
             Paper(title="深度学习 revisited", doi="10.9999/new.2")]
    store.put_many([*edited, moved, *added])
    store.delete_many([arxiv_papers[4].id, arxiv_papers[5].id])
    tokenised = Tokenised(monkeypatch)

    reused = index.current()

    assert sorted(tokenised.titles) == sorted(paper.title for paper in [*edited, moved, *added])
    scratch = _from_scratch(index)
    assert len(tokenised.titles) > len(scratch.ids)  # the build from scratch tokenised everything
    _assert_same_index(reused, scratch)
    for query in QUERIES:
        assert reused.search(query, 10) == scratch.search(query, 10), query
        got, want = reused.score_all(query), scratch.score_all(query)
        assert (got is None) == (want is None)
        if got is not None and want is not None:
            assert got.bm25.tobytes() == want.bm25.tobytes() and got.coverage.tobytes() == want.coverage.tobytes()


def test_a_term_only_deleted_records_held_leaves_the_vocabulary(index: LexicalIndex, store: RecordStore) -> None:
    rare = Paper(title="Xylophonic quasiparticles", doi="10.9999/rare")
    store.put_many([rare])
    assert any(token.startswith("xylophon") for token in index.current().retriever.vocab_dict)  # type: ignore[union-attr]
    store.delete_many([rare.id])
    after = index.current()
    assert not any(token.startswith("xylophon") for token in after.retriever.vocab_dict)  # type: ignore[union-attr]
    assert after.idf("xylophon") == float("inf")
    _assert_same_index(after, _from_scratch(index))


def test_an_unchanged_store_reuses_every_count(index: LexicalIndex, store: RecordStore,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    tokenised = Tokenised(monkeypatch)
    again = index.rebuild()
    assert tokenised.titles == []
    _assert_same_index(again, _from_scratch(index))


@pytest.mark.parametrize("damage", ["garbage", "truncated", "other-format", "term-out-of-range", "empty"])
def test_counts_that_cannot_be_trusted_are_ignored(index: LexicalIndex, store: RecordStore,
                                                   monkeypatch: pytest.MonkeyPatch,
                                                   caplog: pytest.LogCaptureFixture, damage: str) -> None:
    build = index._build_dir()
    assert build is not None
    path = build / COUNTS_FILE
    saved = TermCounts.load(build, lexical._TOKEN_RECIPE)
    assert saved is not None
    if damage == "garbage":
        path.write_bytes(b"not a numpy archive")
    elif damage == "truncated":
        path.write_bytes(path.read_bytes()[:200])
    elif damage == "empty":
        path.write_bytes(b"")
    else:
        terms = saved.terms.copy()
        if damage == "term-out-of-range":
            terms[0] = len(saved.vocab) + 7
        with path.open("wb") as handle:
            np.savez(handle, format=np.array([2 if damage == "other-format" else 1, len(saved.vocab)]),
                     recipe=np.frombuffer(saved.recipe.encode(), dtype=np.uint8),
                     vocab=np.frombuffer("\n".join(saved.vocab).encode(), dtype=np.uint8), keys=saved.keys,
                     terms=terms, docs=saved.docs, counts=saved.counts)
    assert TermCounts.load(build, lexical._TOKEN_RECIPE) is None
    store.put_many([Paper(title="One more paper on graph neural networks", doi="10.9999/one")])
    tokenised = Tokenised(monkeypatch)
    with caplog.at_level(logging.INFO):
        rebuilt = LexicalIndex(index.directory, store).current()  # as a new process finds it (``index`` follows from memory)
    assert len(tokenised.titles) == len(rebuilt.ids)  # everything tokenised: nothing trusted
    _assert_same_index(rebuilt, _from_scratch(index))


def test_counts_of_another_tokenizer_version_are_never_read(index: LexicalIndex, store: RecordStore,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    manifest = json.loads(index.manifest_path.read_text(encoding="utf-8"))
    manifest["tokenizer"] = lexical.TOKENIZER_VERSION - 1
    index.manifest_path.write_text(json.dumps(manifest), encoding="utf-8")
    assert index._previous_counts() is None
    tokenised = Tokenised(monkeypatch)
    rebuilt = LexicalIndex(index.directory, store).current()  # as a new process finds it: rebuilt, all tokenised
    assert len(tokenised.titles) == len(rebuilt.ids)


def test_counts_of_another_token_recipe_are_never_read(index: LexicalIndex, store: RecordStore,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Say the title came to count three times: the old counts would be wrong, so none is reused."""
    build = index._build_dir()
    assert build is not None and TermCounts.load(build, lexical._TOKEN_RECIPE) is not None
    monkeypatch.setattr(lexical, "_TOKEN_RECIPE", lexical._TOKEN_RECIPE.replace(f"x{lexical.TITLE_WEIGHT}", "x3x"))
    assert TermCounts.load(build, lexical._TOKEN_RECIPE) is None
    store.put_many([Paper(title="One more paper on graph neural networks", doi="10.9999/recipe")])
    tokenised = Tokenised(monkeypatch)
    rebuilt = LexicalIndex(index.directory, store).current()  # as a new process finds it (``index`` follows from memory)
    assert len(tokenised.titles) == len(rebuilt.ids)


def test_the_recipe_names_the_title_weight_and_the_tokenizer_version() -> None:
    assert f"title x{lexical.TITLE_WEIGHT}," in lexical._TOKEN_RECIPE
    assert lexical._TOKEN_RECIPE.endswith(f"bm25_tokens v{lexical.TOKENIZER_VERSION}")


def test_document_keys_name_the_text_and_nothing_else() -> None:
    base = document_key("Graphs", "An abstract", ["Ada Lovelace", "Alan Turing"], "NeurIPS")
    assert base == document_key("Graphs", "An abstract", ["Ada Lovelace", "Alan Turing"], "NeurIPS")
    assert len(base) == 16
    others = [
        document_key("Graphs", "An abstract", ["Alan Turing", "Ada Lovelace"], "NeurIPS"),  # author order
        document_key("Graphs", "An abstract", ["Ada Lovelace Alan Turing"], "NeurIPS"),  # where a name ends
        document_key("GraphsAn abstract", None, ["Ada Lovelace", "Alan Turing"], "NeurIPS"),  # field boundary
        document_key("Graphs", "An abstract", ["Ada Lovelace", "Alan Turing"], None),
        document_key("Graphs", "An abstract", ["Ada Lovelace", "Alan Turing", ""], "NeurIPS"),
    ]
    assert len({base, *others}) == 1 + len(others)
    # a missing and an empty field give the same tokens, so they may share a key
    assert document_key("T", None, [], None) == document_key("T", "", [], "")


def test_reused_pairs_renumbers_new_terms_after_the_old_and_drops_unheld_ones() -> None:
    old_vocab = ["alpha", "beta", "gamma"]
    old_docs = [["alpha", "beta", "alpha"], ["gamma"], ["beta"]]
    old_pairs = pairs_of_tokens(old_docs, {token: i for i, token in enumerate(old_vocab)})
    previous = TermCounts.of("test recipe", old_vocab, [bytes([n]) * 16 for n in range(3)], old_pairs)
    # keep documents 2 and 0 (in that order), drop 1 (the only one holding "gamma"), add one
    vocab, pairs = reused_pairs(previous, [2, -1, 0], [["delta", "beta", "delta"]])
    assert vocab == ["alpha", "beta", "delta"]
    expected = pairs_of_tokens([["beta"], ["delta", "beta", "delta"], ["alpha", "beta", "alpha"]],
                               {token: i for i, token in enumerate(vocab)})
    for name in ("terms", "docs", "counts", "lengths"):
        assert getattr(pairs, name).tolist() == getattr(expected, name).tolist(), name
    with pytest.raises(ValueError, match="1 documents to count, 0 token lists given"):
        reused_pairs(previous, [0, -1], [])
    with pytest.raises(ValueError, match="reused twice"):
        reused_pairs(previous, [0, 0], [])


def test_records_sharing_one_text_are_both_indexed(index: LexicalIndex, store: RecordStore,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Two records whose BM25 text is the same (say, one paper under two DOIs): one reuses the
    counts, the other is counted again, and both are in the index as from scratch."""
    twins = [Paper(title="Quokka spectroscopy", abstract="Twin text", doi=f"10.9999/twin.{n}") for n in (1, 2)]
    store.put_many(twins[:1])
    index.current()
    store.put_many(twins[1:])
    tokenised = Tokenised(monkeypatch)
    both = index.current()
    assert tokenised.titles == ["Quokka spectroscopy"]  # the new twin only
    assert {twin.id for twin in twins} <= set(both.ids)
    assert {paper_id for paper_id, _ in both.search("quokka spectroscopy", 5)} == {twin.id for twin in twins}
    _assert_same_index(both, _from_scratch(index))


def test_a_rebuild_from_scratch_tokenises_everything_as_a_repair_asks(index: LexicalIndex, store: RecordStore,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    tokenised = Tokenised(monkeypatch)
    rebuilt = index.rebuild(from_scratch=True)
    assert len(tokenised.titles) == len(rebuilt.ids)
    assert TermCounts.load(index._build_dir(), lexical._TOKEN_RECIPE) is not None  # type: ignore[arg-type]  # saved for next time


@given(old_docs=st.lists(st.lists(st.sampled_from("abcdefg"), max_size=6), min_size=1, max_size=8),
       picks=st.lists(st.integers(0, 7), max_size=8, unique=True),
       fresh=st.lists(st.lists(st.sampled_from("defghij"), max_size=6), max_size=4), monotone=st.booleans(),
       data=st.data())
def test_reused_pairs_equal_the_pairs_of_the_documents_tokens(old_docs: list[list[str]], picks: list[int],
                                                               fresh: list[list[str]], monotone: bool,
                                                               data: st.DataObject) -> None:
    """Whatever documents are reused, in their order (merged without a sort) or not (sorted), and
    wherever the counted ones go: the pairs of the tokens, up to the numbering of the terms."""
    reused = [pick for pick in picks if pick < len(old_docs)]
    if monotone:
        reused.sort()
    sources = reused + [-1] * len(fresh)
    order = data.draw(st.permutations(range(len(sources))))
    sources = [sources[n] for n in order] if not monotone else _interleaved(reused, len(fresh), order)
    vocab = sorted({token for doc in old_docs for token in doc})
    previous = TermCounts.of("r", vocab, [bytes([n]) * 16 for n in range(len(old_docs))],
                             pairs_of_tokens(old_docs, {token: i for i, token in enumerate(vocab)}))
    got_vocab, got = reused_pairs(previous, sources, fresh)
    given_fresh = iter(fresh)
    documents = [old_docs[source] if source >= 0 else next(given_fresh) for source in sources]
    assert set(got_vocab) == {token for doc in documents for token in doc}
    want = pairs_of_tokens(documents, {token: i for i, token in enumerate(got_vocab)})
    for name in ("terms", "docs", "counts", "lengths"):
        assert getattr(got, name).tolist() == getattr(want, name).tolist(), name


def _interleaved(reused: list[int], fresh: int, order: list[int]) -> list[int]:
    """``reused`` in its order with ``fresh`` -1s put among them where ``order`` says."""
    slots = sorted(order[: len(reused)])
    sources = [-1] * (len(reused) + fresh)
    for slot, source in zip(slots, reused, strict=True):
        sources[slot] = source
    return sources
