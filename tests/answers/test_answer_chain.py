"""answer_question / stream_answer with LangChain fake chat models (no network)."""

from __future__ import annotations

import json

import pytest
from langchain_core.exceptions import ModelRateLimitError, ModelTimeoutError
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import SystemMessage

from retrieval.answers.chain import (
    LLM_ABSTAIN_ANSWER,
    MODEL_FOUND_NO_ANSWER,
    NO_LLM_NOTICE,
    AnswerOptions,
    EvidenceContext,
    answer_question,
    reading_status,
    stream_answer,
)
from retrieval.answers.evidence import RelevancePolicy
from retrieval.answers.extractive import NO_EVIDENCE_ANSWER
from retrieval.errors import InputError
from retrieval.records.paper import Paper
from retrieval.results import Final, Progress, SearchFilters, SearchHit, TextDelta
from tests.answers.conftest import FailingModel, LexicalRetriever, by_title, make_settings, scripted

DDA = "Which papers study the convergence of the discrete dipole approximation?"
OFF_TOPIC = "Which papers propose deep learning for protein folding?"


def threshold(value: float) -> AnswerOptions:
    """Options whose evidence policy is ``value``, given as an argument."""
    return AnswerOptions(evidence=EvidenceContext(RelevancePolicy(value, "argument")))


def final(events: list) -> Final:
    """The Final, after checking the stream's shape: at most one Progress, first, then text."""
    assert isinstance(events[-1], Final)
    body = events[:-1]
    waits = [e for e in body if isinstance(e, Progress)]
    assert len(waits) <= 1 and (not waits or body[0] is waits[0])
    assert all(isinstance(e, TextDelta) for e in body[len(waits):])
    return events[-1]


def test_the_asker_hears_what_a_model_call_waits_for_and_nothing_without_one(retriever: LexicalRetriever) -> None:
    model = scripted("Convergence of the discrete dipole approximation was analysed [1].")
    written = list(stream_answer(DDA, retriever=retriever, settings=make_settings(), chat_model=model))
    assert written[0] == Progress(reading_status(3))  # the three records the lexical retriever keeps
    assert reading_status(3).startswith("Found 3 matching records; ") and "1 matching record; " in reading_status(1)
    assert final(written).result.mode == "llm"
    extractive = list(stream_answer(DDA, retriever=retriever, settings=make_settings(), chat_model=None))
    assert not any(isinstance(e, Progress) for e in extractive)
    refused = list(stream_answer(OFF_TOPIC, retriever=retriever, settings=make_settings(), chat_model=model))
    assert final(refused).result.abstained and not any(isinstance(e, Progress) for e in refused)


def test_without_llm_the_answer_is_extractive_with_one_notice(retriever: LexicalRetriever) -> None:
    result = answer_question(DDA, retriever=retriever, settings=make_settings())
    assert result.mode == "extractive" and not result.abstained
    assert result.notice == NO_LLM_NOTICE
    assert len(result.citations) == 3
    payload = json.loads(result.model_dump_json())
    assert {"question", "answer", "mode", "abstained", "citations"} <= set(payload)
    assert "notice" not in payload
    assert {"n", "id", "title", "authors", "year", "venue", "doi", "arxiv_id", "url", "score"} <= set(payload["citations"][0])


def test_nothing_relevant_abstains_without_calling_the_model(retriever: LexicalRetriever) -> None:
    model = FailingModel(error=AssertionError("the model must not be called"))
    result = answer_question(OFF_TOPIC, retriever=retriever, settings=make_settings(), chat_model=model)
    assert result.abstained and result.citations == [] and result.answer == NO_EVIDENCE_ANSWER
    assert model.calls == 0
    extractive = answer_question(OFF_TOPIC, retriever=retriever, settings=make_settings())
    assert extractive.abstained and extractive.answer == NO_EVIDENCE_ANSWER and extractive.citations == []


def test_threshold_argument_and_setting_are_honoured(papers: list[Paper]) -> None:
    teleport = by_title(papers, "Visualizing Teleportation")
    hits = [SearchHit(paper=teleport, score=0.5, dense_score=0.7)]  # no shared words: a paraphrase

    def fixed(query: str, k: int, filters: SearchFilters | None) -> list[SearchHit]:
        return hits

    question = "diagrams for moving entangled qubits between labs"
    assert not answer_question(question, retriever=fixed, settings=make_settings(), options=threshold(0.4)).abstained
    assert answer_question(question, retriever=fixed, settings=make_settings(), options=threshold(0.6)).abstained
    assert answer_question(question, retriever=fixed, settings=make_settings(min_relevance=0.6)).abstained
    assert not answer_question(question, retriever=fixed, settings=make_settings(min_relevance=0.4)).abstained


def test_retriever_gets_k_and_filters(retriever: LexicalRetriever) -> None:
    seen = []

    def spy(query: str, k: int, filters: SearchFilters | None) -> list[SearchHit]:
        seen.append((query, k, filters))
        return retriever(query, k, filters)

    filters = SearchFilters(since=2007)
    answer_question(DDA, retriever=spy, settings=make_settings(),
                    options=AnswerOptions(k=3, filters=filters))
    assert seen == [(DDA, 3, filters)]


def test_llm_answer_citations_are_validated_and_renumbered(retriever: LexicalRetriever) -> None:
    # Evidence is [1] theory, [2] large particles, [3] overview (LexicalRetriever order).
    model = scripted("The overview covers the method [3]. Convergence was analysed rigorously [1][8]. "
                     "This settles the field. A survey proves it [12].")
    result = answer_question(DDA, retriever=retriever, settings=make_settings(), chat_model=model)
    assert result.mode == "llm" and not result.abstained and result.notice is None
    assert result.answer == "The overview covers the method [1]. Convergence was analysed rigorously [2]."
    assert [c.n for c in result.citations] == [1, 2]
    assert result.citations[0].title.startswith("The discrete dipole approximation: an overview")
    assert result.citations[1].title.startswith("Convergence of the discrete dipole approximation. I")


def test_dropped_sentences_are_reported(retriever: LexicalRetriever) -> None:
    model = scripted("Convergence was analysed [1]. This settles the field. A survey proves it [12].")
    event = final(list(stream_answer(DDA, retriever=retriever, settings=make_settings(), chat_model=model)))
    assert event.report is not None
    assert event.report.dropped_sentences == ["This settles the field.", "A survey proves it [12]."]
    assert event.report.invalid_citations == (12,)


@pytest.mark.parametrize("reply", ["I cannot answer this from the provided records.", "NO_ANSWER", " NO_ANSWER.\n",
                                   "The records do not address this question."])
def test_the_model_s_refusal_over_evidence_that_passed_shows_the_records_instead(retriever: LexicalRetriever,
                                                                                reply: str) -> None:
    """The refusal is one signal, not the verdict: the evidence passed the judgement."""
    result = answer_question(DDA, retriever=retriever, settings=make_settings(), chat_model=scripted(reply))
    assert not result.abstained and result.mode == "extractive" and len(result.citations) == 3
    assert result.answer != LLM_ABSTAIN_ANSWER
    assert result.notice == MODEL_FOUND_NO_ANSWER


def test_without_evidence_the_model_is_not_asked_and_the_answer_abstains(retriever: LexicalRetriever) -> None:
    model = scripted("NO_ANSWER")
    result = answer_question(OFF_TOPIC, retriever=retriever, settings=make_settings(), chat_model=model)
    assert result.abstained and result.citations == [] and model.seen == []


def test_answer_without_any_valid_citation_is_never_returned_uncited(retriever: LexicalRetriever) -> None:
    # the records passed the relevance policy: a model that cites none of them failed, they did not
    reply = "The discrete dipole approximation converges for all particles. See [40] for details [41]."
    result = answer_question(DDA, retriever=retriever, settings=make_settings(), chat_model=scripted(reply))
    assert result.mode == "extractive" and not result.abstained and result.citations
    assert result.notice == ("The model's reply was unusable (none of its claims cited a record validly): "
                             "extractive answer instead.")
    assert "converges for all particles" not in result.answer


def test_stream_yields_only_validated_sentences_then_the_final(retriever: LexicalRetriever) -> None:
    reply = "Convergence was analysed [1]. Uncited filler here. Invented [99]. The overview reviews it [3]. Tail"
    events = list(stream_answer(DDA, retriever=retriever, settings=make_settings(), chat_model=scripted(reply)))
    event = final(events)
    streamed = "".join(e.text for e in events[:-1] if isinstance(e, TextDelta))  # all are (``final``)
    # what was on screen while the model wrote: complete sentences that survive validation only
    assert streamed == "Convergence was analysed [1]. The overview reviews it [2]."
    assert "[99]" not in streamed and "filler" not in streamed
    assert event.result.answer == "Convergence was analysed [1]. The overview reviews it [2]."


def test_character_stream_shows_each_sentence_once_it_is_complete(retriever: LexicalRetriever) -> None:
    model = FakeListChatModel(responses=["Convergence was analysed [1]. The overview reviews it [3]."])
    events = list(stream_answer(DDA, retriever=retriever, settings=make_settings(), chat_model=model))
    assert [e.text for e in events[:-1] if isinstance(e, TextDelta)] == ["Convergence was analysed [1]."]  # the last one: in the Final
    assert final(events).result.answer == "Convergence was analysed [1]. The overview reviews it [2]."


@pytest.mark.parametrize(
    ("error", "chunks", "calls", "notice"),
    [
        # a timeout is never retried: the same prompt would be as slow again
        (ModelTimeoutError("slow"), [], 1, "The model was too slow (it did not start answering within 60 s for a "
                                           "prompt of ~"),
        (ModelTimeoutError("slow"), ["Partial answer "], 1,
         "The model was too slow (it stopped writing for 30 s mid-reply; raise PAPERBOT_LLM_STALL_TIMEOUT)"),
        # a rate limit before any content is retried (after a back-off), up to the retries
        (ModelRateLimitError("429"), [], 3, "LLM unreachable (rate limited after 3 attempts)"),
        (ModelRateLimitError("429"), ["Partial answer "], 1, "LLM unreachable (rate limited after 1 attempt)"),
    ],
)
def test_model_failure_falls_back_to_extractive(retriever: LexicalRetriever, error: Exception, chunks: list[str],
                                                calls: int, notice: str) -> None:
    model = FailingModel(error=error, chunks=chunks)
    events = list(stream_answer(DDA, retriever=retriever, settings=make_settings(llm_max_retries=2), chat_model=model))
    result = final(events).result
    assert [e.text for e in events[:-1] if isinstance(e, TextDelta)] == []  # an unfinished, uncited fragment is never shown
    assert result.mode == "extractive" and not result.abstained and len(result.citations) == 3
    assert (result.notice or "").startswith(notice) and (result.notice or "").endswith(": extractive answer instead.")
    assert model.calls == calls


@pytest.mark.parametrize("reply", ["   \n ", "<think>only thinking</think>", "{} [] 123", "[1]", "@PB-3f2a9c01",
                                   "[1] [2]\n\n[3]"])
def test_output_without_text_falls_back_to_extractive(retriever: LexicalRetriever, reply: str) -> None:
    result = answer_question(DDA, retriever=retriever, settings=make_settings(),
                             chat_model=FakeListChatModel(responses=[reply]))
    assert result.mode == "extractive" and not result.abstained
    # the server answered: the reply was unusable, the model was not unreachable
    assert result.notice == ("The model's reply was unusable (it held no words, only citation marks or "
                             "markers): extractive answer instead.")


def test_prompt_separates_instructions_from_data(retriever: LexicalRetriever) -> None:
    model = scripted("Convergence was analysed [1].")
    answer_question(DDA, retriever=retriever, settings=make_settings(), chat_model=model)
    system, user = model.seen[0]
    assert isinstance(system, SystemMessage)
    first_line, _ = user.text.split("\n", 1)
    boundary = first_line.removeprefix("Data marker of this message: ")
    assert boundary.startswith("@@PB-") and boundary not in system.text
    assert "discrete dipole" not in system.text  # no data in the instructions
    assert f"{boundary} QUESTION\n{DDA}\n{boundary} END QUESTION" in user.text
    assert user.text.count(f"{boundary} RECORD [") == 3 and user.text.count(f"{boundary} END RECORD [") == 3


def test_each_request_gets_a_new_boundary(retriever: LexicalRetriever) -> None:
    model = scripted("A [1].", "B [1].")
    for _ in range(2):
        answer_question(DDA, retriever=retriever, settings=make_settings(), chat_model=model)
    first, second = (msgs[1].text.split("\n", 1)[0] for msgs in model.seen)
    assert first != second  # a new boundary in the user turn; the system prompt stays the same
    assert model.seen[0][0].text == model.seen[1][0].text


@pytest.mark.parametrize(("question", "k"), [("", 8), ("   ", 8), ("x" * 2001, 8), ("ok?", 0), ("ok?", 51)])
def test_bad_input_raises_before_streaming(retriever: LexicalRetriever, question: str, k: int) -> None:
    with pytest.raises(InputError):
        stream_answer(question, retriever=retriever, settings=make_settings(),
                      options=AnswerOptions(k=k))  # no iteration needed
    assert retriever.queries == []


# --- follow-ups ------------------------------------------------------------------------------

HISTORY = [("Which papers study magnetophonon resonance in graphene?", "One paper does [1].")]


def test_followup_without_llm_carries_previous_terms(retriever: LexicalRetriever) -> None:
    result = answer_question("What about since 2006?", retriever=retriever, settings=make_settings(),
                             options=AnswerOptions(history=HISTORY))
    assert retriever.queries == ["What about since 2006? magnetophonon resonance graphene"]
    assert not result.abstained and "Graphene" in result.citations[0].title
    assert result.question == "What about since 2006?"


def test_followup_new_topic_without_llm_is_searched_as_asked(retriever: LexicalRetriever) -> None:
    answer_question(DDA, retriever=retriever, settings=make_settings(),
                             options=AnswerOptions(history=HISTORY))
    assert retriever.queries == [DDA]


def test_followup_with_llm_is_rewritten_by_the_model(retriever: LexicalRetriever) -> None:
    model = scripted("Query: magnetophonon resonance in graphene papers since 2006", "The fine structure is described [1].")
    events = list(stream_answer("And since 2006?", retriever=retriever, settings=make_settings(),
                                options=AnswerOptions(history=HISTORY), chat_model=model))
    event = final(events)
    assert retriever.queries == ["magnetophonon resonance in graphene papers since 2006"]
    assert event.query == retriever.queries[0]
    rewrite_prompt = model.seen[0][0].text
    assert "Which papers study magnetophonon resonance in graphene?" in rewrite_prompt
    assert "[1]" not in rewrite_prompt  # citations of earlier answers are not carried over
    assert event.result.answer == "The fine structure is described [1]."


def test_unusable_rewrite_falls_back_to_the_heuristic(retriever: LexicalRetriever) -> None:
    model = scripted("Sure! Here is a rewrite.\nIt mentions graphene.\nAnd more lines.", "Described [1].")
    answer_question("And since 2006?", retriever=retriever, settings=make_settings(),
                    options=AnswerOptions(history=HISTORY), chat_model=model)
    assert retriever.queries == ["And since 2006? magnetophonon resonance graphene"]


def test_failing_rewrite_skips_the_model_for_the_answer(retriever: LexicalRetriever) -> None:
    model = FailingModel(error=ModelTimeoutError("slow"))
    result = answer_question("And since 2006?", retriever=retriever, settings=make_settings(llm_max_retries=0),
                             options=AnswerOptions(history=HISTORY), chat_model=model)
    assert model.calls == 1
    assert result.mode == "extractive" and not result.abstained
    assert (result.notice or "").startswith("The model was too slow (it did not start answering within 60 s")
