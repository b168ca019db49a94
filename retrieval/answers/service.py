"""The one owner of an ask: a parsed question in, typed events out.

``AnsweringService`` is built once per facade with everything an answer needs (the index, the
settings, a chat model or explicitly none) and answers ``ParsedQuestion``s
(``retrieval.answers.question``) by their shape (``retrieval.answers.question_shape``):

* ``listing``: every record matching the filters (``retrieval.answers.listing``), one ``Final``
  and no model, even with one configured;
* ``topic`` and ``mixed``: the answer chain (``retrieval.answers.chain.stream_answer``) over the
  filtered hybrid search, ``TextDelta``s while a model writes, then one ``Final``; a ``mixed``
  question whose topic answer abstains lists its filtered set instead (``NO_TOPIC_NOTICE``),
  when there is one.

Every ``Final`` carries the question's kind and applied filters (the ``--json`` contract's
``kind``/``filters``) and its notices: the question's own (a cap), then, for an abstention,
``PaperIndex.explain_empty``'s reason (the filter that emptied the result, or an empty index).

The search text is the question's ``query`` (filter phrases out); a follow-up rewritten into a
different standalone query (``retrieval.answers.condense``) has that query's filter phrases
taken out too, with one more call of the index's parser.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Protocol

from retrieval.answers import evidence
from retrieval.answers.chain import AnswerOptions, EvidenceContext, Retriever, stream_answer
from retrieval.answers.extractive import abstention
from retrieval.answers.listing import LISTING_NOTICE, NO_TOPIC_NOTICE, listing_answer
from retrieval.answers.question import ParsedQuestion, parse_question
from retrieval.answers.question_shape import applied_filters
from retrieval.config import Settings
from retrieval.index.background import Background
from retrieval.records.paper import Paper
from retrieval.results import AnswerEvent, AnswerResult, Final, SearchFilters, SearchHit
from retrieval.text import content_terms

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel


class AnsweringIndex(Protocol):
    """What answering uses of ``PaperIndex`` (which provides it as is)."""

    def parse_question(self, question: str) -> tuple[str, SearchFilters]: ...
    def search(self, query: str, k: int = 10, filters: SearchFilters | None = None) -> list[SearchHit]: ...
    def matching_papers(self, filters: SearchFilters) -> list[Paper]: ...
    def explain_empty(self, filters: SearchFilters | None) -> str | None: ...
    def term_rarity(self, term: str) -> float: ...
    def count(self) -> int: ...
    def evidence_background(self) -> Background: ...


class AnsweringService:
    """Answers parsed questions over one index (see the module docstring)."""

    def __init__(self, index: AnsweringIndex, settings: Settings, chat_model: BaseChatModel | None) -> None:
        """``chat_model`` None: extractive answers (``retrieval.answers.chat_model`` resolves
        "the model the settings describe" before this)."""
        self._index = index
        self._settings = settings
        self._chat_model = chat_model

    def parse(self, text: str, *, filters: SearchFilters | None = None,
              history: Sequence[tuple[str, str]] = ()) -> ParsedQuestion:
        """``text`` read once with the index's parser (``retrieval.answers.question.parse_question``)."""
        return parse_question(text, self._index.parse_question, filters=filters, history=history)

    def stream(self, question: ParsedQuestion, *, k: int = 8,
               history: Sequence[tuple[str, str]] = ()) -> Iterator[AnswerEvent]:
        """A ``Progress`` and ``TextDelta``s as the model writes, then exactly one ``Final`` with the
        finished result.

        A listing is computed at once and arrives as one ``Final``. Otherwise the chain's input
        checks run at once (``InputError`` for ``k`` out of range), before iteration.
        """
        if question.shape.kind == "listing":
            listed = self._listing(question) or abstention(question.text, "extractive")
            return iter([Final(self._finish(listed, question), query=question.text)])
        options = AnswerOptions(k=k, filters=question.search_filters, history=history,
                                evidence=self.evidence_context(question.filters))
        events = stream_answer(question.text, retriever=self._retriever(question), settings=self._settings,
                               chat_model=self._chat_model, options=options)
        return self._finished(question, events)

    def ask(self, question: ParsedQuestion, *, k: int = 8, history: Sequence[tuple[str, str]] = ()) -> AnswerResult:
        """The finished result of ``stream`` (the deltas dropped)."""
        for event in self.stream(question, k=k, history=history):
            if isinstance(event, Final):
                return event.result
        raise AssertionError("the answer stream ended without a Final event")  # pragma: no cover

    @property
    def relevance_threshold(self) -> float:
        """The threshold in force for records with an abstract (``retrieval.answers.evidence.resolve_policy``)."""
        return evidence.resolve_min_relevance(self._settings)

    def evidence_context(self, filters: SearchFilters) -> EvidenceContext:
        """The relevance policy the settings give, the index's term rarity for a question with
        ``filters`` (``rarity``) and the index's background figures."""
        return EvidenceContext(evidence.resolve_policy(self._settings), self.rarity(filters),
                               self._index.evidence_background())

    def rarity(self, filters: SearchFilters) -> Callable[[str], float] | None:
        """``PaperIndex.term_rarity``, with the words of the filters' names left out: "papers by
        Aditya Grover on diffusion" must find diffusion in the records, not "Grover". None for
        an index too small for word frequencies to say which word is specific
        (``evidence.RARITY_MIN_RECORDS``)."""
        rarity = evidence.index_rarity(self._index)
        if rarity is None:
            return None
        named = content_terms(" ".join([*filters.authors, filters.venue or ""]))
        return lambda term: 0.0 if term in named else rarity(term)

    # --- parts -----------------------------------------------------------------------------------

    def _retriever(self, question: ParsedQuestion) -> Retriever:
        """Hybrid search on the query the chain retrieves with, its filter phrases taken out."""

        def retrieve(query: str, k: int, filters: SearchFilters | None) -> list[SearchHit]:
            if query == question.text:
                text = question.search_text
            else:  # a follow-up rewritten into a standalone query: its own filter phrases go too
                cleaned, _ = self._index.parse_question(query)
                text = cleaned or query
            return self._index.search(text, k=k, filters=filters)

        return retrieve

    def _listing(self, question: ParsedQuestion, *, notice: str | None = None) -> AnswerResult | None:
        """All records matching the filters as a cited listing; None when none matches."""
        papers = self._index.matching_papers(question.filters)
        if not papers:
            return None
        return listing_answer(question.text, papers, question.filters,
                              notice=" ".join(part for part in (notice, LISTING_NOTICE) if part))

    def _finished(self, question: ParsedQuestion, events: Iterator[AnswerEvent]) -> Iterator[AnswerEvent]:
        for event in events:
            if isinstance(event, Final):
                event = replace(event, result=self._finish(self._instead_of_abstaining(question, event.result),
                                                           question))
            yield event

    def _instead_of_abstaining(self, question: ParsedQuestion, result: AnswerResult) -> AnswerResult:
        """A mixed question whose topic answer abstained lists its filtered set instead, when there is one."""
        if question.shape.kind != "mixed" or not result.abstained:
            return result
        return self._listing(question, notice=NO_TOPIC_NOTICE) or result

    def _finish(self, result: AnswerResult, question: ParsedQuestion) -> AnswerResult:
        """Add the question's kind, filters and notice and, for an abstention, why nothing matched."""
        empty_reason = self._index.explain_empty(question.search_filters) if result.abstained else None
        result = result.model_copy(update={"kind": question.shape.kind, "filters": applied_filters(question.filters)})
        return result.with_notice(result.notice, question.notice, empty_reason)
