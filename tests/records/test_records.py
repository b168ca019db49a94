"""Paper records: canonical ids, identifier normalisation, derived citation fields."""

import pytest
from pydantic import ValidationError

from retrieval.records.paper import (
    Author,
    Paper,
    clean_text,
    normalize_arxiv_id,
    normalize_doi,
    normalize_openalex_id,
    normalize_orcid,
    split_arxiv_id,
)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("10.1103/PhysRevD.76.013009", "10.1103/physrevd.76.013009"),
        ("https://doi.org/10.1145/3458817.3476136", "10.1145/3458817.3476136"),
        ("http://dx.doi.org/10.1000/XYZ.", "10.1000/xyz"),
        ("doi: 10.5555/12345678", "10.5555/12345678"),
        ("not a doi", None),
        ("", None),
        (None, None),
    ],
)
def test_normalize_doi(raw, expected):
    assert normalize_doi(raw) == expected


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("2104.12255v1", ("2104.12255", "v1")),
        ("http://arxiv.org/abs/0704.0001v2", ("0704.0001", "v2")),
        ("arXiv:1707.08567", ("1707.08567", None)),
        ("https://arxiv.org/pdf/2301.00001v3.pdf", ("2301.00001", "v3")),
        ("hep-th/9901001v1", ("hep-th/9901001", "v1")),
        ("quant-ph/0201082", ("quant-ph/0201082", None)),
        ("abc", None),
    ],
)
def test_split_arxiv_id(raw, expected):
    assert split_arxiv_id(raw) == expected
    assert normalize_arxiv_id(raw) == (expected[0] if expected else None)


def test_other_identifiers():
    assert normalize_openalex_id("https://openalex.org/W2741809807") == "W2741809807"
    assert normalize_openalex_id("a5023888391") == "A5023888391"
    assert normalize_orcid("https://orcid.org/0000-0002-1825-009x") == "0000-0002-1825-009X"
    assert normalize_orcid("1234") is None


def test_canonical_id_prefers_doi_then_arxiv_then_openalex_then_hash():
    base = {"title": "A Study", "authors": [{"name": "Zhao Zhang"}], "published": "2021"}
    assert Paper(**base, doi="10.1145/ABC", arxiv_id="2101.00001").id == "doi:10.1145/abc"
    assert Paper(**base, arxiv_id="2101.00001v2", openalex_id="W1").id == "arxiv:2101.00001"
    assert Paper(**base, openalex_id="W123").id == "openalex:W123"
    hashed = Paper(**base)
    assert hashed.id.startswith("hash:")
    # the hash ignores case, punctuation and spacing of the title
    assert Paper(**{**base, "title": "a   study!"}).id == hashed.id
    assert Paper(**{**base, "published": "2022"}).id != hashed.id


def test_text_is_cleaned_and_dates_normalised():
    paper = Paper(title="  Deep\n  learning\t for\x00 HPC ", published="2023-7-4", abstract="  ")
    assert paper.title == "Deep learning for HPC"
    assert paper.published == "2023-07-04" and paper.year == 2023
    assert paper.abstract is None
    assert Paper(title="x", published="2023-13").published == "2023"
    assert Paper(title="x", year=1999).published == "1999"


@pytest.mark.parametrize("bad", [{"title": "   "}, {"title": "x", "published": "yesterday"}, {"title": "x", "published": "0999"}])
def test_invalid_records_are_rejected(bad):
    with pytest.raises(ValidationError):
        Paper(**bad)


def test_citation_fields():
    paper = Paper(
        title="T",
        authors=[Author(name=n) for n in ["A One", "B Two", "C Three", "D Four"]],
        arxiv_id="2101.00001",
    )
    assert paper.short_authors() == "A One, B Two, C Three et al."
    assert Paper(title="T", authors=[{"name": "A"}, {"name": "B"}]).short_authors() == "A and B"
    assert paper.link == "https://arxiv.org/abs/2101.00001"
    assert Paper(title="T", url="javascript:alert(1)").url is None


def test_hashes_track_content_not_provenance_dates():
    a = Paper(title="T", abstract="x", provenance=[{"source": "bibtex", "source_id": "k", "retrieved": "2026-01-01"}])
    b = Paper(title="T", abstract="x", provenance=[{"source": "bibtex", "source_id": "k", "retrieved": "2026-02-02"}])
    assert a.content_hash == b.content_hash
    assert a.embedding_hash == b.embedding_hash
    c = Paper(title="T", abstract="y")
    assert c.embedding_hash != a.embedding_hash


def test_author_normalisation():
    author = Author(name=" Zhang,\n Zhao ", orcid="https://orcid.org/0000-0001-2345-6789", affiliations=["MIT", " MIT ", ""])
    assert author.name == "Zhang, Zhao" and author.family_name == "Zhang"
    assert author.orcid == "0000-0001-2345-6789"
    assert author.affiliations == ["MIT"]
    assert clean_text("a\u200bb") == "ab"


def test_arxiv_datacite_doi_becomes_the_arxiv_id():
    from_openalex = Paper(title="T", doi="https://doi.org/10.48550/arXiv.2304.05376")
    from_arxiv = Paper(title="T", arxiv_id="2304.05376v2")
    assert from_openalex.id == from_arxiv.id == "arxiv:2304.05376"
    assert from_openalex.doi is None
    # a journal DOI on an arXiv paper is kept and wins
    assert Paper(title="T", doi="10.1103/x.1", arxiv_id="2304.05376").id == "doi:10.1103/x.1"


def test_terminal_escape_sequences_leave_no_words_behind() -> None:
    from retrieval.records.paper import clean_text

    assert clean_text("pebble game \x1b[2J\x1b]0;owned\x07 sparse \x1b[31mgraphs\x1b[0m") == "pebble game sparse graphs"
    assert clean_text("plain [31m text stays") == "plain [31m text stays"  # no escape character: untouched
