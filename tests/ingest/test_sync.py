"""`sync_roster` end to end: a local HTTP server replays recorded responses into a real index."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import urlencode

import pytest

from retrieval.ingest.sync import OVERLAP, SyncSources, choose_openalex_profile, sync_roster
from retrieval.results import SyncEvent
from retrieval.sources.providers.openalex import parse_author
from retrieval.storage.roster import Roster
from tests.ingest.conftest import add_roster, make_settings
from tests.ingest.recorded import (
    DEL_MAESTRO,
    FENNER,
    SHARED_DOI,
    arxiv_url,
    openalex_list,
    openalex_url,
    openalex_works,
    recorded_body,
    replay,
    roster_recordings,
)
from tests.sources.replay import ReplayServer, recording

NOW = datetime(2026, 1, 15, 9, 30, tzinfo=UTC)
SINCE = (NOW - OVERLAP).date()
FENNER_PAPERS = 7  # 6 Crossref works + 2 OpenAlex works, one of them also in Crossref
DEL_MAESTRO_PAPERS = 10  # 10 + 2 arXiv entries, 2 of them on both pages


def clock(moment: datetime):
    return lambda: moment


def by_name(report, name):
    return next(entry for entry in report.scholars if entry.name == name)


def test_first_sync_indexes_every_source_once_with_provenance(tmp_path: Path, open_index) -> None:
    events: list[SyncEvent] = []
    with ReplayServer(replay([])) as server:
        server.replay = replay(roster_recordings(server.url))
        settings = make_settings(tmp_path, server.url)
        add_roster(settings)
        index = open_index(settings)

        report = sync_roster(settings, index, progress=events.append, now=clock(NOW))

    assert report.ok, report.errors
    fenner, del_maestro = by_name(report, FENNER), by_name(report, DEL_MAESTRO)
    assert len(fenner.new) == FENNER_PAPERS and len(del_maestro.new) == DEL_MAESTRO_PAPERS
    assert fenner.fetched == {"arxiv": 0, "openalex": 2, "crossref": 6}
    assert del_maestro.fetched == {"arxiv": 12}  # OpenAlex found nobody, Crossref needs an ORCID
    assert index.count() == FENNER_PAPERS + DEL_MAESTRO_PAPERS
    assert sorted(report.new_paper_ids) == sorted(fenner.new + del_maestro.new)

    # the paper both OpenAlex and Crossref listed is one record that names both sources
    shared = index.get(f"doi:{SHARED_DOI}")
    assert shared is not None and set(shared.sources) == {"openalex", "crossref"}
    assert shared.openalex_id and shared.publisher == "Front Matter"
    for paper in index.iter_papers():
        assert paper.provenance and all(entry.fields for entry in paper.provenance)
        assert set(paper.sources) <= {"arxiv", "openalex", "crossref"}

    # what could not be searched is said, not silently skipped
    assert any("crossref: skipped, no ORCID" in note for note in del_maestro.notes)
    assert any("no author profile whose name agrees" in note for note in del_maestro.notes)

    # sync marks: only for the sources that answered completely
    roster = Roster.load(settings)
    assert set(roster.get(FENNER).last_synced) == {"arxiv", "openalex", "crossref"}
    assert set(roster.get(DEL_MAESTRO).last_synced) == {"arxiv"}
    assert index.store.get_meta("last_sync") == NOW.isoformat(timespec="seconds")

    stages = [(e.scholar, e.stage, e.source) for e in events if e.stage in ("start", "source", "done")]
    assert stages[0] == (DEL_MAESTRO, "start", None)  # roster order: by name
    assert (FENNER, "source", "crossref") in stages and stages[-1] == (FENNER, "done", None)


def test_second_sync_is_incremental_and_adds_nothing(tmp_path: Path, open_index) -> None:
    with ReplayServer(replay([])) as server:
        settings = make_settings(tmp_path, server.url)
        add_roster(settings)
        index = open_index(settings)
        server.replay = replay(roster_recordings(server.url))
        first = sync_roster(settings, index, now=clock(NOW))
        later = NOW + timedelta(days=1)
        server.replay = replay(roster_recordings(server.url, since=SINCE))
        second = sync_roster(settings, index, now=clock(later))
        asked = list(server.paths)

    assert first.ok and second.ok
    assert second.new_paper_ids == [] and second.updated_paper_ids == []
    assert index.count() == FENNER_PAPERS + DEL_MAESTRO_PAPERS
    assert any(f"from_publication_date%3A{SINCE.isoformat()}" in path or f"from_publication_date:{SINCE.isoformat()}" in path
               for path in asked)
    assert any(f"from-pub-date%3A{SINCE.isoformat()}" in path or f"from-pub-date:{SINCE.isoformat()}" in path
               for path in asked)
    # arXiv lists newest first and stops at the first paper older than the window: one request
    assert sum("search_query" in path and "Del_Maestro" in path for path in asked) == 2 + 1
    assert Roster.load(settings).get(FENNER).last_synced["crossref"] == later.isoformat(timespec="seconds")


def test_a_source_failing_mid_listing_keeps_what_came_and_the_next_run_completes(tmp_path: Path, open_index) -> None:
    with ReplayServer(replay([])) as server:
        settings = make_settings(tmp_path, server.url)
        add_roster(settings)
        index = open_index(settings)
        orcid_filter = "author.orcid:0000-0003-1419-2405"
        page2 = openalex_url(server.url, orcid_filter, "page-2")
        down_then_up = [
            recording(page2, {"error": "Service Unavailable"}, status_code=503),
            recording(page2, openalex_list(openalex_works()[1:])),
        ]
        arxiv_down = [recording(arxiv_url(server.url, DEL_MAESTRO, 10), "<html>Bad gateway</html>", status_code=502)]
        server.replay = replay(roster_recordings(server.url, openalex_pages=2, openalex_page2=down_then_up,
                                                 arxiv_page2=arxiv_down))

        failed = sync_roster(settings, index, now=clock(NOW))

        fenner, del_maestro = by_name(failed, FENNER), by_name(failed, DEL_MAESTRO)
        assert not failed.ok
        (openalex_failure,) = fenner.errors
        assert openalex_failure.source == "openalex" and openalex_failure.fetched_before_failure == 1
        assert "openalex" in openalex_failure.message and "503" in openalex_failure.message
        (arxiv_failure,) = del_maestro.errors
        assert arxiv_failure.source == "arxiv" and arxiv_failure.fetched_before_failure == 10
        # what came before the failures is indexed (page 1 of arXiv already held all ten papers;
        # page 2 only repeats two); the failed sources keep no sync mark
        assert index.count() == (FENNER_PAPERS - 1) + DEL_MAESTRO_PAPERS
        assert index.get(f"doi:{SHARED_DOI}") is not None and index.get("doi:10.1101/097196") is None
        marks = Roster.load(settings)
        assert set(marks.get(FENNER).last_synced) == {"arxiv", "crossref"}
        assert marks.get(DEL_MAESTRO).last_synced == {}

        # the failed sources are asked again from the start (no sync mark), the others incrementally
        server.replay = replay(
            roster_recordings(server.url, openalex_pages=2, openalex_page2=down_then_up[1:])
            + roster_recordings(server.url, since=SINCE)
        )
        completed = sync_roster(settings, index, now=clock(NOW + timedelta(hours=2)))

    assert completed.ok, completed.errors
    assert index.count() == FENNER_PAPERS + DEL_MAESTRO_PAPERS  # nothing duplicated
    assert completed.new_paper_ids == ["doi:10.1101/097196"]
    assert set(Roster.load(settings).get(FENNER).last_synced) == {"arxiv", "openalex", "crossref"}
    assert set(Roster.load(settings).get(DEL_MAESTRO).last_synced) == {"arxiv"}


def test_an_interrupted_sync_resumes_without_duplicates(tmp_path: Path, open_index) -> None:
    def interrupt_second_scholar(event: SyncEvent) -> None:
        if event.stage == "start" and event.position == 2:
            raise KeyboardInterrupt

    with ReplayServer(replay([])) as server:
        settings = make_settings(tmp_path, server.url)
        add_roster(settings)
        index = open_index(settings)
        server.replay = replay(roster_recordings(server.url))
        with pytest.raises(KeyboardInterrupt):
            sync_roster(settings, index, progress=interrupt_second_scholar, now=clock(NOW))
        assert index.count() == DEL_MAESTRO_PAPERS  # the first scholar's batch was committed
        assert Roster.load(settings).get(FENNER).last_synced == {}

        server.replay = replay(roster_recordings(server.url) + roster_recordings(server.url, since=SINCE))
        resumed = sync_roster(settings, index, now=clock(NOW + timedelta(minutes=5)))

    assert resumed.ok
    assert len(by_name(resumed, FENNER).new) == FENNER_PAPERS
    assert by_name(resumed, DEL_MAESTRO).new == []
    assert index.count() == FENNER_PAPERS + DEL_MAESTRO_PAPERS


def test_arxiv_results_by_other_people_are_left_out(tmp_path: Path, open_index) -> None:
    with ReplayServer(replay([])) as server:
        settings = make_settings(tmp_path, server.url)
        Roster.load(settings).add("Bernard Del Maestro")  # a namesake: arXiv's author search mixes them
        index = open_index(settings)
        server.replay = replay([
            recording(arxiv_url(server.url, "Bernard Del Maestro", 0), recorded_body("arxiv_del_maestro_page1.xml")),
            recording(arxiv_url(server.url, "Bernard Del Maestro", 10), recorded_body("arxiv_del_maestro_page2.xml")),
        ])
        sources = SyncSources.from_settings(settings, only=["arxiv"])
        try:
            report = sync_roster(settings, index, sources=sources, now=clock(NOW))
        finally:
            sources.close()

    (entry,) = report.scholars
    assert entry.new == [] and index.count() == 0
    assert any("left out 12 work(s)" in note for note in entry.notes)


def _profiles():
    priem = parse_author(recorded_body("openalex_author_priem.json"))
    namesake = priem.model_copy(update={"id": "A5000000001", "orcid": None, "works_count": 3})
    initials = priem.model_copy(update={"id": "A5000000002", "display_name": "J. Priem", "alternative_names": [], "orcid": None})
    other = parse_author(recorded_body("openalex_author_abbott.json"))
    return priem, namesake, initials, other


def test_choosing_an_openalex_profile_by_name() -> None:
    priem, namesake, initials, other = _profiles()
    assert choose_openalex_profile(["Jason Priem"], [priem, other]).author_id == priem.id
    # a spelled-out match beats an initials-only profile
    assert choose_openalex_profile(["Jason Priem"], [initials, priem]).author_id == priem.id
    # two full-name profiles: ambiguous, both named in the message
    choice = choose_openalex_profile(["Jason Priem"], [priem, namesake, other])
    assert choice.author_id is None
    assert priem.id in choice.problem("Jason Priem") and namesake.id in choice.problem("Jason Priem")
    # a known ORCID rules out the profile that carries another one
    other_orcid = namesake.model_copy(update={"orcid": "0000-0002-1825-0097"})
    assert choose_openalex_profile(["Jason Priem"], [priem, other_orcid], orcid=priem.orcid).author_id == priem.id
    assert choose_openalex_profile(["Jason Priem"], [other]).plausible == []


def test_an_ambiguous_name_skips_openalex_and_says_how_to_pin_it(tmp_path: Path, open_index) -> None:
    priem, _, _, _ = _profiles()
    raw = recorded_body("openalex_author_priem.json")
    namesake_raw = {**raw, "id": "https://openalex.org/A5000000001", "orcid": None}
    with ReplayServer(replay([])) as server:
        settings = make_settings(tmp_path, server.url)
        Roster.load(settings).add("Jason Priem")
        index = open_index(settings)
        server.replay = replay([recording(f"{server.url}/authors?" + urlencode({"search": "Jason Priem"}),
                                          {"meta": {"count": 2}, "results": [raw, namesake_raw]})])
        sources = SyncSources.from_settings(settings, only=["openalex"])
        try:
            report = sync_roster(settings, index, sources=sources, now=clock(NOW))
        finally:
            sources.close()

    (entry,) = report.scholars
    assert entry.errors == [] and entry.new == []
    (note,) = [n for n in entry.notes if n.startswith("openalex")]
    assert "2 profiles" in note and priem.id in note and "A5000000001" in note and "--openalex ID" in note
    assert Roster.load(settings).get("Jason Priem").last_synced == {}
