"""Fixtures of the reliability suite: the real ``paperbot`` command over temporary data dirs.

* ``model_cache`` (``tests/conftest.py``): the encoder's on-disk cache (the ONNX export that
  ``auto`` picks), made once per session; every data dir of the suite links to it, so a
  subprocess never exports again.
* ``encoder``: the same encoder loaded in this process, for the in-process tests.
* ``corpus`` / ``base_index``: 60 arXiv snapshot records (with abstracts), 40 PETSc BibTeX
  entries, a RIS and a CSL-JSON export (about 100 records), ingested once through the CLI. Tests
  that write use ``index_copy``.

Everything runs against ``tmp_path`` data dirs with an environment stripped of the caller's
keys, servers and proxies, from a working directory without a ``.env`` file.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from retrieval.index.encoders.base import Encoder
from tests.conftest import BACKENDS, HARNESS
from tests.reliability.helpers import FILES, bib_entries, link_model_cache, make_settings, paperbot
from tests.support.postgres import PostgresServer


@pytest.fixture(scope="session")
def encoder(model_cache: Path, tmp_path_factory: pytest.TempPathFactory) -> Encoder:
    from retrieval.index.encoders.loading import load_encoder

    return load_encoder(make_settings(tmp_path_factory.mktemp("encoder-data"), encoder_cache_dir=model_cache))


@pytest.fixture(scope="session")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """Four formats: 60 arXiv snapshot lines, 40 PETSc entries, a RIS and a CSL-JSON export."""
    folder = tmp_path_factory.mktemp("corpus")
    petsc = folder / "petsc_head40.bib"
    petsc.write_text(bib_entries(40), encoding="utf-8")
    copies = []
    for name in ("arxiv_snapshot_head60.jsonl", "ris_full.ris", "csl_list.json"):
        copies.append(folder / name)
        shutil.copy(FILES / name, copies[-1])
    return [copies[0], petsc, *copies[1:]]


@pytest.fixture(scope="session")
def base_index(tmp_path_factory: pytest.TempPathFactory, model_cache: Path, corpus: list[Path]) -> Path:
    """A data dir with the corpus ingested through the CLI: query it, never ingest into it."""
    data_dir = link_model_cache(tmp_path_factory.mktemp("base") / "data", model_cache)
    run = paperbot("ingest", *map(str, corpus), "--json", data_dir=data_dir)
    assert run.code == 0, run.stderr
    report = run.json()
    assert report["added"] >= 100, report
    return data_dir


@pytest.fixture
def index_copy(base_index: Path, tmp_path: Path) -> Path:
    """A private copy of the base index (the model cache stays a link)."""
    target = tmp_path / "data"
    shutil.copytree(base_index, target, symlinks=True)
    return target


@dataclass(frozen=True)
class Installation:
    """A data dir and its database: ``database_url`` "" is SQLite in the data dir (set as
    PAPERBOT_DATABASE_URL, blank means unset), else a PostgreSQL database of its own."""

    data_dir: Path
    database_url: str

    @property
    def env(self) -> dict[str, str]:
        """The environment that points ``paperbot`` at this installation's database."""
        return {"PAPERBOT_DATABASE_URL": self.database_url}


@pytest.fixture(scope="session")
def base_postgres_index(tmp_path_factory: pytest.TempPathFactory, model_cache: Path, corpus: list[Path],
                        postgres_server: PostgresServer) -> Installation:
    """``base_index`` with its records on PostgreSQL: the corpus ingested through the CLI into a
    database of its own, used only as the template of each test's copy."""
    data_dir = link_model_cache(tmp_path_factory.mktemp("base-postgres") / "data", model_cache)
    url = postgres_server.new_database()
    run = paperbot("ingest", *map(str, corpus), "--json", data_dir=data_dir, PAPERBOT_DATABASE_URL=url)
    assert run.code == 0, run.stderr
    assert run.json()["added"] >= 100, run.stdout
    return Installation(data_dir, url)


@pytest.fixture(params=BACKENDS)
def installation_copy(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Installation]:
    """A private copy of the base index on each backend: ``index_copy`` on SQLite; on PostgreSQL a
    copy of ``base_postgres_index``'s data dir and a new database made from its database."""
    from retrieval.storage.database import close_databases

    if request.param == "sqlite":
        yield Installation(request.getfixturevalue("index_copy"), "")
        close_databases()
        return
    base: Installation = request.getfixturevalue("base_postgres_index")
    server: PostgresServer = request.getfixturevalue("postgres_server")
    target = tmp_path / "data"
    shutil.copytree(base.data_dir, target, symlinks=True)
    url = server.new_database(template=base.database_url)
    try:
        yield Installation(target, url)
    finally:
        close_databases()
        server.drop_database(url)


@pytest.fixture
def fresh_dir(tmp_path: Path, model_cache: Path) -> Path:
    """An empty installation (only the model cache linked)."""
    return link_model_cache(tmp_path / "fresh", model_cache)


@pytest.fixture(autouse=True)
def _no_caller_secrets(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """In-process code must not pick up the caller's keys, servers or proxies either."""
    scrub_caller_environment(monkeypatch)
    yield


def scrub_caller_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Unset the caller's paperbot, OpenAI and Slack settings and proxies, and keep the model
    offline. The test harness's own settings (``PAPERBOT_TESTS_*``: how long to wait on this
    host, an emulated CPU) are not paperbot's and stay."""
    for name in list(os.environ):
        if name.startswith(HARNESS):
            continue
        if name.startswith(("PAPERBOT_", "OPENAI_", "SLACK_")) or name.lower().endswith("_proxy"):
            monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
