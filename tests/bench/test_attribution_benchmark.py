"""``bench/attribution.py`` on the 40 real publication lists, checked against its goals.

It parses the files under ``../shared`` (never copied into the tree) and loads no model, so it
is fast; skipped, with the reason, where they are absent.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.attribution import evidence_sets, measure, owner_papers

DATA = Path(__file__).resolve().parents[3] / "shared" / "datasets" / "scholars-real"

pytestmark = pytest.mark.skipif(not (DATA / "owners.json").exists(),
                                reason=f"{DATA} not found: the attribution benchmark reads real publication lists")


@pytest.fixture(scope="module")
def figures() -> dict:
    sets = [s for papers in owner_papers(DATA).values() for s in evidence_sets(papers, 8, 4)]
    return measure(sets)


def test_correct_citations_are_almost_never_dropped(figures: dict) -> None:
    assert figures["correct_sentences"] > 3000
    assert figures["false_drops"] < 0.01


def test_shifted_citations_of_titles_are_caught(figures: dict) -> None:
    rows = figures["rows"]
    assert rows["title/shifted"]["flagged"] / rows["title/shifted"]["sentences"] > 0.9
    assert figures["shifted_lists_rejected"] > 0.95 and figures["correct_lists_rejected"] < 0.02
