"""Acronyms read both ways: definitions found in records, term groups, grouped BM25, and search."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from retrieval.index.acronyms import Definition, TermGroup, agreed, definitions, forms, singular, term_groups
from retrieval.index.fusion import FusionConfig
from retrieval.index.lexical import LexicalIndex
from retrieval.index.paper_index import PaperIndex
from retrieval.records.paper import Author, Paper
from retrieval.storage.records import RecordStore
from retrieval.text import bm25_tokens

from .conftest import HashEncoder, make_settings

LLM = Definition("llm", ("larg", "languag", "model"))


@pytest.mark.parametrize(("text", "expected"), [
    ("We study large language models (LLMs) for code.", LLM),
    ("LLMs (large language models) write code.", LLM),
    ("devices of the Internet of Things (IoT) at scale", Definition("iot", ("internet", "thing"))),
    ("sparse mixture-of-experts (MoE) models", Definition("moe", ("mixtur", "expert"))),
    ("high-performance computing (HPC) centres", Definition("hpc", ("high", "perform", "comput"))),
    ("Quality of Service (QoS)", Definition("qos", ("qualiti", "servic"))),
    ("graph neural networks (GNNs)", Definition("gnn", ("graph", "neural", "network"))),
    ("Bidirectional Encoder Representations from Transformers (BERT)",
     Definition("bert", ("bidirect", "encod", "represent", "from", "transform"))),
])
def test_a_definition_is_found_in_either_order(text: str, expected: Definition) -> None:
    assert definitions(text) == [expected]


@pytest.mark.parametrize("text", [
    "deoxyribonucleic acid (DNA)",  # a letter from inside a word
    "our results (ours) and theirs (e.g.)",  # no acronym
    "as shown in Table 2 (TL)",  # the initials spell something else
    "FL (federated learning, see below)",  # more than the long form in the parentheses
    "the model (GPT-4)",  # a digit: a name, not an acronym
    "in (a) and (b)",
])
def test_what_is_no_definition_is_not_taken_for_one(text: str) -> None:
    assert definitions(text) == []


@pytest.mark.parametrize(("written", "expected"), [
    ("LLMs", ("llm", "llms")), ("GPUs", ("gpu", "gpus")), ("APIs", ("api",)), ("MoE", ("moe",))])
def test_an_acronym_is_matched_in_either_number(written: str, expected: tuple[str, ...]) -> None:
    # Snowball keeps the "s" of "llms" (no vowel) and "gpus" (after "u"): two tokens each
    assert forms(bm25_tokens(singular(written))[0]) == expected


def test_only_a_long_form_the_records_agree_on_is_used() -> None:
    deep, decentralized = Definition("dl", ("deep", "learn")), Definition("dl", ("decentr", "learn"))
    assert agreed([deep, decentralized]) == {}  # one each: the records do not agree
    assert agreed([deep, decentralized, deep]) == {"dl": ("deep", "learn")}  # two against one
    assert agreed([LLM, LLM, deep]) == {"llm": LLM.long_form, "dl": ("deep", "learn")}


def test_a_query_gets_the_other_writing_of_what_it_writes() -> None:
    meanings = {"llm": LLM.long_form}
    assert term_groups(bm25_tokens("large language models for software testing"), meanings) == [
        TermGroup(("larg", "languag", "model"), (("llm",), ("llms",))), TermGroup(("softwar",)), TermGroup(("test",))]
    assert term_groups(bm25_tokens("LLMs for testing"), meanings) == [
        TermGroup(("llms",), (("larg", "languag", "model"), ("llm",))), TermGroup(("test",))]
    assert term_groups(bm25_tokens("an LLM for testing"), meanings) == [
        TermGroup(("llm",), (("larg", "languag", "model"), ("llms",))), TermGroup(("test",))]
    assert term_groups(bm25_tokens("LLM as large language models"), meanings) is None  # writes both already
    assert term_groups(bm25_tokens("graph partitioning"), meanings) is None
    assert term_groups(bm25_tokens("large models"), meanings) is None  # not the whole long form


# --- grouped BM25 -------------------------------------------------------------------------------

TITLES = ["Unit test generation with LLMs",
          "Testing software with large language models and LLMs",
          "Large language models for code review",
          "Graph partitioning on a single machine",
          "Testing safety-critical software in a service-oriented architecture"]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[RecordStore]:
    papers = [Paper(id=f"arxiv:2401.{n:05d}", title=title, year=2024, authors=[Author(name="A. Writer")])
              for n, title in enumerate(TITLES)]
    with RecordStore(tmp_path / "records.sqlite3") as records:
        records.put_many(papers)
        yield records


def test_groups_of_one_writing_score_exactly_as_the_plain_query(tmp_path: Path, store: RecordStore) -> None:
    snapshot = LexicalIndex(tmp_path / "lexical", store).current()
    query = "testing testing large language models for software"
    plain = snapshot.score_all(query)
    grouped = snapshot.score_groups([TermGroup((token,)) for token in bm25_tokens(query)])
    assert plain is not None and grouped is not None
    assert np.array_equal(plain.bm25, grouped.bm25) and np.array_equal(plain.coverage, grouped.coverage)


def test_a_concept_counts_once_whichever_way_a_record_writes_it(tmp_path: Path, store: RecordStore) -> None:
    snapshot = LexicalIndex(tmp_path / "lexical", store).current()
    groups = [TermGroup(("larg", "languag", "model"), (("llm",), ("llms",)))]
    scores = snapshot.score_groups(groups)
    assert scores is not None
    long_only = snapshot.score_all("large language models")
    short_only = snapshot.score_all("LLMs")
    assert long_only is not None and short_only is not None
    position = {paper.title: snapshot.position(paper_id) for paper_id, paper in store.get_many(snapshot.ids).items()}
    acronym_title, both, long_title = (position[TITLES[0]], position[TITLES[1]], position[TITLES[2]])
    # the title with the acronym only now matches, the concept as fully as the long form's title
    assert long_only.bm25[acronym_title] == 0 and scores.bm25[acronym_title] > 0
    assert scores.coverage[acronym_title] == pytest.approx(1.0) == scores.coverage[long_title]
    # a record writing both counts the better writing, not the two added
    assert scores.bm25[both] == pytest.approx(max(long_only.bm25[both], short_only.bm25[both]))
    assert scores.bm25[position[TITLES[3]]] == 0


# --- search: the records found define the acronym -----------------------------------------------


UNIT_TESTS, SERVICES = "Unit test generation with LLMs", "Testing safety-critical software in a service-oriented architecture"


def _index(tmp_path: Path, *, bridging: bool) -> PaperIndex:
    index = PaperIndex.open(make_settings(tmp_path / ("on" if bridging else "off")), encoder=HashEncoder(),
                            fusion=FusionConfig(acronym_bridging=bridging))
    index.upsert([
        Paper(id="arxiv:2401.00001", title=UNIT_TESTS, year=2024),
        Paper(id="arxiv:2401.00002", title="A survey of code models", year=2023,
              abstract="Large language models (LLMs) now write code; we survey how they are evaluated."),
        Paper(id="arxiv:2401.00003", title=SERVICES, year=2008,
              abstract="Software testing of services in safety-critical systems."),
        Paper(id="arxiv:2401.00004", title="Graph partitioning on one machine", year=2020),
    ])
    return index


def test_a_record_found_defines_the_acronym_another_records_title_uses(tmp_path: Path) -> None:
    query = "large language models for software testing"
    bridged_index, plain_index = _index(tmp_path, bridging=True), _index(tmp_path, bridging=False)
    try:
        bridged = {hit.paper.title: hit.score for hit in bridged_index.lexical_search(query, k=4)}
        plain = {hit.paper.title: hit.score for hit in plain_index.lexical_search(query, k=4)}
    finally:
        bridged_index.close()
        plain_index.close()
    # to BM25 "LLMs" is not "large language models": the unit-test title matched "testing" only;
    # the survey's abstract defines the acronym, so the title now matches the concept as well
    assert bridged[UNIT_TESTS] > plain[UNIT_TESTS] + 0.2
    assert bridged[SERVICES] == plain[SERVICES]  # it writes the concept neither way


def test_no_definition_among_the_records_found_leaves_the_query_as_it_is(tmp_path: Path) -> None:
    bridged, plain = _index(tmp_path, bridging=True), _index(tmp_path, bridging=False)
    try:
        for query in ("graph partitioning", "unit test generation", "GNN training"):
            assert ([(hit.paper.id, hit.score) for hit in bridged.search(query, k=4)]
                    == [(hit.paper.id, hit.score) for hit in plain.search(query, k=4)])
    finally:
        bridged.close()
        plain.close()
