"""Fixtures for the index tests: real arXiv records, the real local encoder, a real Chroma server.

* ``arxiv_papers``: 50 ``Paper`` records built from the first 50 lines of the Kaggle/Cornell
  arXiv metadata snapshot (``tests/fixtures/index/``, CC0).
* ``shared_encoder``: the real all-MiniLM-L6-v2 torch encoder, loaded once per session and
  memoised per text (so that many tests over the same records embed each text once);
  ``counting_encoder`` wraps it per test and counts the texts each test asks for.
* ``HashEncoder``: deterministic vectors from a hash of the text, for tests that need an index
  but not meaningful similarity (no model load); its ``name`` is chosen per test.
* ``chroma_server``: a real ``chroma run`` subprocess on 127.0.0.1 and a free port, started
  once per session from the venv's ``chroma`` entry point; ``ChromaServer`` is reusable for
  tests that stop and restart a server.
* ``index_settings``: parametrised over ``embedded`` and ``server`` so that each index test
  runs against both Chroma modes (the ``server`` variant is marked ``slow``: it needs the
  subprocess).
"""

from __future__ import annotations

import hashlib
import json
import re
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from retrieval.config import Settings
from retrieval.records.paper import Author, Paper, Provenance
from tests.support.chroma import ChromaServer, free_port

__all__ = ["ChromaServer", "free_port"]  # re-exported: the index and reliability tests import them from here

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "index"


# --- records ---------------------------------------------------------------------------------


def _year(row: dict) -> str:
    journal = row.get("journal-ref") or ""
    years = [y for y in re.findall(r"(?<!\d)((?:19|20)\d\d)(?!\d)", journal) if 1990 <= int(y) <= 2025]
    if years:
        return years[0]
    return row["versions"][0]["created"].split()[3]


def _venue(row: dict) -> str | None:
    journal = (row.get("journal-ref") or "").replace("\n", " ")
    name = re.split(r"[\d(]", journal, maxsplit=1)[0].strip(" ,.;:")
    return name or None


def paper_from_arxiv(row: dict) -> Paper:
    """A ``Paper`` from one line of the arXiv metadata snapshot (test helper, not a parser)."""
    authors = [Author(name=" ".join(part for part in (first, last) if part))
               for last, first, *_ in row["authors_parsed"] if (first or last)]
    return Paper(
        title=row["title"],
        authors=authors,
        abstract=row["abstract"],
        published=_year(row),
        venue=_venue(row),
        doi=((row.get("doi") or "").split() or [None])[0],
        arxiv_id=row["id"],
        categories=row["categories"].split(),
        provenance=[Provenance(source="arxiv", source_id=row["id"])],
    )


@pytest.fixture(scope="session")
def arxiv_rows() -> list[dict]:
    path = FIXTURES / "arxiv_snapshot_head50.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.fixture(scope="session")
def arxiv_papers(arxiv_rows: list[dict]) -> list[Paper]:
    return [paper_from_arxiv(row) for row in arxiv_rows]


def by_arxiv(papers: Sequence[Paper], arxiv_id: str) -> Paper:
    return next(p for p in papers if p.arxiv_id == arxiv_id)


# --- encoders --------------------------------------------------------------------------------


class MemoEncoder:
    """The real encoder, memoised per text (identical vectors; only the work is shared)."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.name = inner.name
        self.dimension = inner.dimension
        self._memo: dict[str, np.ndarray] = {}

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        todo = list(dict.fromkeys(t for t in texts if t not in self._memo))
        if todo:
            self._memo.update(zip(todo, self.inner.encode(todo), strict=True))
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return np.stack([self._memo[t] for t in texts])


class CountingEncoder:
    """Wraps an encoder and records every text it is asked to embed."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.name = inner.name
        self.dimension = inner.dimension
        self.texts: list[str] = []

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        self.texts.extend(texts)
        return self.inner.encode(texts)

    def reset(self) -> None:
        self.texts.clear()


class HashEncoder:
    """Unit vectors seeded by the text's hash: same text, same vector; no embedding model."""

    dimension = 384

    def __init__(self, name: str = "test/hash") -> None:
        self.name = name
        self.texts: list[str] = []

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        self.texts.extend(texts)
        rows = []
        for text in texts:
            seed = int.from_bytes(hashlib.sha256(f"{self.name}|{text}".encode()).digest()[:8], "big")
            vector = np.random.default_rng(seed).standard_normal(self.dimension).astype(np.float32)
            rows.append(vector / np.linalg.norm(vector))
        return np.stack(rows) if rows else np.zeros((0, self.dimension), dtype=np.float32)


@pytest.fixture(scope="session")
def shared_encoder(reference_encoder) -> MemoEncoder:
    return MemoEncoder(reference_encoder)  # the session's torch encoder (tests/conftest.py)


@pytest.fixture
def counting_encoder(shared_encoder: MemoEncoder) -> CountingEncoder:
    return CountingEncoder(shared_encoder)


# --- a real Chroma server --------------------------------------------------------------------


@pytest.fixture(scope="session")
def chroma_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChromaServer]:
    with ChromaServer(tmp_path_factory.mktemp("chroma-server")) as server:
        yield server


# --- settings and indexes --------------------------------------------------------------------


def make_settings(data_dir: Path, chroma_url: str | None = None, **extra: Any) -> Settings:
    """Settings isolated from the environment and from any .env file (``extra``: any other fields)."""
    collection = f"t-{uuid.uuid4().hex[:12]}"  # the session server is shared between tests
    values: dict[str, Any] = {"min_relevance": None, **extra}
    return Settings(_env_file=None, data_dir=data_dir, chroma_url=chroma_url, collection=collection, **values)


@pytest.fixture(params=["embedded", pytest.param("server", marks=pytest.mark.slow)])
def index_settings(request: pytest.FixtureRequest, tmp_path: Path) -> Settings:
    if request.param == "server":
        server: ChromaServer = request.getfixturevalue("chroma_server")
        return make_settings(tmp_path / "data", server.url)
    return make_settings(tmp_path / "data")
