"""A replica's BM25 index following a shared record store: catch-up time and memory against a full rebuild.

    python bench/lexical_follow.py [--quick] [--records N ...] [--writes K ...] [--rounds R]
                                   [--database-url URL] [--json OUT] [--out DIR]

A record store of N synthetic records (titles of 6-15 words, abstracts of 50-400 words, about 200
on average like SciFact's, 1-8 authors, a venue for most; words drawn from a Zipf law over a
200,000-word vocabulary whose most frequent words are English stopwords) is indexed by two
replicas, each with its own lexical folder as separate processes on separate data dirs have:

* cold start: a build from every record (no saved build: the first start of a replica), then a
  second replica starting from the saved build and its term counts (``current()``: loaded, then
  the change feed read from its generation);
* after a write of K records (half of them new, half existing ones with a new abstract), the
  follower's ``current()`` (reads the K changed records from the change feed) against a full
  rebuild as an index that cannot follow does it (``rebuild()``: the store's digest and every
  record read, the term counts of unchanged texts reused). R rounds per K, medians; which goes
  first alternates.

Time is wall-clock; memory is the process's resident set (RSS, sampled every 5 ms): its growth
over the start of the step ("peak") and what stays once the step's garbage is gone ("held"). The
index's arrays are counted too (bytes of the score matrix, of the term counts). Both replicas
are checked to give the same results for a few queries after every round. ``--database-url`` puts
the store on PostgreSQL (``postgresql+psycopg://...``); default SQLite in the scratch folder.
"""

from __future__ import annotations

import argparse
import gc
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Self, TypeVar

import numpy as np

if __package__ in (None, ""):  # run as a script: make ``bench.common`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import current_rss_mb, markdown_table, out_dir, set_out_dir, setup_logging, write_json
from retrieval.config import Settings
from retrieval.index.bm25s_adapter import score_columns
from retrieval.index.encoders.choice import host_description
from retrieval.index.lexical import LexicalIndex, LexicalSnapshot
from retrieval.records.paper import Author, Paper
from retrieval.storage.records import RecordStore

T = TypeVar("T")
STOPWORDS = ["the", "of", "and", "in", "to", "a", "with", "for", "is", "on", "that", "by", "we", "this", "are",
             "from", "was", "as", "be", "an", "were", "at", "or", "which", "these", "our", "has", "not"]
SYLLABLES = [c + v for c in "bcdfghjklmnprstvz" for v in "aeiou"] + ["qu", "th", "ch", "sh", "str", "pl"]
QUERIES = ["tobaka rinevo", "the kapi of sulamo", "zenoru delifa makiso", "pratonu"]


def vocabulary(size: int, rng: np.random.Generator) -> list[str]:
    """``size`` distinct pseudo-words of 2-4 syllables, stopwords first (the most frequent ranks)."""
    words = list(STOPWORDS)
    seen = set(words)
    while len(words) < size:
        word = "".join(SYLLABLES[i] for i in rng.integers(0, len(SYLLABLES), int(rng.integers(2, 5))))
        if word not in seen:
            seen.add(word)
            words.append(word)
    return words


class Corpus:
    """Synthetic records, reproducible from a seed."""

    def __init__(self, seed: int = 7, words: int = 200_000) -> None:
        self.rng = np.random.default_rng(seed)
        self.words = vocabulary(words, self.rng)
        weights = 1.0 / (np.arange(words) + 2.7)
        self.cumulative = np.cumsum(weights / weights.sum())
        self.names = [f"{self._word().title()} {self._word().title()}" for _ in range(50_000)]
        self.venues = [f"Journal of {self._word().title()} {self._word().title()}" for _ in range(2_000)]

    def _word(self) -> str:
        return self.words[int(self.rng.integers(len(STOPWORDS), len(self.words)))]

    def _text(self, lengths: np.ndarray) -> list[str]:
        drawn = np.searchsorted(self.cumulative, self.rng.random(int(lengths.sum())))
        tokens = [self.words[i] for i in np.minimum(drawn, len(self.words) - 1).tolist()]
        ends = np.cumsum(lengths).tolist()
        return [" ".join(tokens[end - length : end]) for end, length in zip(ends, lengths.tolist(), strict=True)]

    def papers(self, first: int, count: int, edition: int = 0) -> list[Paper]:
        """Records ``first .. first + count - 1`` (``edition`` > 0: the same ids with another abstract)."""
        titles = self._text(self.rng.integers(6, 16, count))
        abstracts = self._text(np.clip(self.rng.normal(200, 70, count), 50, 400).astype(np.int64))
        papers = []
        for n, title, abstract in zip(range(first, first + count), titles, abstracts, strict=True):
            authors = [Author.model_construct(name=self.names[int(i)])
                       for i in self.rng.integers(0, len(self.names), int(self.rng.integers(1, 9)))]
            venue = self.venues[int(self.rng.integers(0, len(self.venues)))] if self.rng.random() < 0.8 else None
            # model_construct: the texts are clean ASCII, and validating 1M abstracts would take longer than the bench
            papers.append(Paper.model_construct(title=title.capitalize(), abstract=abstract if not edition else
                                                f"{abstract} (edition {edition})", authors=authors, venue=venue,
                                                year=1990 + n % 37, doi=f"10.0000/synthetic.{n}"))
        return papers


class Memory:
    """RSS over one step: growth at its peak (sampled every 5 ms) and after it."""

    def __init__(self) -> None:
        self.start = self.peak = 0.0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> Self:
        gc.collect()
        self.start = self.peak = current_rss_mb()
        self._stop.clear()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def _sample(self) -> None:
        while not self._stop.wait(0.005):
            self.peak = max(self.peak, current_rss_mb())

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        assert self._thread is not None
        self._thread.join()
        gc.collect()
        self.peak = max(self.peak, current_rss_mb())
        self.held = current_rss_mb() - self.start

    @property
    def growth(self) -> float:
        return self.peak - self.start


def measured(step: Callable[[], T]) -> tuple[T, float, Memory]:
    with Memory() as memory:
        began = time.perf_counter()
        result = step()
        seconds = time.perf_counter() - began
    return result, seconds, memory


def index_bytes(snapshot: LexicalSnapshot) -> tuple[int, int]:
    """(bytes of the score matrix, bytes of the term counts) a snapshot holds."""
    matrix = sum(array.nbytes for array in score_columns(snapshot.retriever)) if snapshot.retriever is not None else 0
    counts = snapshot.counts
    held = sum(a.nbytes for a in (counts.keys, counts.terms, counts.docs, counts.counts)) if counts is not None else 0
    return matrix, held


def same_answers(a: LexicalSnapshot, b: LexicalSnapshot) -> bool:
    return a.ids == b.ids and all(a.search(query, 10) == b.search(query, 10) for query in QUERIES)


def run_size(records: int, writes: Sequence[int], rounds: int, database_url: str | None, scratch: Path,
             corpus: Corpus, log: Callable[[str], None]) -> dict[str, Any]:
    data_dir = scratch / f"data-{records}"
    settings = Settings(_env_file=None, data_dir=data_dir, database_url=database_url)
    began = time.perf_counter()
    with RecordStore.open(settings) as store:
        for start in range(0, records, 5_000):
            store.put_many(corpus.papers(start, min(5_000, records - start)))
        log(f"{records:,} records stored in {time.perf_counter() - began:.0f} s")
        def build() -> LexicalSnapshot:  # the index is dropped after it: only the snapshot stays held
            return LexicalIndex(scratch / f"builder-{records}", store).rebuild(from_scratch=True)

        built, build_s, build_memory = measured(build)
        matrix_bytes, count_bytes = index_bytes(built)
        del built
        shutil.copytree(scratch / f"builder-{records}", scratch / f"baseline-{records}")  # the other replica's saved build
        follower = LexicalIndex(scratch / f"builder-{records}", store)
        _, load_s, load_memory = measured(follower.current)
        log(f"cold: build {build_s:.1f} s, start from the saved build {load_s:.1f} s")
        baseline = LexicalIndex(scratch / f"baseline-{records}", store)
        baseline.current()
        rows: dict[str, Any] = {"records": records, "cold": {
            "build_s": build_s, "build_peak_mb": build_memory.growth, "build_held_mb": build_memory.held,
            "load_s": load_s, "load_peak_mb": load_memory.growth, "load_held_mb": load_memory.held,
            "matrix_mb": matrix_bytes / 2**20, "counts_mb": count_bytes / 2**20}, "writes": {}}
        next_id, agree = records, True
        for size in writes:
            follow_s, rebuild_s, follow_peak, rebuild_peak, follow_held = [], [], [], [], []
            for n in range(rounds):
                edited = corpus.rng.choice(next_id, size // 2, replace=False).tolist()
                put = corpus.papers(next_id, size - size // 2)
                for start in edited:
                    put += corpus.papers(int(start), 1, edition=n + 1)
                next_id += size - size // 2
                store.put_many(put)
                done: dict[str, tuple[LexicalSnapshot, float, Memory]] = {}
                for label in (("follow", "rebuild") if n % 2 == 0 else ("rebuild", "follow")):
                    done[label] = measured(follower.current if label == "follow" else baseline.rebuild)
                agree &= same_answers(done["follow"][0], done["rebuild"][0])
                follow_s.append(done["follow"][1])
                rebuild_s.append(done["rebuild"][1])
                follow_peak.append(done["follow"][2].growth)
                follow_held.append(done["follow"][2].held)
                rebuild_peak.append(done["rebuild"][2].growth)
                del done
                log(f"  {records:,} records, write of {size:,}, round {n + 1}/{rounds}: follow {follow_s[-1]:.2f} s, "
                    f"rebuild {rebuild_s[-1]:.2f} s")
            rows["writes"][str(size)] = {
                "follow_s": statistics.median(follow_s), "rebuild_s": statistics.median(rebuild_s),
                "ratio": statistics.median(r / f for r, f in zip(rebuild_s, follow_s, strict=True)),
                "follow_peak_mb": statistics.median(follow_peak), "follow_held_mb": statistics.median(follow_held),
                "rebuild_peak_mb": statistics.median(rebuild_peak)}
        rows["same_answers"] = agree
    shutil.rmtree(data_dir, ignore_errors=True)
    return rows


def report(results: list[dict[str, Any]], rounds: int) -> str:
    lines = ["## Cold start (one replica)\n", markdown_table(
        ["records", "build from every record", "peak RSS growth", "start from the saved build + feed",
         "peak RSS growth", "held", "score matrix", "term counts"],
        [[f"{r['records']:,}", f"{r['cold']['build_s']:.1f} s", f"{r['cold']['build_peak_mb']:.0f} MB",
          f"{r['cold']['load_s']:.2f} s ({r['cold']['build_s'] / r['cold']['load_s']:.1f}x faster)",
          f"{r['cold']['load_peak_mb']:.0f} MB", f"{r['cold']['load_held_mb']:.0f} MB",
          f"{r['cold']['matrix_mb']:.0f} MB", f"{r['cold']['counts_mb']:.0f} MB"] for r in results])]
    lines += [f"\n## Catch-up after one write (median of {rounds} rounds)\n", markdown_table(
        ["records", "write", "follow the feed", "full rebuild (reusing counts)", "rebuild / follow",
         "follow: peak RSS growth", "rebuild: peak RSS growth"],
        [[f"{r['records']:,}", f"{int(size):,}", f"{w['follow_s']:.2f} s", f"{w['rebuild_s']:.2f} s",
          f"{w['ratio']:.1f}x", f"{w['follow_peak_mb']:.0f} MB", f"{w['rebuild_peak_mb']:.0f} MB"]
         for r in results for size, w in r["writes"].items()])]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="5,000 records, writes of 100, 2 rounds")
    parser.add_argument("--records", type=int, nargs="*", default=None, help="store sizes (default 100,000)")
    parser.add_argument("--writes", type=int, nargs="*", default=None, help="records per write (default 100 1,000)")
    parser.add_argument("--rounds", type=int, default=0, help="rounds per write size (default 3; quick 2)")
    parser.add_argument("--database-url", default=None, help="a PostgreSQL record store (default SQLite)")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures as JSON here")
    parser.add_argument("--out", type=Path, default=None, help="scratch folder (default bench/out)")
    args = parser.parse_args(argv)
    sizes = args.records or ([5_000] if args.quick else [100_000])
    writes = args.writes or ([100] if args.quick else [100, 1_000])
    rounds = args.rounds or (2 if args.quick else 3)
    if any(size < 2 * max(writes) for size in sizes) or min(writes) < 2:
        parser.error("every --records must be at least twice the largest --writes, and a write at least 2 records")
    setup_logging()
    if args.out:
        set_out_dir(args.out)
    started = time.perf_counter()

    def log(message: str) -> None:
        print(f"  [{time.perf_counter() - started:.0f} s] {message}", file=sys.stderr, flush=True)

    print(f"# A replica's lexical index following a shared store\n\nHost at start: {host_description()}\n")
    scratch = Path(tempfile.mkdtemp(prefix="lexical-follow-", dir=out_dir()))
    corpus = Corpus()
    try:
        results = [run_size(size, writes, rounds, args.database_url, scratch, corpus, log) for size in sizes]
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    store_kind = "PostgreSQL" if args.database_url else "SQLite"
    print(f"Record store on {store_kind}; synthetic records (abstracts of about 200 words).\n")
    print(report(results, rounds))
    agree = all(r["same_answers"] for r in results)
    print(f"\nSame results for {len(QUERIES)} queries from both replicas after every write: {'yes' if agree else 'NO'}.")
    print(f"\nHost at end: {host_description()}\n({time.perf_counter() - started:.0f} s)")
    if args.json:
        write_json(args.json, {"host": host_description(), "store": store_kind, "rounds": rounds, "results": results})
    return 0 if agree else 1


if __name__ == "__main__":
    raise SystemExit(main())
