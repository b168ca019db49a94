"""The suite's log names the host it ran on and the encoder ``auto`` chose there (issue #27 item 1:
a pass or a failure is read together with the kind of CPU, docs/evidence.md "Host numerics")."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from retrieval.index.encoders.choice import cpu_model_and_flags

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
