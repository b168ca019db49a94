"""The evidence policy (``retrieval.answers.evidence``): one threshold read in one place, field-aware
cuts when a threshold is set, the judgement by meaning by default, relative to the best hit.

Records: the publication-list records of ``listing_records`` (title-only papers, old off-topic
distractors such as the 1961 "N-dimensional codes for detecting errors") plus a few more built
here. Fast tests replay hits with the scores the real index gives them (measured with the
real encoder); slow tests run the real ``PaperIndex`` with the real encoder through ``Assistant``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from retrieval.answers.chain import answer_question
from retrieval.answers.evidence import (
    CALIBRATED_MIN_RELEVANCE_TITLE_ONLY,
    question_concepts,
    resolve_min_relevance,
    resolve_policy,
    select_relevant,
)
from retrieval.assistant import Assistant
from retrieval.config import Settings
from retrieval.index.fusion import CALIBRATED_MIN_RELEVANCE
from retrieval.records.paper import Paper
from retrieval.results import SearchHit
from tests.answers.conftest import make_settings
from tests.answers.listing_records import RECORDS

EXTRA = [
    {"title": "Characterizing the resilience of transformer inference to soft errors in GPUs", "published": "2024"},
    {"title": "Understanding silent data corruption in large language model training", "published": "2025"},
    {"title": "Energy-efficient scheduling of deep learning jobs on GPU clusters", "published": "2023",
     "abstract": "We schedule deep learning training jobs on shared GPU clusters to reduce energy use. The "
                 "scheduler packs jobs and scales GPU frequency, cutting energy by 20% with small slowdowns."},
    {"title": "Quantum algorithms for linear systems of equations", "published": "2009",
     "abstract": "We present a quantum algorithm that estimates features of the solution of a linear system "
                 "exponentially faster than classical methods."},
    {"title": "Training data selection for language models", "published": "2024",
     "abstract": "We study how selecting training data improves language models, reducing the tokens needed."},
    {"title": "A mathematical theory of communication", "published": "1948"},
    {"title": "Codes on graphs: normal realizations", "published": "2001"},
]
PAPERS = {row["title"]: Paper(**row) for row in RECORDS + EXTRA}
FAULT = "papers about fault tolerance and resilience of LLM inference to hardware errors"
SURFACE = "What are the known results on quantum error correction with surface codes?"
CARBON = "the carbon footprint of training LLMs"
PARAPHRASE = "how well does LLM inference survive hardware faults?"
TITLE_ONLY_RIGHT = ["Resilience of LLM inference to hardware errors",
                    "Characterizing the resilience of transformer inference to soft errors in GPUs"]

# (title, fused score, dense cosine) of the top hits, as the real index ranks them
MEASURED = {
    FAULT: [(TITLE_ONLY_RIGHT[0], 0.904, 0.924), ("Fault tolerance for large language model serving", 0.537, 0.556),
            (TITLE_ONLY_RIGHT[1], 0.489, 0.496), ("Fault injection for parallel file systems", 0.303, 0.391),
            ("N-dimensional codes for detecting errors", 0.259, 0.360)],
    SURFACE: [("Error-correcting codes for magnetic tape", 0.603, 0.455), ("N-dimensional codes for detecting errors", 0.500, 0.536),
              ("Quantum algorithms for linear systems of equations", 0.365, 0.356), ("Codes on graphs: normal realizations", 0.319, 0.360),
              ("Surface plasmon resonance in gold nanorods", 0.262, 0.183)],
    CARBON: [("Elastic deep learning training on HPC schedulers", 0.562, 0.277), ("Training data selection for language models", 0.536, 0.205),
             ("Understanding silent data corruption in large language model training", 0.535, 0.230),
             ("Energy-efficient scheduling of deep learning jobs on GPU clusters", 0.458, 0.254)],
    PARAPHRASE: [(TITLE_ONLY_RIGHT[0], 0.861, 0.872), ("Fault tolerance for large language model serving", 0.572, 0.520)],
}


def replay(question: str) -> list[SearchHit]:
    return [SearchHit(paper=PAPERS[t], score=s, dense_score=d) for t, s, d in MEASURED[question]]


def ask(question: str):
    return answer_question(question, retriever=lambda q, k, f: replay(question), settings=make_settings())


# --- one threshold, read in one place ---------------------------------------------------------


def test_threshold_in_force_argument_then_setting_then_calibrated() -> None:
    assert resolve_min_relevance(make_settings()) == CALIBRATED_MIN_RELEVANCE
    assert resolve_policy(make_settings(min_relevance=0.4)).source == "PAPERBOT_MIN_RELEVANCE"
    assert resolve_policy(make_settings(min_relevance=0.4), 0.3).min_relevance == 0.3


def test_every_door_reads_the_same_threshold(tmp_path: Path) -> None:
    from retrieval.index.paper_index import PaperIndex
    from tests.index.conftest import HashEncoder

    for value, expected in ((None, CALIBRATED_MIN_RELEVANCE), (0.42, 0.42)):
        settings = Settings(_env_file=None, data_dir=tmp_path / str(value), openai_api_key=None,
                            openai_base_url=None, min_relevance=value)
        index = PaperIndex.open(settings, encoder=HashEncoder())
        try:
            assert index.relevance_threshold == expected
            assert Assistant(settings, index=index, chat_model=None).answering.relevance_threshold == expected
        finally:
            index.close()


def test_title_only_records_get_their_own_cut() -> None:
    policy = resolve_policy(make_settings())
    title_only = SearchHit(paper=PAPERS[TITLE_ONLY_RIGHT[0]], score=0.5, dense_score=0.5)
    full = SearchHit(paper=PAPERS["Fault tolerance for large language model serving"], score=0.5, dense_score=0.5)
    assert policy.cut(title_only) == pytest.approx(CALIBRATED_MIN_RELEVANCE_TITLE_ONLY)
    assert policy.cut(full) == CALIBRATED_MIN_RELEVANCE
    assert resolve_policy(None, 0.3).cut(title_only) == pytest.approx(0.3 * 0.54 / 0.51)


def test_question_concepts_are_phrases() -> None:
    assert question_concepts(SURFACE) == [("result",), ("quantum", "error", "correct"), ("surfac", "code")]
    assert question_concepts(CARBON) == [("carbon", "footprint"), ("train", "llms")]


# --- the failing cases of the issue (replayed scores) -----------------------------------------


def test_title_only_right_papers_are_cited() -> None:
    result = ask(FAULT)
    cited = [c.title for c in result.citations]
    assert not result.abstained and set(TITLE_ONLY_RIGHT) <= set(cited)
    assert "N-dimensional codes for detecting errors" not in cited and "Fault injection for parallel file systems" not in cited


def test_a_question_whose_concept_is_missing_abstains() -> None:
    # judged against the typical background; the surface-code question is judged where the
    # issue places it, against a realistic index (tests/answers/test_judgement_realistic.py)
    assert ask(CARBON).abstained
    assert select_relevant(CARBON, replay(CARBON)) == []


def test_paraphrase_still_answers() -> None:
    result = ask(PARAPHRASE)
    assert not result.abstained and result.citations[0].title == TITLE_ONLY_RIGHT[0]
    # no phrase of the question is in the record's words: the notice says the match is by meaning
    assert "Matched by meaning" in (result.notice or "") and "'llm inference survive hardware faults'" in result.notice


def test_an_answer_in_the_question_words_carries_no_meaning_notice() -> None:
    assert "Matched by meaning" not in (ask(FAULT).notice or "")


def test_a_record_far_below_the_best_hit_is_not_evidence() -> None:
    hits = [SearchHit(paper=PAPERS[TITLE_ONLY_RIGHT[0]], score=0.9, dense_score=0.9),
            SearchHit(paper=PAPERS["Soft error propagation in iterative solvers"], score=0.3, dense_score=0.3)]
    # the second shares only "error" with the question and scores under half the best hit
    assert [h.paper.title for h in select_relevant(FAULT, hits)] == [TITLE_ONLY_RIGHT[0]]


# --- the same through the real index and encoder ----------------------------------------------


@pytest.fixture(scope="module")
def real_assistant(tmp_path_factory: pytest.TempPathFactory, reference_encoder) -> Iterator[Assistant]:
    from retrieval.index.paper_index import PaperIndex

    settings = Settings(_env_file=None, data_dir=tmp_path_factory.mktemp("policy-real"), openai_api_key=None,
                        openai_base_url=None, min_relevance=None)
    index = PaperIndex.open(settings, encoder=reference_encoder)
    index.upsert(list(PAPERS.values()))
    yield Assistant(settings, index=index, chat_model=None)
    index.close()


@pytest.mark.slow
def test_real_index_cites_the_title_only_papers(real_assistant: Assistant) -> None:
    result = real_assistant.ask(FAULT)
    assert not result.abstained and set(TITLE_ONLY_RIGHT) <= {c.title for c in result.citations}


@pytest.mark.slow
def test_real_index_abstains_without_the_concept(real_assistant: Assistant) -> None:
    assert real_assistant.ask(CARBON).abstained


@pytest.mark.slow
@pytest.mark.parametrize("question", [PARAPHRASE, "what do elk and moose eating saplings do to forest regrowth?"])
def test_real_index_answers_paraphrases(real_assistant: Assistant, question: str) -> None:
    assert not real_assistant.ask(question).abstained
