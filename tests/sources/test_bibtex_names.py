"""BibTeX names: read by BibTeX's rules, written so that BibTeX reads the same family part back.

pybtex, an independent implementation of BibTeX's name rules, is the judge of what BibTeX
makes of a written name.
"""

from __future__ import annotations

import pytest
from pybtex.database import Person

from retrieval.records.paper import Author, Paper
from retrieval.sources.files.bibtex import parse_bibtex
from retrieval.sources.files.bibtex_names import is_von, read_name, written_name
from retrieval.sources.files.bibtex_writer import to_bibtex
from retrieval.sources.markup.latex import latex_to_text


def bibtex_family(written: str) -> tuple[str, str]:
    """(von + Last, von) as pybtex reads a written name, decoded."""
    person = Person(written)
    return latex_to_text(" ".join(person.prelast_names + person.last_names)), latex_to_text(" ".join(person.prelast_names))


# raw name -> (display name, family part, von part)
READINGS = [
    ("{de Vos}, Martijn", ("Martijn de Vos", "de Vos", "")),
    ("Da San Martino, Giovanni", ("Giovanni Da San Martino", "Da San Martino", "")),
    ("van Durme, Benjamin", ("Benjamin van Durme", "van Durme", "van")),
    ("Benjamin Van Durme", ("Benjamin Van Durme", "Durme", "")),  # BibTeX: "Van" is a first name
    ("Ludwig van Beethoven", ("Ludwig van Beethoven", "van Beethoven", "van")),
    ("van Beethoven, Jr, Ludwig", ("Ludwig van Beethoven Jr", "van Beethoven", "van")),
    ("Van der Burg, Sven A.", ("Sven A. Van der Burg", "Van der Burg", "Van der")),
    ("{Barnes and Noble, Inc.}", ("Barnes and Noble, Inc.", "Barnes and Noble, Inc.", "")),
    ("DI MARTINO, Beniamino", ("Beniamino DI MARTINO", "DI MARTINO", "")),
    ("Jean~de~La~Fontaine", ("Jean de La Fontaine", "de La Fontaine", "de")),
    ("Field G. {V}an~{Z}ee", ("Field G. Van Zee", "Van Zee", "Van")),  # "{V}an": a lower-case letter first
    ('{\\"O}zg{\\"u}ner, F{\\"u}sun', ("Füsun Özgüner", "Özgüner", "")),
    ("Smith JA", ("JA Smith", "Smith", "")),  # Vancouver style: read on purpose against BibTeX
]


@pytest.mark.parametrize(("raw", "expected"), READINGS)
def test_names_are_read_by_bibtex_rules(raw: str, expected: tuple[str, str, str]) -> None:
    name = read_name(raw)
    assert (name.name, name.family, name.particle) == expected
    if raw != "Smith JA":  # the one reading that departs from BibTeX's
        assert bibtex_family(raw) == (name.family, name.particle)


@pytest.mark.parametrize(("raw", "expected"), READINGS)
def test_a_written_name_reads_back_to_the_same_parts(raw: str, expected: tuple[str, str, str]) -> None:
    name = read_name(raw)
    author = Author(name=name.name, family=name.family, particle=name.particle)
    written = written_name(author.name, author.family, author.particle)
    again = read_name(written)
    assert again.name == name.name
    assert (again.family, again.particle) == (name.family, name.particle)
    assert bibtex_family(written) == (name.family, name.particle)  # and BibTeX reads the same


@pytest.mark.parametrize(
    ("raw", "written"),
    [
        ("{de Vos}, Martijn", "{de Vos}, Martijn"),
        ("Martijn de Vos", "de Vos, Martijn"),
        ("Da San Martino, Giovanni", "Da San Martino, Giovanni"),
        ("van Durme, Benjamin", "van Durme, Benjamin"),
        ("Ludwig van Beethoven", "van Beethoven, Ludwig"),
        ("van Beethoven, Jr, Ludwig", "van Beethoven, Jr, Ludwig"),
        ("{Barnes and Noble, Inc.}", "{Barnes and Noble, Inc.}"),
        ("Field G. {V}an~{Z}ee", "{V}an Zee, Field G."),
        ("{Da San Martino}", "{Da San Martino}"),
        ("Smith JA", "Smith, JA"),
    ],
)
def test_names_are_written_von_last_jr_first(raw: str, written: str) -> None:
    name = read_name(raw)
    author = Author(name=name.name, family=name.family, particle=name.particle)
    assert written_name(author.name, author.family, author.particle) == written


def test_a_display_name_alone_is_written_as_before() -> None:
    assert written_name("Giovanni Da San Martino") == "Martino, Giovanni Da San"
    assert written_name("Barnes and Noble") == "{Barnes and Noble}"
    assert written_name("Plato") == "Plato"
    # a family part that is not words of the name is not used
    assert written_name("Martijn Devos", "de Vos") == "Devos, Martijn"


@pytest.mark.parametrize(
    ("word", "von"),
    [("van", True), ("Van", False), ("{V}an", True), ("{van}", False), ("{\\'e}mile", True),
     ("{\\'E}mile", False), ("\\'etienne", True), ("123", False), ("{\\relax de}", True), ("{\\relax De}", False)],
)
def test_von_words_follow_bibtex(word: str, von: bool) -> None:
    assert is_von(word) is von
    person = Person(f"A {word} Zed")
    assert bool(person.prelast_names) is von


def test_the_export_of_a_bibtex_file_keeps_family_parts_and_reads_back_the_same() -> None:
    text = ("@article{a, title = {T}, author = {{de Vos}, Martijn and Da San Martino, Giovanni and "
            "van Durme, Benjamin and Ludwig van Beethoven and Smith, Jr., John and Doe, Jane}}")
    paper = parse_bibtex(text).papers[0]
    exported = to_bibtex([paper])
    assert ("author        = {{de Vos}, Martijn and Da San Martino, Giovanni and van Durme, Benjamin and "
            "van Beethoven, Ludwig and Smith, Jr., John and Doe, Jane}") in exported
    again = parse_bibtex(exported).papers[0]
    assert again.authors == paper.authors
    assert to_bibtex([again]) == exported


def test_records_without_family_parts_export_as_before() -> None:
    # as the record store holds papers ingested before Author.family existed: display names only
    paper = Paper(title="T", authors=[{"name": "Martijn de Vos"}, {"name": "Barnes and Noble"}])
    assert [author.family for author in paper.authors] == [None, None]
    assert "author        = {Vos, Martijn de and {Barnes and Noble}}" in to_bibtex([paper])


def test_editors_keep_their_family_parts_too() -> None:
    text = ("@inproceedings{a, title = {T}, booktitle = {B}, "
            "editor = {Abu Farha, Ibrahim and Maarten de Rijke and {de Vos}, Martijn and Jane Doe}}")
    paper = parse_bibtex(text).papers[0]
    assert paper.editors == ["Ibrahim Abu Farha", "Maarten de Rijke", "Martijn de Vos", "Jane Doe"]
    assert {name: (part.family, part.particle) for name, part in paper.editor_families.items()} == {
        "Ibrahim Abu Farha": ("Abu Farha", None), "Maarten de Rijke": ("de Rijke", "de"),
        "Martijn de Vos": ("de Vos", None)}
    exported = to_bibtex([paper])
    assert "editor        = {Abu Farha, Ibrahim and de Rijke, Maarten and {de Vos}, Martijn and Doe, Jane}" in exported
    again = parse_bibtex(exported).papers[0]
    assert (again.editors, again.editor_families) == (paper.editors, paper.editor_families)


def test_editor_family_parts_only_for_editors_of_the_list_and_fitting_their_names() -> None:
    paper = Paper(title="T", editors=["<b>Ibrahim Abu Farha</b>", "Jane Doe"], editor_families={
        "<b>Ibrahim Abu Farha</b>": {"family": "Abu Farha"}, "Jane Doe": {"family": "Doe"},
        "Someone Else": {"family": "Someone Else"}, "Martijn Devos": {"family": "de Vos"}})
    assert list(paper.editor_families) == ["Ibrahim Abu Farha"]
    assert "editor_families" not in Paper(title="T", editors=["Jane Doe"]).model_dump_json()
