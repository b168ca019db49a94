"""The paraphrase and near-miss development sets (``bench/check_question_sets.py``).

Their shape (keys, kinds, ids, gold form, agreed sizes) is checked without the data. Resolving
every gold reference and the no-shared-title-term rule need ``../shared/datasets`` (the 40
publication lists and SciFact, never copied into the tree); without it that test is skipped,
with the reason printed in pytest's summary.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bench import check_question_sets as sets_check

REPO = Path(__file__).resolve().parents[2]
DATA = REPO.parent / "shared" / "datasets"
MINIMUM = {"paraphrase_questions": 70, "near_miss_questions": 45}

needs_data = pytest.mark.skipif(
    not ((DATA / "scholars-real" / "owners.json").exists() and (DATA / "scifact" / "corpus.jsonl.gz").exists()),
    reason=f"scholars-real and scifact not found under {DATA}: resolving the gold needs them",
)


def test_both_sets_have_their_shape_and_agreed_sizes() -> None:
    sets = sets_check.load_sets()
    assert set(sets) == set(MINIMUM)
    for name, least in MINIMUM.items():
        assert len(sets[name]) >= least, name
    assert sets_check.shape_problems(sets) == []


def test_paraphrase_gold_mixes_both_corpora_and_many_owners() -> None:
    gold = [ref for row in sets_check.load_sets()["paraphrase_questions"] for ref in row["gold"]]
    assert sum("scifact" in ref for ref in gold) >= 10
    assert len({ref["owner"] for ref in gold if "owner" in ref}) >= 25


def test_the_shape_check_reports_what_it_should() -> None:
    sets: dict[str, list[dict[str, Any]]] = {
        "paraphrase_questions": [
            {"id": "p001", "kind": "topic", "question": "a", "filters": {}, "gold": []},
            {"id": "p001", "kind": "topic", "question": "b", "filters": {}, "gold": [{"owner": "x"}]},
        ],
        "near_miss_questions": [
            {"id": "n001", "kind": "topic", "question": "c", "filters": {"since": 2020}, "gold": [{"scifact": "1"}]},
            {"id": "n002", "kind": "unanswerable", "question": "d", "gold": []},
        ],
    }
    problems = "\n".join(sets_check.shape_problems(sets))
    for expected in ("id p001 repeated", "0 gold papers", "must be {owner, key} or {scifact}",
                     "kind 'topic', expected 'unanswerable'", "filters must be {}", "has gold", "n002: keys"):
        assert expected in problems


@needs_data
def test_every_gold_resolves_and_no_question_shares_a_title_term() -> None:
    assert sets_check.check(DATA) == []
