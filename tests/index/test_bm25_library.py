"""bm25s imported without SciPy (``retrieval/index/bm25_library.py``): it works as on an installation
without SciPy, and SciPy stays importable for anything else. Each check runs in a fresh interpreter,
so that modules the test session imported do not count."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.support.patience import patience

ROOT = Path(__file__).resolve().parents[2]

CHECK = textwrap.dedent('''
    import json, sys, tempfile

    from retrieval.index.bm25_library import bm25s

    report = {"scipy_imported": "scipy" in sys.modules, "scipy_available": bm25s.SCIPY_AVAILABLE,
              "default_backend": bm25s.BM25().csc_backend}
    corpus = [["diffusion", "models", "molecules"], ["graph", "neural", "networks"], ["diffusion", "graph"]]
    retriever = bm25s.BM25(k1=0.9, b=0.4)
    retriever.index(corpus, show_progress=False)
    with tempfile.TemporaryDirectory() as folder:
        retriever.save(folder)
        loaded = bm25s.BM25.load(folder)
    report["scores"] = [round(float(s), 6) for s in loaded.get_scores(["diffusion", "graph"])]
    report["same_scores"] = [float(s) for s in retriever.get_scores(["diffusion"])] == [
        float(s) for s in loaded.get_scores(["diffusion"])]
    report["scipy_after_bm25s"] = "scipy" in sys.modules
    import scipy.sparse  # still importable for anything else
    report["scipy_later"] = scipy.sparse.csc_matrix([[1.0]]).shape == (1, 1)
    print(json.dumps(report))
''')


def test_bm25s_is_imported_and_used_without_scipy() -> None:
    run = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True, timeout=patience(120), cwd=ROOT)
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout.splitlines()[-1])
    assert report["scipy_imported"] is False and report["scipy_available"] is False
    assert report["default_backend"] == "numpy"  # the backend bm25s builds with unless told otherwise
    assert report["same_scores"] is True and report["scipy_after_bm25s"] is False
    assert report["scores"][1] > 0 and report["scores"][2] > report["scores"][0] > 0
    assert report["scipy_later"] is True
