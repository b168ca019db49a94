"""Fixture corpus for the scholar tests: real records (see tests/fixtures/scholars/README.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from retrieval.config import Settings
from retrieval.records.paper import Paper
from retrieval.results import SearchHit
from retrieval.scholars.people import PeopleDirectory
from retrieval.scholars.themes import TermStats
from tests.conftest import BACKENDS
from tests.support.postgres import PostgresServer

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "scholars"
FILES = ("arxiv_del_maestro.jsonl", "conference_authors_slice.jsonl", "openalex_works.jsonl")


def load_papers(*names: str) -> list[Paper]:
    papers: list[Paper] = []
    for name in names or FILES:
        lines = (FIXTURES / name).read_text(encoding="utf-8").splitlines()
        papers.extend(Paper.model_validate_json(line) for line in lines if line.strip())
    return papers


def make_settings(tmp: Path, **overrides: Any) -> Settings:
    """Settings isolated from the environment and any .env file (no LLM unless given)."""
    values: dict[str, Any] = {"data_dir": tmp, "openai_api_key": None, "openai_base_url": None}
    values.update(overrides)
    return Settings(_env_file=None, **values)


class PaperList:
    """The part of the index summaries read (``iter_papers``), over a list."""

    def __init__(self, papers: list[Paper]) -> None:
        self.papers = papers

    def iter_papers(self) -> list[Paper]:
        return list(self.papers)


@pytest.fixture(scope="session")
def papers() -> list[Paper]:
    return load_papers()


@pytest.fixture(scope="module")
def mlsys() -> tuple[list[Paper], PeopleDirectory]:
    """The MLSys papers of the conference slice and their people."""
    papers = [p for p in load_papers("conference_authors_slice.jsonl") if (p.venue or "").startswith("MLSys")]
    return papers, PeopleDirectory(papers)


def ranked_hits(papers: list[Paper], titles: list[str]) -> list[SearchHit]:
    """The papers whose titles start with ``titles``, as hits in that order (scores 1.0, 0.99, ...)."""
    by_start = [next(p for p in papers if p.title.startswith(t)) for t in titles]
    return [SearchHit(paper=p, score=1.0 - i / 100) for i, p in enumerate(by_start)]


@pytest.fixture(scope="session")
def directory(papers: list[Paper]) -> PeopleDirectory:
    return PeopleDirectory(papers)


@pytest.fixture(scope="session")
def background(papers: list[Paper]) -> TermStats:
    return TermStats.from_papers(papers)


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return make_settings(tmp_path)


@pytest.fixture(scope="session")
def encoder(reference_encoder):
    return reference_encoder  # the session's torch encoder (tests/conftest.py)


def namesake_papers() -> list[Paper]:
    """Two people written "Jia Song" (records made here): two papers each, in distant fields,
    with co-authors who never meet. Nothing tells which one a user means: comparable candidates."""
    from retrieval.records.paper import Author

    def paper(title: str, year: str, coauthor: str) -> Paper:
        return Paper(title=title, published=year, venue="Made-up Proceedings",
                     authors=[Author(name="Jia Song"), Author(name=coauthor)])

    return [
        paper("Scribal hands in twelfth-century Latin manuscripts", "2021", "Agnes Holm"),
        paper("Dating medieval parchment by palaeographic features", "2023", "Agnes Holm"),
        paper("Sediment transport in deep-sea submarine canyons", "2022", "Olav Berg"),
        paper("Turbidity currents and seafloor erosion rates", "2024", "Olav Berg"),
    ]


def index_subset(papers: list[Paper]) -> list[Paper]:
    """What the real index holds (kept small: embedding is the slow part): the arXiv and
    OpenAlex records, every MLSys paper, the two CVPR papers by a "Zhao Zhang", and the two
    "Jia Song" namesakes of ``namesake_papers``."""
    return [
        p for p in papers
        if not (p.venue or "").startswith("CVPR") or "Zhao Zhang" in p.author_names
    ] + namesake_papers()


@pytest.fixture(scope="session", params=BACKENDS)
def index_settings(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Settings:
    """The real index's settings, once with its records on SQLite in the data dir and once on
    PostgreSQL (a database of its own on the session's server): the people tests run on both."""
    if request.param == "sqlite":
        return make_settings(tmp_path_factory.mktemp("scholars-index"))
    server: PostgresServer = request.getfixturevalue("postgres_server")
    return make_settings(tmp_path_factory.mktemp("scholars-index-postgres"), database_url=server.new_database())


@pytest.fixture(scope="session")
def real_index(index_settings: Settings, papers: list[Paper], encoder):
    """A real PaperIndex (record store + embedded Chroma + BM25) over ``index_subset``."""
    from retrieval.index.paper_index import PaperIndex

    index = PaperIndex.open(index_settings, encoder=encoder)
    index.upsert(index_subset(papers))
    yield index
    index.close()
