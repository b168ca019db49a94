"""Real records for the merge tests, parsed by the connectors' own parsers.

Every file under ``tests/fixtures/merge/`` is a copy of a recorded API response or dataset
from ``../shared`` (see ``tests/fixtures/merge/README.md``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from retrieval.records.paper import Author, Paper
from retrieval.sources.providers.arxiv import parse_atom
from retrieval.sources.providers.crossref import parse_crossref_work
from retrieval.sources.providers.openalex import parse_work, parse_works_page

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "merge"


def body(name: str) -> Any:
    data = json.loads((FIXTURES / name).read_text(encoding="utf-8"))
    payload = data["body"] if isinstance(data, dict) and "body" in data else data
    return json.loads(payload) if isinstance(payload, str) else payload


def openalex(name: str) -> Paper:
    return parse_work(body(name))


def openalex_list(name: str) -> list[Paper]:
    return parse_works_page(body(name)).papers


def crossref(name: str) -> Paper:
    return parse_crossref_work(body(name)["message"])


def arxiv_feed(name: str) -> list[Paper]:
    return parse_atom((FIXTURES / name).read_bytes()).papers


def conference(name: str) -> list[Paper]:
    """A conference-authors dataset (titles + author lists) as papers of that year."""
    data = json.loads((FIXTURES / name).read_text(encoding="utf-8"))
    year = data["info"]["date"]
    papers = []
    for entry in data["collection"]:
        authors = [
            Author(name=f"{a.get('first_name', '')} {a.get('last_name', '')}".strip())
            for a in entry["authors"]
            if (a.get("first_name") or a.get("last_name"))
        ]
        papers.append(Paper(title=entry["title"], authors=authors, published=year, venue=data["info"]["short_name"]))
    return papers
