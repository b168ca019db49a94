"""``bench/experts_scholars.py --json``, run as a user runs it (a subprocess): whose held-out
abstract is this, over the 40 real publication lists.

It reads ``../shared/datasets/scholars-real`` (never copied into the tree: the abstracts are their
authors'), so it is skipped, with the reason printed in pytest's summary, where that folder is
absent. The report's structure, then issue #27 item 6 on the *held-out* half only (the ranking's
constants were shaped on the tuning half, ``bench.common.split_half``): the issue's MRR goal
(0.80) is asserted, it is met (docs/performance.md: 0.817 on held-out abstracts); its Recall@10
goal (0.95) is not (0.910). Then the work similarity and the hubness discount against the
rankings without them, and the issue's two example topics. Last, ``bench/expert_ranking_speed.py
--quick`` over the same index: its baselines give the new code's results; and ``bench/topic_coverage.py``
(how often collaborators flags a topic as not covered, held-out halves).

The figures depend on the encoder ``auto`` chooses, which depends on the host: int8 here (AVX-512
VNNI), int8 with other numerics on an AVX2-only CPU, or float32 where that probes fastest
(docs/evidence.md, "Host numerics"). Each floor sits under the lowest of the three measurements
(docs/performance.md, "Expert finding": int8 here, float32, int8 on an emulated AVX2 CPU) by at
least the largest change of that figure between two of them (for Recall@10 of held-out abstracts,
two queries of 89).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.bench.scholars_run import needs_scholars_real, run_scholars_bench

HALVES = ("tune", "held-out", "all")
PAPERBOT, PREVIOUS = "paperbot collaborators", "previous: sum over ranks"
WITHOUT_HUBS = "without the hubness discount (round 2)"
EVIDENCE_ONLY = "without work similarity (round 1)"

pytestmark = [
    pytest.mark.slow,
    needs_scholars_real,
]


@pytest.fixture(scope="module")
def figures(scholars_bench_out: Path) -> dict:
    # the --out folder is shared with the other scholars benchmarks: one ingest of the 40 files
    figures, stdout = run_scholars_bench("experts_scholars.py", scholars_bench_out, "experts-scholars.json", timeout=900)
    assert "Query: the held-out record's abstract." in stdout
    return figures


def test_every_query_is_in_one_half_and_counted_once(figures):
    rows = figures["rows"]
    assert figures["queries"] == len(rows) > 150 and figures["owners_asked"] >= 20
    assert len({(r["slug"], r["record_id"]) for r in rows}) == len(rows)  # held out once, in one fold
    assert {r["half"] for r in rows} == {"tune", "held-out"}
    for mode in ("abstract", "title"):
        counts = {half: figures["results"][mode][half][PAPERBOT]["queries"] for half in HALVES}
        assert counts["tune"] + counts["held-out"] == counts["all"] == len(rows)
        for half in HALVES:
            for scores in figures["results"][mode][half].values():
                assert 0.0 <= scores["mrr"] <= 1.0 and 0.0 <= scores["recall_at_10"] <= 1.0


def test_held_out_abstracts_find_their_owner(figures):
    held = figures["results"]["abstract"]["held-out"]
    assert held[PAPERBOT]["recall_at_10"] >= 0.86  # int8 0.910, float32 0.888, int8 AVX2 0.910; the goal, 0.95, is not met
    assert held[PAPERBOT]["mrr"] >= 0.80  # the issue's goal; 0.817, 0.817, 0.821
    assert held[PAPERBOT]["mrr"] >= held[PREVIOUS]["mrr"] + 0.05  # against 0.713, 0.704, 0.708


def test_the_work_similarity_loses_no_owner_to_the_retrieved_papers_alone(figures):
    abstract, title = (figures["results"][mode]["held-out"] for mode in ("abstract", "title"))
    # Recall@10 / MRR, int8 | float32 | int8 AVX2: abstracts 0.876 / 0.807 against 0.865 / 0.809 |
    # 0.865 / 0.813 against 0.865 / 0.808 | 0.876 / 0.813 against 0.865 / 0.808; titles 0.843 against
    # 0.798 | 0.831 against 0.787 | 0.820 against 0.798 (a gain of four, four and two queries)
    assert abstract[WITHOUT_HUBS]["recall_at_10"] >= abstract[EVIDENCE_ONLY]["recall_at_10"] - 0.012
    assert abstract[WITHOUT_HUBS]["mrr"] >= abstract[EVIDENCE_ONLY]["mrr"] - 0.015
    assert title[WITHOUT_HUBS]["recall_at_10"] >= title[EVIDENCE_ONLY]["recall_at_10"]


def test_the_hubness_discount_finds_more_owners_of_abstracts(figures):
    abstract, title = (figures["results"][mode]["held-out"] for mode in ("abstract", "title"))
    # int8 | float32 | int8 AVX2: abstracts 0.910 / 0.817 against 0.876 / 0.807 | 0.888 / 0.817
    # against 0.865 / 0.813 | 0.910 / 0.821 against 0.876 / 0.813 (three, two and three more owners);
    # titles 0.831 against 0.843 | 0.820 against 0.831 | 0.809 against 0.820
    assert abstract[PAPERBOT]["recall_at_10"] >= abstract[WITHOUT_HUBS]["recall_at_10"] + 0.011
    assert abstract[PAPERBOT]["mrr"] >= abstract[WITHOUT_HUBS]["mrr"] - 0.01
    assert title[PAPERBOT]["recall_at_10"] >= title[WITHOUT_HUBS]["recall_at_10"] - 0.03


def test_the_issue_examples_rank_the_specific_expert_first(figures):
    ranks = {ex["topic"]: ex for ex in figures["examples"]}
    neologisms = ranks["neologisms and language change"]
    moe = ranks["mixture-of-experts inference on GPUs"]
    assert neologisms["owner"] == "Maria Ryskina" and neologisms["rank"] == 1
    assert moe["owner"] == "Martijn de Vos" and moe["rank"] == 1
    # the many-weak-matches winners of the issue are out of the top three
    assert not {t["name"] for t in neologisms["top"]} & {"Jindong Wang", "Yidong Wang"}
    assert not {t["name"] for t in moe["top"]} & {"Stefano Ermon", "Aditya Grover"}


def test_the_ranking_speed_bench_gives_the_baselines_results(scholars_bench_out: Path):
    """``bench/expert_ranking_speed.py --quick`` on the same index: each timed side gives the same
    people in the same order with the same scores, and the same records, as the new code (the
    figures themselves are in docs/performance.md; no time is asserted)."""
    figures, stdout = run_scholars_bench("expert_ranking_speed.py", scholars_bench_out, "ranking-speed.json", "--quick",
                                         timeout=600)
    sides = {(row["task"], row["side"]) for row in figures["rows"]}
    assert sides == {("people through their papers", "baseline"), ("people through their papers", "new"),
                     ("reading records", "baseline"), ("reading records", "new"),
                     ("reading records", "full validation")}
    assert figures["queries"] == 30 and all(row["same_result"] and row["median_s"] > 0 for row in figures["rows"])
    assert "| people through their papers | baseline |" in stdout and "Host at end: " in stdout


@pytest.fixture(scope="module")
def coverage(scholars_bench_out: Path) -> dict:
    """``bench/topic_coverage.py --json`` on the same index: how often collaborators flags a topic
    as not covered, on covered topics and on near misses."""
    figures, stdout = run_scholars_bench("topic_coverage.py", scholars_bench_out, "topic-coverage.json", timeout=900)
    assert "| experts titles |" in stdout and "| near misses |" in stdout
    return figures


def test_collaborators_rarely_flag_a_covered_topic_and_flag_a_third_of_near_misses(coverage):
    """Held-out halves (the cut was chosen on the tuning halves): measured 0.035 of 142 covered
    topics flagged (titles 0.045, paraphrases 0.036, topic and mixed questions 0) and 0.353 of 34
    topics the index does not cover; at ask's own cut, 0.289 of the covered ones would be."""
    results = coverage["results"]
    assert coverage["cut"] == 0.1 and {row["half"] for row in coverage["rows"]} == {"tune", "held-out"}
    covered, uncovered = results["all covered"]["held-out"], results["all not covered"]["held-out"]
    assert covered["queries"] >= 130 and uncovered["queries"] >= 30
    assert covered["flagged"] <= 0.10 and results["scholars topic"]["held-out"]["flagged"] == 0.0
    assert uncovered["flagged"] >= 0.25
    assert covered["flagged_at_answer_cut"] >= covered["flagged"] + 0.15  # why a notice needs its own cut
