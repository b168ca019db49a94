"""The other version of a paper across separate ingests: title-variant lookup in the record store.

ChemCrow's preprint ("ChemCrow: Augmenting large-language models with chemistry tools", 2023,
arXiv id only) and its article ("Augmenting large language models with chemistry tools", 2024,
Nature DOI) share no identifier and no fingerprint; only their title variants meet. These are
the real OpenAlex records (``tests/fixtures/index/openalex_chemcrow_title_search.json``).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from retrieval.index.paper_index import PaperIndex
from retrieval.ingest.pipeline import ingest_papers
from retrieval.records.merge import same_paper
from retrieval.records.paper import Author, Paper
from retrieval.sources.providers.openalex import parse_works_page
from retrieval.storage.records import MAX_TITLE_CANDIDATES, RecordStore
from tests.support.legacy_records import as_legacy_store

from .conftest import FIXTURES, HashEncoder, make_settings


@pytest.fixture(scope="module")
def chemcrow() -> tuple[Paper, Paper]:
    """(article, preprint) as the OpenAlex connector parses them."""
    data = json.loads((FIXTURES / "openalex_chemcrow_title_search.json").read_text(encoding="utf-8"))
    body = json.loads(data["body"]) if isinstance(data["body"], str) else data["body"]
    article, preprint = parse_works_page(body).papers
    return article, preprint


@pytest.fixture
def store(tmp_path: Path):
    with RecordStore(tmp_path / "records.sqlite3") as opened:
        yield opened


def test_the_two_versions_share_no_identifier(chemcrow):
    article, preprint = chemcrow
    assert preprint.title.startswith("ChemCrow:") and article.year == 2024 and preprint.year == 2023
    assert article.id != preprint.id and article.fingerprint != preprint.fingerprint
    assert not ({article.doi, article.arxiv_id, article.openalex_id} - {None}) & {preprint.doi, preprint.arxiv_id,
                                                                                  preprint.openalex_id}


@pytest.mark.parametrize("stored_first", ["preprint", "article"])
def test_find_matches_returns_the_other_version_as_a_candidate(store, chemcrow, stored_first):
    article, preprint = chemcrow
    stored, incoming = (preprint, article) if stored_first == "preprint" else (article, preprint)
    store.put_many([stored])
    matches = store.find_matches(incoming)
    assert [p.id for p in matches] == [stored.id]
    assert same_paper(matches[0], incoming)  # what the ingest pipeline confirms


def test_same_title_by_someone_else_is_a_candidate_that_same_paper_rejects(store, chemcrow):
    article, preprint = chemcrow
    namesake = Paper(title=article.title, authors=[Author(name="Jane Q. Other")], published="2024",
                     doi="10.9999/namesake")
    store.put_many([preprint, namesake])
    matches = store.find_matches(article)
    assert {p.id for p in matches} == {preprint.id, namesake.id}
    assert [p.id for p in matches if same_paper(p, article)] == [preprint.id]


def test_identifier_matches_come_first_and_title_candidates_are_capped(store, chemcrow):
    article, preprint = chemcrow
    same_title = [Paper(title=article.title, authors=[Author(name=f"Author {n}")], published="2024",
                        doi=f"10.9999/copy.{n:02d}") for n in range(MAX_TITLE_CANDIDATES + 5)]
    store.put_many([*same_title, preprint])
    incoming = article.model_copy(update={"doi": None, "arxiv_id": preprint.arxiv_id})  # shares the arXiv id
    matches = store.find_matches(incoming)
    assert matches[0].id == preprint.id  # the identifier match, before any title candidate
    assert len(matches) == 1 + MAX_TITLE_CANDIDATES and len({p.id for p in matches}) == len(matches)


def test_a_rewritten_title_updates_the_lookup(store, chemcrow):
    article, preprint = chemcrow
    store.put_many([preprint])
    retitled = preprint.model_copy(update={"title": "ChemCrow: an agent for organic synthesis planning"})
    store.put_many([retitled])
    assert store.find_matches(article) == []
    store.delete_many([preprint.id])
    assert store.find_matches(retitled.model_copy(update={"arxiv_id": None})) == []


def test_one_word_and_generic_titles_find_no_title_candidates(store):
    store.put_many([Paper(title="Editorial", published="2020", doi="10.1/a"),
                    Paper(title="Introduction", published="2021", doi="10.1/b")])
    assert store.find_matches(Paper(title="Editorial", published="2022", doi="10.1/c")) == []


def test_a_store_written_before_the_lookup_existed_is_backfilled(tmp_path, chemcrow):
    article, preprint = chemcrow
    path = tmp_path / "records.sqlite3"
    with RecordStore(path) as store:
        store.put_many([preprint])
    # turn the file back into a version-1 store of before the database: no title_variants (nor later) table
    as_legacy_store(path)
    conn = sqlite3.connect(path)
    conn.execute("DROP TABLE title_variants")
    conn.execute("DROP TABLE author_names")
    conn.execute("PRAGMA user_version = 1")
    conn.commit()
    conn.close()
    with RecordStore(path) as store:
        assert [p.id for p in store.find_matches(article)] == [preprint.id]


@pytest.mark.parametrize("first", ["preprint", "article"])
def test_separate_ingests_of_the_two_versions_end_in_one_record(tmp_path, chemcrow, first):
    article, preprint = chemcrow
    order = [preprint, article] if first == "preprint" else [article, preprint]
    index = PaperIndex.open(make_settings(tmp_path / "data"), HashEncoder())
    try:
        first_run = ingest_papers(index, [order[0]])
        second_run = ingest_papers(index, [order[1]])
        assert first_run.added == [order[0].id]
        assert index.count() == 1 and index.dense.count() == 1
        (merged,) = index.iter_papers()
        assert merged.id == article.id and merged.arxiv_id == preprint.arxiv_id
        assert merged.title == article.title and merged.published == article.published
        assert {entry.source_id for entry in merged.provenance} == {article.openalex_id, preprint.openalex_id}
        assert (second_run.added, second_run.updated) in (([article.id], []), ([], [article.id]))
        assert index.check_consistency().ok
    finally:
        index.close()
