"""Shared helpers for the answer tests: fixture corpora, a lexical stand-in retriever, fake models."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from pydantic import Field

from retrieval.config import Settings
from retrieval.records.paper import Paper
from retrieval.results import SearchFilters, SearchHit
from retrieval.text import content_terms

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def make_settings(**overrides: Any) -> Settings:
    """Settings isolated from the environment and any .env file (no LLM unless given).

    The model's two checks before an answer (field terms, relevance) are off unless given: these
    settings serve tests of the writing path, whose scripted models answer every call alike;
    ``tests/answers/test_model_checks.py`` turns them on.
    """
    values: dict[str, Any] = {"openai_api_key": None, "openai_base_url": None, "min_relevance": None,
                              "llm_field_terms": False, "llm_judge_relevance": False}
    values.update(overrides)
    return Settings(_env_file=None, **values)


class LexicalRetriever:
    """Stand-in for the hybrid retriever: score = 0.9 x share of query terms in the record."""

    def __init__(self, papers: list[Paper]) -> None:
        self.papers = papers
        self.queries: list[str] = []

    def __call__(self, query: str, k: int, filters: SearchFilters | None) -> list[SearchHit]:
        self.queries.append(query)
        terms = content_terms(query)
        scored = []
        for paper in self.papers:
            share = len(terms & content_terms(paper.embedding_text)) / len(terms) if terms else 0.0
            scored.append(SearchHit(paper=paper, score=round(0.9 * share, 4)))
        scored.sort(key=lambda h: -h.score)
        return scored[:k]


class RecordingFakeModel(GenericFakeChatModel):
    """GenericFakeChatModel (scripted replies, streams word by word) that keeps every prompt."""

    seen: list[list[BaseMessage]] = Field(default_factory=list)

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: CallbackManagerForLLMRun | None = None, **kwargs: Any) -> ChatResult:
        self.seen.append(list(messages))
        return super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)

    # GenericFakeChatModel._stream calls _generate, so streaming is recorded once too.


def scripted(*replies: str) -> RecordingFakeModel:
    return RecordingFakeModel(messages=iter([AIMessage(content=r) for r in replies]))


class FailingModel(BaseChatModel):
    """Streams ``chunks`` then raises ``error`` (or raises at once); counts calls."""

    error: Exception
    chunks: list[str] = Field(default_factory=list)
    calls: int = 0

    @property
    def _llm_type(self) -> str:
        return "failing-fake"

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: CallbackManagerForLLMRun | None = None, **kwargs: Any) -> ChatResult:
        self.calls += 1
        if self.chunks:
            return ChatResult(generations=[ChatGeneration(message=AIMessage(content="".join(self.chunks)))])
        raise self.error

    def _stream(self, messages: list[BaseMessage], stop: list[str] | None = None,
                run_manager: CallbackManagerForLLMRun | None = None, **kwargs: Any) -> Iterator[ChatGenerationChunk]:
        self.calls += 1
        for piece in self.chunks:
            yield ChatGenerationChunk(message=AIMessageChunk(content=piece))
        raise self.error


@pytest.fixture(scope="session")
def papers() -> list[Paper]:
    return [Paper(**row) for row in read_jsonl(FIXTURES / "answers" / "papers.jsonl")]


@pytest.fixture(scope="session")
def hostile_rows() -> list[dict[str, Any]]:
    return read_jsonl(FIXTURES / "injection" / "records.jsonl")


@pytest.fixture(scope="session")
def hostile_papers(hostile_rows: list[dict[str, Any]]) -> dict[str, Paper]:
    return {row["key"]: Paper(**row) for row in hostile_rows}


@pytest.fixture(scope="session")
def hostile_questions() -> dict[str, dict[str, Any]]:
    return {row["key"]: row for row in read_jsonl(FIXTURES / "injection" / "questions.jsonl")}


@pytest.fixture()
def settings() -> Settings:
    return make_settings()


@pytest.fixture()
def retriever(papers: list[Paper]) -> LexicalRetriever:
    return LexicalRetriever(papers)


def by_title(papers: list[Paper], fragment: str) -> Paper:
    matches = [p for p in papers if fragment.lower() in p.title.lower()]
    assert len(matches) == 1, f"{fragment!r} matches {len(matches)} fixture papers"
    return matches[0]
