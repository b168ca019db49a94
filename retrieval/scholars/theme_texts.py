"""The sentences of a summary's themes, each citing its papers: written by the chat model under
the citation rules of answers when one is configured, extractive otherwise."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

from prompts import Prompt, load_prompt
from retrieval.answers.attribution import EvidenceAttribution, claim_terms
from retrieval.answers.citations import split_sentences, validate_answer
from retrieval.answers.evidence import EvidenceSet, build_evidence, neutralise, strip_markup
from retrieval.answers.model_calls import CallLimits, CallReport, ModelTooSlow, stream_within
from retrieval.answers.model_output import ReplyRejected, bounded_pieces, clean_reply, unusable_answer_reason
from retrieval.answers.prompt_budget import fit_evidence
from retrieval.answers.prompt_tokens import token_counter
from retrieval.config import Settings
from retrieval.records.paper import Paper
from retrieval.results import AnswerMode, SearchHit
from retrieval.scholars.themes import ThemeGroup, extractive_theme_text
from retrieval.text import content_terms

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

_THEME_LINE = re.compile(r"^\s*[*_#>\-\s]*theme\s+(\d{1,2})\s*[:.)\-–—]\s*", re.IGNORECASE)
_CITE = re.compile(r"\[(\d+)\]")


def cited_numbers(text: str) -> list[int]:
    """The citation numbers ``[n]`` of ``text``, in order of first use."""
    return list(dict.fromkeys(int(n) for n in _CITE.findall(text)))


def _numbering(themes: Sequence[ThemeGroup]) -> dict[str, int]:
    numbers: dict[str, int] = {}
    for theme in themes:
        for paper in theme.papers:
            numbers.setdefault(paper.id, len(numbers) + 1)
    return numbers


@dataclass
class ThemeTexts:
    """Per-theme text with final citation numbers, and the papers behind those numbers."""

    texts: list[str]
    papers: list[Paper]  # papers[n - 1] is citation [n]
    mode: AnswerMode
    notice: str | None = None


def extractive_texts(themes: Sequence[ThemeGroup]) -> ThemeTexts:
    numbers = _numbering(themes)
    ordered = sorted({p.id: p for t in themes for p in t.papers}.values(), key=lambda p: numbers[p.id])
    return ThemeTexts([extractive_theme_text(t, numbers) for t in themes], ordered, "extractive")


@lru_cache(maxsize=1)
def _system_prompt() -> Prompt:
    return load_prompt("scholar_themes", required=set())


@lru_cache(maxsize=1)
def _user_prompt() -> Prompt:
    return load_prompt("scholar_themes_user", required={"boundary", "scholar", "themes", "records"})


def _echoes_label(sentence: str, label: str) -> bool:
    """True when a sentence says nothing but the theme's own label: no content term beyond the
    label's ("Graph neural networks (records [1], [2]).", the prompt's header line copied)."""
    return not claim_terms(sentence) - content_terms(label) - {"theme"}


def _said_beyond_label(line: str, label: str) -> str:
    """``line`` without its sentences that only echo ``label``."""
    return " ".join(sentence for sentence in split_sentences(line) if not _echoes_label(sentence, label))


def _theme_listing(themes: Sequence[ThemeGroup], numbers: Mapping[str, int], boundary: str) -> str:
    lines = []
    for k, theme in enumerate(themes, start=1):
        refs = ", ".join(f"[{numbers[p.id]}]" for p in theme.papers if p.id in numbers)
        lines.append(f"THEME {k}: {neutralise(theme.label, boundary)} (records {refs})")
    return "\n".join(lines)


def _drop_order(themes: Sequence[ThemeGroup], ordered: Sequence[Paper]) -> list[int]:
    """The records (0-based in ``ordered``) a theme prompt may leave out, in that order: every
    theme's last papers before any theme's earlier ones, the last theme's first; never a
    theme's first paper."""
    position = {paper.id: i for i, paper in enumerate(ordered)}
    firsts = {position[theme.papers[0].id] for theme in themes if theme.papers}
    rank: dict[int, int] = {}
    for theme in themes:
        for r, paper in enumerate(theme.papers):
            rank[position[paper.id]] = min(r, rank.get(position[paper.id], r))
    return sorted((i for i in rank if i not in firsts), key=lambda i: (-rank[i], -i))


def _fitted_prompt(themes: Sequence[ThemeGroup], scholar: str, ordered: Sequence[Paper], system_text: str,
                   settings: Settings) -> tuple[EvidenceSet, str, int]:
    """The theme prompt's records, its user turn and its tokens, fitted to
    ``settings.llm_prompt_budget`` (``retrieval.answers.prompt_budget``): abstracts cut to the
    sentences that match their theme's label, then each theme's later papers left out (its
    first always stays), then the abstracts shortened. Records are numbered as shown."""
    evidence = build_evidence([SearchHit(paper=p, score=1.0) for p in ordered])

    def user_text(shown: EvidenceSet, records: str) -> str:
        numbers = {hit.paper.id: n for n, hit in enumerate(shown.hits, start=1)}
        return _user_prompt().format(boundary=shown.boundary, scholar=neutralise(scholar, shown.boundary),
                                     themes=_theme_listing(themes, numbers, shown.boundary), records=records)

    label = {p.id: theme.label for theme in reversed(themes) for p in theme.papers}  # a paper's first theme
    fitted = fit_evidence(evidence, [label[p.id] for p in ordered], fixed=system_text + user_text(evidence, ""),
                          budget=settings.llm_prompt_budget, counter=token_counter(settings),
                          droppable=_drop_order(themes, ordered))
    return fitted.evidence, user_text(fitted.evidence, fitted.evidence.render()), fitted.tokens


def llm_texts(
    themes: Sequence[ThemeGroup], scholar: str, chat_model: BaseChatModel, settings: Settings
) -> ThemeTexts:
    """Theme sentences written by the model, validated like answers; extractive on failure.

    Lines of the model's reply start ``THEME k:``. Invalid ``[n]`` are removed and sentences
    left without a valid citation dropped (``retrieval.answers.citations.validate_answer``); a theme
    whose every sentence was dropped falls back to its extractive sentence.
    """
    from langchain_core.messages import HumanMessage, SystemMessage

    from retrieval.answers.llm import LLM_FAILURES, describe_failure

    fallback = extractive_texts(themes)
    system_text = _system_prompt().format()  # the same for every scholar: servers cache it
    evidence, user_text, tokens = _fitted_prompt(themes, scholar, fallback.papers, system_text, settings)
    ordered = [hit.paper for hit in evidence.hits]
    limits = CallLimits.from_settings(settings, prompt_tokens=tokens)
    call = CallReport()
    messages = [SystemMessage(system_text), HumanMessage(user_text)]
    try:  # streamed within the first-token, stall and deadline limits (retrieval.answers.model_calls)
        pieces = bounded_pieces(stream_within(lambda: chat_model.stream(messages), limits, report=call), settings)
        raw = clean_reply("".join(pieces), evidence.boundary)
    except LLM_FAILURES as exc:
        reason = describe_failure(exc, call.attempts)
        fallback.notice = f"LLM unreachable ({reason}): extractive theme summaries instead."
        return fallback
    except ModelTooSlow as slow:
        fallback.notice = f"The model was too slow ({slow.reason}): extractive theme summaries instead."
        return fallback
    except ReplyRejected as rejected:
        fallback.notice = f"The model's reply was unusable ({rejected.reason}): extractive theme summaries instead."
        return fallback
    attribution = EvidenceAttribution.from_papers(ordered)
    report = validate_answer(raw, len(ordered), forbidden=[evidence.boundary], protected=[system_text],
                             attribution=attribution)
    if (unusable := unusable_answer_reason(report, attribution)) is not None:
        fallback.notice = f"The model's reply was unusable ({unusable}): extractive theme summaries instead."
        return fallback
    if report.abstained:
        fallback.notice = "The model's theme summaries cited no record validly: extractive summaries instead."
        return fallback
    per_theme: dict[int, list[str]] = {}
    current: int | None = None
    for line in strip_markup(report.text, evidence.boundary).splitlines():
        match = _THEME_LINE.match(line)
        if match:
            current = int(match.group(1))
            line = line[match.end() :]
        if current is not None and 1 <= current <= len(themes):
            said = _said_beyond_label(line.strip(), themes[current - 1].label)  # not the header copied back
            if said:
                per_theme.setdefault(current, []).append(said)
    if not per_theme:
        fallback.notice = "The model's reply did not follow the THEME format: extractive summaries instead."
        return fallback
    # report.order maps the validated numbers back to evidence numbers; extend it for themes the
    # model left out, which keep their extractive sentence with numbers continuing after.
    papers = [ordered[n - 1] for n in report.order]
    final_number = {p.id: i for i, p in enumerate(papers, start=1)}
    texts: list[str] = []
    for k, theme in enumerate(themes, start=1):
        if k in per_theme:
            texts.append(" ".join(per_theme[k]))
            continue
        for paper in theme.papers:
            if paper.id not in final_number:
                papers.append(paper)
                final_number[paper.id] = len(papers)
        texts.append(extractive_theme_text(theme, final_number))
    return ThemeTexts(texts, papers, "llm")
