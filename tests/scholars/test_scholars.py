"""Resolving names and building scholar summaries from real records (no embedding model)."""

from __future__ import annotations

import re
from datetime import date
from typing import Any

import openai
import pytest
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatResult
from pydantic import Field

from retrieval.errors import UnknownScholarError
from retrieval.records.paper import Author, Paper
from retrieval.results import AmbiguousScholarResult, ScholarSummaryResult
from retrieval.scholars.people import PeopleDirectory, Person, claims_of
from retrieval.scholars.resolve import resolve_person
from retrieval.scholars.summary import recent_work, summarize_scholar
from retrieval.storage.roster import Roster
from tests.scholars.conftest import PaperList, load_papers
from tests.scholars.test_people import vectors_from

ORCID_PRIEM = "0000-0001-6187-6610"


@pytest.fixture(scope="module")
def index(papers):
    return PaperList(papers)


def summarize(index, settings, directory, name: str, **kwargs: Any):
    return summarize_scholar(index, settings, name, directory=directory, **kwargs)


# --- resolution ------------------------------------------------------------------------------


def test_initials_resolve_to_the_same_person_as_the_full_name(directory):
    full = resolve_person(directory, "Adrian Del Maestro")
    short = resolve_person(directory, "a. del maestro")
    assert isinstance(full, Person) and isinstance(short, Person)
    assert full.key == short.key
    particle = resolve_person(directory, "Del Maestro")  # family name with a particle
    assert isinstance(particle, Person) and particle.key == full.key


def test_ambiguous_name_lists_candidates_with_what_tells_them_apart(index, settings, papers):
    zhaos = [p for p in papers if "Zhao Zhang" in p.author_names]
    far = {zhaos[0].id: [1.0, 0.0], zhaos[1].id: [0.0, 1.0]}  # distant topics: two people, one paper each
    directory = PeopleDirectory(papers, vectors=vectors_from(far))
    result = summarize(index, settings, directory, "Zhao Zhang")
    assert isinstance(result, AmbiguousScholarResult)
    assert result.ambiguous is True and result.query == "Zhao Zhang"
    assert [c.name for c in result.candidates] == ["Zhao Zhang", "Zhao Zhang"]
    titles = {c.sample_title for c in result.candidates}
    assert titles == {
        "Link-Context Learning for Multimodal LLMs",
        "MV-Adapter: Exploring Parameter Efficient Learning for Video Text Retrieval",
    }
    assert all(c.papers == 1 and c.coauthors and c.latest_year == 2024 for c in result.candidates)
    dumped = result.model_dump(mode="json")
    assert dumped["ambiguous"] is True and len(dumped["candidates"]) == 2
    # every candidate carries an id that picks exactly them
    for listed in result.candidates:
        assert listed.person_id is not None
        picked = summarize(index, settings, directory, listed.person_id)
        assert isinstance(picked, ScholarSummaryResult) and picked.person_id == listed.person_id
        assert [c.title for c in picked.papers] == [listed.sample_title]


def test_initials_matching_many_people_are_capped_and_counted(index, settings, directory):
    result = summarize(index, settings, directory, "Z. Zhang")
    assert isinstance(result, AmbiguousScholarResult)
    assert len(result.candidates) == 10 and result.more > 20
    papers = [c.papers for c in result.candidates]
    assert papers == sorted(papers, reverse=True)  # most prolific first
    assert all(c.name.startswith("Z") and c.name.endswith("Zhang") for c in result.candidates)


def test_exact_written_name_wins_over_merely_compatible_ones():
    papers = [
        Paper(title="Paper one", published="2024", authors=[Author(name="Zhao Zhang"), Author(name="Ann Lee")]),
        Paper(title="Paper two", published="2024", authors=[Author(name="Z. Zhang"), Author(name="Bob Ray")]),
        Paper(title="Paper three", published="2024", authors=[Author(name="Tong Zhang")]),
    ]
    directory = PeopleDirectory(papers)
    found = resolve_person(directory, "Zhao Zhang")
    assert isinstance(found, Person) and set(found.names) == {"Zhao Zhang"}
    only_initial = resolve_person(directory, "Z. Zhang")
    assert isinstance(only_initial, Person) and set(only_initial.names) == {"Z. Zhang"}
    everyone = resolve_person(directory, "Zhang")  # family name only: everyone, ambiguous
    assert isinstance(everyone, list) and len(everyone) == 3


def test_a_prolific_name_without_conflicting_evidence_is_one_person(directory):
    # eight CVPR 2024 papers by "Zhaoxiang Zhang", few co-authors shared: one person
    found = resolve_person(directory, "Zhaoxiang Zhang")
    assert isinstance(found, Person) and len(found.paper_ids) == 8


def test_unknown_name_suggests_close_indexed_names(directory):
    with pytest.raises(UnknownScholarError) as caught:
        resolve_person(directory, "Adrian Del Mastro")
    assert "Adrian Del Maestro" in caught.value.suggestions
    assert "Did you mean" in str(caught.value)


def test_unknown_name_without_close_match_says_how_to_index_it(directory):
    with pytest.raises(UnknownScholarError) as caught:
        resolve_person(directory, "Qwxz Vbnm")
    assert caught.value.suggestions == []
    assert "paperbot ingest" in str(caught.value)


def test_ids_resolve_directly(directory):
    by_orcid = resolve_person(directory, f"https://orcid.org/{ORCID_PRIEM}")
    by_openalex = resolve_person(directory, "A5023888391")
    assert isinstance(by_orcid, Person) and by_orcid.name == "Jason Priem"
    assert isinstance(by_openalex, Person) and by_openalex.key == by_orcid.key
    with pytest.raises(UnknownScholarError):
        resolve_person(directory, "A9999999999")


def test_roster_alias_and_id_resolve(directory, settings):
    roster = Roster.load(settings)
    roster.add("Jason Priem", openalex_id="A5023888391", aliases=["Jay Priem"])
    found = resolve_person(directory, "Jay Priem", roster)
    assert isinstance(found, Person) and found.ids["openalex"] == "A5023888391"


def test_roster_entry_claims_its_names_and_aliases_but_not_a_distant_namesake(papers, settings):
    zhaos = [p for p in papers if "Zhao Zhang" in p.author_names]
    # the alias written family-first, on a paper sharing a co-author with neither
    aliased = Paper(title="Multimodal in-context learning", published="2025",
                    authors=[Author(name="Zhang Zhao"), Author(name="Ann Lee")])
    far = {zhaos[0].id: [1.0, 0.0], zhaos[1].id: [0.0, 1.0], aliased.id: [0.9, 0.1]}
    roster = Roster.load(settings)
    roster.add("Zhao Zhang", aliases=["Zhang Zhao"])
    directory = PeopleDirectory([*papers, aliased], vectors=vectors_from(far), claims=claims_of(roster.list()))
    found = resolve_person(directory, "Zhao Zhang", roster)
    assert isinstance(found, Person) and found.claimed_by == "Zhao Zhang"
    assert set(found.paper_ids) == {zhaos[0].id, aliased.id}  # the distant namesake is not theirs
    alias = resolve_person(directory, "Zhang Zhao", roster)
    assert isinstance(alias, Person) and alias.key == found.key
    # the roster's scholar dominates the namesake: answered for, the namesake counted
    summary = summarize_scholar(PaperList([*papers, aliased]), settings, "Zhao Zhang", roster=roster, directory=directory)
    assert isinstance(summary, ScholarSummaryResult)
    assert summary.person_id == found.key and summary.paper_count == 2
    assert summary.others_with_this_name == 1 and summary.namesakes[0].sample_title == zhaos[1].title


# --- profile ---------------------------------------------------------------------------------


def test_profile_facts(index, settings, directory):
    result = summarize(index, settings, directory, "Adrian Del Maestro", today=date(2015, 1, 1))
    assert isinstance(result, ScholarSummaryResult)
    assert result.scholar.name == "Adrian Del Maestro"
    assert result.paper_count == 11
    assert result.counts_by_year == {2004: 1, 2006: 2, 2008: 1, 2010: 1, 2011: 2, 2012: 1, 2013: 2, 2014: 1}
    assert result.coauthors[0].name == "Subir Sachdev" and result.coauthors[0].shared == 3
    assert result.coauthor_count == 12
    assert "cond-mat.stat-mech" in result.topics
    assert any("Monte Carlo" in t for t in result.topics)
    assert sum(sum(t.counts_by_year.values()) for t in result.timeline) == 11


def test_affiliations_current_from_latest_paper_and_previous_within_ten_years(settings):
    [work] = load_papers("openalex_works.jsonl")

    def moved(year: str, affiliation: str, doi: str):
        authors = [a.model_copy(update={"affiliations": [affiliation]}) if a.name == "Jason Priem" else a
                   for a in work.authors]
        return work.model_copy(update={"published": year, "doi": doi, "authors": authors})

    # the real 2018 record, plus copies of it re-dated and re-affiliated to exercise the rule
    papers = [
        work,
        moved("2021", "OurResearch", "10.7717/peerj.4375.b"),
        moved("2005", "University of North Carolina at Chapel Hill", "10.7717/peerj.4375.c"),
        work.model_copy(update={
            "published": "2022", "doi": "10.7717/peerj.4375.d",
            "authors": [a.model_copy(update={"affiliations": []}) for a in work.authors],
        }),
    ]
    directory = PeopleDirectory(papers)
    result = summarize_scholar(PaperList(papers), settings, "Jason Priem", directory=directory,
                               today=date(2023, 6, 1))
    assert isinstance(result, ScholarSummaryResult)
    assert result.scholar.affiliations == {
        "current": ["OurResearch"],  # the 2022 paper has none: the latest one that has one
        "previous": ["Impact Technology Development (United States)"],  # 2005 is over ten years ago
    }
    assert result.scholar.ids == {"orcid": ORCID_PRIEM, "openalex": "A5023888391"}


# --- recent work -------------------------------------------------------------------------------


def _cited(text: str) -> set[int]:
    return {int(n) for n in re.findall(r"\[(\d+)\]", text)}


def test_recent_window_holds_enough_papers_no_note(index, settings, directory):
    result = summarize(index, settings, directory, "Adrian Del Maestro", today=date(2015, 1, 1))
    assert result.window_note is None
    assert {p.year for p in result.papers} == {2013, 2014}
    assert len(result.papers) == 3
    assert "3 papers in the 24 months since January 2013" in result.summary


def test_window_extends_to_latest_five_and_says_so(index, settings, directory):
    result = summarize(index, settings, directory, "Adrian Del Maestro", today=date(2026, 3, 1))
    assert result.window_note is not None
    assert result.window_note.startswith("No paper falls in the 24 months since March 2024")
    assert "latest 5 papers" in result.window_note
    assert len(result.papers) == 5
    assert min(p.year for p in result.papers) == 2011


def test_since_sets_the_window(index, settings, directory):
    result = summarize(index, settings, directory, "Adrian Del Maestro", since=2011, today=date(2026, 3, 1))
    assert result.window_note is None
    assert len(result.papers) == 6 and min(p.year for p in result.papers) == 2011


def test_only_one_paper_in_window_is_reported(settings):
    papers = load_papers("arxiv_del_maestro.jsonl")
    recent = recent_work(
        sorted(papers, key=lambda p: p.published or "", reverse=True), date(2016, 6, 1)
    )
    assert recent.note is not None and recent.note.startswith("Only 1 paper falls")
    assert len(recent.papers) == 5


def test_themes_cite_every_listed_paper_and_only_those(index, settings, directory):
    result = summarize(index, settings, directory, "Adrian Del Maestro", today=date(2026, 3, 1))
    assert result.mode == "extractive"
    numbers = [c.n for c in result.papers]
    assert numbers == list(range(1, len(numbers) + 1))
    assert _cited(result.summary) == set(numbers)
    assert {n for t in result.themes for n in t.citations} == set(numbers)
    # no paper in two themes, every theme labelled
    flat = [n for t in result.themes for n in t.citations]
    assert len(flat) == len(set(flat))
    assert all(t.label for t in result.themes)
    # the Luttinger-liquid / helium papers form one theme
    helium = {c.n for c in result.papers if "Luttinger" in c.title or "helium" in c.title.lower()}
    assert any(helium <= set(t.citations) for t in result.themes)


def test_json_contract_keys(index, settings, directory):
    payload = summarize(index, settings, directory, "Jason Priem", today=date(2019, 1, 1)).model_dump(mode="json")
    for key in ("scholar", "summary", "mode", "themes", "papers", "coauthors", "topics"):
        assert key in payload
    assert set(payload["scholar"]) >= {"name", "ids", "affiliations"}
    assert set(payload["scholar"]["affiliations"]) == {"current", "previous"}
    assert set(payload["themes"][0]) == {"label", "citations"}
    assert set(payload["coauthors"][0]) == {"name", "shared", "person_id"}  # person_id added by #12
    assert payload["person_id"].startswith("person:") and payload["others_with_this_name"] == 0
    assert {"n", "id", "title", "authors", "year", "venue", "doi", "url", "score"} <= set(payload["papers"][0])
    assert "notice" not in payload


# --- LLM-written themes --------------------------------------------------------------------------


class ScriptedModel(GenericFakeChatModel):
    """Scripted replies; keeps every prompt it was sent."""

    seen: list[list[BaseMessage]] = Field(default_factory=list)

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: CallbackManagerForLLMRun | None = None, **kwargs: Any) -> ChatResult:
        self.seen.append(list(messages))
        return super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)


class DownModel(BaseChatModel):
    @property
    def _llm_type(self) -> str:
        return "down"

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: CallbackManagerForLLMRun | None = None, **kwargs: Any) -> ChatResult:
        raise openai.APIConnectionError(request=__import__("httpx").Request("POST", "http://127.0.0.1:9/v1"))


class CutStreamModel(BaseChatModel):
    """Streams like an OpenAI-compatible server whose connection closes mid-reply: pieces with
    the provider's metadata, then no finish_reason."""

    @property
    def _llm_type(self) -> str:
        return "cut-stream"

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: CallbackManagerForLLMRun | None = None, **kwargs: Any) -> ChatResult:
        raise AssertionError("the summary call must stream")

    def _stream(self, messages: list[BaseMessage], stop: list[str] | None = None,
                run_manager: CallbackManagerForLLMRun | None = None, **kwargs: Any):
        from langchain_core.messages import AIMessageChunk
        from langchain_core.outputs import ChatGenerationChunk

        for piece in ("THEME 1: These papers simulate ", "helium-4 in nanopores [1]. THEME 2: The"):
            yield ChatGenerationChunk(message=AIMessageChunk(content=piece, response_metadata={"model_provider": "openai"}))


def test_the_summary_call_streams_and_a_cut_reply_falls_back(index, settings, directory):
    result = summarize(index, settings, directory, "Adrian Del Maestro", today=date(2026, 3, 1),
                       chat_model=CutStreamModel())
    assert result.mode == "extractive"
    assert result.notice == ("The model's reply was unusable (the stream ended before the reply was complete): "
                             "extractive theme summaries instead.")
    assert _cited(result.summary) == {c.n for c in result.papers}


def test_llm_themes_are_validated_and_renumbered(index, settings, directory):
    reply = (
        "THEME 1: These papers simulate helium-4 in nanopores with quantum Monte Carlo [4][2]. "
        "They are the best papers ever written. "
        "One also measures entanglement of bosonic Luttinger liquids [1][9].\n"
        "THEME 2: This one is about nothing in particular."
    )
    model = ScriptedModel(messages=iter([AIMessage(content=reply)]))
    roomy = settings.model_copy(update={"llm_prompt_budget": 100_000})  # every record shown, numbered as listed
    result = summarize(index, roomy, directory, "Adrian Del Maestro", today=date(2026, 3, 1), chat_model=model)
    assert result.mode == "llm" and result.notice is None
    # [9] does not exist and the uncited sentence is dropped; citations renumbered in order
    assert "best papers ever" not in result.summary and "[9]" not in result.summary
    first = result.themes[0]
    assert first.citations[:3] == [1, 2, 3]
    assert result.papers[0].title == "A Luttinger Liquid Core Inside Helium-4 Filled Nanopores"  # was [4]
    # theme 2 had no valid sentence: it keeps its extractive text, numbered after the model's
    second = result.themes[1]
    assert second.citations and min(second.citations) > max(first.citations)
    assert _cited(result.summary) == {c.n for c in result.papers}
    # the prompt carried the records and the theme listing, the user turn's first line the
    # boundary; the system prompt is the same bytes for every scholar (servers cache it)
    system, human = model.seen[0]
    assert isinstance(human.content, str)
    marker = re.match(r"Data marker of this message: (@@PB-[0-9A-F]+@@)", human.content)
    assert marker is not None
    boundary = marker.group(1)
    assert f"{boundary} RECORD [1]" in human.content and "THEME 1:" in human.content
    assert boundary not in system.content and "{" not in system.content


def test_llm_failure_falls_back_to_extractive_with_notice(index, settings, directory):
    result = summarize(index, settings, directory, "Adrian Del Maestro", today=date(2026, 3, 1),
                       chat_model=DownModel())
    assert result.mode == "extractive"
    assert result.notice is not None and result.notice.startswith("LLM unreachable")
    assert _cited(result.summary) == {c.n for c in result.papers}


def test_llm_reply_without_valid_citation_falls_back(index, settings, directory):
    model = ScriptedModel(messages=iter([AIMessage(content="THEME 1: Great work on physics.\nTHEME 2: More [77].")]))
    result = summarize(index, settings, directory, "Adrian Del Maestro", today=date(2026, 3, 1), chat_model=model)
    assert result.mode == "extractive" and "none of its claims cited a record validly" in (result.notice or "")


def _dated(title: str, published: str | None) -> Paper:
    return Paper(title=title, authors=[Author(name="Boxiang Wang")], published=published)


def test_a_window_reaching_back_past_every_dated_paper_lists_the_undated_ones_too() -> None:
    papers = [_dated(f"Paper {year}", str(year)) for year in range(2024, 2012, -1)] + [_dated("Undated", None)]
    everything = recent_work(papers, date(2026, 12, 3), since=1900)
    assert len(everything.papers) == len(papers)
    assert everything.papers[-1].title == "Undated" and everything.note is None

    later = recent_work(papers, date(2026, 12, 3), since=2016)
    assert [p.title for p in later.papers] == [f"Paper {year}" for year in range(2024, 2015, -1)]
    assert later.note == "1 paper has no date on record and cannot be placed since 2016; it is not shown."


def test_the_theme_prompt_keeps_to_the_prompt_budget(index, settings, directory):
    """Abstracts shrink (matched to the theme's label), then each theme's later papers go; the
    records are numbered as shown, and the theme listing names only those."""
    from retrieval.answers.prompt_tokens import approximate_tokens

    def prompt_of(budget: int) -> str:
        model = ScriptedModel(messages=iter([AIMessage(content="THEME 1: Helium-4 in nanopores is simulated [1].")]))
        summarize(index, settings.model_copy(update={"llm_prompt_budget": budget}), directory, "Adrian Del Maestro",
                  today=date(2026, 3, 1), chat_model=model)
        return "\n".join(str(message.content) for message in model.seen[0])

    roomy, tight = prompt_of(100_000), prompt_of(1_000)
    assert approximate_tokens(tight) <= 1_000 < approximate_tokens(roomy)
    shown = (tight.count(" RECORD [") - tight.count(" END RECORD [")) // 1
    themes = re.findall(r"^THEME \d+: .*\(records ([^)]*)\)$", tight, re.MULTILINE)
    assert themes and all(refs for refs in themes)  # every theme keeps a record
    cited = {int(n) for refs in themes for n in re.findall(r"\[(\d+)\]", refs)}
    assert cited == set(range(1, shown + 1))  # numbered as shown: no number without its record


def test_a_theme_header_copied_back_is_not_a_summary(index, settings, directory):
    """A small model copies "THEME k: <label> (records [1], ...)" from the prompt: that line
    says nothing beyond the label; the theme keeps its extractive text, never "label: label"."""
    baseline = summarize(index, settings, directory, "Adrian Del Maestro", today=date(2026, 3, 1))
    labels = [theme.label for theme in baseline.themes]
    echo = "\n".join(f"THEME {k}: {label} (records [1], [2])" for k, label in enumerate(labels, start=1))
    model = ScriptedModel(messages=iter([AIMessage(content=echo)]))
    result = summarize(index, settings, directory, "Adrian Del Maestro", today=date(2026, 3, 1), chat_model=model)
    assert result.mode == "extractive"
    assert result.notice == "The model's reply did not follow the THEME format: extractive summaries instead."
    assert labels and not any(f"{label} (records" in result.summary for label in labels)
