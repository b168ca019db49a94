"""BibTeX writer: valid, deterministic, escaped output that reads back into the same papers."""

from __future__ import annotations

from pathlib import Path

from retrieval.records.paper import Paper
from retrieval.sources.files.bibtex import parse_bibtex
from retrieval.sources.files.bibtex_writer import citation_keys, escape, to_bibtex

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "files"


def _view(paper: Paper) -> tuple[object, ...]:
    return (paper.title, paper.author_names, paper.year, paper.venue, paper.doi)


def test_petsc_round_trip_keeps_title_authors_year_venue_doi() -> None:
    first = parse_bibtex((FIXTURES / "petsc.bib").read_text(encoding="utf-8"))
    original = first.papers
    text = to_bibtex(original)
    again = parse_bibtex(text)
    assert again.skipped == []
    # the same notes, no new ones: a year kept as written ("to appear") is read as before
    assert sorted(w.reason for w in again.warnings) == sorted(
        w.reason for w in first.warnings if "is not a year" in w.reason)
    assert len(again.papers) == len(original) == 3968
    assert [_view(p) for p in again.papers] == [_view(p) for p in original]
    # Everything else survives too, the user's keys and the provenance included.
    dump = [p.model_dump(exclude={"provenance"}) for p in original]
    assert [p.model_dump(exclude={"provenance"}) for p in again.papers] == dump
    assert [p.provenance for p in again.papers] == [p.provenance for p in original]
    keys = [p.provenance[0].source_id for p in again.papers]
    assert len({k.lower() for k in keys if k}) == len(keys)
    kept = sum(a == b for a, b in zip(keys, (p.provenance[0].source_id for p in original), strict=True))
    assert kept >= 0.99 * len(keys)
    assert to_bibtex(again.papers) == text


def _paper(**fields: object) -> Paper:
    return Paper.model_validate({"title": "A study", **fields})


def test_keys_are_deterministic_and_deduplicated() -> None:
    papers = [
        _paper(title="The Deep Nets", authors=[{"name": "Jürgen Schmidhuber"}], published="2015"),
        _paper(title="Deep learning", authors=[{"name": "Schmidhuber, J."}], published="2015-01"),
        _paper(title="Other", authors=[{"name": "Ada Lovelace"}]),
        _paper(title="¿Qué?"),
    ]
    assert citation_keys(papers) == [
        "schmidhuber2015deepa",
        "schmidhuber2015deepb",
        "lovelaceother",
        "anonque",
    ]
    assert to_bibtex(papers) == to_bibtex(papers)


def test_special_characters_are_escaped_and_read_back() -> None:
    title = "50% of {x} & $y$ #1 a_b ~ c^2 \\path -- ``q'' ?` \u00e9 \u03b1"
    paper = _paper(
        title=title,
        authors=[{"name": "Barnes and Noble"}, {"name": "Smith, Jr."}, {"name": "others"}],
        venue="Proc. {A} & B",
        url="https://example.org/a_b%20c~d",
        doi="10.1000/a_b",
        published="2020-05-17",
        arxiv_id="2101.00001",
        arxiv_version="v2",
        categories=["x, y", "z"],
        type="inproceedings",
    )
    text = to_bibtex([paper])
    assert r"50\% of \textbraceleft{}x\textbraceright{} \& \$y\$ \#1 a\_b" in text
    assert "-{}-" in text and "`{}`" in text and "'{}'" in text and "?{}`" in text
    assert "\u00e9 \u03b1" in text  # non-ASCII stays UTF-8
    # "others" is no person: it marks the list cut, written back as BibTeX's own "and others"
    assert paper.author_names == ["Barnes and Noble", "Smith, Jr."] and paper.authors_truncated
    assert "{Barnes and Noble} and {Smith, Jr.} and others}" in text
    assert "month         = may" in text
    back = parse_bibtex(text).papers[0]
    assert back.model_dump(exclude={"provenance"}) == paper.model_dump(exclude={"provenance"})


def test_escape_breaks_ligatures() -> None:
    assert escape("a--b") == "a-{}-b"
    assert escape("a---b") == "a-{}-{}-b"
    assert escape("!`") == "!{}`"


def test_the_bibtex_export_names_no_file_an_entry_was_read_from() -> None:
    """A BibTeX export is shared: the provenance keeps each source and key, not this machine's
    paths (the JSON Lines export, the whole record, keeps them)."""
    from retrieval.records.paper import Author, Paper, Provenance
    from retrieval.sources.files.bibtex_writer import provenance_value

    paper = Paper(title="A paper", authors=[Author(name="Ada Lovelace")], year=2020, provenance=[
        Provenance(source="bibtex", source_id="lovelace2020", fields=["title"], file="/home/ada/private/refs.bib")])
    value = provenance_value(paper.provenance)
    assert "lovelace2020" in value and "/home/ada" not in value and "file" not in value
    assert "/home/ada/private/refs.bib" in paper.model_dump_json(exclude_none=True)
