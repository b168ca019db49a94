"""Recorded responses for the sync tests, served at the URLs the connectors ask for.

Every body is a real recorded API response copied into ``tests/fixtures/sync/`` (see the
README there). What is built here is only the addressing: which request gets which body, and,
for list endpoints, the standard list envelope (``meta``/``results`` for OpenAlex,
``message.items`` for Crossref) around real recorded work objects.

The roster these recordings serve:

- Martin Fenner, ORCID 0000-0003-1419-2405: OpenAlex works by ORCID (two real works, one of
  which Crossref also has), Crossref works by ORCID (six real works), and arXiv answering
  "no results" (a real empty feed);
- Adrian Del Maestro, no ids: arXiv author query over two real pages that overlap (two papers
  on both), an OpenAlex name search that finds nobody of that name (a real author object of
  someone else), and no Crossref (no ORCID).
"""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from retrieval.sources.apis.arxiv import author_query
from tests.sources.replay import Recording, Replay, recording

SYNC = Path(__file__).resolve().parents[1] / "fixtures" / "sync"

FENNER = "Martin Fenner"
FENNER_ORCID = "0000-0003-1419-2405"
DEL_MAESTRO = "Adrian Del Maestro"
CROSSREF_FILES = (
    "crossref_test-crossref_reader__test_blog_post__1.json",
    "crossref_test-bibtex_writer__test_blog_post__2.json",
    "crossref_test-bibtex_writer__test_doi_for_blog_post__1.json",
    "crossref_test-crossref_xml_writer__test_write_crossref_another_schema_org_front_matter__3.json",
    "crossref_test-crossref_xml_writer__test_write_crossref_schema_org_front_matter__3.json",
    "crossref_test-schema_org_reader__test_blog_posting__3.json",
)
OPENALEX_WORKS = ("openalex_work_fenner_newsletter.json", "openalex_work_data_citation_roadmap.json")
SHARED_DOI = "10.53731/ybhah-9jy85"  # in both the OpenAlex and the Crossref listing
# Parameters that do not identify a response (page sizes, sort order, the polite-pool address).
IGNORED_PARAMS = ("mailto", "per-page", "rows", "sort", "order", "sortBy", "sortOrder", "max_results", "id_list")


def recorded_body(name: str) -> Any:
    """The body of a recorded ``{url, status_code, body}`` file (or a raw XML file)."""
    path = SYNC / name
    if path.suffix == ".xml":
        return path.read_text(encoding="utf-8")
    data = json.loads(path.read_text(encoding="utf-8"))
    body = data["body"] if isinstance(data, dict) and "body" in data else data
    return json.loads(body) if isinstance(body, str) and body.lstrip().startswith("{") else body


def crossref_items() -> list[dict[str, Any]]:
    return [recorded_body(name)["message"] for name in CROSSREF_FILES]


def openalex_works() -> list[dict[str, Any]]:
    return [recorded_body(name) for name in OPENALEX_WORKS]


def openalex_list(works: list[dict[str, Any]], next_cursor: str | None = None) -> dict[str, Any]:
    return {"meta": {"count": len(works), "db_response_time_ms": 20, "page": None, "per_page": 200,
                     "next_cursor": next_cursor}, "results": works}


def crossref_list(items: list[dict[str, Any]], total: int | None = None) -> dict[str, Any]:
    return {"status": "ok", "message-type": "work-list", "message-version": "1.0.0",
            "message": {"facets": {}, "total-results": len(items) if total is None else total, "items": items,
                        "items-per-page": 20, "next-cursor": "DnF1ZXJ5VGhlbkZldGNo-end"}}


def arxiv_url(base: str, name: str, start: int) -> str:
    return f"{base}/api/query?" + urlencode({"search_query": author_query(name), "start": start})


def openalex_url(base: str, filter_: str, cursor: str = "*") -> str:
    return f"{base}/works?" + urlencode({"filter": filter_, "cursor": cursor})


def crossref_url(base: str, filter_: str, cursor: str = "*") -> str:
    return f"{base}/works?" + urlencode({"filter": filter_, "cursor": cursor})


def roster_recordings(base: str, *, since: date | None = None, openalex_pages: int = 1,
                      openalex_page2: list[Recording] | None = None,
                      arxiv_page2: list[Recording] | None = None) -> list[Recording]:
    """Every response a sync of the roster above needs (``since``: the incremental filters)."""
    recs: list[Recording] = []
    # arXiv: Fenner has nothing; Del Maestro has two overlapping pages
    recs.append(recording(arxiv_url(base, FENNER, 0), recorded_body("arxiv_empty_result.json")))
    recs.append(recording(arxiv_url(base, DEL_MAESTRO, 0), recorded_body("arxiv_del_maestro_page1.xml")))
    page2_url = arxiv_url(base, DEL_MAESTRO, 10)
    recs.extend(arxiv_page2 or [recording(page2_url, recorded_body("arxiv_del_maestro_page2.xml"))])
    # OpenAlex: Fenner by ORCID (one page, or two pages with the second given by the caller)
    orcid_filter = f"author.orcid:{FENNER_ORCID}" + (f",from_publication_date:{since.isoformat()}" if since else "")
    works = openalex_works()
    if openalex_pages == 1:
        recs.append(recording(openalex_url(base, orcid_filter), openalex_list(works)))
    else:
        recs.append(recording(openalex_url(base, orcid_filter), openalex_list(works[:1], next_cursor="page-2")))
        recs.extend(openalex_page2 or [recording(openalex_url(base, orcid_filter, "page-2"), openalex_list(works[1:]))])
    # OpenAlex name search for Del Maestro: finds only someone else
    search = f"{base}/authors?" + urlencode({"search": DEL_MAESTRO})
    recs.append(recording(search, {"meta": {"count": 1}, "results": [recorded_body("openalex_author_abbott.json")]}))
    # Crossref: Fenner by ORCID
    crossref_filter = f"orcid:{FENNER_ORCID}" + (f",from-pub-date:{since.isoformat()}" if since else "")
    recs.append(recording(crossref_url(base, crossref_filter), crossref_list(crossref_items())))
    return recs


def replay(recordings: list[Recording]) -> Replay:
    return Replay(recordings, ignore_params=IGNORED_PARAMS)
