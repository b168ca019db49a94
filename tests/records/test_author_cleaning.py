"""Author names cleaned at parse time, for every source: no "et al." person, no HTML in names.

The decorated shapes are the ones real publication lists carry (``scholars-real``: personal
sites' BibTeX files). One test reads those 40 files at run time from ``../shared`` and skips,
saying why, when they are absent; they are never copied into the project.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from retrieval.records.author_cleaning import (
    CleanName,
    clean_author,
    clean_author_name,
    is_truncation_marker,
    strip_annotations,
)
from retrieval.records.paper import Author, Paper
from retrieval.sources.files.bibtex import parse_bibtex
from retrieval.sources.files.bibtex_names import parse_author_list
from retrieval.sources.files.csljson import parse_csl_json
from retrieval.sources.files.jsonl import parse_jsonl
from retrieval.sources.files.ris import parse_ris
from retrieval.sources.providers.arxiv import parse_atom
from retrieval.sources.providers.crossref import parse_crossref_work
from retrieval.sources.providers.openalex import parse_work

SCHOLARS_REAL = Path(__file__).resolve().parents[3] / "shared" / "datasets" / "scholars-real"


@pytest.mark.parametrize(
    ("raw", "name"),
    [
        ("<b>Shaden Smith</b>", "Shaden Smith"),
        ("<strong>Ann Lee</strong>", "Ann Lee"),
        ("<em>Ann</em> <u>Lee</u>", "Ann Lee"),
        ("<i>Ann</i> <span class='me'>Lee</span>", "Ann Lee"),
        ("Jiang<sup>†</sup>, Daohuai", "Jiang, Daohuai"),
        ("Daohuai Jiang<sup>1,2</sup>", "Daohuai Jiang"),
        ("&lt;b&gt;Ann Lee&lt;/b&gt;", "Ann Lee"),
        ("Ren&eacute; Descartes", "René Descartes"),
        ("Song*, Jiaming", "Song, Jiaming"),
        ("Jiaming Song*", "Jiaming Song"),
        ("Wu†, Zhaomin", "Wu, Zhaomin"),
        ("Ellis Brown‡", "Ellis Brown"),
        ("Ann Lee§", "Ann Lee"),
        ("Ann Lee¶", "Ann Lee"),
        ("Ann Lee#", "Ann Lee"),
        ("Smith1", "Smith"),
        ("John Smith1,2", "John Smith"),
        ("Smith^1", "Smith"),
        ("Smith^{a,b}", "Smith"),
        ("Smith^*", "Smith"),
        ("John Smith¹²", "John Smith"),
        ("Song, Qun* (*corresponding author)", "Song, Qun"),
        ("Song, Qun* (equal contribution)", "Song, Qun"),
        ("Song, Qun (Equal contribution)", "Song, Qun"),
        ("J. Smith (corresponding)", "J. Smith"),
        ("J. Smith (equal)", "J. Smith"),
        ("J. Smith [1]", "J. Smith"),
        ("J. Smith (*)", "J. Smith"),
        ("Torralba-Agell, Adrià,", "Torralba-Agell, Adrià"),
        ("Ann Lee;", "Ann Lee"),
        ("  Ann \t Lee  ", "Ann Lee"),
    ],
)
def test_decorations_are_removed(raw: str, name: str) -> None:
    assert clean_author_name(raw) == name
    assert clean_author(raw).truncated is False


@pytest.mark.parametrize(
    "name",
    [
        "Al-Ghamdi, Ahmed", "Ahmed Al-Ghamdi", "O'Neil, Cathy", "Smith, Jr.", "John Smith Jr.",
        "Ettore Alani", "Alan Etalon", "Janet Alvarez", "Bothers, Ann", "The ATLAS Collaboration",
        "Barnes and Noble", "3M Company", "IEEE 802.11 Working Group", "W.J. (Chris) Zhang",
        "Jiří Kučera", "van der Berg, J.", "Zhang, Z.", "韩放达",
    ],
)
def test_real_names_survive_untouched(name: str) -> None:
    assert clean_author_name(name) == name


@pytest.mark.parametrize(
    "marker",
    ["et al.", "et al", "Et Al.", "ET AL", "et. al.", "and et al.", "others", "Others", "and others",
     "AND OTHERS", "& others", "etc.", "etc", "ETC.", "...", "…", "<b>et al.</b>", "et al.*"],
)
def test_truncation_markers_are_no_person_but_mark_the_list(marker: str) -> None:
    assert clean_author(marker).name is None
    assert clean_author(marker).truncated is True


def test_a_name_ending_in_et_al_keeps_the_name_and_marks_the_list() -> None:
    assert clean_author("J. Smith et al.") == CleanName("J. Smith", truncated=True)
    assert clean_author("Smith, J., et al.") == CleanName("Smith, J.", truncated=True)
    assert clean_author("et al. Robert Armstrong") == CleanName("Robert Armstrong", truncated=True)


@pytest.mark.parametrize("raw", ["", "   ", "*", "†‡", "<sup>1</sup>", "(equal contribution)", "1, 2", "-"])
def test_what_cleans_to_nothing_is_no_person_and_no_truncation(raw: str) -> None:
    assert clean_author(raw).name is None
    assert clean_author(raw).truncated is False


def test_is_truncation_marker_is_exact() -> None:
    assert is_truncation_marker(" and others ")
    assert not is_truncation_marker("Others, Ann")
    assert not is_truncation_marker("Alani")


def test_strip_annotations_keeps_the_commas_of_a_name_and_its_footnote_marks() -> None:
    assert strip_annotations("Song, Qun* (equal contribution, first author),") == "Song, Qun*"
    assert strip_annotations("<b>Smith</b>, J.") == "Smith, J."
    assert strip_annotations("Sowi{\\'n}ski, Piotr") == "Sowi{\\'n}ski, Piotr"  # LaTeX is left to the reader


# --- applied centrally: every Paper, whichever way it is built ----------------------------


def test_paper_cleans_names_drops_et_al_and_marks_the_list() -> None:
    paper = Paper(title="T", authors=[{"name": "<b>Shaden Smith</b>"}, {"name": "Karypis*, George"},
                                      {"name": "et al."}])
    assert paper.author_names == ["Shaden Smith", "Karypis, George"]
    assert paper.authors_truncated is True
    assert paper.short_authors() == "Shaden Smith, Karypis, George et al."


def test_an_author_that_cleans_to_nothing_is_dropped_not_the_paper() -> None:
    paper = Paper(title="T", authors=[{"name": "Ann Lee"}, {"name": "<sup>†</sup>"}, {"name": "*"}])
    assert paper.author_names == ["Ann Lee"] and paper.authors_truncated is False


def test_an_untruncated_list_is_not_marked_and_keeps_its_content_hash() -> None:
    paper = Paper(title="T", authors=[{"name": "Ann Lee"}], published="2020")
    assert paper.authors_truncated is False
    assert paper.short_authors() == "Ann Lee"
    # the hash the code before ``authors_truncated`` gave this record: stored hashes stay valid
    assert paper.content_hash == "39cf66f6a58565e79c345068421b405a139a627d7779341884c1fdcea6499b2a"
    cut = paper.model_copy(update={"authors_truncated": True})
    assert cut.content_hash != paper.content_hash  # once set, the flag counts
    assert cut.short_authors() == "Ann Lee et al."


def test_author_objects_and_standalone_authors_are_cleaned_too() -> None:
    assert Author(name="Song*, Jiaming").name == "Song, Jiaming"
    with pytest.raises(ValueError):
        Author(name="et al.")
    raw = Author.model_construct(name="<b>Shaden Smith</b>")
    paper = Paper(title="T", authors=[raw, Author.model_construct(name="others")])
    assert paper.author_names == ["Shaden Smith"] and paper.authors_truncated


def test_with_clean_authors_fixes_a_record_that_skipped_validation() -> None:
    stored = Paper.model_construct(title="T", authors=[Author.model_construct(name="Wu†, Zhaomin"),
                                                       Author.model_construct(name="and others")])
    fixed = stored.with_clean_authors()
    assert fixed.author_names == ["Wu, Zhaomin"] and fixed.authors_truncated
    assert fixed.with_clean_authors() is fixed  # nothing left to do


# --- every source -----------------------------------------------------------------------


def test_bibtex_others_and_decorations() -> None:
    text = """
    @inproceedings{a, title = {One}, year = 2020,
      author = {<b>Shaden Smith</b> and Song*, Jiaming and Wu{\\textdagger}, Zhaomin and
                Song, Qun* (*corresponding author) and Torralba-Agell, Adri{\\`a}, and others}}
    @article{b, title = {Two}, year = 2021,
      author = {Song, Qun* (equal contribution, first author) and Jiaming Song* and et al.}}
    @article{c, title = {Three}, year = 2022, author = {Knuth, Donald E. and Lamport, Leslie}}
    """
    one, two, three = parse_bibtex(text).papers
    assert one.author_names == ["Shaden Smith", "Jiaming Song", "Zhaomin Wu", "Qun Song", "Adrià Torralba-Agell"]
    assert one.authors_truncated and two.authors_truncated and not three.authors_truncated
    assert two.author_names == ["Qun Song", "Jiaming Song"]
    assert parse_author_list("Smith, J. and {others}") == (["J. Smith", "others"], False)
    assert parse_bibtex("@misc{d, title={Four}, author={Smith, J. and {others}}}").papers[0].authors_truncated


def test_ris_et_al_and_decorations() -> None:
    text = "TY  - JOUR\nTI  - One\nAU  - Song*, Jiaming\nAU  - Song, Qun* (equal, first)\nAU  - et al.\nER  -\n"
    (paper,) = parse_ris(text).papers
    assert paper.author_names == ["Jiaming Song", "Qun Song"] and paper.authors_truncated


def test_csl_json_literal_et_al_and_html_in_names() -> None:
    items = [{"id": "x", "title": "One", "author": [
        {"family": "Smith<sup>1</sup>", "given": "<b>John</b>"},
        {"family": "Lee*", "given": "Ann"},
        {"literal": "et al."},
    ]}]
    (paper,) = parse_csl_json(json.dumps(items)).papers
    assert paper.author_names == ["John Smith", "Ann Lee"] and paper.authors_truncated


def test_jsonl_records_are_cleaned_and_keep_the_flag() -> None:
    lines = [
        {"title": "One", "authors": [{"name": "<b>Shaden Smith</b>"}, {"name": "others"}]},
        {"title": "Two", "authors": [{"name": "Ann Lee"}], "authors_truncated": True},
        {"title": "Three", "authors": [{"name": "Ann Lee"}]},
    ]
    one, two, three = parse_jsonl("\n".join(json.dumps(line) for line in lines)).papers
    assert one.author_names == ["Shaden Smith"] and one.authors_truncated
    assert two.authors_truncated and not three.authors_truncated


def test_openalex_truncated_authorships_and_decorated_names() -> None:
    authorships = [{"author": {"display_name": "Jiaming Song*"}}, {"author": {"display_name": "et al."}}]
    work = {
        "id": "https://openalex.org/W1", "title": "One", "publication_year": 2020,
        "is_authors_truncated": True,
        "authorships": authorships,
    }
    paper = parse_work(work)
    assert paper.author_names == ["Jiaming Song"] and paper.authors_truncated
    complete = {**work, "is_authors_truncated": False, "authorships": authorships[:1]}
    assert not parse_work(complete).authors_truncated


def test_crossref_names_are_cleaned() -> None:
    item = {"DOI": "10.1000/x", "title": ["One"], "type": "journal-article",
            "author": [{"family": "Smith†", "given": "John"}, {"name": "et al."}]}
    paper = parse_crossref_work(item)
    assert paper.author_names == ["John Smith"] and paper.authors_truncated


def test_arxiv_names_are_cleaned() -> None:
    feed = """<?xml version="1.0" encoding="UTF-8"?>
    <feed xmlns="http://www.w3.org/2005/Atom" xmlns:arxiv="http://arxiv.org/schemas/atom">
      <entry><id>http://arxiv.org/abs/2101.00001v1</id><title>One</title><summary>S</summary>
        <published>2021-01-01T00:00:00Z</published>
        <author><name>Ann Lee1</name></author><author><name>et al.</name></author>
      </entry>
    </feed>"""
    (paper,) = parse_atom(feed).papers
    assert paper.author_names == ["Ann Lee"] and paper.authors_truncated


# --- the real lists -----------------------------------------------------------------------


def _real_files() -> list[Path]:
    files = sorted((SCHOLARS_REAL / "bib").glob("*.bib"))
    if len(files) != 40:
        pytest.skip(f"the scholars-real data set is not at {SCHOLARS_REAL} (found {len(files)} files of 40)")
    return files


def test_no_parsed_author_of_the_real_lists_keeps_a_decoration() -> None:
    bad: list[tuple[str, str]] = []
    truncated = 0
    for path in _real_files():
        papers = parse_bibtex(path.read_text(encoding="utf-8")).papers
        assert papers, path.name
        truncated += sum(paper.authors_truncated for paper in papers)
        for paper in papers:
            for name in paper.author_names:
                folded = name.lower()
                if any(mark in name for mark in "<>*†‡") or "et al" in folded or folded == "others" \
                        or "and" in folded.split():  # "A and  and B" once made a person "Stefano and Ermon"
                    bad.append((path.name, name))
    assert bad == []
    assert truncated >= 25  # the lists cut with "and others" say so


def test_the_owners_written_variants_clean_to_their_names() -> None:
    _real_files()
    owners = json.loads((SCHOLARS_REAL / "owners.json").read_text(encoding="utf-8"))
    for owner in owners:
        for variant in owner["name_variants"]:
            entry = "@misc{x, title = {T}, author = {" + variant + " and Doe, Jane}}"
            (paper,) = parse_bibtex(entry).papers
            name = paper.author_names[0]
            assert not any(mark in name for mark in "<>*†(,"), (owner["slug"], variant, name)
