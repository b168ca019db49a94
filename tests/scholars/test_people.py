"""Grouping author mentions into people: variants join, namesakes stay apart."""

from __future__ import annotations

from retrieval.records.paper import Author, Paper
from retrieval.scholars.people import PeopleDirectory
from tests.scholars.conftest import load_papers


def _titles(directory: PeopleDirectory, person) -> set[str]:
    return {p.title for p in directory.papers_of(person)}


def test_initials_and_full_name_of_an_unambiguous_family_are_one_person(directory):
    people = directory.compatible_with("Adrian Del Maestro")
    assert len(people) == 1
    person = people[0]
    assert set(person.names) == {"Adrian Del Maestro", "A. Del Maestro"}
    assert len(person.paper_ids) == 11
    assert person.name == "Adrian Del Maestro"  # the most informative written form


def test_the_same_full_name_without_evidence_against_is_one_person(directory):
    # two CVPR papers by "Zhao Zhang", no co-author in common and (here) no topic evidence:
    # nothing says two people, so one person
    [zhao] = directory.compatible_with("Zhao Zhang")
    assert len(zhao.paper_ids) == 2


def test_the_same_full_name_with_distant_topics_and_communities_is_two_people(papers):
    zhaos = [p for p in papers if "Zhao Zhang" in p.author_names]
    assert len(zhaos) == 2 and all(len(p.authors) > 1 for p in zhaos)
    far = {zhaos[0].id: [1.0, 0.0], zhaos[1].id: [0.0, 1.0]}  # orthogonal topics
    directory = PeopleDirectory(papers, vectors=vectors_from(far))
    people = directory.compatible_with("Zhao Zhang")
    assert sorted(len(p.paper_ids) for p in people) == [1, 1]
    close = {zhaos[0].id: [1.0, 0.1], zhaos[1].id: [0.9, 0.2]}
    assert len(PeopleDirectory(papers, vectors=vectors_from(close)).compatible_with("Zhao Zhang")) == 1


def vectors_from(table):
    """A stand-in for the index's stored-vector lookup (``PaperIndex.vectors``)."""
    import numpy as np

    return lambda ids: {i: np.asarray(table[i], dtype=float) for i in ids if i in table}


def test_a_shared_coauthor_joins_two_papers_of_the_same_name(directory):
    lei = [p for p in directory.compatible_with("Lei Zhang") if fold_names(p) == {"lei zhang"}]
    joined = [p for p in lei if len(p.paper_ids) == 2]
    assert len(joined) == 1
    titles = _titles(directory, joined[0])
    # both papers list Shuai Li as a co-author
    assert any(t.startswith("SeeSR") for t in titles) and any(t.startswith("UniVS") for t in titles)
    assert len(lei) == 11  # the other Lei Zhang papers share no co-author: kept apart


def fold_names(person) -> set[str]:
    return {n.lower() for n in person.names}


def test_different_openalex_ids_are_different_people_even_with_shared_coauthors():
    [work] = load_papers("openalex_works.jsonl")
    # the same real record twice, the second copy re-attributed to another OpenAlex author id
    other = work.model_copy(
        update={
            "doi": "10.7717/peerj.4375.copy",
            "authors": [
                a.model_copy(update={"openalex_id": "A0000000001", "orcid": None}) if a.name == "Jason Priem" else a
                for a in work.authors
            ],
        }
    )
    directory = PeopleDirectory([work, other])
    priems = directory.compatible_with("Jason Priem")
    assert len(priems) == 2
    assert {p.ids["openalex"] for p in priems} == {"A5023888391", "A0000000001"}
    # the co-authors (same ids on both copies) are one person each
    assert len(directory.compatible_with("Heather Piwowar")) == 1


def test_two_authors_of_one_paper_are_never_the_same_person():
    paper = Paper(title="A paper with two Wei Zhangs", authors=[Author(name="Wei Zhang"), Author(name="Wei Zhang")])
    directory = PeopleDirectory([paper])
    assert len(directory.compatible_with("Wei Zhang")) == 2


def test_an_initial_linked_to_two_incompatible_people_joins_neither():
    # "Z. Zhang" shares a co-author with "Zhao Zhang" and another with "Zhen Zhang": ambiguous evidence
    a = Paper(title="Paper one", published="2024", authors=[Author(name="Zhao Zhang"), Author(name="Ann Lee")])
    b = Paper(title="Paper two", published="2024", authors=[Author(name="Zhen Zhang"), Author(name="Bob Ray")])
    c = Paper(title="Paper three", published="2024",
              authors=[Author(name="Z. Zhang"), Author(name="Ann Lee"), Author(name="Bob Ray")])
    directory = PeopleDirectory([a, b, c])
    assert sorted(len(p.paper_ids) for p in directory.compatible_with("Z. Zhang")) == [1, 1, 1]


def test_an_initial_linked_to_one_person_joins_them():
    a = Paper(title="Paper one", published="2023", authors=[Author(name="Zhao Zhang"), Author(name="Ann Lee")])
    b = Paper(title="Paper two", published="2024", authors=[Author(name="Zhen Zhang"), Author(name="Bob Ray")])
    c = Paper(title="Paper three", published="2024", authors=[Author(name="Z. Zhang"), Author(name="Ann Lee")])
    directory = PeopleDirectory([a, b, c])
    [zhao] = [p for p in directory.people if "Zhao Zhang" in p.names]
    assert set(zhao.names) == {"Zhao Zhang", "Z. Zhang"}
    assert [m.published for m in zhao.mentions] == ["2024", "2023"]  # newest first


def test_coauthor_counts_and_positions(directory):
    [person] = directory.compatible_with("Adrian Del Maestro")
    shared = directory.coauthors_of(person)
    top = max(shared.items(), key=lambda item: item[1])
    assert directory.get(top[0]).name == "Subir Sachdev" and top[1] == 3
    solo = [m for m in person.mentions if m.n_authors == 1]
    assert solo and all(m.is_first and not m.is_last for m in solo)
