"""What kind of answer a question asks for: a listing, a topic answer, or both.

When a question names an author, years or a venue, the records matching those filters are the
evidence, and a question with nothing topical left ("what did Zhao Zhang publish since 2025?",
"papers by X", "X's papers", "papers in Nature in 2023") asks for all of them: a *listing*, not
a similarity match (ranking them against "publish?" finds nothing relevant and abstains).

* ``topic``: no filter; rank evidence as usual.
* ``listing``: filters and no topical word left after ``extract_filters`` took the filter
  phrases out; list every matching record.
* ``mixed``: filters plus a topic ("papers by X on checkpointing"); answer the topic within
  the filters.

"Topical" is decided on the cleaned text with a small vocabulary of listing words ("papers",
"published", "worked on", "what", ...) and stopwords: what is left is the topic. Pure: no I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from retrieval.records.paper import clean_text
from retrieval.results import SearchFilters
from retrieval.text import fold

QuestionKind = Literal["listing", "topic", "mixed"]

# Words that ask for records without saying what they are about.
_LISTING_WORDS = frozenset(["what", "which", "who", "whom", "whose", "where", "when", "how", "did", "does", "do", "doing", "done", "has", "have", "had", "having", "is", "are", "was", "were", "be", "been", "being", "will", "would", "can", "could", "should", "may", "might", "must", "shall", "publish", "published", "publishes", "publishing", "publication", "publications", "paper", "papers", "article", "articles", "work", "works", "worked", "working", "write", "writes", "wrote", "written", "writing", "author", "authored", "authoring", "coauthored", "co", "research", "researched", "output", "outputs", "record", "records", "entry", "entries", "item", "items", "study", "studies", "studied", "result", "results", "preprint", "preprints", "title", "titles", "thing", "things", "stuff", "recent", "recently", "lately", "latest", "newest", "new", "newer", "old", "older", "all", "any", "every", "each", "some", "list", "show", "give", "tell", "find", "get", "see", "display", "me", "us", "i", "you", "we", "they", "them", "his", "her", "their", "its", "our", "my", "your", "the", "a", "an", "of", "by", "on", "in", "at", "from", "since", "about", "to", "for", "and", "or", "with", "so", "far", "there", "here", "this", "that", "these", "those", "please", "kindly", "s", "year", "years", "ever", "yet", "now", "up", "out", "just", "also", "only", "still", "journal", "journals", "conference", "conferences", "venue", "venues", "proceedings"])

_WORD = re.compile(r"[^\W_]+")


@dataclass(frozen=True)
class QuestionShape:
    """The kind of a question, the filters it states and its topic words (empty for a listing)."""

    kind: QuestionKind
    filters: SearchFilters
    topic: str = ""


def topic_words(cleaned: str) -> list[str]:
    """The words of ``cleaned`` that are neither listing vocabulary nor numbers."""
    return [word for word in _WORD.findall(fold(cleaned)) if word not in _LISTING_WORDS and not word.isdigit()]


def question_shape(question: str, cleaned: str, filters: SearchFilters | None) -> QuestionShape:
    """Classify ``question`` from ``cleaned`` (its text with the filter phrases removed) and ``filters``.

    ``extract_filters`` returns the whole question as ``cleaned`` when nothing would be left
    ("recent work of Zhao Zhang"); with filters stated, that means nothing topical is left.
    """
    applied = filters or SearchFilters()
    if applied.is_empty():
        return QuestionShape("topic", applied, clean_text(question))
    if fold(clean_text(cleaned)) == fold(clean_text(question)) and _filters_came_from(question, applied):
        return QuestionShape("listing", applied)
    words = topic_words(cleaned)
    if not words:
        return QuestionShape("listing", applied)
    return QuestionShape("mixed", applied, " ".join(words))


def _filters_came_from(question: str, filters: SearchFilters) -> bool:
    """True when the question itself states a filter (its years or a filtered name appear in it).

    Filters given as options (``--author``) leave the question unchanged: then the question's
    own words decide between listing and mixed.
    """
    text = fold(question)
    if any(fold(name) in text for name in filters.authors):
        return True
    if filters.venue and fold(filters.venue) in text:
        return True
    return any(str(year) in text for year in (filters.since, filters.until) if year is not None)


def applied_filters(filters: SearchFilters | None) -> dict[str, object]:
    """The filters as the ``--json`` contract shows them: ``SearchFilters`` field names, empty ones omitted."""
    if filters is None:
        return {}
    return {key: value for key, value in filters.model_dump().items() if value not in (None, [], "")}
