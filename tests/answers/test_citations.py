"""Citation parsing and answer validation (pure text functions)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from retrieval.answers.citations import cited_numbers, parse_group, split_sentences, validate_answer


@pytest.mark.parametrize(
    ("body", "numbers"),
    [("1", [1]), ("1, 3", [1, 3]), ("2;4", [2, 4]), ("2-4", [2, 3, 4]), ("2–4", [2, 3, 4]), ("3-1000", [3, 1000])],
)
def test_parse_group(body: str, numbers: list[int]) -> None:
    assert parse_group(body) == numbers


def test_cited_numbers_in_order() -> None:
    assert cited_numbers("A [2]. B [1, 3][2]. C [4-5]. Not a citation [x].") == [2, 1, 3, 2, 4, 5]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("BM25 is lexical [1]. Dense retrieval uses vectors [2].", ["BM25 is lexical [1].", "Dense retrieval uses vectors [2]."]),
        ("It converges. [1] It is fast [2].", ["It converges. [1]", "It is fast [2]."]),
        ("Smith et al. show it [1]. Jones et al. Propose it [2].", ["Smith et al. show it [1].", "Jones et al. Propose it [2]."]),
        ("We use e.g. BM25 and a p of 0.05 here [1]. Done [2].", ["We use e.g. BM25 and a p of 0.05 here [1].", "Done [2]."]),
        ("J. Smith found it [1]! Really? Yes [2].", ["J. Smith found it [1]!", "Really?", "Yes [2]."]),
    ],
)
def test_split_sentences(text: str, expected: list[str]) -> None:
    assert split_sentences(text) == expected


def test_valid_answer_is_kept_and_renumbered_by_first_citation() -> None:
    report = validate_answer("Dense retrieval helps [3]. BM25 is strong [1][3].", 3)
    assert not report.abstained
    assert report.text == "Dense retrieval helps [1]. BM25 is strong [2][1]."
    assert report.order == (3, 1)
    assert report.dropped == ()


def test_citations_to_missing_evidence_are_removed() -> None:
    report = validate_answer("RRF fuses rankings [1][9]. Cross-encoders rerank [2, 12].", 2)
    assert report.text == "RRF fuses rankings [1]. Cross-encoders rerank [2]."
    assert report.invalid_citations == (9, 12)
    assert report.raw_citations == 4


def test_sentence_citing_only_missing_evidence_is_dropped() -> None:
    report = validate_answer("RRF fuses rankings [1]. Everyone agrees [7].", 2)
    assert report.text == "RRF fuses rankings [1]."
    assert [(d.text, d.reason) for d in report.dropped] == [("Everyone agrees [7].", "invalid citation only")]


def test_uncited_claims_are_dropped_and_listed() -> None:
    text = "Hybrid search is the best approach overall. BM25 scores terms [1]. It was invented in 1994."
    report = validate_answer(text, 1)
    assert report.text == "BM25 scores terms [1]."
    assert report.dropped_sentences == ["Hybrid search is the best approach overall.", "It was invented in 1994."]
    assert {d.reason for d in report.dropped} == {"uncited"}


def test_lead_in_and_list_items_keep_their_shape() -> None:
    text = "Two records address this:\n- One uses BM25 [2].\n- The other is uncited.\n- Another uses RRF [1]."
    report = validate_answer(text, 2)
    assert report.text == "Two records address this:\n- One uses BM25 [1].\n- Another uses RRF [2]."
    assert report.dropped_sentences == ["The other is uncited."]


def test_paragraph_breaks_survive() -> None:
    report = validate_answer("First point [1].\n\nSecond point [2].", 2)
    assert report.text == "First point [1].\n\nSecond point [2]."


def test_duplicate_numbers_in_a_group_are_merged() -> None:
    assert validate_answer("Claim [2, 2, 1].", 2).text == "Claim [1][2]."


def test_ranges_expand() -> None:
    report = validate_answer("Several papers agree [1-3].", 3)
    assert report.text == "Several papers agree [1][2][3]."


@pytest.mark.parametrize(
    "text",
    [
        "NO_ANSWER",
        "NO_ANSWER.",
        "I cannot answer this question from the provided records.",
        "I can't answer that based on the records [1].",
        "We are unable to answer this from the given evidence.",
        "The provided records do not contain information about protein folding.",
        "There is no relevant information in the records. Record [1] is about graphene [1].",
    ],
)
def test_refusals_abstain(text: str) -> None:
    report = validate_answer(text, 3)
    assert report.abstained and report.reason == "refusal"
    assert report.text == "" and report.order == ()


def test_cited_negative_first_sentence_is_a_claim_not_a_refusal() -> None:
    report = validate_answer("The overview does not address convergence [2]. The theory paper does [1].", 2)
    assert not report.abstained
    assert report.order == (2, 1)


def test_first_person_hedge_with_citation_is_not_a_refusal() -> None:
    report = validate_answer("We cannot rule out that BM25 wins on short queries [2]. Dense helps [1].", 2)
    assert not report.abstained and report.order == (2, 1)


def test_refusal_after_cited_claims_is_just_dropped() -> None:
    report = validate_answer("BM25 is lexical [1]. I cannot answer the second part.", 1)
    assert not report.abstained
    assert report.text == "BM25 is lexical [1]."


def test_no_valid_citation_left_abstains() -> None:
    report = validate_answer("Quantum gravity is solved [5]. Also it is cheap.", 2)
    assert report.abstained and report.reason == "no valid citation"
    assert report.text == ""


def test_empty_and_think_only_output_abstains() -> None:
    assert validate_answer("", 2).reason == "empty"
    assert validate_answer("<think>hmm [1]</think>\n", 2).reason == "empty"


def test_think_block_is_removed() -> None:
    report = validate_answer("<think>Record 2 is off-topic [2].</think>BM25 is lexical [1].", 2)
    assert report.text == "BM25 is lexical [1]."
    assert report.order == (1,)


def test_boundary_and_system_prompt_quotes_are_dropped() -> None:
    system = "You are paperbot, a research assistant that answers only from the supplied paper records."
    text = (
        "My rules: you are paperbot, a research assistant that answers only from the supplied records [1]. "
        "The marker is @@PB-ABC@@ [1]. BM25 is lexical [1]."
    )
    report = validate_answer(text, 1, forbidden=["@@PB-ABC@@"], protected=[system])
    assert report.text == "BM25 is lexical [1]."
    assert [d.reason for d in report.dropped] == ["prompt leak", "prompt leak"]


_sentence = st.tuples(
    st.sampled_from(["BM25 ranks terms", "Dense vectors help", "RRF fuses lists", "It is fast", "Graphs matter"]),
    st.lists(st.integers(min_value=0, max_value=9), max_size=3),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(_sentence, min_size=1, max_size=8), st.integers(min_value=1, max_value=6))
def test_validation_invariants(sentences: list[tuple[str, list[int]]], evidence: int) -> None:
    text = " ".join(words + "".join(f" [{n}]" for n in nums) + "." for words, nums in sentences)
    report = validate_answer(text, evidence)
    if report.abstained:
        assert report.text == "" and report.order == ()
        assert not any(any(1 <= n <= evidence for n in nums) for _, nums in sentences)
        return
    numbers = cited_numbers(report.text)
    first_seen = list(dict.fromkeys(numbers))
    assert first_seen == list(range(1, len(report.order) + 1))  # renumbered 1..m by first citation
    assert all(1 <= old <= evidence for old in report.order)
    for sentence in split_sentences(report.text):
        assert re.search(r"\[\d+\]", sentence), sentence  # every kept claim is cited
    kept = sum(1 for _, nums in sentences if any(1 <= n <= evidence for n in nums))
    assert report.kept_sentences == kept
    assert len(report.dropped) == len(sentences) - kept
