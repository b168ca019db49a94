"""Fixtures shared by the benchmark tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.model_cache import link_model_cache


@pytest.fixture(scope="session")
def scholars_bench_out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One ``--out`` folder for ``bench/people.py`` and ``bench/answers_scholars.py``.

    Both ingest the same 40 files of ``scholars-real`` with the same encoder into
    ``people-index/<content key>/``; run with ``--reuse-index`` into this folder, the second
    reuses the index the first built (the benches' own documented path), instead of each test
    paying for the ingest.
    """
    return link_model_cache(tmp_path_factory.mktemp("scholars-bench-out"))  # the session's ONNX export too
