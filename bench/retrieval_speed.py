"""Retrieval speed: indexing throughput against the raw encoder, query latency at 1k/10k/100k, memory.

    python bench/retrieval_speed.py [--quick] [--datasets DIR] [--encoder auto|torch|onnx|onnx-int8]

* **Indexing**: the same SciFact abstracts are (a) encoded by the encoder alone and (b) indexed
  by the full pipeline, ``PaperIndex.upsert`` into a fresh data dir with a cold embedding cache
  (record store + embedding cache + Chroma) followed by the BM25 build, in interleaved rounds.
  The overhead is pipeline time / encoder time - 1 (median of rounds). A third row re-indexes
  the same records into another fresh index with the warm embedding cache.
* **Queries**: ``PaperIndex.search`` (hybrid, k=10, warm: after 20 warm-up queries) with the
  SciFact test claims, unfiltered and with a year filter, at 1k, 10k and 100k records. Each size
  is measured in its own subprocess, whose peak resident memory is reported as the memory of
  serving that many records (encoder, Chroma, BM25 and record store included).
* **Corpora** are real records: the SciFact abstracts with a year derived from the doc id. Past
  5,183 records they are replicated with distinct ids and titles ("... (copy n)"); replicas are
  NOT re-encoded: their vector is the original's cached vector plus Gaussian noise (cosine about
  0.9 to it), so near-duplicate removal and HNSW see distinct vectors. Built indexes are kept
  under ``bench/out/speed-*`` and reused by later runs.

``--quick``: 64 records for the indexing rows and the 1k index only (under a minute). The host
(CPU model, SIMD flags, cores, load averages) is printed at the start and the end.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

if __package__ in (None, ""):  # run as a script: make ``bench.common`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import (
    DEFAULT_DATASETS,
    bench_settings,
    current_rss_mb,
    load_note,
    load_scifact,
    markdown_table,
    out_dir,
    peak_rss_mb,
    percentile_ms,
    set_out_dir,
    setup_logging,
    shared_cache_dir,
)
from retrieval.index.embedding_cache import EmbeddingCache, default_cache_path, encode_with_cache, paper_embedder
from retrieval.index.encoders import loading as embeddings
from retrieval.index.encoders.base import Encoder
from retrieval.index.encoders.choice import host_description
from retrieval.index.paper_index import PaperIndex
from retrieval.records.paper import Paper
from retrieval.results import SearchFilters

SIZES = (1_000, 10_000, 100_000)
NOISE = 0.5  # replica vector = normalise(original + NOISE * g / sqrt(d)): cosine ~ 1 / sqrt(1 + NOISE^2)
YEAR_FILTER = SearchFilters(since=2018)  # years are 2000..2024, so about a quarter of the records match


# Corpora -------------------------------------------------------------------------------------


def base_records(datasets: Path) -> list[Paper]:
    """SciFact abstracts as records, each with a year derived from its doc id (2000-2024)."""
    data = load_scifact(datasets)
    return [
        Paper(title=title or text[:120], abstract=text or None, doi=f"10.0000/scifact.{doc_id}",
              published=str(2000 + int(doc_id) % 25) if doc_id.isdigit() else None)
        for doc_id, (title, text) in data.corpus.items()
    ]


def corpus(base: Sequence[Paper], size: int) -> tuple[list[Paper], list[tuple[int, int]]]:
    """``size`` records: the originals first, then replicas; plus each one's (original, copy)."""
    papers: list[Paper] = []
    origin: list[tuple[int, int]] = []
    for n in range(size):
        source = n % len(base)
        copy = n // len(base)
        paper = base[source]
        if copy:
            paper = paper.model_copy(update={"title": f"{paper.title} (copy {copy})",
                                             "doi": f"10.0000/replica.{copy}.{source}"})
        papers.append(paper)
        origin.append((source, copy))
    return papers, origin


def perturbed_embedder(base_vectors: np.ndarray, origin_by_id: dict[str, tuple[int, int]]):
    """An ``embed`` function for ``PaperIndex``: originals keep their vector, replicas get noise.

    ``origin_by_id``: record id -> (index of the original, copy number; 0 = the original).
    """

    def embed(encoder: Encoder, papers: Sequence[Paper]) -> np.ndarray:
        out = np.empty((len(papers), base_vectors.shape[1]), dtype=np.float32)
        for row, paper in enumerate(papers):
            source, copy = origin_by_id[paper.id]
            vector = base_vectors[source]
            if copy:
                rng = np.random.default_rng([source, copy])
                noise = rng.standard_normal(vector.shape[0]).astype(np.float32) / np.sqrt(vector.shape[0])
                vector = vector + NOISE * noise
                vector = vector / np.linalg.norm(vector)
            out[row] = vector
        return out

    return embed


def build_or_open(size: int, base: Sequence[Paper], base_vectors: np.ndarray, encoder: Encoder) -> Path:
    """The data dir of a ``size``-record index, built on first use (kept in bench/out)."""
    data_dir = out_dir() / f"speed-{size}-{encoder.name.replace('/', '_')}"
    papers, origin = corpus(base, size)
    settings = bench_settings(data_dir)
    index = PaperIndex.open(settings, encoder, embed=perturbed_embedder(base_vectors, {p.id: o for p, o in zip(papers, origin, strict=True)}))
    try:
        if index.count() != size:
            print(f"  building the {size:,}-record index in {data_dir} (once)...", file=sys.stderr, flush=True)
            started = time.perf_counter()
            for start in range(0, size, 5000):
                index.upsert(papers[start : start + 5000])
            index.lexical.current()
            print(f"  built in {time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)
    finally:
        index.close()
    return data_dir


# Measurements --------------------------------------------------------------------------------


def indexing_rows(encoder: Encoder, papers: Sequence[Paper], rounds: int) -> list[list[str]]:
    texts = [p.embedding_text for p in papers]
    encoder.encode(texts[:8])  # warm-up
    raw: list[float] = []
    pipeline: list[float] = []
    reindex: list[float] = []
    scratch = Path(tempfile.mkdtemp(prefix="speed-indexing-", dir=out_dir()))
    try:
        for n in range(rounds):
            start = time.perf_counter()
            encoder.encode(texts)
            raw.append(time.perf_counter() - start)

            cache = EmbeddingCache(scratch / f"cache-{n}.sqlite3")
            index = PaperIndex.open(bench_settings(scratch / f"index-{n}"), encoder, embed=paper_embedder(cache))
            start = time.perf_counter()
            index.upsert(papers)
            index.lexical.current()
            pipeline.append(time.perf_counter() - start)
            index.close()

            again = PaperIndex.open(bench_settings(scratch / f"reindex-{n}"), encoder, embed=paper_embedder(cache))
            start = time.perf_counter()
            report = again.upsert(papers)
            again.lexical.current()
            reindex.append(time.perf_counter() - start)
            again.close()
            cache.close()
            assert report.embedded == len(papers), "re-index must go through the embed function"
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    n = len(papers)
    raw_s, pipe_s, re_s = statistics.median(raw), statistics.median(pipeline), statistics.median(reindex)
    # ratios within a round (encoder and pipeline measured back to back), then their median:
    # robust to other jobs slowing whole rounds down on the shared cores
    ratio = statistics.median(p / r for p, r in zip(pipeline, raw, strict=True))
    reratio = statistics.median(x / r for x, r in zip(reindex, raw, strict=True))
    rounds_note = ", ".join(f"{p / r - 1:+.0%}" for p, r in zip(pipeline, raw, strict=True))
    return [
        [f"encoder alone ({encoder.name})", f"{n / raw_s:.1f}", "1.00", "-"],
        ["full pipeline: upsert (store + cache + Chroma) + BM25 build, cold cache", f"{n / pipe_s:.1f}",
         f"{ratio:.2f}", f"{ratio - 1:+.1%} (rounds: {rounds_note})"],
        ["re-index the same records, warm embedding cache (no encoding)", f"{n / re_s:.1f}", f"{reratio:.2f}", "-"],
    ]


def serve(data_dir: Path, encoder_choice: str, queries: Sequence[str], warmup: int) -> dict[str, float]:
    """Open an existing index, warm it, time hybrid searches. Run in its own process."""
    settings = bench_settings(data_dir, encoder=encoder_choice)
    index = PaperIndex.open(settings, embeddings.load_encoder(bench_settings(out_dir(), encoder=encoder_choice)))
    records = index.count()
    for query in queries[:warmup]:
        index.search(query, k=10)
        index.search(query, k=10, filters=YEAR_FILTER)
    plain, filtered, encode = [], [], []
    for query in queries[warmup:]:
        start = time.perf_counter()
        index.encoder.encode([query])
        encode.append(time.perf_counter() - start)
        start = time.perf_counter()
        index.search(query, k=10)
        plain.append(time.perf_counter() - start)
        start = time.perf_counter()
        index.search(query, k=10, filters=YEAR_FILTER)
        filtered.append(time.perf_counter() - start)
    index.close()
    return {
        "records": records, "queries": len(plain),
        "p50": percentile_ms(plain, 50), "p95": percentile_ms(plain, 95),
        "f50": percentile_ms(filtered, 50), "f95": percentile_ms(filtered, 95),
        "e50": percentile_ms(encode, 50),
        "rss": current_rss_mb(), "peak": peak_rss_mb(),
    }


def serve_in_subprocess(data_dir: Path, encoder_choice: str, datasets: Path, queries: int) -> dict[str, float]:
    command = [sys.executable, str(Path(__file__).resolve()), "--serve", str(data_dir), "--encoder", encoder_choice,
               "--datasets", str(datasets), "--queries", str(queries), "--out", str(out_dir())]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"serving {data_dir} failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_claims(datasets: Path) -> list[str]:
    data = load_scifact(datasets)
    return [data.queries[q] for q in sorted(data.split("test"), key=int)]


# Main ----------------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="64 records to index, the 1k index only")
    parser.add_argument("--datasets", type=Path, default=DEFAULT_DATASETS, help="folder holding scifact/")
    parser.add_argument("--out", type=Path, default=None, help="caches and scratch indexes (default bench/out)")
    parser.add_argument("--encoder", default="auto", choices=["auto", "torch", "onnx", "onnx-int8"])
    parser.add_argument("--sizes", default="", help="comma list of index sizes (default 1000,10000,100000)")
    parser.add_argument("--index-records", type=int, default=0, help="records in the indexing rows (default 300)")
    parser.add_argument("--serve", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--queries", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    setup_logging()
    if args.out:
        set_out_dir(args.out)

    if args.serve:
        claims = test_claims(args.datasets)[: args.queries + 20]
        print(json.dumps(serve(args.serve, args.encoder, claims, warmup=20)))
        return 0

    started = time.perf_counter()
    sizes = [int(s) for s in args.sizes.split(",") if s] or ([1_000] if args.quick else list(SIZES))
    base = base_records(args.datasets)
    encoder = embeddings.load_encoder(bench_settings(out_dir(), encoder=args.encoder))
    shared_cache_dir()

    records = args.index_records or (64 if args.quick else 300)
    step = max(1, len(base) // records)
    sample = list(base[::step])[:records]
    print(f"# Retrieval speed ({load_note()})\n\nHost at start: {host_description()}\n")
    print(f"## Indexing {len(sample)} SciFact abstracts (median of {2 if args.quick else 5} interleaved rounds)\n")
    print(markdown_table(["what", "records/s", "time vs encoder", "overhead"],
                         indexing_rows(encoder, sample, rounds=2 if args.quick else 5)))

    needed = min(max(sizes), len(base))
    with EmbeddingCache(default_cache_path(shared_cache_dir())) as cache:
        base_vectors = encode_with_cache(encoder, [(p.embedding_text, p.embedding_hash) for p in base[:needed]], cache,
                                         lambda d, t: print(f"  base vectors {d}/{t}", file=sys.stderr, flush=True)
                                         if d < t and d % 1024 < 256 else None)
    queries = 100 if args.quick else 280
    rows = []
    for size in sizes:
        data_dir = build_or_open(size, base[:needed], base_vectors, encoder)
        got = serve_in_subprocess(data_dir, args.encoder, args.datasets, queries)
        replicas = max(0, size - len(base))
        rows.append([f"{size:,}" + (f" ({replicas:,} replicas)" if replicas else ""),
                     f"{got['p50']:.1f} / {got['p95']:.1f}", f"{got['f50']:.1f} / {got['f95']:.1f}",
                     f"{got['e50']:.1f}", f"{got['peak']:.0f}"])
    print(f"\n## Hybrid search, k=10, warm ({queries} SciFact claims after 20 warm-up; ms)\n")
    print(markdown_table(["records", "p50 / p95", f"filtered ({YEAR_FILTER.describe()}) p50 / p95",
                          "query encoding p50", "peak RSS MB (serving process)"], rows))
    print("\nReplicas reuse the original's cached vector plus noise (cosine ~0.9) instead of being encoded.")
    print(f"\nHost at end: {host_description()}")
    print(f"\n({time.perf_counter() - started:.0f} s; this process peaked at {peak_rss_mb():.0f} MB; {load_note()})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
