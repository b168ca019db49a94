"""Property tests for the API response parsers: arXiv Atom, OpenAlex and Crossref JSON.

The file parsers have their own in ``tests/sources/test_parsers_properties.py``. Here the
responses of the three metadata APIs get the same treatment: arbitrary text and JSON, and real
responses (``tests/fixtures/reliability/``) mutated at random, with extra weight on the keys
each parser reads. Whatever comes in, a parser either returns its page or raises its one
documented error (``SourceError`` for a page, ``ParseError`` for a single object), and:

* every paper it returns is whole: it re-validates to itself, has a title and is stamped with
  the source's provenance (never a partial record);
* every item of a page is accounted for: kept as a paper or listed as skipped with a reason.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from retrieval.errors import ParseError, SourceError
from retrieval.records.paper import Paper
from retrieval.sources.providers.arxiv import parse_atom
from retrieval.sources.providers.crossref import parse_crossref_page, parse_crossref_work
from retrieval.sources.providers.openalex import parse_author, parse_work, parse_works_page

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "reliability"
PROPERTY = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])

ATOM = (FIXTURES / "arxiv_atom_feed.xml").read_text(encoding="utf-8")
ATOM_ENTRY = ATOM[ATOM.index("<entry>") : ATOM.index("</entry>") + len("</entry>")]
ATOM_HEAD = ATOM[: ATOM.index("<entry>")]
OPENALEX_PAGE = json.loads((FIXTURES / "openalex_works_page.json").read_text(encoding="utf-8"))
OPENALEX_AUTHOR = json.loads((FIXTURES / "openalex_author.json").read_text(encoding="utf-8"))
CROSSREF_PAGE = json.loads((FIXTURES / "crossref_works_page.json").read_text(encoding="utf-8"))
CROSSREF_WORK = json.loads((FIXTURES / "crossref_work.json").read_text(encoding="utf-8"))

# The keys each parser reads: mutations hit them far more often than chance would.
OPENALEX_KEYS = [
    "id", "title", "display_name", "doi", "ids", "authorships", "author", "raw_author_name", "institutions",
    "abstract_inverted_index", "primary_location", "locations", "source", "landing_page_url", "pdf_url",
    "host_venue", "publication_date", "publication_year", "type", "topics", "concepts", "score",
    "open_access", "is_oa", "cited_by_count", "is_authors_truncated", "orcid", "arxiv", "results", "meta",
    "next_cursor", "count", "last_known_institutions", "last_known_institution", "affiliations", "years",
    "x_concepts", "summary_stats", "h_index", "works_count", "display_name_alternatives",
]
CROSSREF_KEYS = [
    "DOI", "title", "subtitle", "author", "family", "given", "suffix", "name", "ORCID", "affiliation",
    "abstract", "issued", "published", "published-print", "published-online", "created", "date-parts",
    "container-title", "event", "publisher", "type", "subject", "is-referenced-by-count", "URL",
    "resource", "primary", "message", "items", "next-cursor", "total-results", "status",
]
SPECIALS = "<>&;\"'/=![]{}-:#\\\n\t\x00\x1b\u202e\ufeff"

# --- strategies ------------------------------------------------------------------------------

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=False),  # infinities: see the date-parts test
    st.text(max_size=40),
    st.sampled_from(["", " ", "10.1234/abc", "https://openalex.org/W123", "2101.00001v2", "<jats:p>x</jats:p>",
                     "0000-0002-1825-0097", "1999-13-45", "9999", "&amp;", "\u0000", "A" * 3000]),
)
json_values = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4),
    max_leaves=12,
)


def _containers(value: Any, path: tuple = ()) -> list[tuple]:
    """Paths of every dict and list inside ``value`` (the root included)."""
    found: list[tuple] = []
    if isinstance(value, dict):
        found.append(path)
        for key, child in value.items():
            found.extend(_containers(child, (*path, key)))
    elif isinstance(value, list):
        found.append(path)
        for index, child in enumerate(value):
            found.extend(_containers(child, (*path, index)))
    return found


def _at(value: Any, path: tuple) -> Any:
    for step in path:
        value = value[step]
    return value


@st.composite
def mutated_json(draw: st.DrawFn, sample: Any, keys: list[str]) -> Any:
    """``sample`` with a few values replaced, removed or added (often under a parser's keys)."""
    value = copy.deepcopy(sample)
    for _ in range(draw(st.integers(1, 5))):
        paths = _containers(value)
        if not paths:
            return draw(json_values)
        target = _at(value, draw(st.sampled_from(paths)))
        replacement = draw(json_values)
        if isinstance(target, dict):
            key = draw(st.one_of(st.sampled_from(keys), st.sampled_from(list(target) or keys)))
            if draw(st.booleans()) and key in target:
                del target[key]
            else:
                target[key] = replacement
        elif target:
            index = draw(st.integers(0, len(target) - 1))
            if draw(st.booleans()):
                del target[index]
            else:
                target[index] = replacement
        else:
            target.append(replacement)
    return value


@st.composite
def mutated_text(draw: st.DrawFn, sample: str) -> str:
    """``sample`` with a few random insertions, deletions, replacements or a truncation."""
    text = sample
    for _ in range(draw(st.integers(1, 6))):
        position = draw(st.integers(0, len(text)))
        action = draw(st.sampled_from(["insert", "delete", "replace", "truncate"]))
        char = draw(st.one_of(st.sampled_from(SPECIALS), st.characters(blacklist_categories=["Cs"])))
        if action == "insert":
            text = text[:position] + char + text[position:]
        elif action == "delete":
            text = text[:position] + text[position + draw(st.integers(1, 40)) :]
        elif action == "replace":
            text = text[:position] + char + text[position + 1 :]
        else:
            text = text[:position]
    return text


xml_text = st.text(alphabet=st.characters(blacklist_categories=["Cs", "Cc"]), max_size=60) | st.sampled_from(
    ["", "&lt;b&gt;x&lt;/b&gt;", "$\\alpha$ and \\'e", "http://arxiv.org/abs/2101.00001v3", "10.1/x y", "2021-02-30"]
)


@st.composite
def atom_entries(draw: st.DrawFn) -> str:
    """A well-formed Atom entry whose every field is arbitrary (escaped) text."""
    from xml.sax.saxutils import escape

    def element(tag: str) -> str:
        if draw(st.booleans()):
            return ""
        return f"<{tag}>{escape(draw(xml_text))}</{tag}>"

    authors = "".join(
        f"<author><name>{escape(draw(xml_text))}</name></author>" for _ in range(draw(st.integers(0, 3)))
    )
    entry_id = draw(st.one_of(xml_text, st.sampled_from(["http://arxiv.org/abs/2101.00001v1",
                                                         "http://arxiv.org/abs/hep-th/9901001"])))
    return (
        f"<entry><id>{escape(entry_id)}</id>{element('title')}{element('summary')}{element('published')}"
        f"{authors}{element('arxiv:doi')}{element('arxiv:journal_ref')}</entry>"
    )


# --- checks ----------------------------------------------------------------------------------


def check_papers(papers: list[Paper], source: str) -> None:
    for paper in papers:
        assert isinstance(paper, Paper)
        assert paper.title.strip()
        again = Paper.model_validate(paper.model_dump())  # a whole, valid record: never partial
        assert again.id == paper.id and again.content_hash == paper.content_hash
        assert paper.provenance and paper.provenance[-1].source == source


def check_accounted(page: Any, items: int) -> None:
    """Every item of the page became a paper or a skip with a reason; warnings name an item."""
    assert len(page.papers) + len(page.skipped) == items
    for item in page.skipped + page.warnings:
        assert item.item and item.reason


# --- arXiv Atom ------------------------------------------------------------------------------


def _atom(text: str) -> None:
    try:
        page = parse_atom(text)
    except SourceError as exc:
        assert exc.user_message.startswith("arxiv:") and len(exc.user_message.splitlines()) == 1
        return
    check_papers(page.papers, "arxiv")
    check_accounted(page, page.entries)


@PROPERTY
@given(st.text(max_size=400))
def test_atom_arbitrary_text(text: str) -> None:
    _atom(text)


@PROPERTY
@given(mutated_text(ATOM))
def test_atom_mutated_real_feed(text: str) -> None:
    _atom(text)


@PROPERTY
@given(st.lists(atom_entries(), max_size=4))
def test_atom_arbitrary_field_values(entries: list[str]) -> None:
    feed = ATOM_HEAD.replace("<feed ", '<feed xmlns:arxiv="http://arxiv.org/schemas/atom" ', 1)
    text = feed + "".join(entries) + "</feed>"
    page = parse_atom(text)  # a well-formed feed is never refused as a whole
    check_papers(page.papers, "arxiv")
    check_accounted(page, len(entries))


def test_atom_real_feed_parses_whole() -> None:
    page = parse_atom(ATOM)
    assert page.entries == 10 and len(page.papers) == 10 and not page.skipped


# --- OpenAlex --------------------------------------------------------------------------------


def _works_page(payload: Any) -> None:
    try:
        page = parse_works_page(payload)
    except SourceError as exc:
        assert exc.user_message.startswith("openalex:")
        return
    check_papers(page.papers, "openalex")
    check_accounted(page, page.results)


def _work(obj: Any) -> None:
    try:
        paper = parse_work(obj)
    except ParseError as exc:
        assert exc.user_message and exc.item
        return
    check_papers([paper], "openalex")


@PROPERTY
@given(json_values)
def test_openalex_arbitrary_json(value: Any) -> None:
    _works_page(value)
    _work(value)
    _works_page({"results": [value], "meta": value})


@PROPERTY
@given(mutated_json(OPENALEX_PAGE, OPENALEX_KEYS))
def test_openalex_mutated_real_page(payload: Any) -> None:
    _works_page(payload)


@PROPERTY
@given(mutated_json(OPENALEX_PAGE["results"][0], OPENALEX_KEYS))
def test_openalex_mutated_real_work(obj: Any) -> None:
    _work(obj)


@PROPERTY
@given(st.one_of(json_values, mutated_json(OPENALEX_AUTHOR, OPENALEX_KEYS)))
def test_openalex_author_objects(obj: Any) -> None:
    try:
        author = parse_author(obj)
    except ParseError as exc:
        assert exc.user_message and exc.item
        return
    assert author.id.startswith("A") and author.display_name.strip()


def test_openalex_real_page_parses_whole() -> None:
    page = parse_works_page(OPENALEX_PAGE)
    check_accounted(page, 3)
    assert len(page.papers) == 3


# --- Crossref --------------------------------------------------------------------------------


def _crossref_page(payload: Any) -> None:
    try:
        page = parse_crossref_page(payload)
    except SourceError as exc:
        assert exc.user_message.startswith("crossref:")
        return
    check_papers(page.papers, "crossref")
    check_accounted(page, page.items)


def _crossref_work(obj: Any) -> None:
    try:
        paper = parse_crossref_work(obj)
    except ParseError as exc:
        assert exc.user_message and exc.item
        return
    check_papers([paper], "crossref")


@PROPERTY
@given(json_values)
def test_crossref_arbitrary_json(value: Any) -> None:
    _crossref_page(value)
    _crossref_work(value)
    _crossref_page({"message": {"items": [value]}})


@PROPERTY
@given(mutated_json(CROSSREF_PAGE, CROSSREF_KEYS))
def test_crossref_mutated_real_page(payload: Any) -> None:
    _crossref_page(payload)


@PROPERTY
@given(mutated_json(CROSSREF_WORK, CROSSREF_KEYS))
def test_crossref_mutated_real_work(obj: Any) -> None:
    _crossref_work(obj)


@PROPERTY
@example(parts=[float("inf")])
@given(st.lists(st.one_of(st.integers(-(2**70), 2**70), st.floats(), st.text(max_size=6), st.none()), max_size=4))
def test_crossref_date_parts_of_any_shape(parts: list[Any]) -> None:
    """Numbers as the JSON decoder returns them, NaN and Infinity included, in ``issued``."""
    work = copy.deepcopy(CROSSREF_WORK)
    work["message"]["issued"] = {"date-parts": [parts]}
    _crossref_work(work)


@PROPERTY
@given(st.lists(st.one_of(st.integers(-(2**70), 2**70), st.floats(allow_infinity=False), st.text(max_size=6),
                          st.none()), max_size=4))
def test_crossref_finite_date_parts(parts: list[Any]) -> None:
    work = copy.deepcopy(CROSSREF_WORK)
    work["message"]["issued"] = {"date-parts": [parts]}
    _crossref_work(work)


def test_crossref_real_responses_parse_whole() -> None:
    page = parse_crossref_page(CROSSREF_PAGE)
    check_accounted(page, 3)
    assert len(page.papers) == 3
    check_papers([parse_crossref_work(CROSSREF_WORK)], "crossref")
