"""The command line of the roster, `sync` and the one-off `ingest arxiv|openalex|crossref` fetches.

Commands run through their own argparse registration and handlers with a ``CliContext`` whose
index uses a hash encoder; the last test runs the real `paperbot` entry point (``bot.cli.main``)
with the real embedding model against the local replay server.
"""

from __future__ import annotations

import argparse
import io
import json
from datetime import datetime
from pathlib import Path
from urllib.parse import urlencode

import pytest
from rich.console import Console

from bot.commands import fetch, scholars, sync
from bot.commands.ingest import rewrite_fetch_argv
from bot.context import CliContext
from retrieval.alerts.follows import FollowStore
from retrieval.assistant import Assistant
from retrieval.errors import InputError, UnknownScholarError
from retrieval.ingest.sync import OVERLAP
from retrieval.storage.roster import Roster
from tests.ingest.conftest import add_roster, make_settings
from tests.ingest.recorded import (
    DEL_MAESTRO,
    FENNER,
    FENNER_ORCID,
    SHARED_DOI,
    SYNC,
    arxiv_url,
    openalex_list,
    openalex_works,
    recorded_body,
    replay,
    roster_recordings,
)
from tests.sources.replay import ReplayServer, recording
from tests.support.model_cache import link_model_cache


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(prog="paperbot")
    commands = root.add_subparsers(dest="command")
    for module in (scholars, sync, fetch):
        module.register(commands)
    return root


class Cli:
    """Runs one command line the way ``bot.cli.main`` does, capturing stdout and stderr."""

    def __init__(self, settings, index=None) -> None:
        self.settings = settings
        self.index = index

    def __call__(self, *argv: str) -> tuple[int, str, str]:
        args = parser().parse_args(rewrite_fetch_argv(list(argv)))
        out, err = io.StringIO(), io.StringIO()
        ctx = CliContext(settings=self.settings, stdout=out,
                         console=Console(file=err, width=200, force_terminal=False, highlight=False))
        if self.index is not None:
            ctx._assistant = Assistant(self.settings, index=self.index)
        code = args.handler(args, ctx)
        return code, out.getvalue(), err.getvalue()


def test_scholars_add_list_remove(tmp_path: Path) -> None:
    cli = Cli(make_settings(tmp_path, "http://127.0.0.1:9"))
    code, out, err = cli("scholars", "add", "Zhao Zhang", "--orcid", "0000-0002-1825-0097", "--arxiv-name", "Z. Zhang",
                         "--alias", "Zhang Zhao", "Z. Zhang (PKU)")
    assert code == 0 and "Added Zhao Zhang" in out and "paperbot sync" in err
    code, out, _ = cli("scholars", "add", "Martin Fenner", "--openalex", "A5069389160")
    assert code == 0
    with pytest.raises(InputError, match="already on the roster"):
        cli("scholars", "add", "zhao zhang")

    code, out, _ = cli("scholars", "list")
    lines = out.strip().splitlines()
    assert lines[0].startswith("Martin Fenner · OpenAlex A5069389160") and "last synced: never" in lines[0]
    assert "aliases Zhang Zhao, Z. Zhang (PKU)" in lines[1]
    code, out, _ = cli("scholars", "list", "--json")
    listed = json.loads(out)
    assert [entry["name"] for entry in listed] == ["Martin Fenner", "Zhao Zhang"]
    assert listed[1]["orcid"] == "0000-0002-1825-0097" and listed[1]["arxiv_name"] == "Z. Zhang"

    code, out, _ = cli("scholars", "remove", "Zhang Zhao")
    assert code == 0 and "Removed Zhao Zhang" in out
    with pytest.raises(UnknownScholarError, match="Did you mean: Martin Fenner"):
        cli("scholars", "remove", "Martin Fener")
    assert [s.name for s in Roster.load(cli.settings).list()] == ["Martin Fenner"]


def test_sync_command_reports_what_is_new_and_queues_alerts(tmp_path: Path, open_index) -> None:
    with ReplayServer(replay([])) as server:
        settings = make_settings(tmp_path, server.url)
        add_roster(settings)
        index = open_index(settings)
        server.replay = replay(roster_recordings(server.url))
        cli = Cli(settings, index)
        code, out, err = cli("sync", "--json")

        assert code == 0
        report = json.loads(out)
        assert len(report["new_paper_ids"]) == 17 and f"doi:{SHARED_DOI}" in report["new_paper_ids"]
        assert [entry["name"] for entry in report["scholars"]] == [DEL_MAESTRO, FENNER]
        assert "[1/2] Adrian Del Maestro" in err and "crossref: 6 work(s)" in err
        store = FollowStore.for_settings(settings)
        try:
            assert sorted(store.queued_new_papers()) == sorted(report["new_paper_ids"])
        finally:
            store.close()

        # a second, human-readable run: incremental, nothing new
        marked = datetime.fromisoformat(Roster.load(settings).get(FENNER).last_synced["crossref"])
        server.replay = replay(roster_recordings(server.url) + roster_recordings(server.url, since=(marked - OVERLAP).date()))
        code, out, _ = cli("sync")
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "Synced 2 scholar(s): 0 new paper(s), 0 updated."
    assert "  Martin Fenner: 0 new, 0 updated (fetched: arxiv 0, openalex 2, crossref 6)" in lines


def test_sync_with_an_empty_roster_says_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="roster is empty") as caught:
        Cli(make_settings(tmp_path, "http://127.0.0.1:9"))("sync")
    assert "scholars add" in str(caught.value)


def test_ingest_crossref_doi_and_openalex_orcid(tmp_path: Path, open_index) -> None:
    with ReplayServer(replay([])) as server:
        settings = make_settings(tmp_path, server.url)
        index = open_index(settings)
        crossref_work = json.loads((SYNC / "crossref_test-crossref_reader__test_blog_post__1.json").read_text())
        server.replay = replay([
            recording(f"{server.url}/works/{SHARED_DOI}", crossref_work["body"]),
            recording(f"{server.url}/works/10.1000/missing", {"status": "error"}, status_code=404),
            recording(f"{server.url}/works?" + urlencode({"filter": f"author.orcid:{FENNER_ORCID}", "cursor": "*"}),
                      openalex_list(openalex_works())),
        ])
        cli = Cli(settings, index)
        code, out, _ = cli("ingest", "crossref", "--doi", SHARED_DOI, "10.1000/missing")
        assert code == 0
        assert "added 1" in out and "skipped DOI 10.1000/missing: Crossref does not know this DOI" in out
        assert index.get(f"doi:{SHARED_DOI}").sources == ["crossref"]

        code, out, _ = cli("ingest", "openalex", "--orcid", f"https://orcid.org/{FENNER_ORCID}", "--json")
    assert code == 0
    assert json.loads(out)["added"] == 1 and json.loads(out)["updated"] == 1
    assert set(index.get(f"doi:{SHARED_DOI}").sources) == {"crossref", "openalex"}


def test_ingest_arxiv_author_keeps_partial_results_when_the_source_fails(tmp_path: Path, open_index) -> None:
    with ReplayServer(replay([])) as server:
        settings = make_settings(tmp_path, server.url)
        index = open_index(settings)
        server.replay = replay([
            recording(arxiv_url(server.url, DEL_MAESTRO, 0), recorded_body("arxiv_del_maestro_page1.xml")),
            recording(arxiv_url(server.url, DEL_MAESTRO, 10), "busy", status_code=503),
        ])
        code, out, err = Cli(settings, index)("ingest", "arxiv", "--author", DEL_MAESTRO)
    assert code == 2
    assert "added 10" in out
    assert "arxiv:" in err and "503" in err and "10 work(s) received before the failure were indexed" in err
    assert index.count() == 10


def test_ingest_options_are_validated(tmp_path: Path) -> None:
    with pytest.raises(SystemExit):
        parser().parse_args(["fetch", "crossref", "--doi", "10.1/x", "--query", "y"])  # one selector only
    with pytest.raises(SystemExit):
        parser().parse_args(["fetch", "arxiv", "--author", "X", "--since", "last week"])
    with pytest.raises(InputError, match="not an ORCID"):
        Cli(make_settings(tmp_path, "http://127.0.0.1:9"))("ingest", "crossref", "--orcid", "12")


@pytest.mark.slow
def test_paperbot_sync_end_to_end(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    """`paperbot sync --json` through the real entry point, settings from the environment,
    the real embedding model, and the local server replaying the recorded responses."""
    from bot.cli import main

    with ReplayServer(replay([])) as server:
        server.replay = replay(roster_recordings(server.url))
        monkeypatch.chdir(tmp_path)  # no .env here
        link_model_cache(tmp_path / "data")  # the session's encoder cache: no export here
        for name, value in {
            "PAPERBOT_DATA_DIR": str(tmp_path / "data"), "PAPERBOT_ARXIV_URL": f"{server.url}/api/query",
            "PAPERBOT_OPENALEX_URL": server.url, "PAPERBOT_CROSSREF_URL": server.url, "PAPERBOT_ARXIV_DELAY": "0",
            "PAPERBOT_HTTP_MAX_RETRIES": "0", "HF_HUB_OFFLINE": "1",
        }.items():
            monkeypatch.setenv(name, value)
        assert main(["scholars", "add", FENNER, "--orcid", FENNER_ORCID]) == 0
        assert main(["scholars", "add", DEL_MAESTRO]) == 0
        capsys.readouterr()
        assert main(["sync", "--json"]) == 0
        report = json.loads(capsys.readouterr().out)
        assert len(report["new_paper_ids"]) == 17
        assert main(["export"]) == 0
        exported = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.strip()]
    assert len(exported) == 17
    shared = next(record for record in exported if record.get("doi") == SHARED_DOI)
    assert {entry["source"] for entry in shared["provenance"]} == {"openalex", "crossref"}
