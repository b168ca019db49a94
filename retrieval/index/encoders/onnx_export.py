"""Making the ONNX variants: ``torch.onnx.export`` of the bundled model, then int8 quantisation.

Done once per machine and runtime into the shared encoder cache (``cache``): ``ensure_onnx_model``
returns a variant's file, exporting first when needed, with progress lines on stderr (about 20 s
on two cores). The first export makes every selectable variant (fp32 and per-channel int8), so
``auto``'s probe and a later switch find them ready; the per-tensor variant, which only the
benchmark uses, is added on request. ``ensure_optimized_graph`` adds, per CPU, the graph as
onnxruntime optimises it, so that later processes load it without optimising it again.
"""

from __future__ import annotations

import hashlib
import logging
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from retrieval.errors import StorageError
from retrieval.index.encoders.base import ENCODER_NAMES, MODEL_NAME, model_path, quiet_model_loading
from retrieval.index.encoders.cache import ensure_file
from retrieval.index.encoders.choice import Notify, cpu_model_and_flags
from retrieval.index.encoders.onnx_runtime import ModelFileError, make_session, model_inputs, model_tokens
from retrieval.offline import keep_onnxruntime_local
from retrieval.storage.atomic import atomic_write

# onnxruntime reads its telemetry switch when it loads: set it before anything imports it.
keep_onnxruntime_local()

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class OnnxRecipe:
    """How one ONNX variant is made from the exported fp32 graph, and how it is run."""

    file_name: str
    encoder_name: str
    quantize: Literal["none", "per-channel", "per-tensor"] = "none"
    # how ``OnnxEncoder`` runs it (see its docstring; measured in docs/encoders.md)
    batch_size: int = 1
    token_budget: int | None = None
    workers: int = 1
    in_first_export: bool = True  # made by the first export (else only when asked for)


RECIPES: dict[str, OnnxRecipe] = {
    # fp32 vectors do not depend on their batch: short texts share runs, two sessions in parallel
    "onnx": OnnxRecipe("model.onnx", ENCODER_NAMES["onnx"], batch_size=32, token_budget=512, workers=2),
    # int8 runs one text at a time (its vectors would depend on the batch), on two single-threaded
    # sessions in parallel: 2.8x torch on abstracts and 3.0x on titles here, against 2.3x and 1.7x
    # for one session with two threads, whose sleeping worker thread wakes too late for each
    # run's small products (docs/encoders.md)
    "onnx-int8": OnnxRecipe("model.int8-per-channel.onnx", ENCODER_NAMES["onnx-int8"], "per-channel", workers=2),
    # Not selectable in the settings: kept so the benchmark can show why it is not used
    # (per-tensor scales lose too much: cosine to torch about 0.94).
    "onnx-int8-per-tensor": OnnxRecipe("model.int8-per-tensor.onnx", f"{MODEL_NAME}/onnx-int8-pt", "per-tensor",
                                       in_first_export=False),
}
FP32 = RECIPES["onnx"]


def run_settings() -> str:
    """How each variant is run, for ``auto``'s signature: a change means its speed must be measured again."""
    return ";".join(f"{variant}:batch={r.batch_size},budget={r.token_budget},workers={r.workers}"
                    for variant, r in sorted(RECIPES.items()))


class ExportError(RuntimeError):
    """The ONNX export or quantisation failed or produced a model that disagrees with torch."""


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

    quiet_model_loading()
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
    ids, mask = model_tokens().pad(_probe_texts())
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
        got = make_session(tmp, threads=1).run(None, model_inputs(ids, mask))[0]
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


def _make_export(staging: Path, notify: Notify) -> list[str]:
    """Fill ``staging`` with the variants of the first export; the file names written."""
    started = time.perf_counter()
    quantized = [r for r in RECIPES.values() if r.in_first_export and r.quantize != "none"]
    steps = 1 + len(quantized)
    notify(f"preparing the ONNX encoder in {staging.parent} (once per machine and runtime; about 20 s)")
    notify(f"step 1/{steps}: exporting {MODEL_NAME} to ONNX (fp32) and checking it against torch")
    _export_fp32(staging / FP32.file_name)
    for step, recipe in enumerate(quantized, start=2):
        notify(f"step {step}/{steps}: quantising to int8 ({recipe.quantize})")
        _quantize(staging / FP32.file_name, staging / recipe.file_name, recipe.quantize)  # type: ignore[arg-type]
    made = [FP32.file_name, *(r.file_name for r in quantized)]
    total = sum((staging / name).stat().st_size for name in made)
    notify(f"done in {time.perf_counter() - started:.0f} s ({total / 1e6:.0f} MB); every data dir reuses it")
    return made


def optimized_name(variant: str) -> str:
    """The file name of ``variant``'s optimised graph for this CPU.

    Per CPU model and SIMD flags: ``ORT_ENABLE_ALL`` may choose kernels and layouts for the CPU it
    runs on, and one encoder cache can be shared by machines (a home dir on NFS).
    """
    model, flags = cpu_model_and_flags()
    cpu = hashlib.sha256(" ".join([model, *flags]).encode("utf-8")).hexdigest()[:12]
    return RECIPES[variant].file_name.removesuffix(".onnx") + f".optimized-{cpu}.onnx"


def _add_file(folder: Path, target: Path, notify: Notify) -> None:
    """Make a file outside the first export: another quantisation, or an optimised graph."""
    for variant, recipe in RECIPES.items():
        if target.name == optimized_name(variant):  # silent: about 0.2 s, once per CPU
            source = folder / recipe.file_name
            atomic_write(target, lambda tmp: make_session(source, threads=1, save_optimized=tmp))  # noqa: B023 - called at once
            return
        if target.name == recipe.file_name and recipe.quantize != "none":
            notify(f"quantising to int8 ({recipe.quantize}) in {folder}")
            _quantize(folder / FP32.file_name, target, recipe.quantize)
            return
    raise ExportError(f"{target.name} is not a file of the ONNX export")


def _ensure(root: Path, name: str, *, redo: bool, notify: Notify | None) -> Path:
    try:
        return ensure_file(root, name, make_export=_make_export, add_file=_add_file, redo=redo, notify=notify)
    except PermissionError as exc:
        raise StorageError(
            f"Cannot write the encoder cache in {root}.",
            hint="Check its permissions, point PAPERBOT_ENCODER_CACHE_DIR at a writable directory, "
                 "or set PAPERBOT_ENCODER=torch.",
        ) from exc
    except (ExportError, ModelFileError):
        raise
    except Exception as exc:  # torch/onnx raise many types; all mean "no usable export"
        raise ExportError(f"{type(exc).__name__}: {exc}") from exc


def ensure_onnx_model(root: Path, variant: str = "onnx", *, redo: bool = False,
                      notify: Notify | None = None) -> Path:
    """Path of the ONNX file of ``variant`` (a key of ``RECIPES``) in the encoder cache ``root``.

    Exports on first use (announced on ``notify``, by default stderr); ``redo`` makes the export
    again (the caller could not load it). Raises ``ExportError`` when the export fails and
    ``StorageError`` when the cache cannot be written.
    """
    return _ensure(root, RECIPES[variant].file_name, redo=redo, notify=notify)


def ensure_optimized_graph(root: Path, variant: str = "onnx", *, notify: Notify | None = None) -> Path:
    """Path of ``variant``'s graph as onnxruntime optimises it on this CPU, saved on first use.

    Loading it with ``make_session(..., optimized=True)`` skips the optimisation every session
    would otherwise repeat (the vectors are the same, bit for bit). ``ModelFileError`` when
    onnxruntime cannot load the exported model.
    """
    ensure_onnx_model(root, variant, notify=notify)
    return _ensure(root, optimized_name(variant), redo=False, notify=notify)
