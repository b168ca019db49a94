"""BibTeX reader: the real PETSc bibliography, then one syntax feature or failure per test."""

from __future__ import annotations

import time
from datetime import date
from functools import lru_cache
from pathlib import Path

import pytest

from retrieval.records.paper import Paper
from retrieval.sources.files.base import ParseOutcome
from retrieval.sources.files.bibtex import parse_bibtex
from retrieval.sources.files.bibtex_names import parse_names
from tests.support.patience import patience

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "files"


@lru_cache(maxsize=1)
def petsc() -> ParseOutcome:
    return parse_bibtex((FIXTURES / "petsc.bib").read_text(encoding="utf-8"))


def by_key(key: str) -> Paper:
    matches = [p for p in petsc().papers if p.provenance[0].source_id == key]
    assert len(matches) == 1, key
    return matches[0]


def one(text: str) -> Paper:
    outcome = parse_bibtex(text)
    assert outcome.skipped == [], outcome.skipped
    assert len(outcome.papers) == 1
    return outcome.papers[0]


# --- the real file ----------------------------------------------------------------------------


def test_petsc_file_yields_every_titled_entry() -> None:
    outcome = petsc()
    # 3,995 "@" blocks: one @COMMENT, 26 entries without a title (web pages, crossref parents).
    assert len(outcome.papers) == 3968
    assert len(outcome.skipped) == 26
    assert {s.reason for s in outcome.skipped} == {"no title"}
    assert outcome.skipped[0].item == "entry 'semver-webpage' (line 19)"
    assert [w.reason for w in outcome.warnings] == [
        "field 'year' ('to appear') is not a year; kept as written, not used as the date",
        "field 'year' ('in preparation') is not a year; kept as written, not used as the date",
    ]


def test_petsc_parses_fast() -> None:
    text = (FIXTURES / "petsc.bib").read_text(encoding="utf-8")
    started = time.process_time()  # CPU time: other processes on a shared machine do not count
    parse_bibtex(text)
    assert time.process_time() - started < patience(2.0)


def test_accented_names_are_decoded() -> None:
    assert by_key("bozdaug2005parallel").author_names[0] == "Doruk Bozdağ"
    assert by_key("bozdaug2005parallel").author_names[-1] == "Füsun Özgüner"
    assert by_key("mandel2008multispace").author_names[1] == "Bedřich Sousedík"
    assert by_key("wakam2013memory").author_names == ["Désiré Nuentsa Wakam", "François Pacull"]
    assert by_key("rupp:2016:pis:2988256.2907944").author_names[2] == "Ansgar Jüngel"


def test_known_article_maps_every_field() -> None:
    paper = by_key("veldhuizen1984d")
    assert paper.title == "D-stability and Kaps-Rentrop-methods"  # {D}, {K}, {R} unprotected
    assert paper.author_names == ["M van Veldhuizen"]
    assert (paper.venue, paper.publisher, paper.published, paper.type) == (
        "Computing",
        "Springer",
        "1984",
        "article",
    )
    provenance = paper.provenance[0]
    assert provenance.source == "bibtex"
    assert provenance.source_id == "veldhuizen1984d"
    assert (paper.volume, paper.issue, paper.pages) == ("32", "3", "229–237")
    assert provenance.fields == [
        "title", "authors", "published", "venue", "publisher", "type", "pages", "volume", "issue"]
    assert provenance.retrieved == date.today().isoformat()


def test_math_in_titles_becomes_unicode() -> None:
    assert by_key("sleijpen:1993").title.startswith("BiCGstab(ℓ) for linear equations")
    assert by_key("hackbusch99").title == (
        "A sparse matrix arithmetic based on ℋ-matrices. Part I: Introduction to ℋ-matrices"
    )


def test_month_macro_keywords_and_doi() -> None:
    paper = by_key("rupp:2016:pis:2988256.2907944")
    assert paper.published == "2016-08"  # month = aug
    assert paper.doi == "10.1145/2907944"
    assert "GMRES method" in paper.categories


def test_techreport_after_comment_uses_institution_and_month() -> None:
    paper = by_key("web")  # follows an @COMMENT{...} block
    assert paper.title == "The WEB system of structured documentation"  # {\tt WEB}
    assert paper.venue == "Computer Science Department, Stanford University"
    assert paper.published == "1983-09"
    assert paper.type == "techreport"


def test_arxiv_ids_from_eprint_and_from_journal() -> None:
    assert by_key("abhyankaretal2018").arxiv_id == "1806.01437"
    assert by_key("abhyankaretal2018").id == "arxiv:1806.01437"
    from_journal = [p for p in petsc().papers if p.venue == "arXiv preprint arXiv:2210.03179"]
    assert from_journal and from_journal[0].arxiv_id == "2210.03179"


def test_url_from_howpublished_is_not_a_venue() -> None:
    paper = by_key("openblas-website")
    assert paper.url == "https://www.openblas.net"
    assert paper.venue is None


def test_crossref_parent_supplies_booktitle_and_publisher() -> None:
    paper = by_key("allgower.georg:predictor-corrector")
    assert paper.venue == "Mathematical Programming: The State of the Art, Bonn 1982"
    assert paper.publisher == "Springer Verlag"


def test_vancouver_style_names_are_reordered() -> None:
    assert by_key("fernandezkaus14b").author_names == ["N. Fernández", "B.J.P. Kaus"]


def test_braced_corporate_author_stays_whole() -> None:
    assert by_key("pism").author_names == ["PISM Team"]


# --- syntax -----------------------------------------------------------------------------------


def test_string_macros_concatenation_and_quoted_values() -> None:
    paper = one(
        '@string{ jcp = "Journal of " # "Computational Physics" }\n'
        "@STRING(pub = {Elsevier})\n"
        '@article{k1, title = "A {GPU} solver", journal = jcp # { (JCP)}, publisher = pub,\n'
        "  year = 2020, month = mar}\n"
    )
    assert paper.title == "A GPU solver"
    assert paper.venue == "Journal of Computational Physics (JCP)"
    assert paper.publisher == "Elsevier"
    assert paper.published == "2020-03"


def test_whitespace_tabs_comments_and_parentheses() -> None:
    paper = one(
        "% a comment line with @article{fake, title={not an entry}}\n"
        '@preamble{ "\\newcommand{\\noop}[1]{}" }\n'
        "@comment{ anything {nested} here }\n"
        "@InProceedings (  spaced-key ,\n"
        "\tTitle\t=\t{{Nested {braces} stay}},\n"
        "\t% title = {commented-out field},\n"
        "\tbooktitle = {Proc.~of SC},,\n"
        "\tyear = {1999},\n"
        ")\n"
    )
    assert paper.title == "Nested braces stay"
    assert paper.venue == "Proc. of SC"
    assert paper.provenance[0].source_id == "spaced-key"
    assert paper.type == "inproceedings"


def test_latex_accents_symbols_and_dashes() -> None:
    paper = one(
        "@book{b, title = {Stra{\\ss}e--Caf{\\'e} \\c{c}a na\\\"{\\i}ve --- ``done''},"
        " author = {Ku\\v{c}era, Ji\\v{r}\\'{\\i}}, year = 2001}"
    )
    assert paper.title == "Straße–Café ça naïve — “done”"
    assert paper.author_names == ["Jiří Kučera"]


@pytest.mark.parametrize(
    ("raw", "names"),
    [
        ("Knuth, Donald E.", ["Donald E. Knuth"]),
        ("Donald E. Knuth and Leslie Lamport", ["Donald E. Knuth", "Leslie Lamport"]),
        ("van Beethoven, Jr, Ludwig", ["Ludwig van Beethoven Jr"]),
        ("Ludwig van Beethoven", ["Ludwig van Beethoven"]),
        ("Smith, J. and others", ["J. Smith"]),
        ("{Barnes and Noble, Inc.} and Doe, J.", ["Barnes and Noble, Inc.", "J. Doe"]),
        ('{\\"O}zg{\\"u}ner, F{\\"u}sun', ["Füsun Özgüner"]),
        ("Smith JA and John Smith II", ["JA Smith", "John Smith II"]),
        ("  ", []),
    ],
)
def test_name_forms(raw: str, names: list[str]) -> None:
    assert parse_names(raw) == names


@pytest.mark.parametrize(
    ("entry_type", "venue_field"),
    [
        ("article", "journal"),
        ("inproceedings", "booktitle"),
        ("conference", "booktitle"),
        ("incollection", "booktitle"),
        ("inbook", "booktitle"),
        ("book", "howpublished"),
        ("phdthesis", "school"),
        ("mastersthesis", "school"),
        ("techreport", "institution"),
        ("manual", "howpublished"),
        ("misc", "howpublished"),
        ("unpublished", "howpublished"),
        ("online", "howpublished"),
        ("software", "howpublished"),
    ],
)
def test_entry_types_and_their_venue_fields(entry_type: str, venue_field: str) -> None:
    paper = one(f"@{entry_type.upper()}{{k, title={{T}}, {venue_field}={{The Venue}}}}")
    assert (paper.type, paper.venue) == (entry_type, "The Venue")


def test_doi_from_url_and_arxiv_from_note() -> None:
    paper = one(
        "@misc{m, title={T}, url = {https://doi.org/10.1000/XYZ\\_1}, note = {arXiv:2101.00001v3}}"
    )
    assert paper.doi == "10.1000/xyz_1"
    assert (paper.arxiv_id, paper.arxiv_version) == ("2101.00001", "v3")
    assert paper.url == "https://doi.org/10.1000/XYZ_1"


def test_biblatex_date_field_wins_over_year() -> None:
    assert one("@online{o, title={T}, date={2021-05-17}, year={2020}}").published == "2021-05-17"


def test_repeated_field_and_undefined_macro_are_warnings() -> None:
    outcome = parse_bibtex("@article{a, title={First}, title={Second}, journal=nosuchmacro}")
    assert outcome.papers[0].title == "First"
    reasons = {w.reason for w in outcome.warnings}
    assert reasons == {
        "repeated field 'title' ignored",
        "undefined macro 'nosuchmacro' in field 'journal'",
    }


def test_invalid_doi_is_dropped_with_a_warning() -> None:
    outcome = parse_bibtex("@article{a, title={T}, doi={see publisher}}")
    assert outcome.papers[0].doi is None
    assert outcome.warnings[0].reason == "field 'doi' ('seepublisher') is not a DOI; kept as written but not used as the DOI"


def test_year_out_of_range_is_dropped_not_the_paper() -> None:
    outcome = parse_bibtex("@article{a, title={T}, year={3020}}")
    assert outcome.papers[0].published is None
    assert "publication year 3020 is out of range" in outcome.warnings[0].reason


# --- broken entries: skip, report, resynchronise ----------------------------------------------

GOOD_1 = "@article{good1, title={First good}, year={2001}}\n"
GOOD_2 = "@article{good2, title={Second good}, year={2002}}\n"


@pytest.mark.parametrize(
    ("broken", "reason"),
    [
        (
            "@article{bad, title={Unbalanced, year={2000}}\n",
            "unbalanced braces: the entry is not closed before the next '@'"
            " (expected ',' or '}' after field 'title')",
        ),
        ("@article{bad, title={Unbalanced, year={2000}\n", "unbalanced braces in field 'title'"),
        (
            '@article{bad, title="Unterminated, year={2000}}\n',
            "unterminated quoted value or unbalanced braces in field 'title'",
        ),
        (
            '@article{bad, title="Unterminated, year=2000\n',
            "unterminated quoted value in field 'title'",
        ),
        ("@article{bad, year={2000}}\n", "no title"),
        ("@article{bad, title {x}}\n", "field 'title' has no '='"),
        (
            "@article{bad, title={x} year={2000}}\n",
            "expected ',' or '}' after field 'title', found 'year={2000}}'",
        ),
        ("@article{bad, title={x}, year=\n", "field 'year' has no value (found '@article{goo')"),
        ("@article{bad title={x}}\n", "expected ',' after the entry key, found 'title={x}}'"),
    ],
)
def test_broken_entry_between_two_good_ones(broken: str, reason: str) -> None:
    outcome = parse_bibtex(GOOD_1 + broken + GOOD_2)
    assert [p.title for p in outcome.papers] == ["First good", "Second good"]
    assert len(outcome.skipped) == 1
    assert outcome.skipped[0].reason == reason
    assert outcome.skipped[0].item.endswith("(line 2)")


def test_entry_missing_its_closing_brace_costs_only_itself() -> None:
    outcome = parse_bibtex(GOOD_1 + "@article{bad, title={Lost}, year={2000},\n\n" + GOOD_2)
    assert [p.title for p in outcome.papers] == ["First good", "Second good"]
    assert outcome.skipped[0].item == "entry 'bad' (line 2)"
    assert outcome.skipped[0].reason == (
        "unbalanced braces: the entry is not closed before the next '@'"
        " (expected a field name or '}')"
    )


def test_broken_string_macro_is_reported_and_later_entries_survive() -> None:
    outcome = parse_bibtex('@string{jcp = "Journal}\n' + GOOD_1)
    assert [p.title for p in outcome.papers] == ["First good"]
    assert outcome.skipped[0].item == "@string at line 1"


def test_absurdly_long_field_skips_the_entry() -> None:
    huge = "x" * 100_001
    outcome = parse_bibtex(GOOD_1 + f"@article{{big, title={{T}}, abstract={{{huge}}}}}\n" + GOOD_2)
    assert len(outcome.papers) == 2
    assert outcome.skipped[0].reason == "field 'abstract' exceeds 100000 characters"


def test_text_without_entries_is_an_empty_outcome() -> None:
    outcome = parse_bibtex("just some prose, an email me@example.org, and 100% nothing else")
    assert (outcome.papers, outcome.skipped, outcome.format) == ([], [], "bibtex")


def test_a_doubled_and_is_one_separator_not_a_person_named_and() -> None:
    # seen in real publication lists: "Grover, Aditya and  and Ermon, Stefano"
    assert parse_names("Grover, Aditya and  and Ermon, Stefano") == ["Aditya Grover", "Stefano Ermon"]
    assert parse_names("Raj, Bhiksha and and Schiele, Bernt") == ["Bhiksha Raj", "Bernt Schiele"]
    assert parse_names("Sandy Anderson and Andrew Andrews") == ["Sandy Anderson", "Andrew Andrews"]
