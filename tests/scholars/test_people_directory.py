"""Author identity: name agreement, ``same_person``, and ``PeopleDirectory`` over merged records."""

from __future__ import annotations

import random
import time
from itertools import combinations

import pytest

from retrieval.records.merge import merge_papers
from retrieval.records.names import NameMatch, is_organisation, name_match, names_compatible, parse_name, same_person
from retrieval.records.paper import Author, Paper
from retrieval.scholars.people import PeopleDirectory
from tests.records.recorded import conference, crossref, openalex, openalex_list
from tests.support.patience import patience


@pytest.mark.parametrize(
    ("a", "b", "strength"),
    [
        ("Zhao Zhang", "Zhang, Zhao", NameMatch.STRONG),
        ("Z. Zhang", "Zhao Zhang", NameMatch.WEAK),
        ("Zhang", "Zhao Zhang", NameMatch.WEAK),
        ("Zhang Zhao", "Zhao Zhang", NameMatch.WEAK),  # family name written first, no comma
        ("Zhang Z", "Z. Zhang", NameMatch.WEAK),  # the same, with an initial
        ("Tong Zhang", "Zhao Zhang", NameMatch.NONE),
        ("Andres M. Bran", "Andres Bran", NameMatch.STRONG),
        ("Zhao-Yang Li", "Zhaoyang Li", NameMatch.STRONG),
        ("Ioannis Xénarios", "Ioannis Xenarios", NameMatch.STRONG),
        ("Martı́n Farach-Colton", "Martin Farach-Colton", NameMatch.STRONG),  # dotless i + accent
        ("Łukasz Kaiser", "Lukasz Kaiser", NameMatch.STRONG),
        ("李明", "李明", NameMatch.STRONG),
        ("李明", "王明", NameMatch.NONE),
        # particles: a bare family name agrees only weakly; "Di" may be a given name or a particle
        ("Del Maestro", "Adrian Del Maestro", NameMatch.WEAK),
        ("Beethoven, Ludwig van", "Ludwig van Beethoven", NameMatch.STRONG),
        ("Di Wang", "Di Wang", NameMatch.STRONG),
        ("Di Stefano", "Luigi Di Stefano", NameMatch.WEAK),
        ("Di Stefano", "Wei Stefano", NameMatch.NONE),
        ("Di Wang", "Wei Wang", NameMatch.NONE),
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
        # an equal ORCID outweighs different OpenAlex profiles
        (Author(name="Andres M. Bran", orcid="0000-0002-4432-3667", openalex_id="A1"),
         Author(name="Andres Bran", orcid="0000-0002-4432-3667", openalex_id="A2"), 0, True),
    ],
)
def test_same_person(a: Author, b: Author, shared: int, same: bool) -> None:
    assert same_person(a, b, shared_coauthors=shared) is same
    assert same_person(b, a, shared_coauthors=shared) is same


def test_organisational_authors_are_recognised() -> None:
    assert is_organisation("The ATLAS Collaboration")
    assert is_organisation("SIB Swiss Institute of Bioinformatics")
    assert not is_organisation("Martin Fenner")


# --- PeopleDirectory over records merged from several sources ---------------------------------


def test_one_person_across_sources_and_spellings() -> None:
    thesis = merge_papers(crossref("crossref_thesis.json"), openalex("openalex_thesis.json"))
    sigmod = merge_papers(crossref("crossref_sigmod.json"), openalex("openalex_sigmod.json"))
    directory = PeopleDirectory([thesis, sigmod])

    [collingwood] = directory.with_id("orcid", "0000-0003-3086-4443")
    assert collingwood.name == "Patricia Maree Collingwood"
    assert collingwood.paper_ids == [thesis.id]
    # Crossref printed "Martin Farach-Colton" without ORCID, OpenAlex "Martı́n" with one: the
    # merged record carries one author, found under either spelling
    [farach] = directory.compatible_with("Martin Farach-Colton")
    assert farach.ids["orcid"] == "0000-0003-3616-7788"
    assert directory.compatible_with("Martı́n Farach-Colton") == [farach]
    [bender] = directory.compatible_with("M. A. Bender")
    assert ("2021-06-09", "Stony Brook University") in list(bender.affiliations())
    coauthors = {directory.get(key).name for key in directory.coauthors_of(bender)}
    assert "Prashant Pandey" in coauthors and farach.name in coauthors


def test_split_openalex_profiles_join_through_an_orcid() -> None:
    article, preprint = openalex_list("openalex_chemcrow_title_search.json")
    # two OpenAlex profiles and only the preprint has the ORCID: nothing proves one person
    apart = PeopleDirectory([article, preprint])
    assert len(apart.compatible_with("Andres M. Bran")) == 2
    # merging the records gives the article the ORCID: the ORCID outweighs the OpenAlex split
    together = PeopleDirectory([merge_papers(preprint, article), preprint])
    [bran] = together.compatible_with("Andres M. Bran")
    assert set(bran.paper_ids) == {article.id, preprint.id}
    assert bran.ids["orcid"] == "0000-0002-4432-3667"
    for author in (a for paper in (article, preprint) for a in paper.authors if "Bran" in a.name):
        assert author.openalex_id is not None
        assert together.with_id("openalex", author.openalex_id) == [bran]


def test_namesakes_with_different_orcids_stay_apart() -> None:
    state_of_oa = openalex("openalex_W2741809807.json")  # Jason Priem, ORCID 0000-0001-6187-6610
    other_priem = Author(name="Jason Priem", orcid="0000-0002-1825-0097")  # a namesake (built here)
    namesake_paper = Paper(title="Soil microbes of the Atacama", authors=[Author(name="Ana Ruiz"), other_priem], published="2019")
    # an id-less "J. Priem" with one of the State-of-OA co-authors
    with_coauthor = Paper(title="Unpaywall in practice", authors=[Author(name="J. Priem"), Author(name="Heather Piwowar")], published="2020")
    # an id-less "Jason Priem" with nobody in common: the family is not unambiguous (two ORCIDs)
    unknown = Paper(title="A note on citation counts", authors=[Author(name="Jason Priem")], published="2021")

    directory = PeopleDirectory([state_of_oa, namesake_paper, with_coauthor, unknown])
    priems = directory.compatible_with("Jason Priem")

    assert len(priems) == 3
    by_orcid = {p.ids.get("orcid"): p for p in priems}
    assert set(by_orcid["0000-0001-6187-6610"].paper_ids) == {state_of_oa.id, with_coauthor.id}
    assert by_orcid["0000-0002-1825-0097"].paper_ids == [namesake_paper.id]
    assert by_orcid[None].paper_ids == [unknown.id]


def test_conference_authors_group_across_years() -> None:
    papers = conference("mlsys2023.json") + conference("mlsys2024.json")
    directory = PeopleDirectory(papers)
    assert sum(len(p.mentions) for p in directory.people) == sum(len(p.authors) for p in papers)
    for person in directory.people:  # a person's written names are all compatible
        assert all(names_compatible(x, y) for x, y in combinations(person.names, 2)), person.names
    # a family whose every written name is compatible is one person ("colby banbury" = "Colby Banbury")
    banbury = directory.compatible_with("Colby Banbury")
    assert len(banbury) == 1 and set(banbury[0].names) == {"Colby Banbury", "colby banbury"}
    assert banbury[0].name == "Colby Banbury"
    years = {p.id: p.year for p in papers}
    repeat = [p for p in directory.people if {years[pid] for pid in p.paper_ids} == {2023, 2024}]
    assert repeat, "some MLSys authors published in both years"
    # an initials-only mention joins the right person through a shared co-author
    target = next(p for p in repeat if len(directory.compatible_with(p.name)) == 1)
    host = directory.papers[target.paper_ids[0]]
    coauthor = next(a.name for a in host.authors if a.name not in target.names)
    given = parse_name(target.name).given[0]
    family = target.name.split()[-1]
    extra = Paper(title="An extra workshop paper", authors=[Author(name=f"{given[0].upper()}. {family}"), Author(name=coauthor)], published="2024")
    regrouped = PeopleDirectory([*papers, extra])
    [person] = [p for p in regrouped.compatible_with(target.name) if target.name in p.names]
    assert extra.id in person.paper_ids and person.name == target.name


def test_grouping_large_blocks_of_one_family_name_is_fast() -> None:
    """Every author shares one of six family names, so each family block (where grouping is
    quadratic at worst) holds about 400 mentions; CVPR 2024's largest, "Wang", holds 810."""
    rng = random.Random(5)
    given = [f"{a}{b}" for a in ("Zha", "Wei", "Ana", "Mar", "Jo", "Ke", "Yu", "Xi") for b in ("o", "n", "ria", "tin", "hn", "ra")]
    families = ["Zhang", "Wang", "Smith", "García", "Müller", "Rossi"]
    roster = [(rng.choice(given), rng.choice(families), f"0000-0001-0000-{i:03d}X" if i % 3 == 0 else None) for i in range(400)]
    papers = []
    for n in range(500):
        authors = []
        for first, family, orcid in rng.sample(roster, rng.randint(2, 8)):
            style = rng.random()
            name = f"{first[0]}. {family}" if style < 0.15 else f"{family}, {first}" if style < 0.3 else f"{first} {family}"
            authors.append(Author(name=name, orcid=orcid if rng.random() < 0.7 else None))
        papers.append(Paper(title=f"Study {n} of topic {rng.randrange(999)}", authors=authors, published=str(rng.randint(2000, 2025))))
    started = time.process_time()
    directory = PeopleDirectory(papers)
    elapsed = time.process_time() - started
    assert sum(len(p.mentions) for p in directory.people) == sum(len(p.authors) for p in papers)
    orcids = [p.ids["orcid"] for p in directory.people if "orcid" in p.ids]
    assert len(orcids) == len(set(orcids)) == len({a.orcid for p in papers for a in p.authors if a.orcid})
    # about 1 s of CPU on a busy two-core machine
    assert elapsed < patience(6.0), f"grouping took {elapsed:.2f} s of CPU"
