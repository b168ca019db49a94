"""Run a scholars benchmark as a user runs it: a subprocess on the shared ``--out`` folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.patience import patience

REPO = Path(__file__).resolve().parents[2]
SCHOLARS_REAL = REPO.parent / "shared" / "datasets" / "scholars-real"  # read at run time, never copied
needs_scholars_real = pytest.mark.skipif(not (SCHOLARS_REAL / "owners.json").exists(),
                                         reason=f"scholars-real not found at {SCHOLARS_REAL}: the benchmark needs it")


def run_scholars_bench(script: str, out: Path, json_name: str, *extra: str, timeout: float) -> tuple[dict, str]:
    """``python bench/<script> --reuse-index --out OUT --json OUT/<json_name> EXTRA...`` (offline, the
    index of the 40 lists reused from ``out``): its figures and what it printed. Fails the test with
    the end of what it printed and of stderr when it exits non-zero (a benchmark whose sides disagree
    says so in its table); waits ``patience(timeout)``."""
    path = out / json_name
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONWARNINGS": "ignore"}
    done = subprocess.run(
        [sys.executable, f"bench/{script}", "--reuse-index", "--out", str(out), "--json", str(path), *extra],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=patience(timeout),
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return json.loads(path.read_text(encoding="utf-8")), done.stdout
