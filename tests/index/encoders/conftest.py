"""Fixtures for the encoder tests: real abstracts, the session's ONNX export, the torch model.

* ``abstracts``: title + abstract of 8 real arXiv records (``tests/fixtures/embeddings/``,
  from the CC0 Kaggle/Cornell arXiv metadata snapshot), 24 to 213 words each.
* ``onnx_cache``: the session's encoder cache dir (``tests/support/model_cache.py``) once it
  holds the fp32 and int8 exports; ``encoder_data_dir`` a data dir of the session.
* ``copy_export(root)``: that export copied (hard links, or real copies for tests that damage
  files) into another encoder cache dir, without the session's remembered ``auto`` choice.
* ``torch_vectors``: the reference vectors of ``abstracts`` (sentence-transformers on torch).
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from retrieval.index.encoders.cache import export_dir
from retrieval.index.encoders.onnx_export import ensure_onnx_model
from retrieval.index.encoders.torch_encoder import TorchEncoder
from tests.support.model_cache import use_session_encoder_cache

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "embeddings"


@pytest.fixture(scope="session")
def abstracts() -> list[str]:
    rows = [json.loads(line) for line in (FIXTURES / "arxiv_abstracts.jsonl").read_text(encoding="utf-8").splitlines()]
    return [f"{row['title']}. {row['abstract']}" for row in rows]


@pytest.fixture(scope="session")
def onnx_cache() -> Path:
    root = use_session_encoder_cache()
    ensure_onnx_model(root, "onnx-int8")  # the first export makes fp32 and int8 (once per session)
    return root


@pytest.fixture(scope="session")
def encoder_data_dir(tmp_path_factory: pytest.TempPathFactory, onnx_cache: Path) -> Path:
    return tmp_path_factory.mktemp("encoder-data")


@pytest.fixture()
def copy_export(onnx_cache: Path) -> Callable[..., Path]:
    """Put the session's export into the encoder cache dir ``root``; ``real=True`` copies the bytes."""

    def copy(root: Path, *, real: bool = False) -> Path:
        source = export_dir(onnx_cache)
        shutil.copytree(source, export_dir(root), copy_function=shutil.copy2 if real else os.link)
        return export_dir(root)

    return copy


@pytest.fixture(scope="session")
def torch_encoder() -> TorchEncoder:
    return TorchEncoder()


@pytest.fixture(scope="session")
def torch_vectors(torch_encoder: TorchEncoder, abstracts: list[str]) -> np.ndarray:
    return torch_encoder.encode(abstracts)
