"""The encoder's on-disk cache, made once per test process and linked into every data dir.

The first ``auto`` encoder load in a data dir exports all-MiniLM-L6-v2 to ONNX, quantises it
and probes which variant is fastest on this CPU (``retrieval.index.encoders.local.load_encoder``): tens of
seconds and 143 MB, written under ``<data dir>/cache/onnx``. The product keys those files by
model, runtime versions and CPU so that data dirs may share them; the tests do that on purpose:
``shared_model_cache()`` makes them once (in this process) and ``link_model_cache`` points a new
data dir's ``cache/onnx`` at them, so no test and no ``paperbot`` subprocess exports again.
Tests of the export itself (``tests/embeddings``) use their own cache dirs.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
from pathlib import Path

from retrieval.config import Settings

_made: list[Path] = []


def shared_model_cache() -> Path:
    """A ``cache`` dir holding what the default (``auto``) encoder keeps on disk, made on first call."""
    if not _made:
        from retrieval.index.encoders.local import load_encoder

        holder = Path(tempfile.mkdtemp(prefix="paperbot-test-model-cache-"))
        atexit.register(shutil.rmtree, holder, True)
        settings = Settings(_env_file=None, data_dir=holder, encoder="auto", chroma_url=None)  # type: ignore[call-arg]
        load_encoder(settings)  # exports (and probes) into holder/cache
        _made.append(settings.cache_dir)
    return _made[0]


def link_model_cache(data_dir: Path, cache: Path | None = None) -> Path:
    """Create ``data_dir`` with ``cache/onnx`` linked to ``cache`` (default: the shared one)."""
    cache = shared_model_cache() if cache is None else cache
    (data_dir / "cache").mkdir(parents=True, exist_ok=True)
    link = data_dir / "cache" / "onnx"
    if (cache / "onnx").is_dir() and not link.exists():
        link.symlink_to(cache / "onnx", target_is_directory=True)
    return data_dir
