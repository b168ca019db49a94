"""Session fixtures every test folder may use (the expensive ones are made once, on first use)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.model_cache import shared_model_cache


@pytest.fixture(scope="session")
def model_cache() -> Path:
    """The encoder's on-disk cache (ONNX exports, the auto choice), made once per session:
    ``tests.support.model_cache.link_model_cache`` links it into a data dir."""
    return shared_model_cache()


@pytest.fixture(scope="session")
def reference_encoder():
    """The reference torch encoder (sentence-transformers), loaded once per session and shared by
    every in-process test that needs real vectors (it keeps no state between calls)."""
    from retrieval.index.encoders.local import TorchEncoder

    return TorchEncoder()
