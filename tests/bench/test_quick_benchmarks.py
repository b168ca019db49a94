"""The retrieval benchmarks' ``--quick`` modes, run as a user runs them (a subprocess each).

They read SciFact from ``../shared/datasets`` (never copied into the tree: CC BY-NC), so they
are skipped, with the reason printed in pytest's summary, where that folder is absent. Both
share one scratch ``--out`` folder, so the second reuses the embeddings the first computed.

The speed bench serves a 200-record index (``--sizes 200``) instead of ``--quick``'s 1,000: what
is checked is the report (the indexing rows, the overhead, a latency row served by its own
process), not the figures of a size, and encoding the 1,000 base records was 30 s of CPU.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.model_cache import link_model_cache

REPO = Path(__file__).resolve().parents[2]
SCIFACT = REPO.parent / "shared" / "datasets" / "scifact" / "corpus.jsonl.gz"
SPEED_INDEX = 200  # records of the index the speed bench serves (see above)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not SCIFACT.exists(), reason=f"SciFact not found at {SCIFACT}: the benchmarks need it"),
]


@pytest.fixture(scope="module")
def bench_out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return link_model_cache(tmp_path_factory.mktemp("bench-out"))  # the session's ONNX export, not a new one


def run_bench(script: str, out: Path, *extra: str) -> str:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONWARNINGS": "ignore"}
    done = subprocess.run([sys.executable, f"bench/{script}", "--quick", *extra, "--out", str(out)], cwd=REPO,
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def table_row(output: str, label: str) -> list[str]:
    """The cells of the first markdown table row whose first cell starts with ``label``."""
    for line in output.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if cells and cells[0].startswith(label):
            return cells
    raise AssertionError(f"no row {label!r} in:\n{output}")


def test_quality_quick_prints_the_three_retrievers_and_hybrid_wins(bench_out):
    output = run_bench("retrieval_quality.py", bench_out)
    ndcg = {label: float(table_row(output, label)[1]) for label in ("BM25 only", "dense only", "hybrid")}
    # fixed subset (seeded) and a deterministic encoder: the fusion must beat each retriever alone
    assert ndcg["hybrid"] > max(ndcg["BM25 only"], ndcg["dense only"]) > 0.5, ndcg
    low, high = map(float, table_row(output, "hybrid")[2].split("-"))
    assert low < ndcg["hybrid"] < high
    assert "Paired bootstrap over the claims" in output and "published (BEIR test)" in output


def test_speed_quick_prints_overhead_and_latency(bench_out):
    output = run_bench("retrieval_speed.py", bench_out, "--sizes", str(SPEED_INDEX))
    encoder = table_row(output, "encoder alone")
    pipeline = table_row(output, "full pipeline")
    assert float(encoder[1]) > 0 and float(pipeline[1]) > 0
    assert re.fullmatch(r"[-+]\d+\.\d%.*", pipeline[3]), pipeline
    p50, p95 = (float(value) for value in table_row(output, f"{SPEED_INDEX:,}")[1].split("/"))
    assert 0 < p50 <= p95


SCHOLARS_BIB = REPO.parent / "shared" / "datasets" / "scholars-real" / "bib"


@pytest.mark.skipif(not SCHOLARS_BIB.is_dir(), reason=f"scholars-real not found at {SCHOLARS_BIB}")
def test_ingest_speed_splits_the_pipeline_and_reads_the_shortfall_twice(bench_out):
    """Two real lists and 16 abstracts, one round, both ways (the child forced): the report's rows,
    and figures that hang together."""
    output = run_bench("ingest_speed.py", bench_out, "--rounds", "1", "--bib-files", "2", "--scifact", "16",
                       "--ahead-from", "1")
    assert "Host at start: " in output and "load average" in output
    for label in ("scholars-real: 2 .bib files", "SciFact: 16 abstracts"):
        rows = [cells for cells in _rows(output) if cells[0].startswith(label)]
        assert [cells[1].split(":")[0] for cells in rows] == [
            "encoder alone", "ingest end to end, in process", "ingest end to end, as paperbot ingest (child used"], rows
        encoder, ingest, ahead = rows
        assert float(encoder[2]) > 0 and float(ingest[2]) > 0 and float(ahead[2]) > 0
        for row in (ingest, ahead):
            assert re.fullmatch(r"[-+]\d+\.\d% \((meets|misses) the 15% goal; rounds [-+]\d+%\)", row[3]), row
        outside = re.fullmatch(r"(\d+\.\d)% \(rounds \d+%\)", ingest[4])
        assert outside and 0 < float(outside.group(1)) < 100, ingest
        parse, ingest_s, encoding, bm25, pipeline = (float(cell) for cell in ingest[5:10])
        assert 0 < encoding < ingest_s  # the encoder's calls are part of the ingest, and not all of it
        half = 0.005  # the cells are rounded to 0.01 s
        assert abs(parse + ingest_s + bm25 - pipeline) <= 4 * half + 1e-9, ingest  # the stages add up
        # the same-run share is 1 - encoding / pipeline, up to the rounding of the cells it is read from
        slack = half / pipeline + encoding * half / (pipeline - half) ** 2 + 0.0005
        assert abs(float(outside.group(1)) / 100 - (1 - encoding / pipeline)) <= slack, ingest
        # encoded ahead, the encoder runs beside the pipeline: no same-run share, no encoding column
        assert ahead[4] == "-" and ahead[7] == "-", ahead
        parse, ingest_s, bm25, pipeline = (float(ahead[n]) for n in (5, 6, 8, 9))
        assert abs(parse + ingest_s + bm25 - pipeline) <= 3 * half + 1e-9, ahead


def _rows(output: str) -> list[list[str]]:
    return [[cell.strip() for cell in line.strip().strip("|").split("|")]
            for line in output.splitlines() if line.startswith("|")]


def test_lexical_follow_quick_times_both_replicas_with_the_same_answers(bench_out):
    """5,000 synthetic records, writes of 100: the cold start and the catch-up tables, both replicas agreeing."""
    output = run_bench("lexical_follow.py", bench_out)
    cold, catch_up = [row for row in _rows(output) if row[0] == "5,000"]  # one row in each table
    assert re.fullmatch(r"\d+\.\d\d s \(\d+\.\dx faster\)", cold[3]), cold
    assert re.fullmatch(r"\d+\.\dx", catch_up[4]) and float(catch_up[2].split()[0]) > 0, catch_up
    assert "Same results for 4 queries from both replicas after every write: yes." in output


def test_bm25_rebuild_quick_reuses_counts_faster_with_the_same_answers(bench_out):
    """5,000 records, two rounds of small changes: both rebuilds timed, the ratio printed, the answers equal."""
    output = run_bench("bm25_rebuild.py", bench_out, "--changed", "10")
    scratch, reusing = table_row(output, "from scratch"), table_row(output, "reusing the last build")
    assert float(scratch[1]) > 0 and float(reusing[1]) > 0
    assert re.fullmatch(r"\d+\.\d\dx \(rounds \d+\.\d\dx, \d+\.\d\dx\)", reusing[2]), reusing
    assert "Same results for 5 queries in every round: yes." in output
    assert "Host at start: " in output and "of which the term counts" in output
