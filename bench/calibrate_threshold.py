"""Calibrate the relevance thresholds (``retrieval.index.fusion.CALIBRATED_MIN_RELEVANCE`` and, with
``--title-only``, ``retrieval.answers.evidence.CALIBRATED_MIN_RELEVANCE_TITLE_ONLY``) through the real index.

    python bench/calibrate_threshold.py [--datasets DIR] [--fixtures DIR] [--encoder auto]
                                        [--max-false-accept 0.05] [--title-only]

The extractive answer abstains when the fused score of the top hit is below the threshold, so
the threshold is calibrated on exactly that number, ``PaperIndex.search(query, k=1)[0].score``:

* answerable: the SciFact train claims against the SciFact corpus (5,183 abstracts);
* unanswerable: 1,000 off-topic queries against the same corpus: the first 600 titles of the
  arXiv quant-ph OAI-PMH listing, and the 200 titles and 200 first abstract sentences of the
  arXiv metadata snapshot head (``--fixtures``, default ``../shared/fixtures``).

The threshold is the lowest one that lets through at most ``--max-false-accept`` of the
off-topic queries at even positions (``fusion.calibrate_threshold``). It is then checked on
what calibration did not see: the SciFact test claims (kept share) and the off-topic queries
at odd positions (false accepts). The suggested constant is rounded *up* to two decimals so
the false-accept bound still holds. Rerun this whenever the fusion changes the distribution
of fused scores.

``--title-only`` runs the same calibration with the abstracts removed: the corpus is the
5,183 SciFact *titles* (what a publication list without abstracts looks like), the queries
and the split are unchanged. Fused scores of title-only records are systematically lower
(shorter text: lower cosines, fewer matched terms), so they get a cut of their own.

The index (embedded Chroma + BM25) is built once under ``bench/out/calibrate-*`` from the
shared embedding cache; query vectors are cached there too, so reruns take seconds.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import math
import re
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

if __package__ in (None, ""):  # run as a script: make ``bench.common`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import (
    DEFAULT_DATASETS,
    OUT_DIR,
    bench_settings,
    load_note,
    load_scifact,
    markdown_table,
    scifact_papers,
    setup_logging,
    shared_cache_dir,
)
from retrieval.answers.evidence import CALIBRATED_MIN_RELEVANCE_TITLE_ONLY
from retrieval.index.embedding_cache import EmbeddingCache, default_cache_path, encode_with_cache, paper_embedder
from retrieval.index.encoders.base import Encoder
from retrieval.index.encoders.loading import load_encoder
from retrieval.index.fusion import CALIBRATED_MIN_RELEVANCE, calibrate_threshold
from retrieval.index.paper_index import PaperIndex
from retrieval.records.paper import Paper

DEFAULT_FIXTURES = DEFAULT_DATASETS.parent / "fixtures"
QUANT_PH = Path("arxiv") / "quant-ph_oai_dc_ListRecords_2000.xml.gz"
SNAPSHOT = Path("arxiv") / "arxiv-metadata-oai-snapshot_head200.jsonl"
QUANT_PH_TITLES = 600
_SPACE = re.compile(r"\s+")
_SENTENCE_END = re.compile(r"(?<=\.)\s")


class CachedQueries:
    """The encoder behind the shared embedding cache: same name, same vectors, each query
    encoded once across runs.

    Queries are keyed apart from documents (SHA-256 of ``"query:" + text``) and encoded one at
    a time, as ``PaperIndex.search`` does: the int8 encoder quantises activations per batch, so
    a text encoded inside a batch gets a slightly different vector than the same text alone.
    """

    def __init__(self, encoder: Encoder, cache: EmbeddingCache) -> None:
        self.inner = encoder
        self.cache = cache
        self.name = encoder.name
        self.dimension = encoder.dimension

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        pairs = [(text, hashlib.sha256(f"query:{text}".encode()).hexdigest()) for text in texts]
        return encode_with_cache(self.inner, pairs, self.cache, chunk_size=1)


def off_topic_queries(fixtures: Path) -> list[str]:
    """1,000 physics and mathematics queries: quant-ph titles, snapshot titles, first sentences."""
    paths = [fixtures / QUANT_PH, fixtures / SNAPSHOT]
    missing = [str(path) for path in paths if not path.exists()]
    if missing:
        raise SystemExit(f"Off-topic queries not found: {', '.join(missing)}; pass --fixtures DIR.")
    with gzip.open(paths[0], "rt", encoding="utf-8") as handle:
        listing = handle.read()
    titles = [_SPACE.sub(" ", t).strip() for t in re.findall(r"<dc:title>(.*?)</dc:title>", listing, re.S)]
    queries = titles[:QUANT_PH_TITLES]
    rows = [json.loads(line) for line in paths[1].read_text(encoding="utf-8").splitlines() if line.strip()]
    queries += [_SPACE.sub(" ", row["title"]).strip() for row in rows]
    queries += [_SENTENCE_END.split(_SPACE.sub(" ", row["abstract"]).strip())[0] for row in rows]
    return [query for query in queries if query]


def top_scores(index: PaperIndex, queries: Sequence[str]) -> np.ndarray:
    """Fused score of the best hit of each query (0 when nothing is found)."""
    scores = []
    for query in queries:
        hits = index.search(query, k=1)
        scores.append(hits[0].score if hits else 0.0)
    return np.asarray(scores, dtype=np.float64)


def rates(threshold: float, **samples: np.ndarray) -> dict[str, float]:
    return {name: float(np.mean(values >= threshold)) for name, values in samples.items()}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", type=Path, default=DEFAULT_DATASETS, help="folder holding scifact/")
    parser.add_argument("--fixtures", type=Path, default=DEFAULT_FIXTURES, help="folder holding arxiv/")
    parser.add_argument("--encoder", default="auto", choices=("auto", "torch", "onnx", "onnx-int8"))
    parser.add_argument("--max-false-accept", type=float, default=0.05,
                        help="share of off-topic queries the threshold may let through (default 0.05)")
    parser.add_argument("--title-only", action="store_true",
                        help="calibrate on title-only records (SciFact titles without their abstracts)")
    args = parser.parse_args(argv)
    setup_logging()
    started = time.perf_counter()

    data = load_scifact(args.datasets)
    papers, _ = scifact_papers(data)
    if args.title_only:
        papers = [Paper(title=p.title, doi=p.doi) for p in papers]
    negatives = off_topic_queries(args.fixtures)
    cache = EmbeddingCache(default_cache_path(shared_cache_dir()))
    encoder = load_encoder(bench_settings(OUT_DIR, encoder=args.encoder))
    corpus_tag = hashlib.sha256("|".join(sorted(data.corpus)).encode()).hexdigest()[:8]
    variant = "-titles" if args.title_only else ""
    settings = bench_settings(OUT_DIR / f"calibrate-{corpus_tag}{variant}-{encoder.name.replace('/', '_')}",
                              encoder=args.encoder)
    index = PaperIndex.open(settings, CachedQueries(encoder, cache), embed=paper_embedder(cache))
    try:
        if index.count() != len(papers) or not index.check_consistency().ok:
            print(f"  indexing {len(papers):,} SciFact {'titles' if args.title_only else 'abstracts'} ...", file=sys.stderr, flush=True)
            index.upsert(papers)
            index.repair()
        train = top_scores(index, [data.queries[q] for q in data.split("train")])
        test = top_scores(index, [data.queries[q] for q in data.split("test")])
        off_topic = top_scores(index, negatives)
        fusion = index.fusion
    finally:
        index.close()
        cache.close()

    calibration = calibrate_threshold(train.tolist(), off_topic[::2].tolist(), args.max_false_accept)
    suggested = math.ceil(calibration.threshold * 100 - 1e-9) / 100
    samples = {"train": train, "test": test, "calibration": off_topic[::2], "held_out": off_topic[1::2],
               "all": off_topic}
    current = ("current CALIBRATED_MIN_RELEVANCE_TITLE_ONLY", CALIBRATED_MIN_RELEVANCE_TITLE_ONLY) if args.title_only \
        else ("current CALIBRATED_MIN_RELEVANCE", CALIBRATED_MIN_RELEVANCE)
    rows = []
    for label, threshold in (("calibrated", calibration.threshold), ("suggested (rounded up)", suggested), current):
        got = rates(threshold, **samples)
        rows.append([label, f"{threshold:.4f}", f"{got['train']:.1%}", f"{got['test']:.1%}",
                     f"{got['calibration']:.1%}", f"{got['held_out']:.1%}", f"{got['all']:.1%}"])

    kind = "title-only records" if args.title_only else "records with abstracts"
    print(f"# Relevance threshold ({kind}): fused score of the top hit, encoder {encoder.name}\n")
    print(f"Fusion: {fusion.describe()}.")
    print(f"Answerable: {len(train)} SciFact train claims (calibration), {len(test)} test claims (check); "
          f"off-topic: {len(off_topic)} queries, even positions calibrate, odd ones check; "
          f"target false-accept rate {args.max_false_accept:.0%}.\n")
    print(markdown_table(["threshold", "value", "train kept", "test kept", "off-topic accepted (calibration)",
                          "off-topic accepted (held out)", "off-topic accepted (all)"], rows))
    print(f"\nScore medians: answerable {np.median(train):.3f} (train) / {np.median(test):.3f} (test), "
          f"off-topic {np.median(off_topic):.3f}.")
    print(f"\nThreshold: {suggested:.2f} (calibrated {calibration.threshold:.4f}); keeps {calibration.accepted_relevant:.1%} "
          f"of the train claims, false-accepts {calibration.accepted_irrelevant:.1%} of the calibration half.")
    print(f"\n({time.perf_counter() - started:.0f} s; {load_note()})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
