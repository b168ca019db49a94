"""Author identity: name agreement, ``same_person`` and grouping an index into people."""

from __future__ import annotations

import random
import time

import pytest

from retrieval.merge import merge_papers
from retrieval.names import NameMatch, People, group_people, is_organisation, name_match, same_person
from retrieval.records import Author, Paper, fold
from tests.merge.recorded import conference, crossref, openalex, openalex_list


@pytest.mark.parametrize(
    ("a", "b", "strength"),
    [
        ("Zhao Zhang", "Zhang, Zhao", NameMatch.STRONG),
        ("Z. Zhang", "Zhao Zhang", NameMatch.WEAK),
        ("Zhang", "Zhao Zhang", NameMatch.WEAK),
        ("Zhang Zhao", "Zhao Zhang", NameMatch.WEAK),  # family name written first, no comma
        ("Tong Zhang", "Zhao Zhang", NameMatch.NONE),
        ("Andres M. Bran", "Andres Bran", NameMatch.STRONG),
        ("Zhao-Yang Li", "Zhaoyang Li", NameMatch.STRONG),
        ("Ioannis Xénarios", "Ioannis Xenarios", NameMatch.STRONG),
        ("Martı́n Farach-Colton", "Martin Farach-Colton", NameMatch.STRONG),  # dotless i + accent
        ("Łukasz Kaiser", "Lukasz Kaiser", NameMatch.STRONG),
        ("李明", "李明", NameMatch.STRONG),
        ("李明", "王明", NameMatch.NONE),
    ],
)
def test_name_match(a: str, b: str, strength: NameMatch) -> None:
    assert name_match(a, b) is strength
    assert name_match(b, a) is strength


@pytest.mark.parametrize(
    ("a", "b", "shared", "same"),
    [
        (Author(name="Zhao Zhang"), Author(name="Zhang, Zhao"), 0, True),
        (Author(name="Z. Zhang"), Author(name="Zhao Zhang"), 0, False),  # an initial needs evidence
        (Author(name="Z. Zhang"), Author(name="Zhao Zhang"), 1, True),  # a shared co-author
        (Author(name="Z. Zhang", affiliations=["Rutgers University"]),
         Author(name="Zhao Zhang", affiliations=["Rutgers University, New Brunswick, NJ, USA"]), 0, True),
        (Author(name="Zhang Zhao"), Author(name="Zhao Zhang"), 1, True),
        (Author(name="Tong Zhang"), Author(name="Zhao Zhang"), 5, False),
        # ids win over names, both ways
        (Author(name="Zhao Zhang", orcid="0000-0002-1825-0097"), Author(name="Zhao Zhang", orcid="0000-0001-5109-3700"), 3, False),
        (Author(name="Zhao Zhang", openalex_id="A1"), Author(name="Zhao Zhang", openalex_id="A2"), 3, False),
        (Author(name="Z. Zhang", orcid="0000-0002-1825-0097"), Author(name="Zhao Zhang", orcid="0000-0002-1825-0097"), 0, True),
        (Author(name="Patricia Collingwood", orcid="0000-0003-3086-4443"),
         Author(name="P. M. Collingwood", orcid="0000-0003-3086-4443", openalex_id="A5"), 0, True),
    ],
)
def test_same_person(a: Author, b: Author, shared: int, same: bool) -> None:
    assert same_person(a, b, shared_coauthors=shared) is same
    assert same_person(b, a, shared_coauthors=shared) is same


def test_organisational_authors_are_recognised() -> None:
    assert is_organisation("The ATLAS Collaboration")
    assert is_organisation("SIB Swiss Institute of Bioinformatics")
    assert not is_organisation("Martin Fenner")


def test_one_person_across_sources_and_spellings() -> None:
    papers = [
        crossref("crossref_thesis.json"), openalex("openalex_thesis.json"),
        crossref("crossref_sigmod.json"), openalex("openalex_sigmod.json"),
    ]
    people = People.from_papers(papers)

    collingwood = people.by_id("https://orcid.org/0000-0003-3086-4443")
    assert collingwood is not None
    assert collingwood.name == "Patricia Maree Collingwood"
    assert set(collingwood.variants) == {"Patricia Collingwood", "Patricia Maree Collingwood"}
    assert collingwood.paper_ids == ["doi:10.14264/uql.2020.791"]
    # Crossref printed "Martin Farach-Colton" without ORCID; OpenAlex "Martı́n" with one. The
    # shared co-authors of the same paper say it is one person.
    farach = people.find("Martin Farach-Colton")
    assert len(farach) == 1 and farach[0].orcids == ["0000-0003-3616-7788"]
    assert len(farach[0].occurrences) == 2
    bender = people.find("M. A. Bender")[0]
    assert bender.affiliations  # affiliations by year come along
    assert 2021 in bender.affiliations_by_year
    coauthors = {person.name for person, shared in people.coauthors(bender)}
    assert "Prashant Pandey" in coauthors


def test_split_openalex_profiles_join_through_the_merged_record() -> None:
    article, preprint = openalex_list("openalex_chemcrow_title_search.json")
    apart = People.from_papers([article, preprint])
    # two OpenAlex profiles, no shared ORCID: kept apart when the records are not merged
    assert len(apart.find("Andres M. Bran")) == 2
    together = People.from_papers([merge_papers(preprint, article), preprint])
    assert len(together.find("Andres M. Bran")) == 1


def test_namesakes_with_different_orcids_stay_apart() -> None:
    state_of_oa = openalex("openalex_W2741809807.json")  # Jason Priem, ORCID 0000-0001-6187-6610
    other_priem = Author(name="Jason Priem", orcid="0000-0002-1825-0097")  # a namesake (built here)
    namesake_paper = Paper(title="Soil microbes of the Atacama", authors=[Author(name="Ana Ruiz"), other_priem], published="2019")
    # an id-less "Jason Priem" with one of the State-of-OA co-authors
    with_coauthor = Paper(title="Unpaywall in practice", authors=[Author(name="J. Priem"), Author(name="Heather Piwowar")], published="2020")
    # an id-less "Jason Priem" with nobody in common: cannot be attributed
    unknown = Paper(title="A note on citation counts", authors=[Author(name="Jason Priem")], published="2021")

    people = People.from_papers([state_of_oa, namesake_paper, with_coauthor, unknown])
    priems = people.find("Jason Priem")

    assert len(priems) == 3
    by_orcid = {tuple(p.orcids): p for p in priems}
    assert set(by_orcid[("0000-0001-6187-6610",)].paper_ids) == {state_of_oa.id, with_coauthor.id}
    assert by_orcid[("0000-0002-1825-0097",)].paper_ids == [namesake_paper.id]
    assert by_orcid[()].paper_ids == [unknown.id]


def test_authors_of_one_paper_are_never_one_person() -> None:
    paper = Paper(title="Twins", authors=[Author(name="Wei Zhang"), Author(name="Wei Zhang")], published="2020")
    assert len(group_people([paper])) == 2


def test_conference_authors_group_across_years() -> None:
    papers = conference("mlsys2023.json") + conference("mlsys2024.json")
    people = People.from_papers(papers)
    written = {fold(a.name) for p in papers for a in p.authors}
    # full names and no ids: one person per spelled-out name ("colby banbury" = "Colby Banbury")
    assert len(people.clusters) == len(written)
    repeat = [c for c in people.clusters if len({pid for pid in c.paper_ids}) > 1]
    assert repeat, "some MLSys authors published in both years"
    years = {p.id: p.year for p in papers}
    assert any({years[pid] for pid in c.paper_ids} == {2023, 2024} for c in repeat)
    # an initials-only mention joins the right person through a shared co-author
    target = repeat[0]
    host = next(p for p in papers if p.id == target.paper_ids[0])
    coauthor = next(a.name for a in host.authors if a.name != target.name)
    given, family = target.name.split()[0], target.name.split()[-1]
    extra = Paper(title="An extra workshop paper", authors=[Author(name=f"{given[0]}. {family}"), Author(name=coauthor)], published="2024")
    regrouped = People.from_papers([*papers, extra])
    person = regrouped.find(target.name)[0]
    assert extra.id in person.paper_ids and person.name == target.name


def test_grouping_ten_thousand_papers_is_fast() -> None:
    rng = random.Random(5)
    given = [f"{a}{b}" for a in ("Zha", "Wei", "Ana", "Mar", "Jo", "Ke", "Yu", "Xi") for b in ("o", "n", "ria", "tin", "hn", "ra")]
    families = ["Zhang", "Wang", "Smith", "García", "Müller", "Rossi"] + [f"Fam{i}" for i in range(900)]
    roster = [(rng.choice(given), rng.choice(families), f"0000-0001-{i // 1000:04d}-{i % 1000:03d}X" if i % 3 == 0 else None)
              for i in range(4000)]
    papers = []
    for n in range(10_000):
        authors = []
        for first, family, orcid in rng.sample(roster, rng.randint(2, 8)):
            style = rng.random()
            name = f"{first[0]}. {family}" if style < 0.15 else f"{family}, {first}" if style < 0.3 else f"{first} {family}"
            authors.append(Author(name=name, orcid=orcid if rng.random() < 0.7 else None))
        papers.append(Paper(title=f"Study {n} of topic {rng.randrange(999)}", authors=authors, published=str(rng.randint(2000, 2025))))
    started = time.process_time()
    clusters = group_people(papers)
    elapsed = time.process_time() - started
    assert sum(len(c.occurrences) for c in clusters) == sum(len(p.authors) for p in papers)
    assert elapsed < 2.0, f"grouping 10k papers took {elapsed:.2f} s of CPU"
