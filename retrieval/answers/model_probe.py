"""How fast the configured chat model is, on a fixed prompt: what ``paperbot doctor`` reports.

``probe_model(settings)`` sends one fixed prompt (``probe_prompt``: about ``PROBE_PROMPT_TOKENS``
tokens of plain prose and a request for one sentence, opened by a random line so that a server's
prompt cache cannot answer it) to the configured model, streamed within the settings' time limits
(``model_calls.stream_within``) and cut at ``PROBE_MAX_TOKENS`` tokens of reply, and measures:

* whether it answered, or what went wrong, worded as an answer's notice would word it;
* the model's name as the server reports it (the configured name when it reports none);
* **prompt tokens a second**: the prompt's tokens (``prompt_tokens.token_counter``) over the
  seconds to the first piece of reply. Connection and queueing count in, so this is a lower
  bound on the model's reading speed: the advice it gives errs on the safe side;
* **generation tokens a second**: the reply's tokens after the first over the seconds from the
  first piece to the last;
* **whether the settings fit** that speed: a prompt of ``PAPERBOT_LLM_PROMPT_BUDGET`` tokens must
  start its answer within ``PAPERBOT_LLM_TIMEOUT``, and that plus a typical answer
  (``TYPICAL_ANSWER_TOKENS``) must end within ``PAPERBOT_LLM_DEADLINE``; when not, ``advice``
  names the settings to change and values that would fit.
"""

from __future__ import annotations

import math
import secrets
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from retrieval.answers.model_calls import CallLimits, CallReport, ModelTooSlow, has_content, stream_within
from retrieval.answers.prompt_tokens import token_counter
from retrieval.config import Settings
from retrieval.results import ModelProbe

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

#: Reply tokens the probe asks for at most: enough to time the writing, short enough to be quick.
PROBE_MAX_TOKENS = 48
#: About the prompt's size (the real count is measured).
PROBE_PROMPT_TOKENS = 300
#: Tokens of a typical written answer (five short cited sentences).
TYPICAL_ANSWER_TOKENS = 150
#: Share of a limit the advice aims at, leaving room for a busier moment.
HEADROOM = 0.8

_PROSE = (
    "The discrete dipole approximation represents a particle as an array of small polarizable dipoles and "
    "solves for the field each dipole feels from the incident wave and from all the others. Its accuracy "
    "depends on the number of dipoles per wavelength and on the refractive index of the material; errors in "
    "measured quantities shrink as the dipole size decreases. Iterative solvers and fast Fourier transforms "
    "make large particles tractable, and recent work studies convergence, shape errors at the boundary and "
    "extrapolation to zero dipole size. Applications range from atmospheric ice crystals and interstellar dust "
    "to biological cells in flow cytometry, where light scattering patterns identify cell types without "
    "staining. Researchers compare the method with the T-matrix approach and with finite-difference time-domain "
    "simulations, and they report where each is fastest for a given accuracy. "
)


def probe_prompt() -> str:
    """The fixed prompt, opened by a random line (no server can answer it from its cache)."""
    return (f"Probe {secrets.token_hex(4)}.\n\n{_PROSE * 2}\n\n"
            "In one short sentence, say what the text above is about.")


def _rate(tokens: float, seconds: float | None) -> float | None:
    return round(tokens / seconds, 1) if seconds and seconds > 0 and tokens > 0 else None


def settings_fit(settings: Settings, prompt_rate: float | None, generation_rate: float | None) -> dict[str, Any]:
    """The ``ModelProbe`` fields that judge the settings at these speeds (tokens a second):
    ``budget_first_token_seconds``, ``typical_answer_seconds``, ``fits`` and ``advice``; none
    without a prompt rate."""
    if prompt_rate is None:
        return {}
    first = settings.llm_prompt_budget / prompt_rate
    answer = first + (TYPICAL_ANSWER_TOKENS / generation_rate if generation_rate else 0.0)
    advice: list[str] = []
    if first > settings.llm_timeout:
        fitting = int(prompt_rate * settings.llm_timeout * HEADROOM) // 100 * 100
        advice.append(f"a {settings.llm_prompt_budget:,}-token prompt would wait about {first:.0f} s for its first "
                      f"token: lower PAPERBOT_LLM_PROMPT_BUDGET to {max(fitting, 300):,} or raise "
                      f"PAPERBOT_LLM_TIMEOUT to {math.ceil(first / HEADROOM)}")
    if answer > settings.llm_deadline:
        advice.append(f"a typical answer would take about {answer:.0f} s: raise PAPERBOT_LLM_DEADLINE to "
                      f"{math.ceil(answer / HEADROOM)}")
    return {"budget_first_token_seconds": round(first, 1), "typical_answer_seconds": round(answer, 1),
            "fits": not advice, "advice": "; ".join(advice) or None}


def probe_model(settings: Settings, model: BaseChatModel | None = None, *,
                clock: Callable[[], float] = time.monotonic) -> ModelProbe:
    """Measure ``model`` (default: the configured one, its replies cut at ``PROBE_MAX_TOKENS``)
    on the fixed prompt (module docstring). Never raises for a model failure: it is reported."""
    if model is None:
        if not settings.llm_configured:
            return ModelProbe(configured=False)
        from retrieval.answers.llm import build_chat_model

        model = build_chat_model(settings.model_copy(update={"llm_max_tokens": PROBE_MAX_TOKENS}))
        assert model is not None  # configured
    from langchain_core.messages import HumanMessage

    from retrieval.answers.llm import LLM_FAILURES, describe_failure

    prompt = probe_prompt()
    tokens = token_counter(settings).count(prompt)
    limits = CallLimits.from_settings(settings, clock() + settings.llm_deadline, prompt_tokens=tokens)
    call = CallReport()
    reply, name = "", None
    try:
        for chunk in stream_within(lambda: model.stream([HumanMessage(content=prompt)]), limits, report=call,
                                   clock=clock):
            name = name or (getattr(chunk, "response_metadata", None) or {}).get("model_name")
            if has_content(chunk) and isinstance(chunk.content, str):
                reply += chunk.content
    except ModelTooSlow as slow:
        return ModelProbe(configured=True, reachable=True, model=name or settings.llm_model, error=slow.reason,
                          prompt_tokens=tokens)
    except LLM_FAILURES as exc:
        return ModelProbe(configured=True, reachable=False, model=settings.llm_model,
                          error=describe_failure(exc, call.attempts), prompt_tokens=tokens)
    reply_tokens = token_counter(settings).count(reply) if reply else 0
    first, total = call.first_token_seconds, call.seconds
    writing = total - first if first is not None and total is not None else None
    prompt_rate = _rate(tokens, first)
    generation_rate = _rate(reply_tokens - 1, writing)
    return ModelProbe(
        configured=True, reachable=True, model=name or settings.llm_model,
        error=None if reply else "it answered with no text", prompt_tokens=tokens,
        first_token_seconds=round(first, 2) if first is not None else None, reply_tokens=reply_tokens,
        seconds=round(total, 2) if total is not None else None, prompt_tokens_per_second=prompt_rate,
        generation_tokens_per_second=generation_rate, **settings_fit(settings, prompt_rate, generation_rate),
    )
