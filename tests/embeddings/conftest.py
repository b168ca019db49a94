"""Fixtures for the encoder tests: real abstracts, one ONNX export per session, the torch model.

* ``abstracts``: title + abstract of 8 real arXiv records (``tests/fixtures/embeddings/``,
  from the CC0 Kaggle/Cornell arXiv metadata snapshot), 24 to 213 words each.
* ``encoder_data_dir``: a session data dir whose ``cache/`` receives the fp32 and int8 exports
  once; ``onnx_cache`` is that ``cache/`` dir.
* ``torch_vectors``: the reference vectors of ``abstracts`` (sentence-transformers on torch).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from retrieval.index.encoders import local as embeddings

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "embeddings"


@pytest.fixture(scope="session")
def abstracts() -> list[str]:
    rows = [json.loads(line) for line in (FIXTURES / "arxiv_abstracts.jsonl").read_text(encoding="utf-8").splitlines()]
    return [f"{row['title']}. {row['abstract']}" for row in rows]


@pytest.fixture(scope="session")
def encoder_data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    data_dir = tmp_path_factory.mktemp("encoder-data")
    embeddings.ensure_onnx_model(data_dir / "cache", "onnx-int8")  # exports fp32, then quantises
    return data_dir


@pytest.fixture(scope="session")
def onnx_cache(encoder_data_dir: Path) -> Path:
    return encoder_data_dir / "cache"


@pytest.fixture(scope="session")
def torch_encoder() -> embeddings.TorchEncoder:
    return embeddings.TorchEncoder()


@pytest.fixture(scope="session")
def torch_vectors(torch_encoder: embeddings.TorchEncoder, abstracts: list[str]) -> np.ndarray:
    return torch_encoder.encode(abstracts)
