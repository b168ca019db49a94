"""Filters read out of questions, query preparation and initials-aware author names."""

import pytest

from retrieval.errors import InputError
from retrieval.index.filters import (
    MAX_QUERY_CHARS,
    ResolvedFilters,
    extract_filters,
    merge_filters,
    prepare_query,
)
from retrieval.records.names import author_key, names_compatible
from retrieval.results import SearchFilters

INDEXED_AUTHORS = ["Zhao Zhang", "Z. Zhang", "Wei Li", "P. M. Nadolsky", "Maxim A. Yurkin", "M. De Napoli"]
INDEXED_VENUES = {"nature", "physical review d", "journal of physics a"}


def known_author(name: str) -> bool:
    return any(names_compatible(name, indexed) for indexed in INDEXED_AUTHORS)


def known_venue(name: str) -> bool:
    from retrieval.text import fold

    return fold(name) in INDEXED_VENUES


@pytest.mark.parametrize(
    ("question", "query", "since", "until"),
    [
        ("graph neural networks since 2024", "graph neural networks", 2024, None),
        ("which papers propose X in 2023?", "which papers propose X?", 2023, 2023),
        ("work from 2019 to 2021 on diphoton production", "work on diphoton production", 2019, 2021),
        ("results between 2021 and 2019 on lasers", "results on lasers", 2019, 2021),
        ("dipole approximation after 2020", "dipole approximation", 2021, None),
        ("dipole approximation before 2010", "dipole approximation", None, 2009),
        ("dipole approximation until 2010", "dipole approximation", None, 2010),
        ("modular forms from 2019 onwards", "modular forms", 2019, None),
        ("modular forms from 2019 on", "modular forms", 2019, None),
        ("papers on modular forms from 2019", "papers on modular forms", 2019, 2019),  # that year
        ("data from 2000 patients", "data from 2000 patients", None, None),
        ("modular forms in 2019-2021", "modular forms", 2019, 2021),
        ("what was shown in the last 3 years about gluons", "what was shown about gluons", 2024, None),
        ("what was shown over the past two years about gluons", "what was shown about gluons", 2025, None),
        ("trial results in 2000 patients", "trial results in 2000 patients", None, None),
        ("which papers in 2023 discuss lasers", "which papers discuss lasers", 2023, 2023),
        ("a 45% effect in 2020-ish studies", "a 45% effect in 2020-ish studies", None, None),
        ("no year here", "no year here", None, None),
    ],
)
def test_years_are_parsed_and_removed(question, query, since, until):
    cleaned, filters = extract_filters(question, current_year=2026)
    assert (cleaned, filters.since, filters.until) == (query, since, until)


@pytest.mark.parametrize(
    ("question", "query", "authors"),
    [
        ("papers by Zhao Zhang on graphs", "papers on graphs", ["Zhao Zhang"]),
        ("papers by Z. Zhang and Wei Li on lasers", "papers on lasers", ["Z. Zhang", "Wei Li"]),
        ("papers from Zhang about QCD", "papers about QCD", ["Zhang"]),
        ("what did they write, by P. Nadolsky", "what did they write", ["P. Nadolsky"]),
        ("light scattering by zhao zhang", "light scattering", ["zhao zhang"]),
        ("papers by De Napoli", "papers", ["De Napoli"]),
        # Not names: one lowercase word, or a name nobody indexed.
        ("labelled by hand", "labelled by hand", []),
        ("papers by John Smith", "papers by John Smith", []),
        ("results from experiments", "results from experiments", []),
    ],
)
def test_authors_are_parsed_only_when_indexed(question, query, authors):
    cleaned, filters = extract_filters(question, known_author, current_year=2026)
    assert (cleaned, filters.authors) == (query, authors)


def test_without_a_known_author_check_no_author_is_parsed():
    cleaned, filters = extract_filters("papers by Zhao Zhang", current_year=2026)
    assert cleaned == "papers by Zhao Zhang" and filters.authors == []


@pytest.mark.parametrize(
    ("question", "query", "venue"),
    [
        ("spin chains in Journal of Physics A", "spin chains", "Journal of Physics A"),
        ("Higgs searches in Physical Review D.", "Higgs searches.", "Physical Review D"),
        ("papers in Nature after 2020", "papers", "Nature"),
        ("papers in nature after 2020", "papers in nature", None),  # lowercase: too ambiguous
        ("advances in Deep Learning", "advances in Deep Learning", None),  # not an indexed venue
    ],
)
def test_venues_are_parsed_conservatively(question, query, venue):
    cleaned, filters = extract_filters(question, known_author, known_venue, current_year=2026)
    assert (cleaned, filters.venue) == (query, venue)


def test_everything_at_once():
    cleaned, filters = extract_filters(
        "light scattering by Maxim Yurkin in Nature since 2005?", known_author, known_venue, current_year=2026
    )
    assert cleaned == "light scattering?"
    assert filters == SearchFilters(since=2005, authors=["Maxim Yurkin"], venue="Nature")


def test_a_question_that_is_only_a_filter_keeps_its_text_as_query():
    cleaned, filters = extract_filters("since 2020", current_year=2026)
    assert cleaned == "since 2020" and filters.since == 2020


def test_explicit_options_win_over_parsed_filters():
    parsed = SearchFilters(since=2019, until=2021, authors=["Wei Li"], venue="Nature")
    explicit = SearchFilters(since=2024, authors=["Zhao Zhang"])
    assert merge_filters(explicit, parsed) == SearchFilters(since=2024, until=2021, authors=["Zhao Zhang"],
                                                            venue="Nature")
    assert merge_filters(None, parsed) == parsed


# --- query preparation -------------------------------------------------------------------------


@pytest.mark.parametrize("query", ["", "   ", "\n\t "])
def test_empty_query_is_an_input_error(query):
    with pytest.raises(InputError, match="The question is empty"):
        prepare_query(query)


def test_huge_query_is_capped_with_a_notice():
    prepared = prepare_query("word " * 1000)
    assert len(prepared.text) <= MAX_QUERY_CHARS
    assert prepared.notice and "2,000 characters" in prepared.notice and "5,000" not in prepared.text


def test_normal_query_is_only_whitespace_normalised():
    assert prepare_query("  graph\n neural   nets ") == type(prepare_query("x"))("graph neural nets", None)


# --- names -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "candidate", "compatible"),
    [
        ("Z. Zhang", "Zhao Zhang", True),
        ("Zhao Zhang", "Z. Zhang", True),
        ("Zhao Zhang", "Zhi Zhang", False),
        ("Zhang", "Zhi Zhang", True),
        ("Zhang, Zhao", "Zhao Zhang", True),
        ("X. Chen", "Xiao-Lin Chen", True),
        ("X. Chen", "Chong Chen", False),
        ("C.-P. Yuan", "Chien-Peng Yuan", True),
        ("Abu-Shammala", "Wael Abu-Shammala", True),
        ("d'Ambrumenil", "N. d'Ambrumenil", True),
        ("De Napoli", "M. De Napoli", True),
        ("Li", "Wei Liu", False),
        ("Barry Smith Jr.", "Barry Smith", True),
        ("Zhang Zhao", "Zhao Zhang", True),
        ("Di Wang", "Wei Wang", False),
    ],
)
def test_names_compatible(query, candidate, compatible):
    assert names_compatible(query, candidate) is compatible


def test_author_key_is_canonical_for_both_name_orders():
    assert author_key("Zhang, Zhao") == author_key("Zhao Zhang") == "zhao zhang"
    assert author_key("De Napoli, M.") == author_key("M. De Napoli") == "m de napoli"
    assert author_key("Péter E. Frenkel") == "peter e frenkel"
    assert author_key(" , ") is None


def test_resolved_filters_know_when_they_match_nothing():
    assert not ResolvedFilters().matches_nothing() and ResolvedFilters().is_empty()
    assert ResolvedFilters(author_keys=frozenset()).matches_nothing()
    assert ResolvedFilters(venue_keys=frozenset()).matches_nothing()
    assert ResolvedFilters(since=2021, until=2020).matches_nothing()
    assert not ResolvedFilters(since=2020, author_keys=frozenset({"zhao zhang"})).matches_nothing()
