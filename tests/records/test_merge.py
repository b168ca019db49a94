"""Merging records of one paper from several sources, and deduplicating listings.

Records come from real recorded responses (``tests/fixtures/merge/``) parsed by the connectors.
Where the recordings hold no counterpart (no source recorded ChemCrow from arXiv or Crossref),
the counterpart is built here from that paper's real metadata, shaped as the connector would
shape it, and says so.
"""

from __future__ import annotations

import random
import time

import pytest

from retrieval.records.merge import (
    arxiv_id_from_doi,
    blocking_keys,
    dedupe,
    is_preprint,
    merge_papers,
    normalize_ids,
    same_paper,
)
from retrieval.records.paper import Author, Paper, Provenance
from tests.records.recorded import arxiv_feed, crossref, openalex, openalex_list
from tests.support.patience import patience


def _content(paper: Paper) -> dict:
    return paper.model_dump(exclude={"provenance"})


# --- one DOI, several sources -------------------------------------------------------------------


def test_openalex_and_crossref_records_of_one_doi_merge_with_provenance() -> None:
    from_openalex = openalex("openalex_fenner_newsletter.json")
    from_crossref = crossref("crossref_fenner_newsletter.json")
    assert from_openalex.doi == from_crossref.doi == "10.53731/ybhah-9jy85"
    assert same_paper(from_openalex, from_crossref)

    merged = merge_papers(from_openalex, from_crossref)

    assert merged.sources == ["openalex", "crossref"]
    by_source = {entry.source: entry for entry in merged.provenance}
    assert by_source["openalex"].source_id == "W4387341806"
    assert "publisher" in by_source["crossref"].fields and "publisher" not in by_source["openalex"].fields
    # crossref wins type and publisher; OpenAlex-only fields survive
    assert merged.type == from_crossref.type == "posted-content"
    assert merged.publisher == "Front Matter"
    assert merged.openalex_id == "W4387341806"
    assert merged.categories == from_openalex.categories
    assert merged.authors[0].orcid == "0000-0003-1419-2405"
    assert merged.authors[0].openalex_id == from_openalex.authors[0].openalex_id
    # the order of arrival does not change the merged content
    assert _content(merge_papers(from_crossref, from_openalex)) == _content(merged)


def test_authors_are_enriched_with_ids_and_affiliations_from_the_other_source() -> None:
    from_crossref = crossref("crossref_elife_01567.json")
    from_openalex = openalex("openalex_elife_01567.json")
    xenarios = next(a for a in from_crossref.authors if "Xenarios" in a.name)
    assert xenarios.orcid is None  # Crossref's record lacks it ...

    merged = merge_papers(from_crossref, from_openalex)

    assert [a.name.split()[-1] for a in merged.authors][:3] == ["Sankar", "Nieminen", "Ragni"]
    enriched = next(a for a in merged.authors if "narios" in a.name)
    assert enriched.orcid == "0000-0002-3413-6841"  # ... OpenAlex supplies it
    assert enriched.openalex_id is not None
    assert all(author.openalex_id for author in merged.authors)
    assert len(merged.authors) == len(from_openalex.authors)
    # affiliations of both sources are kept, without repeats
    crossref_affiliations = {aff for a in from_crossref.authors for aff in a.affiliations}
    merged_affiliations = {aff for a in merged.authors for aff in a.affiliations}
    assert crossref_affiliations <= merged_affiliations
    assert merged.venue == "eLife"
    assert merged.citation_count == max(from_crossref.citation_count or 0, from_openalex.citation_count or 0)


def test_fuller_names_and_missing_fields_come_from_whichever_source_has_them() -> None:
    from_openalex = openalex("openalex_thesis.json")
    from_crossref = crossref("crossref_thesis.json")
    assert from_crossref.abstract is None and from_openalex.abstract

    merged = merge_papers(from_crossref, from_openalex)

    assert merged.abstract == from_openalex.abstract
    assert merged.publisher == from_crossref.publisher
    assert merged.authors[0].name == "Patricia Maree Collingwood"  # the more specific spelling
    assert merged.authors[0].orcid == "0000-0003-3086-4443"


def test_the_longest_clean_abstract_wins() -> None:
    base = openalex("openalex_fenner_newsletter.json")
    marked_up = base.model_copy(update={"abstract": "<jats:p>" + (base.abstract or "") + " and some more words</jats:p>"})
    assert merge_papers(marked_up, base).abstract == base.abstract
    longer = base.model_copy(update={"abstract": (base.abstract or "") + " A longer clean version."})
    assert merge_papers(base, longer).abstract == longer.abstract


def test_scalar_fields_union_max_and_any() -> None:
    a = Paper(title="Graph networks for molecules", doi="10.1000/x", categories=["cs.LG"], citation_count=3,
              open_access=False, published="2021", provenance=[Provenance(source="crossref")])
    b = Paper(title="Graph networks for molecules", doi="10.1000/x", categories=["q-bio", "cs.LG"], citation_count=9,
              open_access=True, published="2021-06-09", provenance=[Provenance(source="openalex")])
    merged = merge_papers(a, b)
    assert merged.categories == ["cs.LG", "q-bio"]
    assert merged.citation_count == 9
    assert merged.open_access is True
    assert merged.published == "2021-06-09"  # the most precise date of one version


def test_provenance_of_a_refetched_record_is_not_duplicated() -> None:
    record = openalex("openalex_fenner_newsletter.json")
    again = record.model_copy(update={"citation_count": 5})
    again.provenance = [record.provenance[0].model_copy(update={"retrieved": "2099-01-01"})]
    merged = merge_papers(record, again)
    assert len(merged.provenance) == 1
    assert merged.provenance[0].retrieved == "2099-01-01"


# --- a preprint and its published version ---------------------------------------------------------


def _chemcrow() -> tuple[Paper, Paper]:
    article, preprint = openalex_list("openalex_chemcrow_title_search.json")
    return article, preprint


def test_preprint_and_published_version_are_one_paper() -> None:
    article, preprint = _chemcrow()
    # different titles ("ChemCrow: ..."), years (2023/2024), DOIs (arXiv DOI vs Nature) and
    # OpenAlex profiles of the first author: still one paper
    assert preprint.title.startswith("ChemCrow:") and not article.title.startswith("ChemCrow")
    assert article.authors[0].openalex_id != preprint.authors[0].openalex_id
    assert same_paper(article, preprint) and same_paper(preprint, article)

    merged = merge_papers(preprint, article)

    assert merged.id == "doi:10.1038/s42256-024-00832-8"
    assert merged.arxiv_id == "2304.05376"
    assert merged.title == article.title
    assert merged.published == article.published == "2024-05-08"  # the published version's date
    assert merged.type == article.type and merged.venue == article.venue
    assert merged.openalex_id == article.openalex_id  # the article's work, not the preprint's
    assert {entry.source_id for entry in merged.provenance} == {article.openalex_id, preprint.openalex_id}
    # first author: the ORCID known only on the preprint reaches the article's author list
    assert merged.authors[0].orcid == preprint.authors[0].orcid
    assert _content(merge_papers(article, preprint)) == _content(merged)


def test_arxiv_openalex_and_crossref_records_become_one() -> None:
    article, preprint = _chemcrow()
    # No recording has ChemCrow from arXiv or Crossref: these two are shaped as those connectors
    # shape records, from the paper's real metadata.
    from_arxiv = Paper(
        title="ChemCrow: Augmenting large-language models with chemistry tools",
        authors=[Author(name=a.name) for a in preprint.authors],
        abstract=(preprint.abstract or "") + " Extended arXiv abstract.",
        published="2023-04-11", arxiv_id="2304.05376", arxiv_version="v5", type="preprint",
        categories=["physics.chem-ph", "cs.AI"],
        provenance=[Provenance(source="arxiv", source_id="2304.05376v5")],
    )
    from_crossref = Paper(
        title=article.title, authors=[Author(name=a.name) for a in article.authors],
        published="2024-05", doi=article.doi, venue="Nature Machine Intelligence",
        publisher="Springer Science and Business Media LLC", type="journal-article",
        provenance=[Provenance(source="crossref", source_id=article.doi)],
    )
    records = [from_arxiv, preprint, from_crossref, article]
    random.Random(3).shuffle(records)

    merged = dedupe(records)

    assert len(merged) == 1
    paper = merged[0]
    assert set(paper.sources) == {"arxiv", "openalex", "crossref"}
    assert paper.id == "doi:10.1038/s42256-024-00832-8"
    assert paper.arxiv_id == "2304.05376" and paper.arxiv_version == "v5"
    assert paper.publisher == "Springer Science and Business Media LLC"  # crossref > openalex
    assert paper.type == "journal-article"
    assert paper.abstract == from_arxiv.abstract  # the longest clean abstract
    assert "physics.chem-ph" in paper.categories and set(article.categories) <= set(paper.categories)
    assert paper.published == "2024-05-08"  # the published version's most precise date


def test_arxiv_doi_is_the_arxiv_id() -> None:
    assert arxiv_id_from_doi("10.48550/arXiv.2304.05376") == "2304.05376"
    assert arxiv_id_from_doi("10.1038/s42256-024-00832-8") is None
    listed = arxiv_feed("au_del_maestro_AND_ti_quantum_criticality.xml")
    entry = next(p for p in listed if p.arxiv_id == "1111.2011")
    assert entry.doi == "10.1103/physrevb.85.115117"
    via_doi = Paper(title=entry.title, doi="10.48550/arXiv.1111.2011", provenance=[Provenance(source="openalex")])
    assert normalize_ids(via_doi).arxiv_id == "1111.2011" and normalize_ids(via_doi).doi is None
    # the journal DOI and the arXiv DOI do not disagree: one names the preprint of the other
    assert same_paper(entry, via_doi)
    assert merge_papers(via_doi, entry).id == entry.id


# --- what must stay apart ------------------------------------------------------------------------


def test_two_different_dois_are_two_papers_even_with_one_title() -> None:
    record = crossref("crossref_elife_01567.json")
    other = record.model_copy(update={"doi": "10.7554/elife.01567.sa1"})
    assert not same_paper(record, other)
    assert len(dedupe([record, other])) == 2


def test_namesake_first_authors_with_different_orcids_are_different_papers() -> None:
    record = openalex("openalex_W2741809807.json")
    first = record.authors[0]
    bare = record.model_copy(update={"doi": None, "openalex_id": None})
    namesake = bare.model_copy(update={"authors": [first.model_copy(update={"orcid": "0000-0002-1825-0097"}), *record.authors[1:]]})
    assert same_paper(bare, record)  # title + year + the same first author
    assert not same_paper(namesake, record)


@pytest.mark.parametrize(
    ("change", "same"),
    [
        ({}, True),
        ({"published": "2017"}, False),  # a year apart, and neither is a preprint
        ({"authors": [Author(name="Tong Piwowar")]}, False),  # incompatible first author
        ({"authors": [Author(name="H. Piwowar")]}, True),  # an initial is compatible
        ({"authors": []}, False),  # no author to compare: ids only
        ({"title": "The state of OA: a large scale analysis of the prevalence and impact of open access articles!"}, True),
    ],
)
def test_title_year_and_first_author_without_ids(change: dict, same: bool) -> None:
    record = openalex("openalex_W2741809807.json")
    bibtex_like = Paper(
        title=record.title, authors=[Author(name="Piwowar, Heather")], published=str(record.year),
        provenance=[Provenance(source="bibtex", source_id="piwowar2018")],
    ).model_copy(update=change)
    assert same_paper(record, bibtex_like) is same


def test_generic_titles_never_match_without_ids() -> None:
    a = Paper(title="Editorial", authors=[Author(name="Jane Roe")], published="2020")
    b = Paper(title="Editorial", authors=[Author(name="Jane Roe")], published="2020", venue="Other journal")
    assert not same_paper(a, b)
    assert len(dedupe([a, b])) == 2


# --- dedupe --------------------------------------------------------------------------------------


def test_overlapping_listing_pages_yield_one_record_per_paper() -> None:
    first = arxiv_feed("au_del_maestro_ANDNOT_checkerboard_pyrochlore.xml")
    second = arxiv_feed("au_del_maestro_AND_ti_quantum_criticality.xml")
    both = first + second
    shared = {p.arxiv_id for p in first} & {p.arxiv_id for p in second}
    assert shared == {"1111.2011", "cond-mat/0607501"}

    unique = dedupe(both)

    assert len(unique) == len(both) - len(shared)
    assert [p.arxiv_id for p in unique] == list(dict.fromkeys(p.arxiv_id for p in both))
    assert all(is_preprint(p) for p in unique)


def test_dedupe_chains_keys_but_never_glues_conflicting_dois() -> None:
    # A shares a DOI with B, B shares an arXiv id with C, C has another DOI: A and C conflict,
    # so C stays apart even though it is linked to the A+B record through B's arXiv id.
    a = Paper(title="Quantum walks", doi="10.1000/a", provenance=[Provenance(source="crossref")])
    b = Paper(title="Quantum walks", doi="10.1000/a", arxiv_id="2101.00001", provenance=[Provenance(source="arxiv")])
    c = Paper(title="Quantum walks II", doi="10.1000/c", arxiv_id="2101.00001", provenance=[Provenance(source="crossref")])
    unique = dedupe([a, b, c])
    assert [p.doi for p in unique] == ["10.1000/a", "10.1000/c"]


def test_blocking_keys_cover_ids_and_title_variants() -> None:
    _, preprint = _chemcrow()
    keys = blocking_keys(preprint)
    assert "arxiv:2304.05376" in keys and f"openalex:{preprint.openalex_id}" in keys
    assert any(key.startswith("title:augmenting large language models with chemistry tools|bran") for key in keys)


def test_dedupe_is_linear_in_practice() -> None:
    rng = random.Random(11)
    words = [f"w{i}" for i in range(400)]
    papers = [
        Paper(title=" ".join(rng.sample(words, 8)), authors=[Author(name=f"Author{rng.randrange(900)} Family{rng.randrange(300)}")],
              published=str(rng.randint(1990, 2025)), doi=f"10.5555/{n}" if n % 2 else None)
        for n in range(8000)
    ]
    listing = papers + [p.model_copy() for p in papers[::4]]
    started = time.process_time()
    unique = dedupe(listing)
    elapsed = time.process_time() - started
    assert len(unique) == len(papers)
    assert elapsed < patience(4.0), f"dedupe of {len(listing)} records took {elapsed:.1f} s of CPU"
