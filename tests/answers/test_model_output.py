"""The model's own output is untrusted: what real and hostile models sent, and what reaches a door.

Each reply below is one a probe of the running system saw (a small local model echoing its
instructions, a fragment of the boundary as the whole answer, the prompt's example sentence
copied as a claim, a phishing link, terminal escapes and bidi overrides) or the same shape.
"""

from __future__ import annotations

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel

from prompts import load_prompt
from retrieval.answers.chain import answer_question, stream_answer
from retrieval.answers.model_output import (
    MAX_REPLY_CHARS,
    ReplyRejected,
    ValidatedStream,
    clean_reply,
    unusable_reason,
)
from retrieval.results import Final, TextDelta
from tests.answers.conftest import LexicalRetriever, make_settings

DDA = "Which papers study the convergence of the discrete dipole approximation?"
SYSTEM = load_prompt("answer_system", required=set()).text


def _answer(retriever: LexicalRetriever, reply: str):
    return answer_question(DDA, retriever=retriever, settings=make_settings(),
                           chat_model=FakeListChatModel(responses=[reply]))


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ("See [the official DOI](https://evil.example/phish) [1].", "See the official DOI [1]."),
        ("Read <https://evil.example/x|this page> [1].", "Read this page [1]."),
        ("Details at https://evil.example/a?b=c and www.evil.example [1].", "Details at and [1]."),
        ("![logo](https://evil.example/p.png) Converges [1].", "logo Converges [1]."),
        ("## Answer\n**Converges** quickly [1].", "Answer\nConverges quickly [1]."),
        ("```\nConverges [1].\n```", "Converges [1]."),
        ("Con\u202everges\u200b [1].\u2066", "Converges [1]."),
        ("\x1b[31mRed\x1b[0m and \x1b]0;title\x07 converges [1].", "Red and converges [1]."),
        ("Converges [1].\x00\x07", "Converges [1]."),
    ],
)
def test_clean_reply_removes_what_the_answer_format_does_not_allow(raw: str, clean: str) -> None:
    assert clean_reply(raw) == clean


def test_a_boundary_fragment_becomes_the_boundary_so_its_sentence_is_dropped() -> None:
    assert clean_reply("@PB-3f2a9c first [1].", "@@PB-ABCDEF0123456789@@") == "@@PB-ABCDEF0123456789@@ first [1]."
    assert unusable_reason(clean_reply("@PB-3f2a9c", "@@PB-ABCDEF0123456789@@")) is not None


@pytest.mark.parametrize("reply", ["[1]", "[1][2]. [3]", "@PB-3f2a9c01", "@@PB-3F2A@@ [2]", "1. 2. 3."])
def test_marker_only_replies_are_unusable(reply: str) -> None:
    assert unusable_reason(clean_reply(reply)) == "it held no words, only citation marks or markers"


def test_a_reply_that_lists_the_records_back_is_unusable() -> None:
    titles = ["Convergence of the discrete dipole approximation", "The discrete dipole approximation: an overview"]
    listing = "1. Convergence of the discrete dipole approximation [1]\n2. The discrete dipole approximation: an overview [2]"
    assert unusable_reason(listing, titles) == "it only listed the records' titles back"
    assert unusable_reason("The first record analyses convergence [1].", titles) is None


def test_the_final_answer_holds_no_link_and_no_control_character(retriever: LexicalRetriever) -> None:
    result = _answer(retriever, "The theory paper analyses convergence, see [the DOI](https://evil.example/phish) "
                                "[1]. \u202eThe overview\u200b reviews \x1b[31mthe method [3].")
    assert result.mode == "llm"
    assert result.answer == "The theory paper analyses convergence, see the DOI [1]. The overview reviews the method [2]."
    assert "http" not in result.answer and result.answer.isprintable()


def test_the_prompts_example_is_not_a_sentence_a_model_can_copy_as_a_claim() -> None:
    # a real model copied "Smith et al. use a learned sparse index [2]" as a claim about a real
    # record: the example is now a visible template, and copying it leaks the prompt
    assert "learned sparse index" not in SYSTEM and '"<what record 2 says> [2]."' in SYSTEM


def test_a_copied_instruction_is_dropped_as_a_prompt_leak(retriever: LexicalRetriever) -> None:
    copied = ("End every sentence that states something with the number of the record that supports it [1]. "
              "The overview reviews the method [3].")
    result = _answer(retriever, copied)
    assert result.answer == "The overview reviews the method [1]."


def test_the_live_stream_never_shows_an_invented_citation_an_uncited_claim_or_the_prompt(
        retriever: LexicalRetriever) -> None:
    echo = "\n".join(f"{line} [1]" for line in SYSTEM.splitlines() if line.strip())
    reply = f"Invented claim [99]. Uncited claim here. {echo}\nThe overview reviews the method [3]. Done."
    events = list(stream_answer(DDA, retriever=retriever, settings=make_settings(),
                                chat_model=FakeListChatModel(responses=[reply])))
    shown = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert shown == ""  # the first sentences were invented or uncited, then the echo stopped the stream
    for leaked in ("[99]", "Uncited", "You are paperbot", "untrusted DATA", "NO_ANSWER", "@@PB-"):
        assert leaked not in shown
    final = events[-1]  # a model that repeats its instructions is broken: its reply is not used
    assert isinstance(final, Final) and final.result.mode == "extractive"
    assert final.result.notice == "The model's reply was unusable (it repeated its instructions): extractive answer instead."


def test_validated_stream_only_extends_and_stops_at_a_turn_to_refusal() -> None:
    live = ValidatedStream(3, boundary="@@PB-ABCDEF0123456789@@")
    assert live.feed("Convergence is analysed [1]. ") == ""  # not yet known to be complete
    assert live.feed("The overview") == "Convergence is analysed [1]."
    assert live.feed(" reviews it [3]. I cannot answer the rest.") == " The overview reviews it [2]."


def test_validated_stream_rejects_a_runaway_reply() -> None:
    live = ValidatedStream(3, boundary="@@PB-ABCDEF0123456789@@")
    with pytest.raises(ReplyRejected, match="ran past"):
        for _ in range(MAX_REPLY_CHARS // 20 + 2):
            live.feed("It converges fast [1]")  # one endless sentence: the character cap


def test_a_runaway_reply_falls_back_with_an_accurate_notice(retriever: LexicalRetriever) -> None:
    result = _answer(retriever, " ".join(f"Sentence {n} says it converges [1]." for n in range(60)))
    assert result.mode == "extractive" and result.notice == (
        "The model's reply was unusable (it ran past 40 sentences): extractive answer instead.")


def test_a_list_whose_citations_point_at_the_wrong_records_falls_back_and_is_never_shown(
        retriever: LexicalRetriever) -> None:
    # a real small model numbered its list and cited by position, each [k] one record off
    shifted = ("1. Convergence of the discrete dipole approximation gets a theoretical analysis [2].\n"
               "2. The discrete dipole approximation simulates light scattering by large particles [3].\n"
               "3. The discrete dipole approximation: an overview and recent developments [1].")
    events = list(stream_answer(DDA, retriever=retriever, settings=make_settings(),
                                chat_model=FakeListChatModel(responses=[shifted])))
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == ""
    final = events[-1]
    assert isinstance(final, Final) and final.result.mode == "extractive"
    assert final.result.notice == ("The model's reply was unusable (its citations pointed at the wrong records): "
                                   "extractive answer instead.")


def test_the_same_list_with_the_right_citations_is_an_answer(retriever: LexicalRetriever) -> None:
    right = ("1. Convergence of the discrete dipole approximation gets a theoretical analysis [1].\n"
             "2. The discrete dipole approximation simulates light scattering by large particles [2].\n"
             "3. The discrete dipole approximation: an overview and recent developments [3].")
    result = _answer(retriever, right)
    assert result.mode == "llm" and result.notice is None
    prefixes = ["Convergence of the discrete", "The discrete dipole approximation for", "The discrete dipole approximation:"]
    assert [c.title.startswith(prefix) for c, prefix in zip(result.citations, prefixes, strict=True)] == [True, True, True]


@pytest.mark.parametrize(
    ("raw", "clean"),
    [  # a real small model wrote each citation before its sentence
        ("[2] The paper discusses flaky tests. [3] This is a study on Scratch. [4] Whisker tests them",
         "The paper discusses flaky tests [2]. This is a study on Scratch [3]. Whisker tests them [4]"),
        ("1. [2] Flaky tests are common.", "1. Flaky tests are common [2]."),
        ("[1][2] Both study flaky tests! [3]", "Both study flaky tests [1][2]!"),
        ("Flaky tests are common [2]. [3] is odd", "Flaky tests are common [2]. [3] is odd"),  # not that style
    ],
)
def test_citations_written_before_their_sentence_move_after_it(raw: str, clean: str) -> None:
    assert clean_reply(raw) == clean


def test_a_reply_citing_without_saying_anything_about_the_records_is_unusable(retriever: LexicalRetriever) -> None:
    # SmolLM2-135M's whole answer to two questions, after the boundary fragment it opened with
    result = _answer(retriever, "@@PB-FC1BB4B7A980DF06@\nThe answer to the question is [2].")
    assert result.mode == "extractive" and result.notice == (
        "The model's reply was unusable (its sentences said nothing the cited records say): extractive answer instead.")
    assert _answer(retriever, "The overview reviews the method [3].").mode == "llm"


def test_claims_the_cited_records_do_not_support_are_not_shown(retriever: LexicalRetriever) -> None:
    """The issue's reply: every word check passed, and the mode line said "every claim checked"."""
    nonsense = ("The cited work proves that P equals NP and that unit tests are obsolete [1]. "
                "It also shows vaccines cause autism [2].")
    result = _answer(retriever, nonsense)
    assert result.mode == "extractive" and "NP" not in result.answer and "autism" not in result.answer
    assert result.notice == ("The model's reply was unusable (its sentences said nothing the cited records say): "
                             "extractive answer instead.")
    mixed = _answer(retriever, "The theory paper analyses convergence [1]. It also shows vaccines cause autism [2].")
    assert mixed.mode == "llm" and mixed.answer == "The theory paper analyses convergence [1]."
