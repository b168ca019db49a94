"""Which encoder a process uses: ``PAPERBOT_ENCODER``, an index's own encoder, or ``auto``'s measured choice.

``load_encoder`` is the one entry point (``PaperIndex`` calls it, telling it the encoder name its
vectors were made with). The files it needs come from the machine's encoder cache
(``settings.encoder_cache_dir``, see ``cache``), exported on first use; ``auto`` measures the
candidates once per CPU (``choice``) and remembers the outcome in that cache too.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from retrieval.config import Settings
from retrieval.errors import ConfigError, StorageError
from retrieval.index.encoders.base import AUTO_CANDIDATES, Encoder, EncoderChoice, choice_for_name, cpu_count
from retrieval.index.encoders.cache import export_dir, export_key, inspect_export, stderr_notice
from retrieval.index.encoders.choice import (
    AutoChoice,
    Notify,
    choice_path,
    cpu_signature,
    read_choice,
    remembered_or_probed,
)
from retrieval.index.encoders.onnx_export import (
    RECIPES,
    ExportError,
    ensure_onnx_model,
    ensure_optimized_graph,
    run_settings,
)
from retrieval.index.encoders.onnx_runtime import ModelFileError, OnnxEncoder
from retrieval.index.encoders.torch_encoder import TorchEncoder

log = logging.getLogger(__name__)


def onnx_encoder(root: Path, variant: str = "onnx", **options: Any) -> OnnxEncoder:
    """An ``OnnxEncoder`` for ``variant`` (a key of ``RECIPES``) from the encoder cache ``root``.

    Exports on first use, and runs the graph as onnxruntime optimised it on this CPU (saved once,
    ``ensure_optimized_graph``). A file onnxruntime cannot load (damaged on disk) is exported
    again, once, with a warning.
    """
    recipe = RECIPES[variant]
    runtime = {"batch_size": recipe.batch_size, "token_budget": recipe.token_budget, "workers": recipe.workers}
    try:
        graph = ensure_optimized_graph(root, variant)
        return OnnxEncoder(graph, name=recipe.encoder_name, optimized=True, **{**runtime, **options})
    except ModelFileError as exc:
        log.warning("onnxruntime cannot load the encoder export in %s (%s); exporting it again.", root, exc)
        ensure_onnx_model(root, variant, redo=True)
        graph = ensure_optimized_graph(root, variant)
        return OnnxEncoder(graph, name=recipe.encoder_name, optimized=True, **{**runtime, **options})


def load_encoder(settings: Settings, *, indexed: str | None = None, notify: Notify | None = None) -> Encoder:
    """The encoder the settings ask for (``PAPERBOT_ENCODER``).

    ``auto`` keeps the encoder that made an existing index's vectors (``indexed``, the name the
    index recorded) when it is one of ours: vectors are never mixed and never silently
    re-embedded. Without such an index it is the variant measured fastest within the quality bar
    on this CPU (``auto_choice``: probed once per CPU signature, then read from the cache; the
    probe reports on ``notify``, by default stderr). Candidates whose ONNX export cannot be
    made are left out, so ``auto`` falls back to torch with a logged warning. An explicit
    ``onnx``/``onnx-int8`` raises instead, because the user asked for that vector space.

    When the encoder cache lacks what this needs (``pending_preparation``), one line on ``notify``
    (by default stderr) says so first: whatever the command, the user learns why it is slow this once.
    """
    choice = settings.encoder
    root = settings.encoder_cache_dir
    pending = pending_preparation(settings, indexed=indexed)
    if pending is not None:
        say = notify or stderr_notice("Encoder")
        say(f"first use on this machine: {pending} (once; about a minute, several on a busy machine)")
    if choice == "auto":
        kept = choice_for_name(indexed) if indexed else None
        if kept is not None:
            return _explicit(root, kept, why=f"the index's vectors were made by {indexed!r}")
        made, loaded = auto_choice(root, notify=notify)
        return loaded.get(made.variant) or _candidates(root)[made.variant]()
    return _explicit(root, choice)


def pending_preparation(settings: Settings, *, indexed: str | None = None) -> str | None:
    """What ``load_encoder(settings, indexed=indexed)`` would first have to make in the encoder
    cache, in words ("measuring which encoder runs fastest on this CPU"), or None when the cache
    holds it. Follows ``load_encoder``'s choice; reads the cache, loads and writes nothing.

    Counted: ``auto``'s probe (no choice remembered for this CPU) and the ONNX export (tens of
    seconds each, minutes under load). Not counted: the optimised graph of an exported variant
    (seconds) and a choice file too damaged to read (the probe's own lines say so).
    """
    root = settings.encoder_cache_dir
    variant: str | None = settings.encoder
    if variant == "auto":
        variant = choice_for_name(indexed) if indexed else None
    if variant is None:
        signature = auto_signature()
        made = read_choice(root, signature) if choice_path(root, signature).exists() else None
        if made is None:
            if all(_exported(root, name) for name in AUTO_CANDIDATES if name != "torch"):
                return "measuring which encoder runs fastest on this CPU"
            return "exporting the ONNX encoders and measuring which runs fastest on this CPU"
        variant = made.variant
    if variant == "torch" or _exported(root, variant):
        return None
    return "exporting the encoder to ONNX"


def _exported(root: Path, variant: str) -> bool:
    """Whether this runtime's export in the encoder cache ``root`` holds ``variant``'s graph
    (a variant that is not exported, an unknown name, counts as there: nothing to announce)."""
    recipe = RECIPES.get(variant)
    return recipe is None or recipe.file_name in inspect_export(export_dir(root)).files


def _explicit(root: Path, choice: EncoderChoice, why: str = "") -> Encoder:
    if choice == "torch":
        return TorchEncoder()
    try:
        return onnx_encoder(root, choice)
    except (ExportError, StorageError, ModelFileError, OSError, ImportError) as exc:
        because = f" ({why})" if why else ""
        raise ConfigError(
            f"The {choice} encoder{because} could not be prepared ({exc}).",
            hint="Set PAPERBOT_ENCODER=torch to use the reference encoder"
                 + (" (then `paperbot doctor --repair` re-embeds the index)." if why else "."),
        ) from exc


def _candidates(root: Path) -> dict[str, Callable[[], Encoder]]:
    """How to load each ``AUTO_CANDIDATES`` variant (called only when it is probed or chosen)."""
    def load(variant: str) -> Callable[[], Encoder]:
        return TorchEncoder if variant == "torch" else lambda: onnx_encoder(root, variant)

    return {variant: load(variant) for variant in AUTO_CANDIDATES}


def auto_signature() -> dict[str, Any]:
    """The CPU signature ``auto`` remembers its choice under (``choice.cpu_signature``)."""
    return cpu_signature(runtime=export_key(), cores=cpu_count(), runs=run_settings())


def auto_choice(root: Path, *, notify: Notify | None = None) -> tuple[AutoChoice, dict[str, Encoder]]:
    """This CPU's remembered choice in the encoder cache ``root``, or a probe of ``AUTO_CANDIDATES`` now.

    Returns the choice and the encoders the probe loaded (empty when it was remembered).
    """
    made, loaded = remembered_or_probed(
        Path(root), auto_signature(), _candidates(root), notify=notify or stderr_notice("Encoder probe")
    )
    return made, loaded  # type: ignore[return-value]  # the candidates are Encoders


def describe_encoder_choice(settings: Settings, current: str) -> str:
    """One line for ``paperbot doctor``: the encoder in use, and what ``auto`` measured on this CPU."""
    try:
        made = read_choice(settings.encoder_cache_dir, auto_signature())
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
