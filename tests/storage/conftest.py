"""Fixtures of the storage tests: the real arXiv sample records the index tests use too, the
settings of a data dir on each backend, and a second view of its record store's database."""

from collections.abc import Iterator
from pathlib import Path

import pytest

from retrieval.config import Settings
from retrieval.storage.database import Database, database_url
from retrieval.storage.records import RecordStore
from tests.index.conftest import arxiv_papers, arxiv_rows

__all__ = ["arxiv_papers", "arxiv_rows", "record_database", "settings"]  # pytest fixtures, found here by name


@pytest.fixture
def settings(tmp_path: Path, database_url: str | None) -> Settings:
    """A data dir of the test's own, on each backend (``database_url``: SQLite, then PostgreSQL)."""
    return Settings(_env_file=None, data_dir=tmp_path / "data", database_url=database_url)


@pytest.fixture
def record_database(settings: Settings) -> Iterator[Database]:
    """The record store's database (its schema made), through a connection pool of its own, as
    another process would have."""
    RecordStore.open(settings).close()
    opened = Database(database_url(settings), data_dir=settings.data_dir)
    yield opened
    opened.dispose()
