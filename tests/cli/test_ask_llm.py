"""`paperbot ask` with an OpenAI-compatible endpoint served on 127.0.0.1 (the real client path)."""

from __future__ import annotations

from typing import TypedDict

import pytest

from tests.answers.openai_stub_server import OpenAIStubServer, StubReply
from tests.cli.conftest import paperbot_here

pytestmark = pytest.mark.slow

QUESTION = "Which papers use large language models to generate unit tests?"


class _LlmEnv(TypedDict):
    """The environment naming the stub endpoint (keys spelled out: none is a parameter of paperbot_here)."""

    OPENAI_BASE_URL: str
    OPENAI_API_KEY: str
    PAPERBOT_LLM_MODEL: str
    PAPERBOT_LLM_TIMEOUT: str
    PAPERBOT_LLM_MAX_RETRIES: str


def _llm_env(server: OpenAIStubServer) -> _LlmEnv:
    return {
        "OPENAI_BASE_URL": server.base_url,
        "OPENAI_API_KEY": "sk-test-not-a-real-key",
        "PAPERBOT_LLM_MODEL": "stub-model",
        "PAPERBOT_LLM_TIMEOUT": "5",
        "PAPERBOT_LLM_MAX_RETRIES": "1",
    }


def test_llm_answer_keeps_only_validated_citations(indexed):
    reply = (
        "Large language models have been used to generate unit tests directly [2]. "
        # [1] is the record on readability (a sentence that fits another record is dropped as a wrong citation)
        "Large language models were used to improve the readability of automatically generated tests [1][17]. "
        "Everyone agrees this is solved. "
        "See also the famous paper [12]."
    )
    with OpenAIStubServer(default=StubReply(text=reply)) as server:
        run = paperbot_here("ask", QUESTION, "--json", data_dir=indexed, **_llm_env(server))
        assert run.code == 0, run.stderr
        payload = run.json()
        prompt = str(server.chat_requests[-1].body)
    assert payload["mode"] == "llm" and payload["abstained"] is False
    # invented keys [17] and [12] are gone, the uncited claim is dropped, numbering follows first use
    assert "[17]" not in payload["answer"] and "[12]" not in payload["answer"]
    assert "Everyone agrees" not in payload["answer"]
    assert [c["n"] for c in payload["citations"]] == [1, 2]
    assert payload["answer"].index("[1]") < payload["answer"].index("[2]")
    # the cited records are the ones the model was shown as evidence
    for citation in payload["citations"]:
        assert citation["title"] in prompt
    assert "sk-test-not-a-real-key" not in run.stdout + run.stderr


def test_llm_is_not_called_when_nothing_is_relevant(indexed):
    with OpenAIStubServer(default=StubReply(text="Bread needs flour [1].")) as server:
        run = paperbot_here("ask", "What is the best recipe for sourdough bread?", "--json", data_dir=indexed,
                       **_llm_env(server))
        assert run.code == 0, run.stderr
        assert server.chat_requests == []
    assert run.json()["abstained"] is True and run.json()["citations"] == []


def test_unreachable_llm_falls_back_to_extractive_with_one_line_notice(indexed):
    with OpenAIStubServer(default=StubReply(status=503)) as server:
        run = paperbot_here("ask", QUESTION, "--json", data_dir=indexed, **_llm_env(server))
    assert run.code == 0, run.stderr
    payload = run.json()
    assert payload["mode"] == "extractive" and payload["citations"]
    assert "LLM unreachable" in run.stderr and "Traceback" not in run.stderr


def test_doctor_measures_the_configured_model(indexed):
    with OpenAIStubServer(default=StubReply(text="The text is about light scattering.")) as server:
        run = paperbot_here("doctor", "--json", data_dir=indexed, **_llm_env(server))
        text = paperbot_here("doctor", data_dir=indexed, **_llm_env(server))
        skipped = paperbot_here("doctor", "--json", "--no-model", data_dir=indexed, **_llm_env(server))
        assert len(server.chat_requests) == 2  # one short request per measuring run, none with --no-model
    assert run.code == 0, run.stderr
    payload = run.json()
    assert payload["ok"] is True  # the index check's fields stay as they were
    model = payload["model"]
    assert model["configured"] is True and model["reachable"] is True and model["model"] == "stub-model"
    assert model["prompt_tokens"] > 0 and model["prompt_tokens_per_second"] > 0 and isinstance(model["fits"], bool)
    assert {"first_token_seconds", "generation_tokens_per_second", "budget_first_token_seconds",
            "typical_answer_seconds", "advice", "error"} <= set(model)
    assert "Model stub-model: reads about" in text.stdout and "PAPERBOT_LLM_PROMPT_BUDGET" in text.stdout
    assert "model" not in skipped.json()


def test_doctor_says_when_no_model_is_configured(indexed):
    run = paperbot_here("doctor", "--json", data_dir=indexed)
    assert run.code == 0 and run.json()["model"]["configured"] is False
    assert "Model: none configured" in paperbot_here("doctor", data_dir=indexed).stdout
