"""``bench/common.py``: what every benchmark relies on before it measures anything."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import common


def test_the_scratch_folder_is_made_on_first_use(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A fresh clone has no bench/out (git ignores it): a benchmark run without ``--out`` makes it."""
    fresh = tmp_path / "clone" / "bench" / "out"
    monkeypatch.setattr(common, "_OUT", [fresh])
    assert common.out_dir() == fresh
    assert fresh.is_dir()
