"""``retrieval.storage.atomic``: a replaced file is the old content or the new, never half of either."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from retrieval.storage.atomic import atomic_write, atomic_write_bytes, atomic_write_text
from tests.reliability.helpers import ROOT

OLD = "old content\n" * 100


def _leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".tmp"))


def test_writes_new_content_and_creates_the_directory(tmp_path: Path) -> None:
    target = tmp_path / "deeper" / "manifest.json"
    atomic_write_text(target, '{"ok": true}')
    assert target.read_text(encoding="utf-8") == '{"ok": true}'
    atomic_write_bytes(target, b"\x00\x01binary")
    assert target.read_bytes() == b"\x00\x01binary"
    assert _leftovers(target.parent) == []


def test_a_failing_writer_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "roster.json"
    target.write_text(OLD, encoding="utf-8")

    def half_then_fail(tmp: Path) -> None:
        tmp.write_text("half of the new cont", encoding="utf-8")
        raise RuntimeError("exporter crashed")

    with pytest.raises(RuntimeError, match="exporter crashed"):
        atomic_write(target, half_then_fail)
    assert target.read_text(encoding="utf-8") == OLD
    assert _leftovers(tmp_path) == []


def test_the_file_and_then_its_directory_are_flushed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    flushed: list[str] = []
    real_fsync = os.fsync

    def recording_fsync(fd: int) -> None:
        flushed.append(os.readlink(f"/proc/self/fd/{fd}"))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", recording_fsync)
    target = tmp_path / "model.onnx"
    atomic_write_text(target, "weights")
    assert len(flushed) == 2
    assert Path(flushed[0]).parent == tmp_path and flushed[0].endswith(".tmp")  # the data, before the rename
    assert Path(flushed[1]) == tmp_path  # the rename itself
    flushed.clear()
    atomic_write_text(target, "cache", durable=False)
    assert flushed == []


def test_disk_full_midway_keeps_the_old_file(tmp_path: Path) -> None:
    """A real failed write: a child process may not grow files past 64 KiB (EFBIG, as on ENOSPC)."""
    target = tmp_path / "index.bin"
    target.write_text(OLD, encoding="utf-8")
    child = textwrap.dedent(f"""
        import resource, signal, sys
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (65536, 65536))
        from pathlib import Path
        from retrieval.storage.atomic import atomic_write_bytes
        try:
            atomic_write_bytes(Path({str(target)!r}), b"x" * 1_000_000)
        except OSError as exc:
            print(exc.errno)
            sys.exit(3)
    """)
    run = subprocess.run([sys.executable, "-c", child], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert run.returncode == 3, run.stderr
    assert run.stdout.strip() == "27"  # EFBIG
    assert target.read_text(encoding="utf-8") == OLD
    assert _leftovers(tmp_path) == []
