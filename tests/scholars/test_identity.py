"""Author identity on publication lists shaped like real ones: one person, one profile.

The cases of issue #12: a scholar's sole-author records, a scholar with several co-author
communities and a few co-author-less papers, common names with two communities, ids that split
namesakes, choosing a dominant candidate, and stable ``person:`` ids.
"""

from __future__ import annotations

from datetime import date

from retrieval.config import Settings
from retrieval.records.paper import Author, Paper
from retrieval.results import AmbiguousScholarResult, ScholarSummaryResult
from retrieval.scholars.people import PeopleDirectory, Person
from retrieval.scholars.profile import coauthor_facts
from retrieval.scholars.resolve import resolve, resolve_person
from retrieval.scholars.summary import summarize_scholar
from tests.scholars.conftest import PaperList
from tests.scholars.test_people import vectors_from

TODAY = date(2026, 6, 1)

IO_TITLES = [
    "Characterizing I/O behaviour of scientific workflows on HPC systems",
    "Towards lossy compression for checkpointing of deep learning training",
    "A study of silent data corruption in HPC applications",
    "Fault injection for resilient exascale applications",
    "Understanding I/O performance of large language model training",
    "Provenance tracking for HPC data management",
    "Scalable metadata management for parallel file systems",
    "Predicting I/O contention on shared burst buffers",
    "Resilience of iterative solvers to soft errors",
    "Data reduction for in situ visualization",
    "Profiling checkpoint and restart overheads at scale",
    "Asynchronous I/O for deep learning data loaders",
    "Error-bounded compression of scientific floating point data",
    "Workflow scheduling on heterogeneous HPC resources",
    "Log analysis for failure prediction in supercomputers",
    "Storage tiering for AI training datasets",
    "Reproducibility of HPC I/O experiments",
    "Performance variability of parallel I/O on leadership systems",
]


def _paper(title: str, year: int, *names: str, orcids: dict[str, str] | None = None) -> Paper:
    orcids = orcids or {}
    return Paper(title=title, published=str(year), authors=[Author(name=n, orcid=orcids.get(n)) for n in names])


def _others() -> list[Paper]:
    """Unrelated papers of other people of the same family and given name initial."""
    return [
        _paper("Graph neural networks for traffic forecasting", 2023, "Lei Guo", "Ann Lee"),
        _paper("Self-supervised depth estimation", 2024, "Lin Guo", "Bob Ray"),
        _paper("Catalysis on single-atom platinum", 2022, "Li Guo", "Carla Diaz"),
    ]


def test_eighteen_sole_author_records_of_one_name_are_one_person(settings: Settings):
    own = [_paper(title, 2016 + i % 9, "Luanzheng Guo") for i, title in enumerate(IO_TITLES)]
    directory = PeopleDirectory([*own, *_others()])
    people = directory.compatible_with("Luanzheng Guo")
    assert len(people) == 1 and len(people[0].paper_ids) == 18
    summary = summarize_scholar(PaperList([*own, *_others()]), settings, "Luanzheng Guo", directory=directory, since=1900, today=TODAY)
    assert isinstance(summary, ScholarSummaryResult)
    assert summary.paper_count == 18 and summary.others_with_this_name == 0
    assert summary.person_id == people[0].key and summary.person_id.startswith("person:")


def _communities() -> tuple[list[Paper], dict[str, list[float]]]:
    """One scholar: two co-author communities that never meet, plus three co-author-less papers."""
    first = [_paper(IO_TITLES[i], 2019 + i, "Zhao Zhang", "Ann Lee", "Bo Chen") for i in range(5)]
    second = [_paper(IO_TITLES[5 + i], 2021 + i, "Zhao Zhang", "Dan Wu", "Eve Park") for i in range(5)]
    alone = [_paper(IO_TITLES[10 + i], 2024, "Zhao Zhang") for i in range(3)]
    # related topics (cosine about 0.45 between the communities), as one person's work is
    topics = {p.id: [1.0, 0.0, 0.2] for p in first} | {p.id: [0.45, 0.85, 0.2] for p in second}
    topics |= {p.id: [0.7, 0.5, 0.3] for p in alone}
    return [*first, *second, *alone], topics


def test_a_scholar_with_two_communities_and_coauthorless_papers_is_one_person():
    papers, topics = _communities()
    directory = PeopleDirectory([*papers, *_others()], vectors=vectors_from(topics))
    [zhao] = directory.compatible_with("Zhao Zhang")
    assert len(zhao.paper_ids) == 13


def test_distant_communities_of_one_rare_name_are_two_people():
    papers, _topics = _communities()
    far = {p.id: ([1.0, 0.0, 0.0] if "Ann Lee" in p.author_names else [0.0, 1.0, 0.0]) for p in papers[:10]}
    directory = PeopleDirectory(papers[:10], vectors=vectors_from(far))
    assert sorted(len(p.paper_ids) for p in directory.compatible_with("Zhao Zhang")) == [5, 5]


def test_a_common_name_with_two_communities_stays_two_people_unless_topics_are_close():
    zhangs = [_paper(f"Paper {i} on vision", 2020 + i, "Wei Zhang", "Ann Lee") for i in range(3)]
    zhangs += [_paper(f"Paper {i} on databases", 2020 + i, "Wei Zhang", "Dan Wu") for i in range(3)]
    # a populous family block makes "Wei" a common given name there
    zhangs += [_paper(f"Other {g}", 2022, f"{g} Zhang") for g in ("Yu", "Tong", "Lei", "Hao", "Jun")]
    medium = {p.id: ([1.0, 0.0] if "Ann Lee" in p.author_names else [0.3, 0.95]) for p in zhangs[:6]}
    apart = PeopleDirectory(zhangs, vectors=vectors_from(medium)).compatible_with("Wei Zhang")
    assert sorted(len(p.paper_ids) for p in apart) == [3, 3]
    close = {p.id: ([1.0, 0.0] if "Ann Lee" in p.author_names else [0.9, 0.3]) for p in zhangs[:6]}
    together = PeopleDirectory(zhangs, vectors=vectors_from(close)).compatible_with("Wei Zhang")
    assert [len(p.paper_ids) for p in together] == [6]
    # the same communities under a rare name and medium topics: one person
    rare = [p.model_copy(update={"authors": [Author(name="Weixiong Zhang"), *p.authors[1:]]}) for p in zhangs[:6]]
    rare_medium = {p.id: medium[q.id] for p, q in zip(rare, zhangs[:6], strict=True)}
    assert len(PeopleDirectory(rare + zhangs[6:], vectors=vectors_from(rare_medium)).compatible_with("Weixiong Zhang")) == 1


def test_different_orcids_split_the_same_name_and_an_idless_mention_joins_neither():
    a = _paper("Soil microbes", 2020, "Maria Rossi", orcids={"Maria Rossi": "0000-0001-0000-0001"})
    b = _paper("Quantum dots", 2021, "Maria Rossi", orcids={"Maria Rossi": "0000-0001-0000-0002"})
    c = _paper("A note", 2022, "Maria Rossi")
    people = PeopleDirectory([a, b, c]).compatible_with("Maria Rossi")
    assert sorted(len(p.paper_ids) for p in people) == [1, 1, 1]


def test_a_dominant_candidate_is_chosen_and_the_others_counted(settings: Settings):
    main = [_paper(IO_TITLES[i], 2020, "Jia Song", "Ann Lee") for i in range(6)]
    other = _paper("Deep sea sediments", 2021, "Jia Song", "Ola Berg")
    topics = {p.id: [1.0, 0.0] for p in main} | {other.id: [0.0, 1.0]}
    directory = PeopleDirectory([*main, other], vectors=vectors_from(topics))
    found = resolve(directory, "Jia Song")
    assert isinstance(found.person, Person) and len(found.person.paper_ids) == 6
    assert [len(p.paper_ids) for p in found.others] == [1]
    summary = summarize_scholar(PaperList([*main, other]), settings, "Jia Song", directory=directory, today=TODAY)
    assert isinstance(summary, ScholarSummaryResult)
    assert summary.others_with_this_name == 1 and summary.namesakes[0].sample_title == "Deep sea sediments"
    # the baseline policy asks back instead
    assert resolve(directory, "Jia Song", choose=False).person is None


def test_comparable_candidates_are_asked_back_with_ids_to_pick(settings: Settings):
    one = [_paper(IO_TITLES[i], 2020, "Jia Song", "Ann Lee") for i in range(2)]
    two = [_paper(f"Marine geology {i}", 2021, "Jia Song", "Ola Berg") for i in range(2)]
    topics = {p.id: [1.0, 0.0] for p in one} | {p.id: [0.0, 1.0] for p in two}
    directory = PeopleDirectory([*one, *two], vectors=vectors_from(topics))
    result = summarize_scholar(PaperList([*one, *two]), settings, "Jia Song", directory=directory, today=TODAY)
    assert isinstance(result, AmbiguousScholarResult)
    ids = [c.person_id for c in result.candidates]
    assert len(set(ids)) == 2 and all(i and i.startswith("person:") for i in ids)
    picked = set()
    for person_id in ids:
        assert person_id is not None
        person = resolve_person(directory, person_id)
        assert isinstance(person, Person)
        picked.add(person.key)
    assert picked == set(ids)


def test_person_ids_survive_the_index_growing():
    own = [_paper(title, 2020, "Luanzheng Guo") for title in IO_TITLES[:5]]
    before = PeopleDirectory(own)
    [person] = before.compatible_with("Luanzheng Guo")
    grown = PeopleDirectory([_paper("Aaa: an early paper", 2015, "Luanzheng Guo"), *own, *_others()])
    found = grown.find_person_id(person.key)
    assert found is not None and len(found.paper_ids) == 6
    assert grown.find_person_id("person:000000000000") is None


def test_nobody_is_their_own_coauthor():
    own = [_paper(IO_TITLES[i], 2020 + i, "Luanzheng Guo", "Ann Lee") for i in range(4)]
    own += [_paper(IO_TITLES[4 + i], 2020, "Luanzheng Guo") for i in range(3)]
    directory = PeopleDirectory(own)
    [guo] = directory.compatible_with("Luanzheng Guo")
    count, top, links = coauthor_facts(directory, guo)
    assert count == 1 and [(c.name, c.shared) for c in top] == [("Ann Lee", 4)]
    assert all(link.a != link.b for link in links)


def test_a_name_in_east_asian_script_meets_its_latin_form():
    papers = [
        _paper("Food image retrieval", 2020, "Fangda Han", "Ann Lee"),
        _paper("X 射线源焦点尺寸测量方法", 2016, "韩放达", "肖永顺"),
        _paper("CT reconstruction", 2017, "Fangda Han", "Yongshun Xiao"),
    ]
    topics = {papers[0].id: [1.0, 0.0], papers[1].id: [0.3, 0.95], papers[2].id: [0.3, 0.95]}
    people = PeopleDirectory(papers, vectors=vectors_from(topics)).compatible_with("Fangda Han")
    assert [len(p.paper_ids) for p in people] == [3]  # the shared co-author (肖永顺 = Yongshun Xiao) says so
    assert set(people[0].names) == {"Fangda Han", "韩放达"}


def test_homophone_names_in_characters_are_different_people():
    papers = [_paper("Paper one", 2020, "张伟"), _paper("Paper two", 2021, "章伟"), _paper("Paper three", 2022, "张伟")]
    directory = PeopleDirectory(papers)
    assert sorted(len(p.paper_ids) for p in directory.people) == [1, 2]
