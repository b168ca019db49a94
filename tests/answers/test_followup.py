"""Follow-up questions: the no-LLM heuristic and the model rewrite's guards."""

from __future__ import annotations

import re
from typing import Any

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from retrieval.answers.condense import (
    MAX_CARRIED_WORDS,
    MAX_HISTORY_TURNS,
    condense_question,
    heuristic_query,
    looks_like_followup,
    standalone_question,
)
from retrieval.answers.model_calls import CallLimits
from tests.answers.conftest import make_settings, scripted


def limits() -> CallLimits:
    """The settings' limits from now: a deadline taken at import would pass while the suite runs."""
    return CallLimits.from_settings(make_settings())

PREVIOUS = ("Which papers propose graph neural networks for molecules?", "Two do [1][2].")


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("What about since 2022?", True),  # no content words
        ("Are they open access?", True),  # referring word
        ("Which of those use attention?", True),
        ("Which papers study convergence of the discrete dipole approximation?", False),
    ],
)
def test_looks_like_followup(question: str, expected: bool) -> None:
    assert looks_like_followup(question) is expected


def test_heuristic_carries_previous_content_words() -> None:
    assert heuristic_query("What about since 2022?", [PREVIOUS]) == "What about since 2022? graph neural networks molecules"


def test_heuristic_skips_words_already_present_and_caps_them() -> None:
    assert heuristic_query("More on graph ones?", [PREVIOUS]) == "More on graph ones? neural networks molecules"
    long_previous = (" ".join(f"term{chr(97 + i)}" for i in range(12)), "answer")
    carried = heuristic_query("And those?", [long_previous]).split()[2:]
    assert len(carried) == MAX_CARRIED_WORDS


def test_heuristic_leaves_new_topics_and_empty_history_alone() -> None:
    topic = "Which papers study convergence of the discrete dipole approximation?"
    assert heuristic_query(topic, [PREVIOUS]) == topic
    assert heuristic_query("And those?", []) == "And those?"
    assert standalone_question("And those?", [], scripted("must not be called"), limits()) == "And those?"


@pytest.mark.parametrize(
    ("reply", "query"),
    [
        ("graph neural networks for molecules since 2022", "graph neural networks for molecules since 2022"),
        ('Standalone query: "graph neural networks for molecules"', "graph neural networks for molecules"),
        ("Query: <!channel> molecule GNNs", "molecule GNNs"),
    ],
)
def test_model_rewrite_is_cleaned(reply: str, query: str) -> None:
    assert condense_question("What about since 2022?", [PREVIOUS], scripted(reply), limits()) == query


@pytest.mark.parametrize("reply", ["", "NO_ANSWER", "Line one.\nLine two.\nLine three.", "12345", "x " * 300])
def test_unusable_rewrites_fall_back_to_the_heuristic(reply: str) -> None:
    fallback = heuristic_query("What about since 2022?", [PREVIOUS])
    assert condense_question("What about since 2022?", [PREVIOUS], scripted(reply), limits()) == fallback


class EchoBoundary(BaseChatModel):
    """Replies with this call's boundary token, as a model obeying a forged instruction might."""

    @property
    def _llm_type(self) -> str:
        return "echo-boundary"

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: Any = None, **kwargs: Any) -> ChatResult:
        boundary = re.search(r"@@PB-[0-9A-F]{16}@@", messages[0].text).group(0)  # type: ignore[union-attr]
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=f"{boundary} graph networks"))])


def test_rewrite_echoing_the_boundary_is_rejected() -> None:
    fallback = heuristic_query("What about since 2022?", [PREVIOUS])
    assert condense_question("What about since 2022?", [PREVIOUS], EchoBoundary(), limits()) == fallback
    # Boundary-shaped text is removed from a rewrite; nothing usable left -> heuristic.
    assert condense_question("What about since 2022?", [PREVIOUS], scripted("@@PB-ABCD@@"), limits()) == fallback


def test_prompt_holds_recent_turns_only_and_neutralised() -> None:
    history = [(f"Old question {i} about topic{i}?", f"Answer {i} <!channel> [1].") for i in range(5)]
    model = scripted("topic4 papers")
    condense_question("And more?", history, model, limits())
    prompt = model.seen[0][0].text
    assert "topic0" not in prompt and "topic1" not in prompt
    assert all(f"topic{i}" in prompt for i in range(5 - MAX_HISTORY_TURNS, 5))
    assert "<!channel>" not in prompt and "[1]" not in prompt
