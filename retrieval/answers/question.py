"""A question parsed once per ask: its capped text, its query, its filters, its shape and a notice.

``parse_question`` turns what a person typed, the filters given as options and the thread's
history into a ``ParsedQuestion``, with one call of the index's own parser
(``PaperIndex.parse_question``: ``extract_filters`` with the indexed authors and venues as the
known names). Everything downstream (``retrieval.answers.service``, ``Assistant.search``) reads
the value and never parses the text again::

    parsed = parse_question("papers by Zhao Zhang on checkpointing since 2024", index.parse_question)
    parsed.query    # "checkpointing": what is searched
    parsed.filters  # authors=["Zhao Zhang"], since=2024 (options win field by field)
    parsed.shape    # QuestionShape("mixed", ...) (``retrieval.answers.question_shape``)

Raises ``InputError`` for an empty question; a question over ``MAX_QUERY_CHARS`` is capped with a
notice (``retrieval.index.filters.prepare_query``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from retrieval.answers.question_shape import QuestionShape, question_shape
from retrieval.index.filters import merge_filters, prepare_query
from retrieval.results import SearchFilters

QuestionParser = Callable[[str], tuple[str, SearchFilters]]
"""The index's parser: a text -> (the text with its filter phrases taken out, the filters they state)."""


@dataclass(frozen=True)
class ParsedQuestion:
    """One question, read once.

    ``text`` is the question as answered (whitespace-normalised, capped); ``query`` the text with
    its filter phrases ("since 2024", "by Zhao Zhang") taken out; ``filters`` the option filters
    merged over the parsed ones; ``shape`` listing, topic or mixed; ``notice`` a message for the
    user about the question itself (the cap), or None.
    """

    text: str
    query: str
    filters: SearchFilters
    shape: QuestionShape
    notice: str | None = None

    @property
    def search_text(self) -> str:
        """What the retrievers search: the query, or the whole text when no word would be left."""
        return self.query or self.text

    @property
    def search_filters(self) -> SearchFilters | None:
        """The filters as the retrievers take them: None when there is none."""
        return None if self.filters.is_empty() else self.filters


def parse_question(
    text: str,
    parse: QuestionParser,
    *,
    filters: SearchFilters | None = None,
    history: Sequence[tuple[str, str]] = (),
) -> ParsedQuestion:
    """Validate and cap ``text``, read its filters with ``parse`` (called once) and classify it.

    ``filters`` (the options) win field by field over those the text states. In a thread
    (``history``), a question stating only years ("and since 2024?") leans on what came before:
    it is a topic within the years (``mixed``), not a listing of the whole index.
    """
    prepared = prepare_query(text)
    cleaned, stated = parse(prepared.text)
    merged = merge_filters(filters, stated)
    shape = question_shape(prepared.text, cleaned, merged)
    if shape.kind == "listing" and history and not (merged.authors or merged.venue):
        shape = QuestionShape("mixed", merged, cleaned)
    return ParsedQuestion(prepared.text, cleaned, merged, shape, prepared.notice)
