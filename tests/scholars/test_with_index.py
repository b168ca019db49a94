"""Summaries, collaborator finding and the CLI commands over a real index (local model)."""

from __future__ import annotations

import io
import json
from datetime import date
from pathlib import Path

import pytest

from bot.commands import collaborators as collaborators_command
from bot.commands import summarize as summarize_command
from bot.context import CliContext
from retrieval.assistant import Assistant
from retrieval.errors import InputError, UnknownScholarError
from retrieval.results import AmbiguousScholarResult, CollaboratorsResult, ScholarSummaryResult
from retrieval.scholars.collaborators import find_collaborators
from retrieval.scholars.coverage import topic_judge
from retrieval.scholars.expertise import document_model_scores, single_best_scores
from retrieval.scholars.people import PeopleDirectory
from retrieval.scholars.summary import stored_vectors, summarize_scholar

pytestmark = pytest.mark.slow

TODAY = date(2025, 1, 1)
TOPIC = "communication in model parallel training"


@pytest.fixture(scope="module")
def people(real_index) -> PeopleDirectory:
    """Grouped as the product groups them: with the vectors the index stores."""
    from retrieval.scholars.cache import directory_for

    return directory_for(real_index)


# --- collaborators -----------------------------------------------------------------------------


def test_several_strong_papers_beat_one_top_hit(real_index, people):
    hits = real_index.search(TOPIC, k=150)
    ranked = document_model_scores(hits, people, TODAY)
    baseline = single_best_scores(hits, people, TODAY)
    top = ranked[0]
    assert top.person.name == "Eric Xing" and len(top.evidence) == 3
    # a middle author on all three, and still ahead of the top hit's first author
    assert not any(e.mention.is_first or e.mention.is_last for e in top.evidence)
    one_hit = baseline[0]
    assert len(one_hit.evidence) == 1 and one_hit.best_rank == 1  # the baseline's winner: the top hit's first author
    assert ranked.index(next(e for e in ranked if e.person.key == one_hit.person.key)) > 0
    assert baseline.index(next(e for e in baseline if e.person.key == top.person.key)) > 0


def test_collaborators_result_carries_evidence_and_reasons(real_index, index_settings, people):
    result = find_collaborators(real_index, index_settings, TOPIC, limit=20, today=TODAY, directory=people)
    assert isinstance(result, CollaboratorsResult) and result.topic == TOPIC
    assert result.scholars[0].name == "Eric Xing"
    xing = result.scholars[0]
    assert len(xing.papers) == 3
    assert xing.reason.startswith("3 papers among the 20 closest (best #1)")
    assert "latest 2024" in xing.reason and "author on" not in xing.reason  # middle author on all three
    top_hit_first_author = real_index.search(TOPIC, k=1)[0].paper.author_names[0]  # every author of it ranks alike
    assert "first author on 1" in next(s.reason for s in result.scholars if s.name == top_hit_first_author)
    scores = [s.score for s in result.scholars]
    assert scores == sorted(scores, reverse=True)
    # citations are numbered once across candidates: a shared paper keeps its number
    seen: dict[str, int] = {}
    for scholar in result.scholars:
        for citation in scholar.papers:
            assert seen.setdefault(citation.id, citation.n) == citation.n
    assert sorted(set(seen.values())) == list(range(1, len(seen) + 1))
    payload = result.model_dump(mode="json")
    assert set(payload) == {"topic", "scholars", "topic_covered"} and payload["topic_covered"] is None  # not judged
    assert set(payload["scholars"][0]) == {"name", "score", "affiliation", "reason", "papers", "person_id",
                                           "work_similarity"}
    assert all(s.work_similarity is not None and 0.0 < s.work_similarity <= 1.0 for s in result.scholars)


def test_a_topic_the_index_does_not_cover_is_ranked_with_a_notice_saying_so(real_index, index_settings, people):
    """The collaborators door judges the topic as ``ask`` judges a question (retrieval.scholars.coverage):
    a topic off the index keeps its ranking, flagged; a covered one is not flagged. Probabilities
    on this index: 0.98 for TOPIC, 0.02 for cattle, against the cut of 0.1."""
    judge = topic_judge(real_index)
    covered = find_collaborators(real_index, index_settings, TOPIC, limit=5, today=TODAY, directory=people,
                                 judge_topic=judge)
    assert covered.topic_covered is True and covered.notice is None
    off = find_collaborators(real_index, index_settings, "grazing behaviour of dairy cattle", limit=5, today=TODAY,
                             directory=people, judge_topic=judge)
    assert off.topic_covered is False and off.scholars  # still ranked: the closest people, flagged
    assert off.notice is not None and off.notice.startswith("The index may not cover this topic: ")
    assert "the closest: '" in off.notice and off.model_dump(mode="json")["topic_covered"] is False
    assistant = Assistant(index_settings, index=real_index, chat_model=None)
    assert assistant.scholars.collaborators("grazing behaviour of dairy cattle", limit=3).topic_covered is False
    assert assistant.scholars.collaborators(TOPIC, limit=3).topic_covered is True


def test_for_excludes_the_person_and_new_only_their_coauthors(real_index, index_settings, people):
    plain = find_collaborators(real_index, index_settings, TOPIC, limit=20, today=TODAY, directory=people)
    without = find_collaborators(real_index, index_settings, TOPIC, limit=20, today=TODAY, directory=people,
                                 for_name="Eric Xing")
    assert "Eric Xing" in [s.name for s in plain.scholars]
    assert "Eric Xing" not in [s.name for s in without.scholars]
    [xing] = people.compatible_with("Eric Xing")
    coauthors = {people.get(key).name for key in people.coauthors_of(xing)}
    assert coauthors & {s.name for s in without.scholars}  # co-authors are still there...
    new_only = find_collaborators(real_index, index_settings, TOPIC, limit=20, today=TODAY, directory=people,
                                  for_name="Eric Xing", new_only=True)
    names = {s.name for s in new_only.scholars}
    assert names and not names & (coauthors | {"Eric Xing"})  # ...but not with --new-only


def test_for_an_ambiguous_or_unknown_name_is_an_input_error(real_index, index_settings, people):
    with pytest.raises(InputError) as caught:
        find_collaborators(real_index, index_settings, TOPIC, for_name="Jia Song", directory=people)
    assert "2 different people" in caught.value.user_message and "person:" in caught.value.user_message
    with pytest.raises(UnknownScholarError):
        find_collaborators(real_index, index_settings, TOPIC, for_name="Nobody Atall", directory=people)
    with pytest.raises(InputError):
        find_collaborators(real_index, index_settings, TOPIC, new_only=True, directory=people)
    with pytest.raises(InputError):
        find_collaborators(real_index, index_settings, TOPIC, limit=0, directory=people)


# --- summaries over the index ----------------------------------------------------------------------


def test_summary_uses_the_stored_embeddings(real_index, index_settings):
    [person] = PeopleDirectory(real_index.iter_papers()).compatible_with("Adrian Del Maestro")
    papers = PeopleDirectory(real_index.iter_papers()).papers_of(person)
    vectors = stored_vectors(real_index, papers)
    assert vectors is not None and len(vectors) == 11
    result = summarize_scholar(real_index, index_settings, "A. Del Maestro", today=date(2026, 3, 1))
    assert isinstance(result, ScholarSummaryResult)
    assert result.paper_count == 11 and len(result.papers) == 5 and result.window_note
    helium = {c.n for c in result.papers if "Luttinger" in c.title or "helium" in c.title.lower()}
    assert any(helium <= set(t.citations) for t in result.themes)


# --- the CLI commands through the facade -----------------------------------------------------------


def _ctx(index_settings, real_index) -> tuple[CliContext, io.StringIO]:
    out = io.StringIO()
    ctx = CliContext(settings=index_settings, stdout=out)
    ctx._assistant = Assistant(index_settings, index=real_index, chat_model=None)
    return ctx, out


def _args(**values):
    import argparse

    return argparse.Namespace(**values)


def test_cli_summarize_json_and_plots(real_index, index_settings, tmp_path: Path):
    ctx, out = _ctx(index_settings, real_index)
    code = summarize_command.run(_args(name="Adrian Del Maestro", since=2011, json=True, plot=tmp_path), ctx)
    assert code == 0
    payload = json.loads(out.getvalue())
    assert payload["scholar"]["name"] == "Adrian Del Maestro" and payload["mode"] == "extractive"
    pngs = sorted(tmp_path.glob("*.png"))
    assert [p.name for p in pngs] == ["adrian-del-maestro-coauthors.png", "adrian-del-maestro-timeline.png"]


def test_cli_summarize_text_and_ambiguous(real_index, index_settings):
    ctx, out = _ctx(index_settings, real_index)
    summarize_command.run(_args(name="Adrian Del Maestro", since=None, json=False, plot=None), ctx)
    text = out.getvalue()
    assert text.startswith("Adrian Del Maestro\nAffiliation: none on record")
    assert "Co-authors: 12 in the index; most shared papers: Subir Sachdev (3)" in text
    assert "\nPapers:\n[1] " in text
    ctx, out = _ctx(index_settings, real_index)
    summarize_command.run(_args(name="Jia Song", since=None, json=True, plot=None), ctx)
    candidates = json.loads(out.getvalue())["candidates"]
    assert len(candidates) == 2 and all(c["person_id"].startswith("person:") for c in candidates)
    ctx, out = _ctx(index_settings, real_index)
    summarize_command.run(_args(name="Jia Song", since=None, json=False, plot=None), ctx)
    assert "matches 2 different people" in out.getvalue()
    # one step to pick one: the candidate's id
    ctx, out = _ctx(index_settings, real_index)
    summarize_command.run(_args(name=candidates[0]["person_id"], since=None, json=True, plot=None), ctx)
    picked = json.loads(out.getvalue())
    assert picked["person_id"] == candidates[0]["person_id"] and picked["paper_count"] == 2
    with pytest.raises(InputError):
        summarize_command.run(_args(name="Jia Song", since=3000, json=False, plot=None), ctx)


def test_cli_collaborators_text(real_index, index_settings):
    ctx, out = _ctx(index_settings, real_index)
    code = collaborators_command.run(_args(topic=TOPIC, for_name="Eric Xing", new_only=True, limit=3, json=False), ctx)
    assert code == 0
    text = out.getvalue()
    assert text.startswith(f"People working on “{TOPIC}” (leaving out Eric Xing and their co-authors):")
    assert " 1. " in text and "\nPapers:\n[1] " in text and "Eric Xing" not in text.split("\n", 1)[1]


def test_assistant_summarize_is_ambiguous_or_unknown(real_index, index_settings):
    assistant = Assistant(index_settings, index=real_index, chat_model=None)
    assert isinstance(assistant.scholars.summarize("Jia Song"), AmbiguousScholarResult)
    # the two CVPR "Zhao Zhang" papers: related topics, nothing against one person
    zhao = assistant.scholars.summarize("Zhao Zhang")
    assert isinstance(zhao, ScholarSummaryResult) and zhao.paper_count == 2
    with pytest.raises(UnknownScholarError) as caught:
        assistant.scholars.summarize("Adrian del Mastro")
    assert "Adrian Del Maestro" in caught.value.suggestions


def test_directory_is_cached_until_the_index_changes(tmp_path: Path, encoder, papers):
    from retrieval.index.paper_index import PaperIndex
    from retrieval.scholars.cache import directory_for
    from tests.scholars.conftest import make_settings

    index = PaperIndex.open(make_settings(tmp_path), encoder=encoder)
    try:
        index.upsert(papers[:2])
        first = directory_for(index)
        assert directory_for(index) is first
        index.upsert(papers[2:3])
        second = directory_for(index)
        assert second is not first and len(second.papers) == 3
    finally:
        index.close()


def test_for_accepts_a_person_id_and_names_who_it_is(real_index, index_settings, people):
    [xing] = [p for p in people.compatible_with("Eric Xing") if "Eric Xing" in p.names]
    result = find_collaborators(real_index, index_settings, TOPIC, limit=10, today=TODAY, directory=people,
                                for_name=xing.key)
    assert result.for_person == "Eric Xing"
    assert all(s.person_id != xing.key for s in result.scholars) and result.scholars
    assert "for_person" not in result.model_dump(mode="json")  # the JSON contract is unchanged
