"""Block Kit builders: pure functions from result models, tested without I/O."""

from __future__ import annotations

import json

from bot.slack import blocks as kit
from bot.slack import payloads
from bot.slack.formatting import paginate
from retrieval.results import (
    AmbiguousScholarResult,
    AnswerResult,
    Citation,
    Coauthor,
    CollaboratorsResult,
    ExpertCandidate,
    ScholarCandidate,
    ScholarIdentity,
    ScholarSummaryResult,
    SearchResult,
    Theme,
)

EVIL = "<!channel> <@U024BE7LH> <http://evil.example|Nature> & co"


def citation(n: int, **overrides: object) -> Citation:
    values: dict[str, object] = {
        "n": n, "id": f"arxiv:0704.{n:04d}", "title": f"Paper {n}", "authors": ["Ada Lovelace", "Alan Turing", "Grace Hopper", "Kurt Gödel"],
        "year": 2007, "venue": "Phys. Rev. D", "doi": None, "arxiv_id": f"0704.{n:04d}", "url": None, "score": 0.5, "open_access": True,
    }
    values.update(overrides)
    return Citation(**values)


def dump(blocks: list[dict]) -> str:
    return json.dumps(blocks, ensure_ascii=False)


def texts(blocks: list[dict] | list[list[dict]]) -> list[str]:
    found: list[str] = []

    def walk(item: object) -> None:
        if isinstance(item, dict):
            for key, value in item.items():
                if key == "text" and isinstance(value, str):
                    found.append(value)
                else:
                    walk(value)
        elif isinstance(item, list):
            for value in item:
                walk(value)

    walk(blocks)
    return found


def mrkdwn_texts(blocks: list[dict]) -> list[str]:
    """Texts Slack parses for mentions and links (plain_text objects are shown literally)."""
    found: list[str] = []

    def walk(item: object) -> None:
        if isinstance(item, dict):
            if item.get("type") == "mrkdwn":
                found.append(item["text"])
            for value in item.values():
                walk(value)
        elif isinstance(item, list):
            for value in item:
                walk(value)

    walk(blocks)
    return found


def assert_inert(blocks: list[dict]) -> None:
    assert all(t["type"] == "plain_text" for b in blocks if b["type"] == "header" for t in [b["text"]])
    for text in mrkdwn_texts(blocks):
        for attack in ("<!channel>", "<@U024BE7LH>", "<http://evil.example"):
            assert attack not in text, text


def test_citation_line_links_title_shortens_authors_and_badges() -> None:
    line = kit.citation_line(citation(3, doi="10.1103/PhysRevD.76.013009"))
    assert line.startswith("*[3]* <https://doi.org/10.1103/PhysRevD.76.013009|Paper 3>")
    assert "Ada Lovelace, Alan Turing, Grace Hopper et al." in line
    assert "_Phys. Rev. D_" in line and "2007" in line and kit.OPEN_ACCESS_BADGE in line


def test_citation_falls_back_to_arxiv_then_url_then_plain_title() -> None:
    assert "<https://arxiv.org/abs/0704.0001|" in kit.citation_line(citation(1))
    assert "<https://example.org/p|" in kit.citation_line(citation(1, arxiv_id=None, url="https://example.org/p"))
    unsafe = kit.citation_line(citation(1, arxiv_id=None, url="javascript:alert(1)", open_access=None))
    assert "<" not in unsafe.split("\n")[0].replace("*[1]*", "") and kit.OPEN_ACCESS_BADGE not in unsafe


def test_short_authors() -> None:
    from retrieval.records.paper import format_authors

    assert format_authors([]) == "Unknown authors"
    assert format_authors(["A"]) == "A"
    assert format_authors(["A", "B"]) == "A and B"
    assert format_authors(["A", "B", "C", "D"]) == "A, B, C et al."


def test_answer_blocks_show_answer_notice_and_numbered_sources() -> None:
    result = AnswerResult(
        question="q", answer="Neutrinos oscillate [1] and **mix** [2].", mode="llm", abstained=False,
        citations=[citation(1), citation(2)], notice="LLM unreachable: extractive answer",
    )
    blocks = kit.answer_blocks(result, asked_by="U123ABC")
    text = dump(blocks)
    assert "<@U123ABC> asked: q" in text
    assert "*mix*" in text and ":information_source: LLM unreachable" in text
    assert text.index("*[1]*") < text.index("*[2]*")
    assert "*Sources*" in text


def test_answer_without_citations_warns_instead_of_staying_silent() -> None:
    result = AnswerResult(question="q", answer="No indexed paper addresses this.", mode="extractive",
                          abstained=True, citations=[])
    assert "No indexed paper is cited" in dump(kit.answer_blocks(result))


def test_everything_untrusted_is_escaped() -> None:
    result = AnswerResult(
        question=EVIL, answer=f"LLM says {EVIL} [1]", mode="llm", abstained=False,
        citations=[citation(1, title=EVIL, authors=[EVIL], venue=EVIL)], notice=EVIL,
    )
    assert_inert(kit.answer_blocks(result, asked_by="U1ABC"))
    summary = ScholarSummaryResult(
        scholar=ScholarIdentity(name=EVIL, affiliations={"current": [EVIL], "previous": []}),
        summary=EVIL, mode="llm", themes=[Theme(label=EVIL, citations=[1])], papers=[citation(1, title=EVIL)],
        coauthors=[Coauthor(name=EVIL, shared=2)], topics=[EVIL], window_note=EVIL,
    )
    assert_inert(kit.summary_blocks(summary))
    experts = CollaboratorsResult(topic=EVIL, scholars=[
        ExpertCandidate(name=EVIL, score=0.9, affiliation=EVIL, reason=EVIL, papers=[citation(1, title=EVIL)]),
    ])
    assert_inert(kit.collaborators_blocks(experts, for_name=EVIL))
    ambiguous = AmbiguousScholarResult(query=EVIL, candidates=[
        ScholarCandidate(name=EVIL, affiliation=EVIL, papers=1, sample_title=EVIL),
    ])
    assert_inert(kit.ambiguous_blocks(ambiguous))
    assert_inert(kit.follow_alert_blocks("topic", EVIL, [citation(1, title=EVIL)]))
    assert_inert(kit.more_papers_blocks(SearchResult(query=EVIL, results=[citation(9, title=EVIL)])))


def test_long_answer_is_paginated_not_truncated() -> None:
    long_answer = " ".join(f"Claim {i} is supported [1]." for i in range(3000))
    result = AnswerResult(question="q", answer=long_answer, mode="llm", abstained=False,
                          citations=[citation(i) for i in range(1, 9)])
    footer = [kit.answer_actions("ab12cd34", has_citations=True)]
    pages = paginate(kit.answer_blocks(result), footer=footer)
    assert len(pages) > 1
    assert all(len(page) <= 50 for page in pages)
    shown = " ".join(texts(pages))
    assert all(f"Claim {i} is" in shown for i in (0, 1500, 2999))
    assert pages[-1][-1] == footer[0]


def test_answer_actions_carry_typed_values() -> None:
    block = kit.answer_actions("ab12cd34ef", has_citations=True, more_offset=0)
    ids = [element["action_id"] for element in block["elements"]]
    assert ids == [payloads.ACTION_VOTE_UP, payloads.ACTION_VOTE_DOWN, payloads.ACTION_MORE_PAPERS, payloads.ACTION_BIBTEX]
    ref = payloads.AnswerRef.decode(block["elements"][2]["value"])
    assert ref.answer_id == "ab12cd34ef" and ref.offset == 0
    no_cites = kit.answer_actions("ab12cd34ef", has_citations=False, more_offset=None)
    assert [e["action_id"] for e in no_cites["elements"]] == [payloads.ACTION_VOTE_UP, payloads.ACTION_VOTE_DOWN]


def test_forged_button_values_are_input_errors() -> None:
    import pytest

    from retrieval.errors import InputError

    for raw in ("", "not json", '{"answer_id": "../../etc"}', '{"answer_id": "ab12cd34", "evil": 1}'):
        with pytest.raises(InputError):
            payloads.AnswerRef.decode(raw)


def test_summary_blocks_show_profile_facts_themes_and_papers() -> None:
    summary = ScholarSummaryResult(
        scholar=ScholarIdentity(name="Zhao Zhang", ids={"orcid": "0000-0002-1825-0097"},
                                affiliations={"current": ["MIT"], "previous": ["ETH Zurich"]}),
        summary="Works on optics [1].", mode="extractive", themes=[Theme(label="Optical interconnects", citations=[1, 2])],
        papers=[citation(1), citation(2)], coauthors=[Coauthor(name="Ann Lee", shared=3)], topics=["Photonics"],
        counts_by_year={2021: 2, 2022: 1}, paper_count=3, coauthor_count=12,
    )
    text = dump(kit.summary_blocks(summary))
    for expected in ("Zhao Zhang", "*Affiliation:* MIT", "*Previously:* ETH Zurich", "https://orcid.org/0000-0002-1825-0097",
                     "2021: 2", "Photonics", "Ann Lee (3)", "of 12", "Optical interconnects [1][2]", "*Papers*", "*[2]*"):
        assert expected in text, expected


def test_ambiguous_buttons_only_when_they_single_someone_out() -> None:
    """Candidates without a person id (older cores): an ORCID/OpenAlex id or a unique name."""
    result = AmbiguousScholarResult(query="Zhang", candidates=[
        ScholarCandidate(name="Zhao Zhang", affiliation="MIT", papers=4, sample_title="Optics", ids={"openalex": "A123"}),
        ScholarCandidate(name="Tong Zhang", affiliation=None, papers=2, sample_title=None),
        ScholarCandidate(name="Wei Zhang", affiliation=None, papers=1, sample_title=None),
        ScholarCandidate(name="Wei Zhang", affiliation=None, papers=1, sample_title=None),
    ], more=3)
    blocks = kit.ambiguous_blocks(result, since=2020)
    picks = [payloads.ScholarPick.decode(b["accessory"]["value"]) for b in blocks if "accessory" in b]
    assert [(p.name, p.since) for p in picks] == [("A123", 2020), ("Tong Zhang", 2020)]
    assert "3 more" in dump(blocks)


NAMESAKES = AmbiguousScholarResult(query="Wei Zhang", candidates=[
    ScholarCandidate(name="Wei Zhang", person_id="person:3f9a0c12b4de", affiliation="MIT", papers=4,
                     sample_title="Silicon photonic interconnects", coauthors=["Ann Lee", "Bo Chen"], latest_year=2021),
    ScholarCandidate(name="Wei Zhang", person_id="person:77aa00bb11cc", affiliation="University of Oslo", papers=3,
                     sample_title="Moose browsing in boreal forests", coauthors=["Kari Nordmann"], latest_year=2024),
    ScholarCandidate(name="Wei Zhang", person_id="person:0123456789abcdef", affiliation=None, papers=1,
                     sample_title=None, ids={"orcid": "0000-0002-1825-0097"}),
    ScholarCandidate(name="W. Zhang", person_id="person:fedcba987654", affiliation=None, papers=1, sample_title=None),
])


def _accessory_picks(blocks: list[dict]) -> list[payloads.ScholarPick]:
    picks = []
    for block in blocks:
        if "accessory" in block:
            button = block["accessory"]
            assert button["action_id"] == payloads.ACTION_PICK_SCHOLAR and len(button["value"]) <= 2000
            picks.append(payloads.ScholarPick.decode(button["value"]))
    return picks


def test_every_ambiguous_candidate_gets_a_pick_carrying_its_person_id() -> None:
    blocks = kit.ambiguous_blocks(NAMESAKES, since=2019)
    picks = _accessory_picks(blocks)
    assert [(p.person_id, p.name, p.since) for p in picks] == [
        (c.person_id, None, 2019) for c in NAMESAKES.candidates
    ]
    assert [p.reference for p in picks] == [c.person_id for c in NAMESAKES.candidates]
    assert all(b["accessory"]["text"]["text"] == "Summarize" for b in blocks if "accessory" in b)
    # the lines still tell the three "Wei Zhang" apart
    lines = [b["text"]["text"] for b in blocks if "accessory" in b]
    assert "*Wei Zhang* · MIT · 4 paper(s) · latest 2021" in lines[0]
    assert "With Ann Lee, Bo Chen" in lines[0] and "Silicon photonic interconnects" in lines[0]
    assert "University of Oslo" in lines[1] and "Kari Nordmann" in lines[1] and "latest 2024" in lines[1]


def test_a_person_id_the_payload_cannot_carry_falls_back_to_the_old_reference() -> None:
    odd = AmbiguousScholarResult(query="Wei Zhang", candidates=[
        ScholarCandidate(name="Wei Zhang", person_id="person:a+person:b", affiliation=None, papers=2,
                         sample_title=None, ids={"orcid": "0000-0002-1825-0097"}),
        ScholarCandidate(name="Wei Zhang", person_id="not-a-person-id", affiliation=None, papers=1, sample_title=None),
    ])
    picks = _accessory_picks(kit.ambiguous_blocks(odd))
    assert [(p.person_id, p.name) for p in picks] == [(None, "0000-0002-1825-0097")]


def test_pick_values_are_strict_and_old_buttons_still_work() -> None:
    import pytest

    from retrieval.errors import InputError

    assert payloads.ScholarPick.decode('{"name": "A123", "since": 2020}').reference == "A123"  # posted before ids
    assert payloads.ScholarPick.decode('{"person_id": "person:3f9a0c12b4de"}').reference == "person:3f9a0c12b4de"
    for raw in ('{"person_id": "person:../../etc"}', '{"person_id": "Zhao Zhang"}', "{}",
                '{"person_id": "person:3f9a0c12b4de", "name": "Zhao Zhang"}', '{"name": ""}'):
        with pytest.raises(InputError):
            payloads.ScholarPick.decode(raw)
    for action in (payloads.ACTION_PICK_SCHOLAR, payloads.pick_action(1), payloads.pick_action(4)):
        assert payloads.PICK_SCHOLAR_ACTIONS.match(action)
    assert not payloads.PICK_SCHOLAR_ACTIONS.match(payloads.ACTION_BIBTEX)


def _summary(**overrides: object) -> ScholarSummaryResult:
    values: dict[str, object] = {
        "scholar": ScholarIdentity(name="Wei Zhang", affiliations={"current": ["MIT"], "previous": []}),
        "summary": "Works on photonics [1].", "mode": "extractive", "themes": [], "papers": [citation(1)],
        "coauthors": [Coauthor(name="Ann Lee", shared=3)], "topics": ["Photonics"], "counts_by_year": {2020: 2, 2021: 2},
        "paper_count": 4, "coauthor_count": 2, "person_id": "person:3f9a0c12b4de",
    }
    values.update(overrides)
    return ScholarSummaryResult(**values)


def _actions(blocks: list[dict]) -> list[dict]:
    return [element for b in blocks if b["type"] == "actions" for element in b["elements"]]


def test_summary_names_the_namesakes_with_one_pick_button_each() -> None:
    oslo, orcid_only = NAMESAKES.candidates[1], NAMESAKES.candidates[2]
    result = _summary(others_with_this_name=2, namesakes=[oslo, orcid_only])
    blocks = kit.summary_blocks(result, since=2018)
    contexts = [b["elements"][0]["text"] for b in blocks if b["type"] == "context"]
    [line] = [c for c in contexts if "other people" in c]
    assert "2 other people in the index are also named *Wei Zhang*" in line
    buttons = _actions(blocks)
    assert len(buttons) == 2
    assert [b["text"]["text"] for b in buttons] == ["Wei Zhang · University of Oslo", "Wei Zhang · 1 paper"]
    assert all(len(b["text"]["text"]) <= 75 and len(b["value"]) <= 2000 for b in buttons)
    ids = [b["action_id"] for b in buttons]
    assert len(set(ids)) == len(ids) and all(payloads.PICK_SCHOLAR_ACTIONS.match(i) for i in ids)
    picks = [payloads.ScholarPick.decode(b["value"]) for b in buttons]
    assert [(p.person_id, p.since) for p in picks] == [(oslo.person_id, 2018), (orcid_only.person_id, 2018)]
    # the line and the buttons come before the summary text
    text = dump(blocks)
    assert text.index("other people") < text.index("Works on photonics")
    assert "`person:3f9a0c12b4de`" in text  # the summarized person's own id, to reuse


def test_namesake_labels_pick_a_fact_that_tells_them_apart() -> None:
    same_year = [
        ScholarCandidate(name="Zhaoxiang Zhang", person_id="person:aaaaaa111111", affiliation=None, papers=1,
                         sample_title="PatchFD", coauthors=["Fei Zhu", "Zhen Cheng"], latest_year=2024),
        ScholarCandidate(name="Zhaoxiang Zhang", person_id="person:bbbbbb222222", affiliation=None, papers=1,
                         sample_title="Polarization", coauthors=["Kei Ikemura"], latest_year=2024),
    ]
    result = _summary(scholar=ScholarIdentity(name="Zhaoxiang Zhang"), counts_by_year={2024: 6}, paper_count=6,
                      coauthors=[Coauthor(name="Yuntao Chen", shared=3)], others_with_this_name=2, namesakes=same_year)
    labels = [b["text"]["text"] for b in _actions(kit.summary_blocks(result))]
    assert labels == ["Zhaoxiang Zhang · with Fei Zhu", "Zhaoxiang Zhang · with Kei Ikemura"]
    long = ScholarCandidate(name="Wei Zhang", person_id="person:cccccc333333", papers=2, sample_title=None,
                            affiliation="Department of Electrical and Computer Engineering, University of Toronto")
    [label] = [b["text"]["text"] for b in _actions(kit.summary_blocks(_summary(others_with_this_name=1, namesakes=[long])))]
    assert len(label) <= 75 and label.startswith("Wei Zhang · Department of Electrical")


def test_summary_without_namesakes_has_no_line_and_more_than_listed_are_counted() -> None:
    plain = kit.summary_blocks(_summary())
    assert "other people" not in dump(plain) and "other person" not in dump(plain) and not _actions(plain)
    counted = kit.summary_blocks(_summary(others_with_this_name=7, namesakes=[NAMESAKES.candidates[1]]))
    assert "7 other people in the index are also named *Wei Zhang*" in dump(counted)
    assert len(_actions(counted)) == 1
    one = kit.summary_blocks(_summary(others_with_this_name=1, namesakes=[]))
    assert "1 other person in the index is also named *Wei Zhang*" in dump(one) and not _actions(one)
    mixed = kit.summary_blocks(_summary(others_with_this_name=1, namesakes=[NAMESAKES.candidates[3]]))
    assert "also matched by this name" in dump(mixed)  # "W. Zhang" is not "named Wei Zhang"


def test_namesakes_are_escaped() -> None:
    evil = ScholarCandidate(name=EVIL, person_id="person:dddddd444444", affiliation=EVIL, papers=1, sample_title=EVIL)
    result = _summary(scholar=ScholarIdentity(name=EVIL), others_with_this_name=1, namesakes=[evil])
    blocks = kit.summary_blocks(result)
    assert_inert(blocks)
    assert all(b["text"]["type"] == "plain_text" for b in _actions(blocks))


def test_collaborators_get_a_profile_button_per_person_with_an_id() -> None:
    result = CollaboratorsResult(topic="optics", scholars=[
        ExpertCandidate(name="Ann Lee", person_id="person:eeeeee555555", score=0.8, affiliation="MIT",
                        reason="3 papers on optics", papers=[citation(1)]),
        ExpertCandidate(name="Bo Li", score=0.5, affiliation=None, reason="1 paper", papers=[citation(2)]),
        ExpertCandidate(name="Cy Wu", person_id="person:ffffff666666", score=0.4, affiliation=None,
                        reason="1 paper", papers=[citation(3)]),
    ])
    blocks = kit.collaborators_blocks(result)
    with_button = [b for b in blocks if "accessory" in b]
    assert [b["text"]["text"].split("*")[1] for b in with_button] == ["1. Ann Lee", "3. Cy Wu"]
    assert all(b["accessory"]["text"]["text"] == "Profile" for b in with_button)
    picks = _accessory_picks(blocks)
    assert [p.person_id for p in picks] == ["person:eeeeee555555", "person:ffffff666666"]


def test_collaborators_show_each_person_with_evidence() -> None:
    result = CollaboratorsResult(topic="optics", scholars=[
        ExpertCandidate(name="Ann Lee", score=0.8, affiliation="MIT", reason="3 papers on optics", papers=[citation(1), citation(2)]),
        ExpertCandidate(name="Bo Li", score=0.5, affiliation=None, reason="1 paper", papers=[citation(3)]),
    ])
    text = dump(kit.collaborators_blocks(result, for_name="Zhao Zhang"))
    assert "*1. Ann Lee* · MIT" in text and "*1.1*" in text and "*1.2*" in text and "*2.1*" in text
    assert "possible collaborators for Zhao Zhang" in text
    assert "No indexed scholar" in dump(kit.collaborators_blocks(CollaboratorsResult(topic="x", scholars=[])))


def test_more_papers_numbering_and_empty_page() -> None:
    page = kit.more_papers_blocks(SearchResult(query="q", results=[citation(9), citation(10)]), skipped=1)
    text = dump(page)
    assert "*9.*" in text and "*10.*" in text and "already cited" in text
    assert "No further papers" in dump(kit.more_papers_blocks(SearchResult(query="q", results=[])))


def test_help_and_queue_texts() -> None:
    assert "/paperbot summarize" in dump(kit.help_blocks())
    assert "position 3" in kit.queued_text(3)
    assert "`ab12`" in kit.apology_text("ab12")


def test_collaborators_for_a_topic_the_index_may_not_cover_show_the_notice_above_the_people() -> None:
    notice = ("The index may not cover this topic: No indexed record mentions 'optical interconnects'; the closest: "
              "'Physical Optics'. The people below wrote the closest papers found; check them before you write to anyone.")
    result = CollaboratorsResult(topic="optical interconnects", topic_covered=False, notice=notice, scholars=[
        ExpertCandidate(name="Ann Lee", score=0.8, affiliation="MIT", reason="1 paper", papers=[citation(1)])])
    blocks = kit.collaborators_blocks(result)
    text = dump(blocks)
    assert "The index may not cover this topic" in text and "'optical interconnects'" in text
    assert text.index("may not cover") < text.index("Ann Lee")  # read before the ranking
    assert_inert(blocks)
