"""The one import of ``bm25s``, made without SciPy: ``from retrieval.index.bm25_library import bm25s``.

bm25s imports ``scipy.sparse`` whenever SciPy is installed (``bm25s.SCIPY_AVAILABLE``), for one
way of building its score matrix (``BM25(csc_backend="scipy")``) that paperbot never asks for:
``BM25`` builds with ``csc_backend="numpy"`` unless told otherwise, loading and scoring a saved
index use numpy alone, and paperbot computes its own matrices (``lexical._bm25_index``). SciPy
is the largest import of a query's process after Chroma (it imports much of its own array
machinery), so bm25s is imported here with ``scipy`` hidden: a ``None`` in ``sys.modules`` makes
``import scipy.sparse`` raise ``ImportError``, which bm25s catches, and the entries are put back
at once, so that SciPy stays importable for anything else. bm25s' public API then behaves as it
does on an installation without SciPy, which it supports.

``tests/index/test_bm25_library.py`` fails when a release of bm25s stops working without SciPy
or starts to need it, and ``tests/cli/test_import_cost.py`` when a query imports SciPy again.
"""

from __future__ import annotations

import sys
import threading
from types import ModuleType
from typing import TYPE_CHECKING

_HIDDEN = ("scipy", "scipy.sparse")
_LOCK = threading.Lock()


def _import_without_scipy() -> ModuleType:
    with _LOCK:
        if "bm25s" in sys.modules:
            return sys.modules["bm25s"]
        kept = {name: sys.modules[name] for name in _HIDDEN if name in sys.modules}
        for name in _HIDDEN:
            sys.modules[name] = None  # type: ignore[assignment]  # ``import`` raises ImportError
        try:
            import bm25s as library
        finally:
            for name in _HIDDEN:
                del sys.modules[name]
            sys.modules.update(kept)
        return library


if TYPE_CHECKING:
    import bm25s as bm25s
else:
    bm25s = _import_without_scipy()
