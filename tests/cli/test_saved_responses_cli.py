"""`paperbot ingest` of saved API responses, as a user runs it: one command, several formats.

A saved arXiv feed, an OpenAlex work, an OpenAlex works list and a Crossref works list (each the
body a real recorded response carried, envelope included, under a name that says nothing about
its format) are ingested in one run; `search --json` then finds records from each with their
authors, years and links. The shared fixtures are read at run time from ../shared.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.conftest import paperbot, paperbot_here
from tests.sources.replay import load
from tests.support.model_cache import link_model_cache

SHARED = Path(__file__).resolve().parents[3] / "shared" / "fixtures"
SAVED = {
    "feed.txt": "arxiv/recorded_2026/id_1605.08386_s0_m100_199195aa31ad.json",
    "work.dat": "openalex/openalex-python_fixtures/W2741809807.json",
    "search.json": "openalex/paper-qa_cassettes/test_title_search_paper_attributes2___3.json",
    "crossref-items": "crossref/commonmeta-py_fixtures/crossref-list.json",
}

pytestmark = pytest.mark.skipif(not SHARED.is_dir(), reason="the shared fixtures (../shared/fixtures) are not here")


def _body(relative: str) -> bytes:
    path = SHARED / relative
    if not path.exists():
        pytest.skip(f"shared fixture {relative} is missing")
    data = json.loads(path.read_text(encoding="utf-8"))
    if isinstance(data, dict) and {"url", "status_code", "body"} <= data.keys():
        return load(path).body
    return path.read_bytes()


@pytest.mark.slow  # the records are embedded
def test_saved_responses_are_ingested_and_searchable(tmp_path: Path) -> None:
    files = []
    for name, relative in SAVED.items():
        target = tmp_path / name
        target.write_bytes(_body(relative))
        files.append(str(target))
    data_dir = link_model_cache(tmp_path / "data")
    run = paperbot("ingest", *files, "--json", data_dir=data_dir)
    assert run.code == 0, run.stderr
    report = run.json()
    formats = {Path(item["path"]).name: item["format"] for item in report["files"]}
    assert formats == {"feed.txt": "arxiv-atom", "work.dat": "openalex", "search.json": "openalex",
                       "crossref-items": "crossref"}
    assert all(item["records"] > 0 and item["problem"] is None for item in report["files"])
    assert report["added"] >= 8 and report["ok"] is True

    found = paperbot_here("search", "Augmenting large language models with chemistry tools", "--json", data_dir=data_dir)
    assert found.code == 0, found.stderr
    top = found.json()["results"][0]
    assert top["title"] == "Augmenting large language models with chemistry tools"
    assert top["authors"][0] == "Andres M. Bran" and top["year"] == 2024 and top["doi"]

    oa = paperbot_here("search", "state of open access large-scale analysis", "--json", data_dir=data_dir)
    first = oa.json()["results"][0]
    assert first["title"].startswith("The state of OA") and first["venue"] == "PeerJ" and first["year"] == 2018

    exported = paperbot_here("export", "--format", "bibtex", data_dir=data_dir)
    assert exported.code == 0 and "Piwowar, Heather" in exported.stdout and "paperbot-record" in exported.stdout
