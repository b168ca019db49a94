"""Shared helpers of the retrieval benchmarks: SciFact loading, metrics, timing, tables.

Benchmarks print ratios measured in one run (the machine is shared, absolute numbers drift).
SciFact is read from ``--datasets`` (default ``../shared/datasets`` next to the repo) and never
copied into the tree: its licence (CC BY-NC) allows benchmarks only.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import math
import os
import random
import resource
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import numpy as np

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # runnable as a plain script
    sys.path.insert(0, str(REPO))

from retrieval.config import Settings  # noqa: E402
from retrieval.records.paper import Paper  # noqa: E402

DEFAULT_DATASETS = REPO.parent / "shared" / "datasets"
OUT_DIR = REPO / "bench" / "out"  # gitignored: caches and scratch indexes
T = TypeVar("T")


# Tuning and held-out halves ------------------------------------------------------------------

TUNE, HELD_OUT = "tune", "held-out"


def split_half(set_name: str, item_id: str) -> str:
    """``TUNE`` or ``HELD_OUT`` for one item of a development set, fixed by a hash of the set's
    name and the item's id (never by its content or by how the product does on it).

    Every development set is split this way before anything is tuned on it: rules and
    constants may be shaped on the tuning half only; the held-out half measures them, and the
    suite asserts goals on the held-out half only.
    """
    digest = hashlib.sha256(f"{set_name}\x1f{item_id}".encode()).digest()
    return HELD_OUT if digest[0] & 1 else TUNE


# SciFact -------------------------------------------------------------------------------------


@dataclass
class SciFact:
    """BEIR-format SciFact: corpus, claims (queries) and relevance judgements per split."""

    corpus: dict[str, tuple[str, str]]  # doc id -> (title, text)
    queries: dict[str, str]  # query id -> claim
    qrels: dict[str, dict[str, dict[str, int]]] = field(default_factory=dict)  # split -> qid -> doc -> rel

    def split(self, name: str) -> dict[str, dict[str, int]]:
        """Judgements of one split, restricted to queries that exist."""
        return {q: rel for q, rel in self.qrels.get(name, {}).items() if q in self.queries}


def load_scifact(datasets: Path) -> SciFact:
    """Read ``datasets/scifact`` (corpus.jsonl.gz, queries.jsonl, qrels/{train,test}.tsv)."""
    root = Path(datasets) / "scifact"
    if not (root / "corpus.jsonl.gz").exists():
        raise SystemExit(f"SciFact not found under {root}: pass --datasets DIR (the folder that holds scifact/).")
    corpus: dict[str, tuple[str, str]] = {}
    with gzip.open(root / "corpus.jsonl.gz", "rt", encoding="utf-8") as handle:
        for line in handle:
            doc = json.loads(line)
            corpus[str(doc["_id"])] = (doc.get("title") or "", doc.get("text") or "")
    queries: dict[str, str] = {}
    with open(root / "queries.jsonl", encoding="utf-8") as handle:
        for line in handle:
            query = json.loads(line)
            queries[str(query["_id"])] = query["text"]
    qrels: dict[str, dict[str, dict[str, int]]] = {}
    for split in ("train", "test"):
        path = root / "qrels" / f"{split}.tsv"
        if not path.exists():
            continue
        table: dict[str, dict[str, int]] = {}
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines()):
            parts = line.split("\t")
            if n == 0 and parts[0] == "query-id":
                continue
            if len(parts) >= 3 and int(parts[2]) > 0:
                table.setdefault(parts[0], {})[parts[1]] = int(parts[2])
        qrels[split] = table
    return SciFact(corpus, queries, qrels)


def scifact_subset(data: SciFact, queries: int, distractors: int, seed: int = 13) -> SciFact:
    """``queries`` test queries, their relevant docs and ``distractors`` other docs (for --quick)."""
    rng = random.Random(seed)
    test = data.split("test")
    chosen = sorted(rng.sample(sorted(test), min(queries, len(test))), key=int)
    relevant = {doc for q in chosen for doc in test[q] if doc in data.corpus}
    others = sorted(set(data.corpus) - relevant)
    keep = relevant | set(rng.sample(others, min(distractors, len(others))))
    return SciFact(
        corpus={d: data.corpus[d] for d in data.corpus if d in keep},
        queries={q: data.queries[q] for q in chosen},
        qrels={"test": {q: test[q] for q in chosen}},
    )


def scifact_doi(doc_id: str) -> str:
    """A synthetic DOI so each SciFact doc gets a distinct, mappable record id."""
    return f"10.0000/scifact.{doc_id}"


def scifact_papers(data: SciFact) -> tuple[list[Paper], dict[str, str]]:
    """SciFact docs as records (title, abstract) and the map record id -> SciFact doc id."""
    papers: list[Paper] = []
    back: dict[str, str] = {}
    for doc_id, (title, text) in data.corpus.items():
        paper = Paper(title=title or text[:120] or doc_id, abstract=text or None, doi=scifact_doi(doc_id))
        papers.append(paper)
        back[paper.id] = doc_id
    return papers, back


# Metrics (BEIR definitions, binary relevance) -----------------------------------------------


def ndcg_at(ranked: Sequence[str], relevant: Mapping[str, int], k: int = 10) -> float:
    gains = sum((2 ** relevant.get(doc, 0) - 1) / math.log2(i + 2) for i, doc in enumerate(ranked[:k]))
    ideal = sorted(relevant.values(), reverse=True)[:k]
    best = sum((2**rel - 1) / math.log2(i + 2) for i, rel in enumerate(ideal))
    return gains / best if best > 0 else 0.0


def recall_at(ranked: Sequence[str], relevant: Mapping[str, int], k: int) -> float:
    if not relevant:
        return 0.0
    return len(set(ranked[:k]) & set(relevant)) / len(relevant)


def mean_metrics(runs: Mapping[str, Sequence[str]], qrels: Mapping[str, Mapping[str, int]]) -> dict[str, float]:
    """nDCG@10, Recall@10 and Recall@100 averaged over the judged queries (missing run = 0)."""
    totals = {"ndcg@10": 0.0, "recall@10": 0.0, "recall@100": 0.0}
    for qid, relevant in qrels.items():
        ranked = runs.get(qid, [])
        totals["ndcg@10"] += ndcg_at(ranked, relevant, 10)
        totals["recall@10"] += recall_at(ranked, relevant, 10)
        totals["recall@100"] += recall_at(ranked, relevant, 100)
    n = max(1, len(qrels))
    return {name: value / n for name, value in totals.items()}


def per_query_ndcg(runs: Mapping[str, Sequence[str]], qrels: Mapping[str, Mapping[str, int]]) -> np.ndarray:
    """nDCG@10 of each judged query, in ``qrels`` order (the terms ``mean_metrics`` averages)."""
    return np.array([ndcg_at(runs.get(qid, []), relevant, 10) for qid, relevant in qrels.items()])


def bootstrap_interval(values: Sequence[float] | np.ndarray, rounds: int = 2000, level: float = 0.95,
                       seed: int = 7) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of per-query ``values`` (queries resampled).

    Pass per-query differences of two systems for a paired interval: a difference whose
    interval holds 0 is not established by this test set, however the means compare.
    """
    data = np.asarray(values, dtype=np.float64)
    if data.size == 0:
        raise ValueError("no values to resample")
    rng = np.random.default_rng(seed)
    means = data[rng.integers(0, data.size, size=(rounds, data.size))].mean(axis=1)
    tail = (1.0 - level) / 2.0
    low, high = np.quantile(means, [tail, 1.0 - tail])
    return float(low), float(high)


# Subprocesses ------------------------------------------------------------------------------


def clean_env(data_dir: Path, **extra: str) -> dict[str, str]:
    """The environment of a fresh installation run as a subprocess: this data dir, offline
    model loading, and none of the caller's keys, servers (PAPERBOT_/OPENAI_/SLACK_) or proxies."""
    env = {
        key: value for key, value in os.environ.items()
        if not key.startswith(("PAPERBOT_", "OPENAI_", "SLACK_")) and not key.lower().endswith("_proxy")
    }
    env.update({"PAPERBOT_DATA_DIR": str(data_dir), "HF_HUB_OFFLINE": "1", "NO_COLOR": "1"})
    env.update(extra)
    return env


# Timing and memory ---------------------------------------------------------------------------


def timed(fn: Callable[[], T]) -> tuple[T, float]:
    """(result, seconds) of one call."""
    start = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - start


def percentile_ms(seconds: Iterable[float], q: float) -> float:
    values = np.asarray(list(seconds), dtype=np.float64)
    return float(np.percentile(values, q) * 1000.0) if values.size else float("nan")


def peak_rss_mb() -> float:
    """Peak resident memory of this process so far, in MiB.

    ``VmHWM`` is per address space, so a subprocess reports its own peak; ``ru_maxrss`` (the
    fallback off Linux) survives ``exec`` and would include the parent's peak at fork time.
    """
    try:
        with open("/proc/self/status", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def current_rss_mb() -> float:
    try:
        with open("/proc/self/statm", encoding="ascii") as handle:
            return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except OSError:
        return float("nan")


def load_note() -> str:
    """The 1-minute load average against the core count: context for the timings."""
    try:
        return f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
    except OSError:
        return f"{os.cpu_count()} cores"


# Output --------------------------------------------------------------------------------------


def setup_logging() -> None:
    """Warnings and errors only, on stderr (bm25s sets its own logger to DEBUG)."""
    import logging

    handler = logging.StreamHandler(sys.stderr)
    handler.setLevel(logging.WARNING)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.WARNING)


def write_json(path: Path, figures: object) -> None:
    """``--json OUT``: the figures as indented UTF-8 JSON at ``path`` (its folder made)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(figures, indent=1, ensure_ascii=False), encoding="utf-8")


def markdown_table(headers: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    """A small Markdown table; floats are printed as given (format them before)."""
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines.extend("| " + " | ".join(str(cell) for cell in row) + " |" for row in rows)
    return "\n".join(lines)


def bench_settings(data_dir: Path, encoder: str = "auto", **overrides: object) -> Settings:
    """Settings of a scratch installation under ``data_dir`` (embedded Chroma, no LLM)."""
    return Settings(data_dir=data_dir, encoder=encoder, chroma_url=None, **overrides)  # type: ignore[arg-type]


_OUT = [OUT_DIR]


def out_dir() -> Path:
    """Where the benchmarks keep caches and scratch indexes (``--out``; default bench/out).

    Made on first use: a fresh clone has no bench/out (it is ignored by git)."""
    _OUT[0].mkdir(parents=True, exist_ok=True)
    return _OUT[0]


def set_out_dir(path: Path) -> None:
    _OUT[0] = Path(path).resolve()
    _OUT[0].mkdir(parents=True, exist_ok=True)


def start_scratch_run(out: Path | None) -> Callable[[str], None]:
    """Quiet logging and the ``--out`` folder for a benchmark; returns its stderr progress printer."""
    setup_logging()
    if out is not None:
        set_out_dir(out)
    out_dir().mkdir(parents=True, exist_ok=True)

    def progress(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    return progress


def shared_cache_dir() -> Path:
    """Where the embedding cache of all bench runs lives (kept between runs; exports are the machine's)."""
    path = out_dir() / "cache"
    path.mkdir(parents=True, exist_ok=True)
    return path
