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
from pathlib import Path

import pytest

from retrieval.index.encoders.base import Encoder
from tests.reliability.helpers import FILES, bib_entries, link_model_cache, make_settings, paperbot


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


@pytest.fixture
def fresh_dir(tmp_path: Path, model_cache: Path) -> Path:
    """An empty installation (only the model cache linked)."""
    return link_model_cache(tmp_path / "fresh", model_cache)


@pytest.fixture(autouse=True)
def _no_caller_secrets(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """In-process code must not pick up the caller's keys, servers or proxies either."""
    for name in list(os.environ):
        if name.startswith(("PAPERBOT_", "OPENAI_", "SLACK_")) or name.lower().endswith("_proxy"):
            monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    yield
