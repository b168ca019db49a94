"""The reference encoder: sentence-transformers on torch (CPU).

Named ``torch_encoder`` rather than ``torch`` so that reading ``torch.`` in this package always
means the library.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from retrieval.index.encoders.base import DIMENSION, ENCODER_NAMES, MAX_TOKENS, model_path, quiet_model_loading


class TorchEncoder:
    """sentence-transformers on torch (CPU): the vectors every other variant is compared with."""

    name = ENCODER_NAMES["torch"]
    dimension = DIMENSION

    def __init__(self, batch_size: int = 32) -> None:
        from sentence_transformers import SentenceTransformer

        quiet_model_loading()
        self._model = SentenceTransformer(model_path(), device="cpu")
        self._model.max_seq_length = MAX_TOKENS
        self._batch_size = batch_size

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, DIMENSION), dtype=np.float32)
        vectors = self._model.encode(
            list(texts), batch_size=self._batch_size, normalize_embeddings=True, show_progress_bar=False
        )
        return np.asarray(vectors, dtype=np.float32)
