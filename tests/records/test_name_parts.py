"""A name's family part as the source gave it: ``name_parts`` and ``Author.family``/``particle``."""

from __future__ import annotations

import pytest

from retrieval.records.merge import merge_papers
from retrieval.records.name_parts import NameParts, default_family, kept_family, leading_particle, split_name
from retrieval.records.paper import Author, Paper


def test_a_name_is_cut_around_the_rightmost_run_of_its_family_words() -> None:
    assert split_name("Ludwig van Beethoven Jr", "van Beethoven", "van") == NameParts("Ludwig", "van", "Beethoven", "Jr")
    assert split_name("Jordi Puig Puig", "Puig Puig") == NameParts("Jordi", "", "Puig Puig", "")
    assert split_name("Giovanni Da San Martino", "Da San Martino", "Da San") == NameParts(
        "Giovanni", "Da San", "Martino", "")
    assert split_name("Martijn Devos", "de Vos") is None  # not words of the name
    # a particle that does not lead the family part is dropped, not an error
    assert split_name("Martijn de Vos", "de Vos", "van") == NameParts("Martijn", "", "de Vos", "")
    assert split_name("Martijn de Vos", "de Vos", "de Vos") == NameParts("Martijn", "", "de Vos", "")


@pytest.mark.parametrize(
    ("name", "family", "particle", "kept"),
    [
        ("Martijn de Vos", "de Vos", None, ("de Vos", None)),
        ("Martijn de Vos", "de  Vos", "de", ("de Vos", "de")),
        ("Jane Doe", "Doe", None, (None, None)),  # the display name says as much
        ("Jane Doe", "Doe", "", (None, None)),
        ("John Smith Jr", "Smith", None, ("Smith", None)),  # not the last word: kept
        ("Barnes and Noble", "Barnes and Noble", None, (None, None)),  # an organisation reads whole anyway
        ("Blue Crystal Cluster", "Blue Crystal Cluster", "Blue Crystal", ("Blue Crystal Cluster", "Blue Crystal")),
        ("Jane Doe", "Smith", None, (None, None)),
        ("Jane Doe", None, "van", (None, None)),
    ],
)
def test_kept_family(name: str, family: str | None, particle: str | None, kept: tuple[str | None, str | None]) -> None:
    assert kept_family(name, family, particle) == kept


def test_default_family() -> None:
    assert default_family("Giovanni Da San Martino") == "Martino"
    assert default_family("Barnes and Noble, Inc.") == "Barnes and Noble, Inc."
    assert default_family("Plato") == "Plato"


@pytest.mark.parametrize(
    ("family", "particle"),
    [("van der Berg", "van der"), ("de Vos", "de"), ("Da San Martino", None), ("Van Durme", None),
     ("Van der Burg", "Van der"), ("von", None), ("García Seco de Herrera", "García Seco de")],
)
def test_leading_particle_follows_bibtex_before_the_comma(family: str, particle: str | None) -> None:
    assert leading_particle(family) == particle


def test_the_author_keeps_a_cleaned_fitting_family_part() -> None:
    author = Author(name="<b>Giovanni Da San Martino</b>", family="Da San Martino*")
    assert (author.name, author.family, author.particle) == ("Giovanni Da San Martino", "Da San Martino", None)
    assert Author(name="Jane Doe", family="Doe").family is None
    assert Author(name="Jane Doe", family="Smith").family is None


def test_family_parts_leave_ids_and_stored_hashes_as_they_were() -> None:
    # the hash of this record before Author.family existed: records already stored stay "unchanged"
    before = "b93c13ee4c70acb1638f314363c7910397e75107d36a3d3327014d86839dafbb"
    paper = Paper(title="Deep Learning", published="2020",
                  authors=[{"name": "Martijn de Vos", "orcid": "0000-0002-1825-0097"}, {"name": "Jane Doe", "family": "Doe"}])
    assert paper.content_hash == before
    assert "family" not in paper.model_dump_json()
    with_family = Paper(title="Deep Learning", published="2020", authors=[{"name": "Martijn de Vos", "family": "de Vos"}])
    assert with_family.content_hash != Paper(title="Deep Learning", published="2020",
                                             authors=[{"name": "Martijn de Vos"}]).content_hash
    # the hash id still files the first author under the name's last word, as before
    assert with_family.id == paper.id == "hash:bea1cd1f41f69a87e899"
    assert Paper.model_validate_json(with_family.model_dump_json()).authors[0].family == "de Vos"


def test_merging_keeps_the_family_part_a_source_gave() -> None:
    from_api = Paper(title="Decentralised learning", doi="10.1/x", authors=[
        {"name": "Martijn de Vos", "orcid": "0000-0002-1825-0097"}, {"name": "G. Da San Martino"}],
        provenance=[{"source": "openalex"}])
    from_file = Paper(title="Decentralised learning", doi="10.1/x", authors=[
        {"name": "Martijn de Vos", "family": "de Vos"},
        {"name": "Giovanni Da San Martino", "family": "Da San Martino"}],
        provenance=[{"source": "bibtex", "source_id": "k"}])
    for merged in (merge_papers(from_api, from_file), merge_papers(from_file, from_api)):
        assert [(a.name, a.family) for a in merged.authors] == [
            ("Martijn de Vos", "de Vos"), ("Giovanni Da San Martino", "Da San Martino")]
        assert merged.authors[0].orcid == "0000-0002-1825-0097"


def test_merging_keeps_the_family_parts_of_the_editors_kept() -> None:
    bare = Paper(title="Proceedings", doi="10.1/p", editors=["Ibrahim Abu Farha", "Jane Doe"],
                 provenance=[{"source": "crossref"}])
    from_file = Paper(title="Proceedings", doi="10.1/p", editors=["Ibrahim Abu Farha"],
                      editor_families={"Ibrahim Abu Farha": {"family": "Abu Farha"}},
                      provenance=[{"source": "bibtex", "source_id": "k"}])
    for merged in (merge_papers(bare, from_file), merge_papers(from_file, bare)):
        assert merged.editors == ["Ibrahim Abu Farha", "Jane Doe"]  # Crossref's list, the better source
        assert list(merged.editor_families) == ["Ibrahim Abu Farha"]
