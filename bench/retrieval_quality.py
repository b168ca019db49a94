"""Retrieval quality on SciFact: BM25-only, dense-only and hybrid through the real ``PaperIndex``.

    python bench/retrieval_quality.py [--quick] [--datasets DIR] [--encoders torch,onnx,onnx-int8] [--tune]

* The main table runs the project's code: SciFact docs become ``Paper`` records (title,
  abstract), are upserted into a scratch ``PaperIndex`` (embedded Chroma + bm25s) under
  ``bench/out/``, and every test claim is searched with ``lexical_search``, ``dense_search``
  and ``search`` (hybrid). nDCG@10 and Recall@10 come from ``k=10`` calls (what a user sees),
  Recall@100 from ``k=100`` calls.
* ``--encoders``: one row per encoder variant: encoding speed on the same texts in the same run
  (interleaved rounds, median ratio to torch), cosine of its corpus vectors to torch's, and the
  dense / hybrid figures of its own index, plus the cosine to torch on the bundled probe texts
  that ``auto``'s own probe uses (``retrieval.index.encoders.choice``): the table behind its quality
  bar (``docs/encoders.md``). ``auto`` is the variant that probe chose on this machine. The host
  (CPU model, SIMD flags, cores, load averages) is printed with the figures.
* ``--tune``: grid search on the TRAIN claims only (fusion weights, candidate depth, BM25 k1/b,
  title repetition, dense pseudo-relevance feedback), evaluated by an exact numpy replica of the
  index's fusion; the best train configuration is then reported on TEST.

Vectors are cached by (encoder, text hash) in ``bench/out/cache/embeddings.sqlite3``, so only
the first run encodes the corpus. ``--quick``: 50 test claims over their relevant docs plus
1,000 distractors (under a minute from a cold cache).
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

if __package__ in (None, ""):  # run as a script: make ``bench.common`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import (
    DEFAULT_DATASETS,
    SciFact,
    bench_settings,
    bootstrap_interval,
    load_note,
    load_scifact,
    markdown_table,
    mean_metrics,
    out_dir,
    per_query_ndcg,
    scifact_papers,
    scifact_subset,
    set_out_dir,
    setup_logging,
    shared_cache_dir,
)
from retrieval.index.embedding_cache import EmbeddingCache, default_cache_path, encode_with_cache, paper_embedder
from retrieval.index.encoders.base import Encoder
from retrieval.index.encoders.choice import host_description, probe_texts
from retrieval.index.encoders.loading import load_encoder, onnx_encoder
from retrieval.index.encoders.torch_encoder import TorchEncoder
from retrieval.index.fusion import FusionConfig
from retrieval.index.paper_index import PaperIndex
from retrieval.records.paper import Paper

PUBLISHED = "published (BEIR test): BM25 0.665, all-MiniLM-L6-v2 0.645, bge-large-en-v1.5 0.746"


# Encoders ------------------------------------------------------------------------------------


def make_encoder(choice: str) -> Encoder:
    """``torch``, a key of ``onnx_export.RECIPES``, or ``auto`` (what ``load_encoder`` picks)."""
    if choice == "torch":
        return TorchEncoder()
    if choice == "auto":
        return load_encoder(bench_settings(out_dir(), encoder="auto"))
    return onnx_encoder(bench_settings(out_dir()).encoder_cache_dir, choice)


def text_pairs(texts: Sequence[str]) -> list[tuple[str, str]]:
    return [(text, hashlib.sha256(text.encode("utf-8")).hexdigest()) for text in texts]


def corpus_vectors(encoder: Encoder, papers: Sequence[Paper], cache: EmbeddingCache) -> np.ndarray:
    started = time.perf_counter()

    def report(done: int, total: int) -> None:
        if done < total and done % 1024 < 256:
            print(f"  encoding with {encoder.name}: {done}/{total} ({time.perf_counter() - started:.0f} s)",
                  file=sys.stderr, flush=True)

    return encode_with_cache(encoder, [(p.embedding_text, p.embedding_hash) for p in papers], cache, report)


def speed_ratios(encoders: dict[str, Encoder], texts: Sequence[str], rounds: int) -> dict[str, float]:
    """Median over interleaved rounds of (torch seconds / encoder seconds), plus texts/s."""
    seconds: dict[str, list[float]] = {name: [] for name in encoders}
    for encoder in encoders.values():
        encoder.encode(texts[:8])  # warm-up
    for _ in range(rounds):
        for name, encoder in encoders.items():
            start = time.perf_counter()
            encoder.encode(texts)
            seconds[name].append(time.perf_counter() - start)
    base = np.asarray(seconds.get("torch") or next(iter(seconds.values())))
    out: dict[str, float] = {}
    for name, values in seconds.items():
        out[name] = float(np.median(base / np.asarray(values)))
        out[name + "/s"] = len(texts) / float(np.median(values))
    return out


# The real index ------------------------------------------------------------------------------


@dataclass
class IndexRun:
    """Rankings (SciFact doc ids) of the three retrievers for each test query."""

    lexical: dict[str, dict[int, list[str]]]
    dense: dict[str, dict[int, list[str]]]
    hybrid: dict[str, dict[int, list[str]]]


def build_index(tag: str, papers: Sequence[Paper], encoder: Encoder, cache: EmbeddingCache,
                fusion: FusionConfig | None = None, *, bench: str = "quality") -> PaperIndex:
    """The scratch index ``bench/out/<bench>-<tag>`` holding ``papers``, built once (vectors from ``cache``)."""
    settings = bench_settings(out_dir() / f"{bench}-{tag}", encoder="auto")
    index = PaperIndex.open(settings, encoder, embed=paper_embedder(cache), fusion=fusion)
    if index.count() != len(papers):
        index.upsert(papers)
    return index


def run_index(index: PaperIndex, data: SciFact, back: dict[str, str], split: str = "test") -> IndexRun:
    queries = data.split(split)
    runs = IndexRun({}, {}, {})
    for qid in queries:
        text = data.queries[qid]
        for k in (10, 100):
            runs.lexical.setdefault(qid, {})[k] = [back[h.paper.id] for h in index.lexical_search(text, k=k)]
            runs.dense.setdefault(qid, {})[k] = [back[h.paper.id] for h in index.dense_search(text, k=k)]
            runs.hybrid.setdefault(qid, {})[k] = [back[h.paper.id] for h in index.search(text, k=k)]
    return runs


def scores(run: dict[str, dict[int, list[str]]], qrels: dict[str, dict[str, int]]) -> dict[str, float]:
    at10 = mean_metrics({q: r[10] for q, r in run.items()}, qrels)
    at100 = mean_metrics({q: r[100] for q, r in run.items()}, qrels)
    return {"ndcg@10": at10["ndcg@10"], "recall@10": at10["recall@10"], "recall@100": at100["recall@100"]}


def lexical_label() -> str:
    """The lexical index's settings as they are now (read from ``retrieval.index.lexical``)."""
    from retrieval.index import lexical

    k1, b = getattr(lexical, "BM25_K1", 1.5), getattr(lexical, "BM25_B", 0.75)
    return f"bm25s k1 {k1:g} b {b:g}, stemmed, stopwords, title x{getattr(lexical, 'TITLE_WEIGHT', 1)}"


def fusion_label(fusion: FusionConfig) -> str:
    parts = [f"{fusion.dense_weight:g} cosine", f"{fusion.lexical_weight:g} BM25/max"]
    coverage = getattr(fusion, "coverage_weight", 0.0)
    if coverage:
        parts.append(f"{coverage:g} term coverage")
    return " + ".join(parts) + f", {fusion.fetch_k} candidates each"


def row(label: str, values: dict[str, float], per_query: np.ndarray) -> list[str]:
    low, high = bootstrap_interval(per_query)
    return [label, f"{values['ndcg@10']:.4f}", f"{low:.3f}-{high:.3f}", f"{values['recall@10']:.4f}",
            f"{values['recall@100']:.4f}"]


TARGET_NDCG = 0.74  # the hybrid target


def per_query_figures(run: IndexRun, qrels: dict[str, dict[str, int]]) -> dict[str, np.ndarray]:
    """nDCG@10 of every claim for each retriever (lexical, dense, hybrid)."""
    return {name: per_query_ndcg({q: r[10] for q, r in getattr(run, name).items()}, qrels)
            for name in ("lexical", "dense", "hybrid")}


def uncertainty_note(ndcg: dict[str, np.ndarray]) -> str:
    """Paired bootstrap intervals: what the test claims can and cannot tell apart."""
    parts = []
    for other, label in (("lexical", "BM25"), ("dense", "dense")):
        difference = ndcg["hybrid"] - ndcg[other]
        low, high = bootstrap_interval(difference)
        parts.append(f"hybrid - {label} {difference.mean():+.4f} (95% {low:+.3f} to {high:+.3f})")
    low, high = bootstrap_interval(ndcg["hybrid"] - TARGET_NDCG)
    parts.append(f"hybrid - target {TARGET_NDCG} {ndcg['hybrid'].mean() - TARGET_NDCG:+.4f} "
                 f"(95% {low:+.3f} to {high:+.3f})")
    return ("Paired bootstrap over the claims (2,000 resamples): " + "; ".join(parts) + ".")


# Tuning (train claims only) ------------------------------------------------------------------


@dataclass(frozen=True)
class Tuned:
    """One point of the grid: fusion, BM25 and pseudo-relevance-feedback parameters."""

    dense_weight: float
    fetch_k: int
    k1: float
    b: float
    title_weight: int
    prf_docs: int  # 0 = no pseudo-relevance feedback
    prf_weight: float

    def describe(self) -> str:
        prf = f"dense PRF: query + {self.prf_weight:g} x mean of top {self.prf_docs}" if self.prf_docs else "no PRF"
        return (f"{self.dense_weight:.2f} cosine + {1 - self.dense_weight:.2f} BM25/max, {self.fetch_k} candidates, "
                f"BM25 k1 {self.k1:g} b {self.b:g}, title x{self.title_weight}, {prf}")


def index_defaults() -> Tuned:
    """The live defaults: ``FusionConfig()`` and the BM25 settings of ``retrieval.index.lexical``."""
    from retrieval.index import lexical

    fusion = FusionConfig()
    weight = fusion.dense_weight / (fusion.dense_weight + fusion.lexical_weight)
    return Tuned(round(weight, 4), fusion.fetch_k, getattr(lexical, "BM25_K1", 1.5), getattr(lexical, "BM25_B", 0.75),
                 getattr(lexical, "TITLE_WEIGHT", 1), 0, 0.0)


class Bm25Grid:
    """BM25 matrices for several (k1, b, title repetition) settings; each text is tokenized once.

    Mirrors ``lexical.document_text`` (title repeated, abstract, authors, venue; SciFact
    records have neither authors nor venue) and uses the project's tokenizer.
    """

    def __init__(self, papers: Sequence[Paper]) -> None:
        from retrieval.text import bm25_tokens

        self._tokenize = bm25_tokens
        self._titles = [bm25_tokens(p.title) for p in papers]
        self._abstracts = [bm25_tokens(p.abstract) if p.abstract else [] for p in papers]

    def matrix(self, queries: Sequence[str], k1: float, b: float, title_weight: int) -> np.ndarray:
        """Raw BM25 of every (query, doc)."""
        import bm25s

        corpus = [title * title_weight + abstract for title, abstract in zip(self._titles, self._abstracts, strict=True)]
        retriever = bm25s.BM25(k1=k1, b=b)
        retriever.index(corpus, show_progress=False)
        out = np.zeros((len(queries), len(corpus)), dtype=np.float32)
        for n, query in enumerate(queries):
            tokens = [t for t in self._tokenize(query) if t in retriever.vocab_dict]
            if tokens:
                out[n] = retriever.get_scores(tokens)
        return out


def top_mask(matrix: np.ndarray, k: int) -> np.ndarray:
    """True at the ``k`` highest entries of each row."""
    k = min(k, matrix.shape[1])
    part = np.argpartition(-matrix, k - 1, axis=1)[:, :k]
    mask = np.zeros(matrix.shape, dtype=bool)
    np.put_along_axis(mask, part, True, axis=1)
    return mask


@dataclass
class Split:
    """Everything one split needs to score a configuration without Python loops."""

    qvecs: np.ndarray  # (queries, d)
    relevance: np.ndarray  # (queries, docs) grades
    ideal: np.ndarray  # ideal DCG@10 per query
    relevant: np.ndarray  # number of relevant docs per query

    @classmethod
    def make(cls, qids: Sequence[str], qrels: dict[str, dict[str, int]], query_vector: dict[str, np.ndarray],
             position: dict[str, int], docs: int) -> Split:
        relevance = np.zeros((len(qids), docs), dtype=np.float32)
        for n, qid in enumerate(qids):
            for doc, grade in qrels[qid].items():
                if doc in position:
                    relevance[n, position[doc]] = grade
        discounts = 1.0 / np.log2(np.arange(2, 12))
        ideal = np.array([np.sum((2.0 ** np.sort(list(qrels[q].values()))[::-1][:10] - 1) * discounts[: min(10, len(qrels[q]))])
                          for q in qids])
        return cls(np.stack([query_vector[q] for q in qids]), relevance, ideal, np.array([len(qrels[q]) for q in qids]))


def fused_scores(dense: np.ndarray, lexical: np.ndarray, weight: float, pool: np.ndarray) -> np.ndarray:
    """The index's fusion (``fusion.fused_score`` over max-scaled BM25), -inf outside the pool."""
    best = np.max(np.where(pool, lexical, 0.0), axis=1, keepdims=True)
    scaled = np.where(best > 0, np.minimum(lexical / np.maximum(best, 1e-12), 1.0), 0.0)
    return np.where(pool, weight * np.maximum(dense, 0.0) + (1.0 - weight) * scaled, -np.inf)


def metrics_of(scores: np.ndarray, split: Split) -> dict[str, float]:
    """nDCG@10 and Recall@100 of the rankings given by ``scores`` (vectorised BEIR definitions)."""
    top = np.argpartition(-scores, 99, axis=1)[:, :100]
    order = np.argsort(-np.take_along_axis(scores, top, axis=1), axis=1, kind="stable")
    top = np.take_along_axis(top, order, axis=1)
    found = np.isfinite(np.take_along_axis(scores, top, axis=1))
    grades = np.take_along_axis(split.relevance, top, axis=1) * found
    dcg = np.sum((2.0 ** grades[:, :10] - 1) / np.log2(np.arange(2, 12)), axis=1)
    ndcg = np.divide(dcg, split.ideal, out=np.zeros_like(dcg), where=split.ideal > 0)
    recall = np.sum(grades > 0, axis=1) / np.maximum(split.relevant, 1)
    return {"ndcg@10": float(ndcg.mean()), "recall@100": float(recall.mean())}


def evaluate(config: Tuned, split: Split, doc_vectors: np.ndarray, lexical: np.ndarray,
             dense: np.ndarray, pools: dict[int, np.ndarray]) -> dict[str, float]:
    """Metrics of one configuration; ``dense``/``pools`` are precomputed for the split."""
    pool = pools[config.fetch_k]
    scores = fused_scores(dense, lexical, config.dense_weight, pool)
    if config.prf_docs:
        top = np.argpartition(-scores, config.prf_docs - 1, axis=1)[:, : config.prf_docs]
        expanded = split.qvecs + config.prf_weight * doc_vectors[top].mean(axis=1)
        expanded /= np.linalg.norm(expanded, axis=1, keepdims=True)
        second = expanded @ doc_vectors.T
        pool = top_mask(second, config.fetch_k) | (top_mask(lexical, config.fetch_k) & (lexical > 0))
        scores = fused_scores(second, lexical, config.dense_weight, pool)
    return metrics_of(scores, split)


def tune(data: SciFact, papers: list[Paper], back: dict[str, str], doc_vectors: np.ndarray,
         query_vector: dict[str, np.ndarray]) -> list[list[str]]:
    """Grid search on train; the index defaults and the 5 best train points, with their test figures."""
    position = {back[p.id]: n for n, p in enumerate(papers)}
    splits = {name: (list(data.split(name)), data.split(name)) for name in ("train", "test")}
    prepared = {name: Split.make(qids, qrels, query_vector, position, len(papers)) for name, (qids, qrels) in splits.items()}
    dense = {name: split.qvecs @ doc_vectors.T for name, split in prepared.items()}
    grid_bm25 = list(itertools.product((0.9, 1.2, 1.5), (0.4, 0.6, 0.75), (1, 2, 3)))
    weights = (0.55, 0.6, 0.65, 0.7, 0.75, 0.8)
    depths = (50, 100)
    prf = [(0, 0.0), (3, 0.5), (3, 1.0), (5, 0.5), (5, 1.0), (10, 1.0)]
    bm25 = Bm25Grid(papers)
    results: list[tuple[float, Tuned]] = []
    state: dict[tuple[float, float, int], tuple[dict[str, np.ndarray], dict[str, dict[int, np.ndarray]]]] = {}

    def prepare(key: tuple[float, float, int]) -> tuple[dict[str, np.ndarray], dict[str, dict[int, np.ndarray]]]:
        if key not in state:
            lexical = {name: bm25.matrix([data.queries[q] for q in qids], *key) for name, (qids, _) in splits.items()}
            pools = {name: {k: top_mask(dense[name], k) | (top_mask(lexical[name], k) & (lexical[name] > 0))
                            for k in depths} for name in splits}
            state.clear()  # keep one setting in memory at a time
            state[key] = (lexical, pools)
        return state[key]

    def figures(config: Tuned, split: str) -> dict[str, float]:
        lexical, pools = prepare((config.k1, config.b, config.title_weight))
        return evaluate(config, prepared[split], doc_vectors, lexical[split], dense[split], pools[split])

    for k1, b, title_weight in grid_bm25:
        for weight, depth, (m, beta) in itertools.product(weights, depths, prf):
            config = Tuned(weight, depth, k1, b, title_weight, m, beta)
            results.append((figures(config, "train")["ndcg@10"], config))
        print(f"  BM25 k1={k1} b={b} title x{title_weight}: best train nDCG@10 so far {max(r[0] for r in results):.4f}",
              file=sys.stderr, flush=True)
    results.sort(key=lambda pair: -pair[0])
    no_prf = next(c for _, c in results if not c.prf_docs)
    chosen = [("index defaults", index_defaults()), ("best on train, no PRF", no_prf),
              *[(f"train #{n + 1}", c) for n, (_, c) in enumerate(results[:5])]]
    labels: dict[Tuned, list[str]] = {}
    for label, config in chosen:
        labels.setdefault(config, []).append(label)
    rows = []
    for config, names in labels.items():  # the test claims are looked at only here, after choosing
        label = " = ".join(names)
        train, test = figures(config, "train"), figures(config, "test")
        rows.append([label, config.describe(), f"{train['ndcg@10']:.4f}", f"{test['ndcg@10']:.4f}",
                     f"{test['recall@100']:.4f}"])
    return rows


# Main ----------------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="50 test claims + 1,000 distractors")
    parser.add_argument("--datasets", type=Path, default=DEFAULT_DATASETS, help="folder holding scifact/")
    parser.add_argument("--out", type=Path, default=None, help="caches and scratch indexes (default bench/out)")
    parser.add_argument("--encoders", default="auto",
                        help="comma list of torch, onnx, onnx-int8, onnx-int8-per-tensor, auto (first = main table)")
    parser.add_argument("--tune", action="store_true", help="grid search on the train claims (a few minutes)")
    parser.add_argument("--speed-texts", type=int, default=0, help="texts per speed round (default 200, quick 48)")
    args = parser.parse_args(argv)
    if args.tune and args.quick:
        parser.error("--tune needs the train claims of the full corpus: run it without --quick")
    setup_logging()
    if args.out:
        set_out_dir(args.out)

    data = load_scifact(args.datasets)
    if args.quick:
        data = scifact_subset(data, queries=50, distractors=1000)
    papers, back = scifact_papers(data)
    qrels = data.split("test")
    corpus_tag = hashlib.sha256("|".join(sorted(data.corpus)).encode()).hexdigest()[:8]
    cache = EmbeddingCache(default_cache_path(shared_cache_dir()))
    choices = [c.strip() for c in args.encoders.split(",") if c.strip()]
    started = time.perf_counter()

    encoders = {choice: make_encoder(choice) for choice in choices}
    print(f"# Retrieval quality: SciFact test, {len(qrels)} claims over {len(papers):,} docs"
          f"{' (--quick subset)' if args.quick else ''}\n\nHost: {host_description()}\n")
    rows_main: list[list[str]] = []
    rows_enc: list[dict[str, object]] = []
    vectors: dict[str, np.ndarray] = {}
    for n, (choice, encoder) in enumerate(encoders.items()):
        vectors[choice] = corpus_vectors(encoder, papers, cache)
        index = build_index(f"{corpus_tag}-{encoder.name.replace('/', '_')}", papers, encoder, cache)
        run = run_index(index, data, back)
        figures = {name: scores(getattr(run, name), qrels) for name in ("lexical", "dense", "hybrid")}
        index.close()
        if n == 0:
            per_query = per_query_figures(run, qrels)
            rows_main = [
                row(f"BM25 only ({lexical_label()})", figures["lexical"], per_query["lexical"]),
                row(f"dense only ({encoder.name})", figures["dense"], per_query["dense"]),
                row(f"hybrid (index default: {fusion_label(index.fusion)})", figures["hybrid"], per_query["hybrid"]),
            ]
            note = uncertainty_note(per_query)
        rows_enc.append({"choice": choice, "name": encoder.name, "dense": figures["dense"], "hybrid": figures["hybrid"]})
    print(markdown_table(["retriever", "nDCG@10", "nDCG@10 95% CI", "Recall@10", "Recall@100"], rows_main))
    print(f"\n{note}\n{PUBLISHED}.")

    if len(encoders) > 1:
        sample_size = args.speed_texts or (48 if args.quick else 200)
        sample = [p.embedding_text for p in papers[:: max(1, len(papers) // sample_size)]][:sample_size]
        host_before = host_description()
        speed = speed_ratios(encoders, sample, rounds=3 if args.quick else 5)
        host_after = host_description()
        reference = vectors.get("torch")
        probe = probe_texts()
        probe_vectors = {choice: encoder.encode(probe) for choice, encoder in encoders.items()}
        table = []
        for entry in rows_enc:
            choice = str(entry["choice"])
            if reference is not None:
                cos = np.sum(vectors[choice] * reference, axis=1)
                cosine = f"{cos.mean():.5f} / {cos.min():.5f}"
                near = np.sum(probe_vectors[choice] * probe_vectors["torch"], axis=1)
                on_probe = f"{near.mean():.5f} / {near.min():.5f}"
            else:
                cosine = on_probe = "n/a (no torch run)"
            dense, hybrid = entry["dense"], entry["hybrid"]
            label = f"auto = {entry['name']}" if choice == "auto" else str(entry["name"])
            table.append([label, f"{speed[choice + '/s']:.1f}", f"{speed[choice]:.2f}x", cosine, on_probe,
                          f"{dense['ndcg@10']:.4f}", f"{dense['recall@100']:.4f}", f"{hybrid['ndcg@10']:.4f}"])  # type: ignore[index]
        print(f"\n## Encoders ({len(sample)} abstracts per round, interleaved, median of rounds)\n")
        print(f"Host before the speed rounds: {host_before}\nHost after: {host_after}\n")
        print(markdown_table(["encoder", "texts/s", "vs torch" if "torch" in encoders else "vs first",
                              "cosine to torch, corpus (mean / min)",
                              f"cosine to torch, {len(probe)} probe texts (mean / min)", "dense nDCG@10",
                              "dense R@100", "hybrid nDCG@10"], table))
        if "torch" not in encoders:
            print("\n(speed ratios are relative to the first encoder listed; add torch to compare with it)")

    if args.tune:
        choice = choices[0]
        encoder = encoders[choice]
        qtexts = {qid: data.queries[qid] for qid in {*data.split("train"), *data.split("test")}}
        qvecs = encode_with_cache(encoder, text_pairs(list(qtexts.values())), cache)
        query_vector = dict(zip(qtexts, qvecs, strict=True))
        coverage = getattr(FusionConfig(), "coverage_weight", 0.0)
        print(f"\n## Fusion tuning on the train claims ({len(data.split('train'))}), reported on test "
              f"(exact numpy replica of the index's cosine + BM25/max fusion"
              f"{' without its term-coverage signal' if coverage else ''}, no near-duplicate removal; "
              f"encoder {encoder.name}; a few minutes)\n")
        print(markdown_table(["config", "parameters", "train nDCG@10", "test nDCG@10", "test R@100"],
                             tune(data, papers, back, vectors[choice], query_vector)))
    cache.close()
    print(f"\n({time.perf_counter() - started:.0f} s; {load_note()})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
