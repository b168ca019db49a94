"""The suite's log names the host it ran on and the encoder ``auto`` chose there (issue #27 item 1:
a pass or a failure is read together with the kind of CPU, docs/evidence.md "Host numerics")."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from retrieval.index.encoders.choice import cpu_model_and_flags
from tests.support.patience import TIME_SCALE, patience, time_scale

REPO = Path(__file__).resolve().parents[1]


def test_the_log_starts_with_the_host_and_its_simd() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PAPERBOT_"))}
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "0", "tests/test_docs.py"],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    model, flags = cpu_model_and_flags()
    header = next(line for line in done.stdout.splitlines() if line.startswith("paperbot host: "))
    assert model in header and f"{os.cpu_count()} cores" in header
    assert all(flag in header for flag in flags)
    assert any(kind in header for kind in ("AVX-512 with VNNI", "AVX-512 without VNNI", "AVX2, no AVX-512", "no AVX2"))
    assert "paperbot encoder: auto probed on first use; its choice is reported at the end" in done.stdout
    assert "paperbot encoder: auto chose" not in done.stdout  # nothing loaded the encoder: nothing is claimed
    assert "emulated" not in header


def test_an_emulated_run_says_so() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PAPERBOT_"))}
    env["PAPERBOT_TESTS_EMULATED_CPU"] = "qemu -cpu Haswell"
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "0", "tests/test_docs.py"],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    header = next(line for line in done.stdout.splitlines() if line.startswith("paperbot host: "))
    assert "emulated by qemu -cpu Haswell (the flags read are the real host's: " in header


def test_a_time_scale_lengthens_the_waits_and_a_bad_one_stops_the_session() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PAPERBOT_"))}
    args = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "0", "tests/test_docs.py"]
    scaled = subprocess.run(args, cwd=REPO, env={**env, "PAPERBOT_TESTS_TIME_SCALE": "2.5"},
                            capture_output=True, text=True, timeout=300)
    assert scaled.returncode == 0, scaled.stdout[-2000:] + scaled.stderr[-2000:]
    assert "paperbot waits: 2.5 times as long (PAPERBOT_TESTS_TIME_SCALE)" in scaled.stdout
    for bad in ("fast", "0.5", "nan", "inf"):
        refused = subprocess.run(args, cwd=REPO, env={**env, "PAPERBOT_TESTS_TIME_SCALE": bad},
                                 capture_output=True, text=True, timeout=300)
        assert refused.returncode == 4, (bad, refused.stdout[-1000:], refused.stderr[-1000:])  # a usage error
        assert f"PAPERBOT_TESTS_TIME_SCALE={bad!r}: expected a number of at least 1" in refused.stderr


def test_patience_multiplies_a_wait_by_the_scale(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(TIME_SCALE, raising=False)
    assert patience(20) == 20
    monkeypatch.setenv(TIME_SCALE, " ")
    assert patience(20) == 20
    monkeypatch.setenv(TIME_SCALE, "10")
    assert patience(20) == 200 and time_scale() == 10
