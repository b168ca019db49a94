"""``bench/acronym_bridging.py --json``, run as a user runs it (a subprocess): does a query worded
one way (an acronym, or its long form) find the record worded the other, over the 40 real lists?

Reads ``../shared/datasets/scholars-real`` (never copied), so it is skipped, with the reason,
where that folder is absent. Nothing in the bridging was tuned on these queries; both halves are
asserted: with acronyms read both ways, the record is first at least as often and its reciprocal
rank is higher (docs/performance.md, "Acronyms read both ways").
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.bench.scholars_run import needs_scholars_real, run_scholars_bench

pytestmark = [pytest.mark.slow, needs_scholars_real]


@pytest.fixture(scope="module")
def figures(scholars_bench_out: Path) -> dict:
    # the --out folder is shared with the other scholars benchmarks: one ingest of the 40 files
    figures, stdout = run_scholars_bench("acronym_bridging.py", scholars_bench_out, "acronym-bridging.json",
                                         timeout=600)
    assert "Queries: acronym -> long form." in stdout and "Median per query:" in stdout
    return figures


def test_each_query_rewrites_one_concept_of_a_records_title(figures):
    rows = figures["rows"]
    assert len(rows) > 200 and figures["defined"] > 100
    assert {row["direction"] for row in rows} == {"acronym -> long form", "long form -> acronym"}
    assert {row["half"] for row in rows} == {"tune", "held-out"}
    for row in rows:
        assert row["query"] != row["title"]
        assert (row["long_form"].lower() in row["query"].lower()) == (row["direction"] == "acronym -> long form")


@pytest.mark.parametrize("half", ["tune", "held-out", "all"])
def test_reading_acronyms_both_ways_finds_the_record_first_more_often(figures, half):
    both = figures["results"]["both"][half]
    on, off = both["on"], both["off"]
    assert on["queries"] == off["queries"] > 100
    assert on["recall_at_1"] >= off["recall_at_1"]
    assert on["mrr"] > off["mrr"]
    assert on["recall_at_10"] >= 0.99
