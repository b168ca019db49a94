"""A real index in a temporary data dir, and a local server replaying recorded API responses."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from retrieval.config import Settings
from retrieval.index.encoders.base import DIMENSION
from retrieval.index.paper_index import PaperIndex
from retrieval.storage.roster import Roster
from tests.ingest.recorded import DEL_MAESTRO, FENNER, FENNER_ORCID


class HashEncoder:
    """Deterministic unit vectors from the text's hash: the index without the embedding model."""

    name = "test/hash"
    dimension = DIMENSION

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        rows = []
        for text in texts:
            seed = int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big")
            vector = np.random.default_rng(seed).standard_normal(DIMENSION).astype(np.float32)
            rows.append(vector / np.linalg.norm(vector))
        return np.stack(rows) if rows else np.zeros((0, DIMENSION), dtype=np.float32)


def make_settings(data_dir: Path, base_url: str, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "data_dir": data_dir,
        "arxiv_url": f"{base_url}/api/query",
        "openalex_url": base_url,
        "crossref_url": base_url,
        "arxiv_delay": 0.0,
        "http_max_retries": 0,
        "http_timeout": 5.0,
        "contact_email": None,
        "openai_api_key": None,
        "openai_base_url": None,
    }
    values.update(overrides)
    return Settings(_env_file=None, **values)


def add_roster(settings: Settings) -> Roster:
    roster = Roster.load(settings)
    roster.add(FENNER, orcid=FENNER_ORCID)
    roster.add(DEL_MAESTRO)
    return roster


@pytest.fixture
def open_index() -> Iterator:
    opened: list[PaperIndex] = []

    def opener(settings: Settings) -> PaperIndex:
        index = PaperIndex.open(settings, encoder=HashEncoder())
        opened.append(index)
        return index

    yield opener
    for index in opened:
        index.close()
