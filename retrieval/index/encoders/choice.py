"""What ``PAPERBOT_ENCODER=auto`` means on this machine: measured once per CPU, then remembered.

The speed of each encoder variant depends on the CPU: int8 gains come from integer dot-product
instructions (AVX-512 VNNI, AVX-VNNI, AMX) and torch's batching from the cores it gets, so a
table measured on one host does not carry to another. At the first ``auto`` load on a machine
(``retrieval.index.encoders.loading.load_encoder``), ``probe`` times every candidate on the same bundled
texts in interleaved rounds, compares each one's vectors with the reference's (torch) on those
texts, and ``select`` keeps the fastest whose vectors meet ``QUALITY_BAR``. The outcome is
written atomically as JSON to ``<encoder cache dir>/auto-choice-<signature digest>.json``, beside
the ONNX exports in the machine's encoder cache (``retrieval.index.encoders.cache``), so every
data dir shares the choice.

The signature (``cpu_signature``) is the CPU model, its SIMD instruction flags, the cores this
process may use, the runtime (model weights, torch and onnxruntime versions, export recipe)
and how the candidates are run (sessions, threads, batches): another CPU, another core count, an
upgrade or a new way of running a variant gets a new file and a new probe. A file
that cannot be read, or whose signature differs from the current one, is re-probed with a
warning, never trusted and never a crash.

An index keeps the encoder that made its vectors whatever ``auto`` would choose: the caller
asks for a choice only when no index says otherwise (``load_encoder(..., indexed=...)``).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import platform
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from filelock import FileLock

from retrieval.storage.atomic import atomic_write_text

log = logging.getLogger(__name__)

REFERENCE = "torch"  # the variant every other one is compared with
CHOICE_VERSION = 1  # bump when the file layout or the selection rule changes (old files are re-probed)
PROBE_TEXTS = 24  # texts of the bundled sample corpus, spread over its lengths
PROBE_ROUNDS = 3  # interleaved rounds; the median of each candidate's rounds counts
# SIMD extensions that decide which kernels onnxruntime and torch can use.
_FLAG_PREFIXES = ("avx", "amx", "sse4", "fma", "f16c", "vnni")


class ProbeEncoder(Protocol):
    """What the probe needs of an encoder (``retrieval.index.encoders.base.Encoder`` fits)."""

    name: str

    def encode(self, texts: Sequence[str]) -> np.ndarray: ...


Notify = Callable[[str], None]


@dataclass(frozen=True)
class QualityBar:
    """How close to the reference a candidate's vectors must stay, as cosines on the probe texts.

    Justified by SciFact (``docs/encoders.md``): per-channel int8 (cosine to torch about 0.995
    mean, 0.99 min) keeps dense nDCG@10 within 0.001 of torch, while per-tensor int8 (0.94 mean,
    0.87 min) loses 0.013, more than the 0.005 the project allows.
    """

    mean: float = 0.99
    min: float = 0.97

    def admits(self, result: ProbeResult) -> bool:
        return result.cosine_mean >= self.mean and result.cosine_min >= self.min


QUALITY_BAR = QualityBar()


@dataclass(frozen=True)
class ProbeResult:
    """One candidate on the probe texts: its speed and its vectors' cosine to the reference."""

    variant: str
    encoder_name: str
    texts_per_second: float
    cosine_mean: float
    cosine_min: float


@dataclass
class AutoChoice:
    """The remembered outcome of one probe (the JSON file's content)."""

    variant: str
    signature: dict[str, Any]
    results: list[ProbeResult]
    bar: QualityBar = QUALITY_BAR
    probed_at: str = ""
    load_average: float | None = None
    probe_texts: int = 0
    version: int = CHOICE_VERSION
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, sort_keys=True) + "\n"

    @classmethod
    def from_json(cls, text: str) -> AutoChoice:
        """Parse a choice file; ``ValueError`` (or ``KeyError``/``TypeError``) when it is not one."""
        raw = json.loads(text)
        if not isinstance(raw, dict) or raw.get("version") != CHOICE_VERSION:
            raise ValueError(f"not a version {CHOICE_VERSION} choice file")
        results = [ProbeResult(**entry) for entry in raw["results"]]
        choice = cls(
            variant=str(raw["variant"]), signature=dict(raw["signature"]), results=results,
            bar=QualityBar(**raw["bar"]), probed_at=str(raw.get("probed_at", "")),
            load_average=raw.get("load_average"), probe_texts=int(raw.get("probe_texts", 0)),
            notes=list(raw.get("notes", [])),
        )
        if choice.variant not in {r.variant for r in results}:
            raise ValueError(f"the chosen variant {choice.variant!r} is not among the probed ones")
        return choice

    def describe(self) -> str:
        """One line for ``paperbot doctor``: what was chosen, on which CPU, from which figures."""
        signature = self.signature
        flags = " ".join(signature.get("flags", [])) or "no SIMD flags read"
        reference = next((r for r in self.results if r.variant == REFERENCE), None)
        figures = []
        for result in sorted(self.results, key=lambda r: -r.texts_per_second):
            ratio = f" ({result.texts_per_second / reference.texts_per_second:.2f}x)" if reference else ""
            quality = "" if result.variant == REFERENCE else (
                f", cosine {result.cosine_mean:.4f}/{result.cosine_min:.4f}"
                + ("" if self.bar.admits(result) else " below the bar"))
            figures.append(f"{result.variant} {result.texts_per_second:.1f}/s{ratio}{quality}")
        load = f", load average {self.load_average:.1f}" if self.load_average is not None else ""
        return (f"Encoder auto choice on this CPU: {self.variant} (probed {self.probed_at}{load}; "
                f"{signature.get('cpu', '?')}, {signature.get('cores', '?')} cores, {flags}): "
                + "; ".join(figures) + f". Bar: cosine to {REFERENCE} mean >= {self.bar.mean}, "
                f"min >= {self.bar.min} on {self.probe_texts} texts.")


# The rule ------------------------------------------------------------------------------------


def select(results: Sequence[ProbeResult], bar: QualityBar = QUALITY_BAR) -> str:
    """The fastest variant whose vectors meet ``bar``; the reference always qualifies.

    Raises ``ValueError`` when ``results`` is empty.
    """
    if not results:
        raise ValueError("no probe results to choose from")
    admitted = [r for r in results if r.variant == REFERENCE or bar.admits(r)]
    if not admitted:  # no reference measured and nobody passes: the most faithful one
        return max(results, key=lambda r: (r.cosine_min, r.cosine_mean)).variant
    return max(admitted, key=lambda r: r.texts_per_second).variant


# The signature -------------------------------------------------------------------------------


def cpu_model_and_flags(cpuinfo: str | None = None) -> tuple[str, list[str]]:
    """CPU model name and its SIMD flags (``_FLAG_PREFIXES``), from ``/proc/cpuinfo`` when present."""
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
        except OSError:
            cpuinfo = ""
    model, flags = "", ""
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        key = key.strip().lower()
        if key == "model name" and not model:
            model = value.strip()
        elif key in ("flags", "features") and not flags:  # x86 says flags, ARM says Features
            flags = value
    relevant = sorted({f for f in flags.split() if f.startswith(_FLAG_PREFIXES)})
    return model or platform.processor() or platform.machine() or "unknown CPU", relevant


def cpu_signature(runtime: str, cores: int, cpuinfo: str | None = None, *, runs: str = "") -> dict[str, Any]:
    """What a remembered choice is valid for: CPU model, SIMD flags, cores, the runtime digest and
    how the candidates are run (``runs``: their sessions and batches, which decide their speed)."""
    model, flags = cpu_model_and_flags(cpuinfo)
    return {"cpu": model, "flags": flags, "cores": cores, "machine": platform.machine(), "runtime": runtime,
            "runs": runs}


def signature_digest(signature: Mapping[str, Any]) -> str:
    return hashlib.sha256(json.dumps(signature, sort_keys=True).encode("utf-8")).hexdigest()[:16]


def choice_path(folder: Path, signature: Mapping[str, Any]) -> Path:
    """The choice file of ``signature`` in ``folder`` (the encoder cache dir)."""
    return Path(folder) / f"auto-choice-{signature_digest(signature)}.json"


# Remembering ---------------------------------------------------------------------------------


def read_choice(folder: Path, signature: Mapping[str, Any]) -> AutoChoice | None:
    """The remembered choice for ``signature``; None when absent, unreadable or for another signature.

    An unreadable file is logged as a warning (the caller probes again and replaces it).
    """
    path = choice_path(folder, signature)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as exc:
        log.warning("Cannot read the encoder choice %s (%s); measuring again.", path, exc)
        return None
    try:
        choice = AutoChoice.from_json(text)
    except (ValueError, KeyError, TypeError) as exc:
        log.warning("The encoder choice %s is unreadable (%s); measuring again.", path, exc)
        return None
    if choice.signature != dict(signature):
        log.warning("The encoder choice %s was made for another CPU or runtime; measuring again.", path)
        return None
    return choice


def write_choice(folder: Path, choice: AutoChoice) -> Path:
    """Save ``choice`` atomically (readers see the old file or the new one, never half)."""
    path = choice_path(folder, choice.signature)
    atomic_write_text(path, choice.to_json())
    return path


# Measuring -----------------------------------------------------------------------------------


def probe_texts(count: int = PROBE_TEXTS) -> list[str]:
    """``count`` title + abstract texts of the bundled sample corpus, spread over its lengths.

    Bundled with the package (CC0 arXiv metadata), so the probe needs no network and no dataset.
    """
    lines = resources.files("retrieval.sample").joinpath("arxiv_sample.jsonl").read_text(encoding="utf-8")
    texts = []
    for line in lines.splitlines():
        if line.strip():
            row = json.loads(line)
            title, abstract = str(row.get("title") or "").strip(), str(row.get("abstract") or "").strip()
            if title:
                texts.append(f"{title}. {abstract}" if abstract else title)
    by_length = sorted(texts, key=len)
    step = max(1, len(by_length) // count)
    return by_length[step // 2 :: step][:count]


def _cosines(vectors: np.ndarray, reference: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1) * np.linalg.norm(reference, axis=1)
    return np.sum(vectors * reference, axis=1) / np.maximum(norms, 1e-12)


def measure(
    encoders: Mapping[str, ProbeEncoder],
    texts: Sequence[str],
    *,
    rounds: int = PROBE_ROUNDS,
    notify: Notify | None = None,
    clock: Callable[[], float] = time.perf_counter,
) -> list[ProbeResult]:
    """Time every encoder on ``texts`` in interleaved rounds; cosines to ``encoders[REFERENCE]``.

    Interleaving makes other load on the machine hit every candidate alike. Without a reference,
    cosines are 1 (nothing to compare with).
    """
    seconds: dict[str, list[float]] = {variant: [] for variant in encoders}
    vectors: dict[str, np.ndarray] = {}
    for encoder in encoders.values():
        encoder.encode(texts[:2])  # warm-up: first-run allocations are not the steady state
    for n in range(rounds):
        for variant, encoder in encoders.items():
            if notify:
                notify(f"round {n + 1}/{rounds}: {variant}")
            start = clock()
            out = np.asarray(encoder.encode(texts), dtype=np.float32)
            seconds[variant].append(max(clock() - start, 1e-9))
            vectors.setdefault(variant, out)
    reference = vectors.get(REFERENCE)
    results = []
    for variant, encoder in encoders.items():
        cosines = _cosines(vectors[variant], reference) if reference is not None else np.ones(len(texts))
        results.append(ProbeResult(
            variant=variant, encoder_name=encoder.name,
            texts_per_second=round(len(texts) / statistics.median(seconds[variant]), 2),
            cosine_mean=round(float(cosines.mean()), 6), cosine_min=round(float(cosines.min()), 6),
        ))
    return results


def _load_average() -> float | None:
    try:
        return round(os.getloadavg()[0], 2)
    except (OSError, AttributeError):
        return None


def remembered_or_probed(
    folder: Path,
    signature: Mapping[str, Any],
    candidates: Mapping[str, Callable[[], ProbeEncoder]],
    *,
    notify: Notify | None = None,
    texts: Sequence[str] | None = None,
    rounds: int = PROBE_ROUNDS,
) -> tuple[AutoChoice, dict[str, ProbeEncoder]]:
    """The choice for ``signature``: read from ``folder``, or measured now and written there.

    ``candidates`` maps a variant to a function loading its encoder (called only when probing).
    A candidate whose loading fails is left out with a note. Returns the choice and the
    encoders loaded for the probe (empty when the choice was remembered), so the caller can
    reuse the chosen one. One process probes at a time (a file lock in ``folder``); the others
    then read its result.
    """
    remembered = read_choice(folder, signature)
    if remembered is not None:
        return remembered, {}
    Path(folder).mkdir(parents=True, exist_ok=True)
    with FileLock(str(choice_path(folder, signature).with_suffix(".lock"))):
        remembered = read_choice(folder, signature)
        if remembered is not None:
            return remembered, {}
        say = notify or (lambda message: None)
        texts = list(texts) if texts is not None else probe_texts()
        say(f"choosing the fastest accurate encoder for this CPU (once per CPU; {len(candidates)} candidates, "
            f"{len(texts)} texts x {rounds} rounds)")
        loaded: dict[str, ProbeEncoder] = {}
        notes: list[str] = []
        for variant, load in candidates.items():
            say(f"preparing {variant}")
            try:
                loaded[variant] = load()
            except Exception as exc:  # noqa: BLE001 - an unusable candidate is simply not chosen
                notes.append(f"{variant} unavailable: {type(exc).__name__}: {exc}")
                log.warning("Encoder candidate %s unavailable (%s).", variant, exc)
        if not loaded:
            raise RuntimeError("no encoder candidate could be loaded: " + "; ".join(notes))
        results = measure(loaded, texts, rounds=rounds, notify=say)
        choice = AutoChoice(
            variant=select(results), signature=dict(signature), results=results,
            probed_at=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
            load_average=_load_average(), probe_texts=len(texts), notes=notes,
        )
        try:
            path = write_choice(folder, choice)
            say(f"chose {choice.variant}; remembered in {path}")
        except OSError as exc:  # still usable for this process; the next one measures again
            log.warning("Cannot save the encoder choice in %s (%s).", folder, exc)
        return choice, loaded


def host_description(cores: int | None = None) -> str:
    """The host in one line, for benchmark output: CPU model, cores, SIMD flags, load averages."""
    model, flags = cpu_model_and_flags()
    try:
        load = "load average " + " / ".join(f"{x:.2f}" for x in os.getloadavg()) + " (1/5/15 min)"
    except (OSError, AttributeError):
        load = "load average unknown"
    count = cores if cores is not None else len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return f"{model}, {count} cores, {' '.join(flags) or 'no SIMD flags read'}; {load}"
