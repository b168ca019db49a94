"""Plain-text rendering of results for the terminal (the Slack layer has its own Block Kit)."""

from __future__ import annotations

import textwrap

from retrieval.listing import describe_filters
from retrieval.models import AnswerResult, Citation, SearchFilters, SearchResult

MODE_LABELS = {
    "extractive": "extractive (no LLM: each sentence is taken from the cited record's abstract)",
    "llm": "llm (written by the model; every claim checked against its cited record)",
}
LISTING_LABEL = "extractive (listing: every indexed record matching the filters, newest first)"


def _sentence(text: str) -> str:
    """End with one full stop ("et al." stays "et al.", "Why?" stays "Why?")."""
    return text if text.endswith((".", "?", "!")) else text + "."


def citation_line(citation: Citation) -> str:
    """"[n] Title. A, B et al. Venue, 2024. link" for one numbered record."""
    names = citation.authors
    if not names:
        authors = "Unknown authors"
    elif len(names) > 3:
        authors = ", ".join(names[:3]) + " et al."
    else:
        authors = ", ".join(names)
    where = ", ".join(part for part in (citation.venue, str(citation.year) if citation.year else None) if part)
    pieces = [f"[{citation.n}] {_sentence(citation.title)}", _sentence(authors)]
    if where:
        pieces.append(_sentence(where))
    if citation.url:
        pieces.append(citation.url)
    return " ".join(pieces)


def wrap(text: str, width: int = 100) -> str:
    return "\n".join(textwrap.fill(par, width=width) if par.strip() else "" for par in text.split("\n"))


def filters_line(result: AnswerResult) -> str | None:
    """"Filters: by Zhao Zhang since 2025" when the answer was restricted, else None."""
    if not result.filters:
        return None
    return "Filters: " + describe_filters(SearchFilters.model_validate(result.filters))


def render_answer(result: AnswerResult) -> str:
    label = LISTING_LABEL if result.kind == "listing" else MODE_LABELS.get(result.mode, result.mode)
    lines = [f"Mode: {label}"]
    filters = filters_line(result)
    if filters:
        lines.append(filters)
    lines += ["", wrap(result.answer)]
    if result.citations:
        lines += ["", "Sources:"]
        lines += [citation_line(c) for c in result.citations]
    return "\n".join(lines)


def render_search(result: SearchResult) -> str:
    if not result.results:
        return "No indexed paper matches this query."
    return "\n".join(f"{citation_line(c)}  (score {c.score:.3f})" for c in result.results)
