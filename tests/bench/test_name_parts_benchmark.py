"""``bench/name_parts.py`` over the 40 real publication lists: the export keeps every author's
family part as the source file had it, judged by pybtex.

The lists are read from ``../shared`` at run time (never copied into the tree): the test is
skipped, with the reason in pytest's summary, where they are absent.
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import pytest

from bench import name_parts

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared"
SCHOLARS = SHARED / name_parts.SCHOLARS

pytestmark = pytest.mark.skipif(not SCHOLARS.is_dir(), reason=f"{SCHOLARS} not found: the name benchmark needs it")


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], str, int]:
    out = tmp_path_factory.mktemp("bench-out") / "name_parts.json"
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(io.StringIO()):
        code = name_parts.main(["--shared", str(SHARED), "--out", str(out)])
    return json.loads(out.read_text(encoding="utf-8")), printed.getvalue(), code


def test_goal_every_name_keeps_the_family_part_the_source_file_had(run: tuple[dict[str, Any], str, int]) -> None:
    figures, output, code = run
    authors, editors = figures["authors_after"], figures["editors_after"]
    assert figures["files"] == 40 and authors["names"] > 9000 and editors["names"] > 900
    assert authors["kept"] == authors["names"], authors["mismatches"][:20]
    assert editors["kept"] == editors["names"], editors["mismatches"][:20]
    assert code == 0 and figures["goal_met"]
    assert "| authors: family part kept, after | 100.00 %" in output
    assert "| editors: family part kept, after | 100.00 %" in output


def test_the_figures_are_consistent_counts(run: tuple[dict[str, Any], str, int]) -> None:
    figures = run[0]
    for role in ("authors", "editors"):
        before, after = figures[f"{role}_before"], figures[f"{role}_after"]
        # the same names are judged before and after; before, particle names lost their family part
        assert before["names"] == after["names"] and before["kept"] < after["kept"]
        assert sum(m["count"] for m in before["mismatches"]) == before["names"] - before["kept"]
    assert {"source": "de Vos", "export": "Vos", "count": 45} in figures["authors_before"]["mismatches"]
    after = figures["authors_after"]
    # every list is judged but those BibTeX itself cannot read
    assert after["unaligned_lists"] == 0 and after["unreadable_lists"] <= 2
    assert 0 < after["vancouver_kept"] == after["vancouver"]


def test_the_source_reading_is_the_benchmarks_own() -> None:
    # decorations go by the bench's rules, then pybtex splits the name
    assert name_parts.without_decorations("<b>Shaden Smith</b> and Song*, J. and and Wu<sup>†</sup>, Z.") == (
        "Shaden Smith and Song, J. and Wu, Z.")
    names = name_parts.source_names("{de Vos}, Martijn and Venktesh V and Da San Martino, G. and others")
    assert names is not None
    assert [(n.family, n.vancouver) for n in names] == [("de Vos", False), ("Venktesh", True),
                                                        ("Da San Martino", False)]
    assert name_parts.source_names("A, B, C, D") is None  # too many commas: BibTeX cannot read it
