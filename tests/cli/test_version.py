"""``paperbot --version`` names the installed version; the licence pyproject.toml declares is in the tree."""

from __future__ import annotations

import tomllib
from importlib.metadata import version
from pathlib import Path

import pytest

from bot.cli import main

REPO = Path(__file__).resolve().parents[2]


def test_version_prints_the_installed_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out.strip() == f"paperbot {version('paperbot')}"


def test_the_declared_licence_has_its_file() -> None:
    declared = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["license"]["text"]
    assert (REPO / "LICENSE").read_text(encoding="utf-8").startswith(f"{declared} License")
