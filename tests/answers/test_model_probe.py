"""``retrieval.answers.model_probe``: the configured model measured on a fixed prompt (``paperbot doctor``)."""

from __future__ import annotations

from retrieval.answers.model_probe import PROBE_MAX_TOKENS, probe_model, probe_prompt, settings_fit
from tests.answers.conftest import make_settings
from tests.answers.openai_stub_server import OpenAIStubServer, StubReply


def test_the_issue_s_model_fits_the_defaults_and_a_long_budget_gets_advice() -> None:
    """The 1.5B model of issue #29 on two idle cores: 35 prompt tokens/s, 13.6 written."""
    fit = settings_fit(make_settings(), 35.0, 13.6)
    assert fit == {"budget_first_token_seconds": 42.9, "typical_answer_seconds": 53.9, "fits": True, "advice": None}
    slow = settings_fit(make_settings(llm_prompt_budget=3000, llm_deadline=90), 35.0, 13.6)
    assert slow["fits"] is False
    assert slow["advice"] == ("a 3,000-token prompt would wait about 86 s for its first token: lower "
                              "PAPERBOT_LLM_PROMPT_BUDGET to 1,600 or raise PAPERBOT_LLM_TIMEOUT to 108; a typical "
                              "answer would take about 97 s: raise PAPERBOT_LLM_DEADLINE to 121")
    assert settings_fit(make_settings(), None, None) == {}


def test_no_model_configured_is_said_without_a_request() -> None:
    assert probe_model(make_settings()).configured is False


def test_the_probe_asks_once_with_a_fresh_prompt_and_a_short_reply() -> None:
    assert probe_prompt() != probe_prompt()  # a server's prompt cache cannot answer it
    with OpenAIStubServer([StubReply(text="The text is about light scattering by small particles.")]) as server:
        probe = probe_model(make_settings(openai_base_url=server.base_url, llm_model="stub-model"))
    assert probe.configured and probe.reachable and probe.error is None and probe.model == "stub-model"
    assert probe.prompt_tokens is not None and probe.prompt_tokens > 200 and probe.reply_tokens
    assert probe.prompt_tokens_per_second and probe.generation_tokens_per_second and probe.fits is not None
    body = server.chat_requests[0].body
    assert len(server.chat_requests) == 1 and body["max_tokens"] == PROBE_MAX_TOKENS and body["stream"] is True


def test_a_model_that_fails_or_is_too_slow_is_reported_not_raised() -> None:
    with OpenAIStubServer([StubReply(status=401)]) as server:
        refused = probe_model(make_settings(openai_base_url=server.base_url))
    assert refused.reachable is False and refused.error == "HTTP 401: check OPENAI_API_KEY"
    with OpenAIStubServer([StubReply(text="Late.", stall_at=0, stall=5.0)]) as server:
        slow = probe_model(make_settings(openai_base_url=server.base_url, llm_timeout=0.2))
    assert slow.reachable is True and (slow.error or "").startswith("it did not start answering within 0.2 s")
