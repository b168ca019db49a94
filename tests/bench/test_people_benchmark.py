"""``bench/people.py --quick --json``, run as a user runs it (a subprocess), checked for structure.

It reads the real publication lists of ``../shared/datasets/scholars-real`` (never copied into
the tree: the abstracts are their authors'), so it is skipped, with the reason printed in
pytest's summary, where that folder is absent. Invariants that hold for any correct policy,
then issue #12's goals for the new policy on the quick owners.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.bench.scholars_run import needs_scholars_real, run_scholars_bench

QUICK_OWNERS = 15

pytestmark = [
    pytest.mark.slow,
    needs_scholars_real,
]


@pytest.fixture(scope="module")
def run(scholars_bench_out: Path) -> tuple[dict, str]:
    # the --out folder is shared with the other scholars benchmark: one ingest of the 40 files
    return run_scholars_bench("people.py", scholars_bench_out, "people.json", "--quick", timeout=600)


def test_both_policies_are_reported_in_one_run(run):
    figures, output = run
    assert set(figures["policies"]) == {"baseline", "new"}
    assert figures["policies"]["baseline"]["clustering"] == "strict"
    assert figures["policies"]["new"]["clustering"] == "evidence"
    assert figures["quick"] is True and figures["owners"] == 40 and figures["scored_owners"] == QUICK_OWNERS
    for label in ("owners resolved", "mean precision", "mean recall", "namesake merges", "expert Recall@10",
                  "directory build"):
        assert label in output, label
    assert figures["ratios"]["directory_build_new_over_baseline"] > 0


def test_every_file_is_ingested_and_mapped_to_records(run):
    figures, _ = run
    assert figures["entries"] > 1_600  # every file ingested, even in --quick
    assert 0 < figures["ingest"]["records"] <= figures["entries"]
    assert figures["truth"]["unmapped"] == []
    assert sum(figures["truth"]["mapped"].values()) == figures["entries"]
    assert 0 < figures["truth"]["gold"] <= figures["entries"]


@pytest.mark.parametrize("policy", ["baseline", "new"])
def test_figures_are_shares_and_counts(run, policy):
    p = run[0]["policies"][policy]
    for key in ("resolved", "precision", "recall", "precision_resolved", "recall_resolved"):
        assert 0.0 <= p[key] <= 1.0, (key, p[key])
    # unresolved owners count as 0: the all-owner means cannot exceed the resolved-only ones
    assert p["precision"] <= p["precision_resolved"] + 1e-9 and p["recall"] <= p["recall_resolved"] + 1e-9
    experts = p["experts"]
    assert experts["queries"] > 0
    for rule in ("strict", "lenient"):
        assert 0.0 <= experts[rule]["mrr"] <= experts[rule]["recall_at_10"] <= 1.0
    assert experts["strict"]["recall_at_10"] <= experts["lenient"]["recall_at_10"]  # lenient counts more as found
    assert p["namesake_merges"] == len(p["merges"]) >= 0
    assert p["trap_violations"] >= 0 and p["traps"]
    assert p["et_al_people"] >= 0 and p["self_coauthorship"] >= 0
    assert p["directory_seconds"] > 0
    assert len(p["per_owner"]) == QUICK_OWNERS


@pytest.mark.parametrize("policy", ["baseline", "new"])
def test_per_owner_rows_are_consistent(run, policy):
    for row in run[0]["policies"][policy]["per_owner"]:
        assert 0.0 <= row["precision"] <= 1.0 and 0.0 <= row["recall"] <= 1.0
        if row["status"] != "resolved":
            assert row["returned"] == 0 and row["precision"] == row["recall"] == 0.0
        else:
            assert row["returned"] > 0
        assert row["others_with_this_name"] >= 0


def test_the_new_policy_meets_the_goals_on_the_quick_owners(run):
    """Issue #12's goals, on the namesake, trap and shared-paper owners (the hard ones)."""
    figures, _ = run
    new, baseline = figures["policies"]["new"], figures["policies"]["baseline"]
    assert new["resolved"] >= 0.95 and new["resolved"] > baseline["resolved"]
    assert new["precision"] >= 0.95 and new["recall"] >= 0.90
    assert new["namesake_merges"] == 0 and new["trap_violations"] == 0
    assert new["et_al_people"] == 0 and new["self_coauthorship"] == 0
    assert new["experts"]["strict"]["recall_at_10"] >= 0.82
