"""Without the optional ``plots`` extra (matplotlib), the pictures are refused or left out with
what to install; everything else works (``retrieval.scholars.plot_support``)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from retrieval.errors import ConfigError, NotInstalledError
from retrieval.scholars.plot_support import PLOTS_INSTALL, plots_missing, plotting_installed
from tests.cli.conftest import paperbot_here


@pytest.fixture
def no_matplotlib(monkeypatch: pytest.MonkeyPatch) -> None:
    """matplotlib as a machine without the extra sees it: not importable."""
    for name in [name for name in sys.modules if name == "matplotlib" or name.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError


def test_the_pictures_need_the_plots_extra_and_say_what_to_install(no_matplotlib: None) -> None:
    assert not plotting_installed()
    missing = plots_missing()
    assert isinstance(missing, NotInstalledError) and isinstance(missing, ConfigError)
    assert "matplotlib" in missing.user_message and missing.hint == f"Install it with: {PLOTS_INSTALL}"


def test_with_the_extra_installed_nothing_is_refused() -> None:
    assert plotting_installed()
    assert plots_missing() is None


def test_summarize_plot_fails_before_any_work_and_names_the_extra(no_matplotlib: None, tmp_path: Path) -> None:
    out = tmp_path / "pictures"
    run = paperbot_here("summarize", "Nobody Atall", "--plot", str(out), data_dir=tmp_path / "data")
    assert run.code == 2
    assert "matplotlib" in run.stderr and "paperbot[plots]" in run.stderr
    assert "No indexed scholar" not in run.stderr  # refused before the summary was looked for
    assert not out.exists()
