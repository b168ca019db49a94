"""Plain-text rendering of results for the terminal (the Slack layer has its own Block Kit).

Every renderer takes ``width``: the columns of the terminal the text goes to (``text_width``),
or None for a pipe or a file, which keep one record per line (answer paragraphs at
``MAX_WIDTH``) for scripts that grep them. At a width, long lines wrap with a hanging indent
under their first words; URLs, DOIs and ids are never broken.
"""

from __future__ import annotations

import shutil
import textwrap
import unicodedata
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from retrieval.config import Settings
    from retrieval.results import AnswerResult, Citation, ModelProbe, SearchResult

MAX_WIDTH = 100  # wider terminals still get lines a reader can follow
MIN_WIDTH = 40

MODE_LABELS = {
    "extractive": "extractive (no LLM: each sentence is taken from the cited record's abstract)",
    # what validation establishes (retrieval.answers.citations, .attribution), and no more
    "llm": ("llm (written by the model; each sentence kept cites a retrieved record that holds its key terms "
            "and names only that record's authors; the wording is the model's, check it against the sources)"),
}
LISTING_LABEL = "extractive (listing: every indexed record matching the filters, newest first)"


_INVISIBLE = frozenset({"Cc", "Cf", "Co", "Cn", "Zl", "Zp"})  # controls, format (bidi, zero-width), unassigned


def visible(text: str) -> str:
    """``text`` safe to print on a terminal: control, format (bidi overrides, zero-width) and
    unassigned characters other than line breaks and tabs shown as escapes (``\\x1b``,
    ``\\u202e``), so that a file name or a reason cannot move the cursor, recolour the terminal or
    reverse the line, and the user can still see (and type) what is there."""
    if text.isprintable():
        return text
    return "".join(
        ch if ch in "\n\t" or unicodedata.category(ch) not in _INVISIBLE
        else (f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else f"\\u{ord(ch):04x}" if ord(ch) < 0x10000 else f"\\U{ord(ch):08x}")
        for ch in text
    )


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


def text_width() -> int:
    """The terminal's columns (``$COLUMNS`` first), between ``MIN_WIDTH`` and ``MAX_WIDTH``."""
    return max(MIN_WIDTH, min(MAX_WIDTH, shutil.get_terminal_size((MAX_WIDTH, 24)).columns))


def wrap(text: str, width: int | None = None, indent: str = "") -> str:
    """Each paragraph (line) of ``text`` filled to a terminal's ``width`` (``MAX_WIDTH`` when the
    output is not a terminal), continuing under ``indent``, and a "- " item under its first word."""
    wanted = MAX_WIDTH if width is None else width
    return "\n".join(hang(par, wanted, "  " if par.startswith("- ") else indent) if par.strip() else ""
                     for par in text.split("\n"))


_GLUE = "\xa0"  # textwrap breaks lines at ASCII whitespace only


def glue(words: str) -> str:
    """``words`` kept on one line by ``hang`` (a command to copy, "2021: 4", a name)."""
    return words.replace(" ", _GLUE)


def hang(line: str, width: int | None, indent: str = "    ") -> str:
    """``line`` wrapped to ``width`` with its continuation lines indented; unchanged for None."""
    if width is not None and len(line) > width:
        line = textwrap.fill(line, width=width, subsequent_indent=indent, break_long_words=False,
                             break_on_hyphens=False)
    return line.replace(_GLUE, " ")


def hang_items(label: str, items: list[str], width: int | None, empty: str = "none") -> str:
    """``label`` + ``items`` joined by commas, wrapped between items (never inside one),
    continuing under the first item."""
    if not items:
        return label + empty
    return hang(label + ", ".join(glue(item) for item in items), width, " " * len(label))


def filters_line(result: AnswerResult) -> str | None:
    """"Filters: by Zhao Zhang since 2025" when the answer was restricted, else None."""
    if not result.filters:
        return None
    from retrieval.results import SearchFilters

    return "Filters: " + SearchFilters.model_validate(result.filters).wording()


def render_answer(result: AnswerResult, *, width: int | None = None) -> str:
    label = LISTING_LABEL if result.kind == "listing" else MODE_LABELS.get(result.mode, result.mode)
    lines = [hang(f"Mode: {label}", width, "      ")]
    filters = filters_line(result)
    if filters:
        lines.append(hang(filters, width, "         "))
    lines += ["", wrap(result.answer, width)]
    if result.citations:
        lines += ["", "Sources:"]
        lines += [hang(citation_line(c), width) for c in result.citations]
    return "\n".join(lines)


def render_search(result: SearchResult, *, width: int | None = None) -> str:
    if not result.results:
        return "No indexed paper matches this query."
    return "\n".join(hang(f"{citation_line(c)}  (score {c.score:.3f})", width) for c in result.results)


def model_probe_text(probe: ModelProbe, settings: Settings) -> str:
    """``paperbot doctor``'s lines on the chat model: none configured, what failed, or its speed
    and whether the settings fit it (with the advice when they do not)."""
    if not probe.configured:
        return ("Model: none configured (extractive answers; set OPENAI_BASE_URL or OPENAI_API_KEY for "
                "written ones).")
    if probe.error is not None:
        return visible(f"Model {probe.model}: {probe.error}.")
    lines = [visible(f"Model {probe.model}: reads about {probe.prompt_tokens_per_second or 0:g} prompt tokens/s "
                     f"and writes about {probe.generation_tokens_per_second or 0:g} tokens/s (a "
                     f"{probe.prompt_tokens or 0:,}-token prompt, first token after {probe.first_token_seconds:g} s).")]
    if probe.budget_first_token_seconds is not None:
        verdict = "the settings fit" if probe.fits else f"the settings do not fit: {probe.advice}"
        lines.append(f"  A {settings.llm_prompt_budget:,}-token prompt (PAPERBOT_LLM_PROMPT_BUDGET) would start "
                     f"answering after about {probe.budget_first_token_seconds:g} s (PAPERBOT_LLM_TIMEOUT "
                     f"{settings.llm_timeout:g} s), a typical answer end after about "
                     f"{probe.typical_answer_seconds:g} s (PAPERBOT_LLM_DEADLINE {settings.llm_deadline:g} s): "
                     f"{verdict}.")
    return "\n".join(lines)
