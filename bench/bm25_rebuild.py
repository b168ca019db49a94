"""BM25 rebuild after a small change to a large index: reusing the last build's term counts against a build from scratch.

    python bench/bm25_rebuild.py [--quick] [--records N] [--changed K] [--rounds R] [--datasets DIR] [--out DIR]

A record store of N records (SciFact's 5,183 abstracts, repeated with distinct titles and DOIs
past the first copy: replicas, said so in the output) gets two BM25 indexes over it. Each round
edits K records' titles, adds K records and deletes K, then rebuilds both: one as an index does
that cannot follow the store's change feed (``rebuild()``: the counts of unchanged records
reused; an index that follows the feed reads only the changed records, ``bench/lexical_follow.py``), one
from scratch (``rebuild(from_scratch=True)``: every record tokenised, as every rebuild did
before the counts were kept). Which goes first alternates by round; the table gives medians and
the per-round ratio. The two builds are checked to answer the same queries with the same
results. The store's writes are not timed.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make ``bench.common`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import DEFAULT_DATASETS, load_scifact, markdown_table, out_dir, set_out_dir, setup_logging
from retrieval.index.encoders.choice import host_description
from retrieval.index.lexical import LexicalIndex, LexicalSnapshot
from retrieval.index.term_counts import COUNTS_FILE
from retrieval.records.paper import Paper
from retrieval.storage.records import RecordStore

QUERIES = ["vitamin D deficiency and bone density", "microRNA regulation of cancer", "revised edition",
           "neutrophil extracellular traps", "randomized controlled trial of statins"]


def replicas(datasets: Path, count: int) -> list[Paper]:
    """``count`` records: SciFact's abstracts, then copies of them with distinct titles and DOIs."""
    docs = list(load_scifact(datasets).corpus.items())
    papers = []
    for n in range(count):
        doc_id, (title, text) = docs[n % len(docs)]
        copy = n // len(docs)
        papers.append(Paper(title=(title or text[:120]) + (f" (copy {copy})" if copy else ""), abstract=text or None,
                            doi=f"10.0000/scifact.{doc_id}.{copy}", year=1990 + n % 35))
    return papers


def folder_bytes(folder: Path) -> int:
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())


def same_answers(a: LexicalSnapshot, b: LexicalSnapshot) -> bool:
    return a.ids == b.ids and all(a.search(query, 10) == b.search(query, 10) for query in QUERIES)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="5,000 records, 2 rounds")
    parser.add_argument("--records", type=int, default=0, help="records in the store (default 100,000; quick 5,000)")
    parser.add_argument("--changed", type=int, default=20, help="records edited, added and deleted per round (default 20)")
    parser.add_argument("--rounds", type=int, default=0, help="rounds (default 3; quick 2)")
    parser.add_argument("--datasets", type=Path, default=DEFAULT_DATASETS, help="folder holding scifact/")
    parser.add_argument("--out", type=Path, default=None, help="scratch folder (default bench/out)")
    args = parser.parse_args(argv)
    records = args.records or (5_000 if args.quick else 100_000)
    rounds = args.rounds or (2 if args.quick else 3)
    if records < 2 * args.changed * rounds + 1 or args.changed < 1:
        parser.error("--records must exceed 2 x --changed x --rounds, and --changed must be at least 1")
    setup_logging()
    if args.out:
        set_out_dir(args.out)
    started = time.perf_counter()
    print(f"# BM25 rebuild after a small change\n\nHost at start: {host_description()}\n")
    papers = replicas(args.datasets, records)
    scratch = Path(tempfile.mkdtemp(prefix="bm25-rebuild-", dir=out_dir()))
    reusing_s: list[float] = []
    scratch_s: list[float] = []
    agree = True
    try:
        with RecordStore(scratch / "records.sqlite3") as store:
            for start in range(0, len(papers), 5_000):
                store.put_many(papers[start : start + 5_000])
            reusing, from_scratch = LexicalIndex(scratch / "reusing", store), LexicalIndex(scratch / "scratch", store)
            first = time.perf_counter()
            reusing.current()
            first_build = time.perf_counter() - first
            from_scratch.rebuild(from_scratch=True)
            for n in range(rounds):
                edited = papers[n * args.changed : (n + 1) * args.changed]
                store.put_many([p.model_copy(update={"title": f"{p.title}, revised edition {n}"}) for p in edited]
                               + [Paper(title=f"Added record {n}.{i} on neutrophil extracellular traps",
                                        doi=f"10.0000/added.{n}.{i}") for i in range(args.changed)])
                store.delete_many([p.id for p in papers[-(n + 1) * args.changed : len(papers) - n * args.changed]])
                timings: dict[str, float] = {}
                built: dict[str, LexicalSnapshot] = {}
                for label in (("reusing", "scratch") if n % 2 == 0 else ("scratch", "reusing")):
                    begin = time.perf_counter()
                    built[label] = reusing.rebuild() if label == "reusing" else from_scratch.rebuild(from_scratch=True)
                    timings[label] = time.perf_counter() - begin
                agree &= same_answers(built["reusing"], built["scratch"])
                reusing_s.append(timings["reusing"])
                scratch_s.append(timings["scratch"])
                print(f"  round {n + 1}/{rounds}: reusing counts {timings['reusing']:.2f} s, "
                      f"from scratch {timings['scratch']:.2f} s", file=sys.stderr, flush=True)
            build_dir = reusing._build_dir()
            sizes = (folder_bytes(build_dir), (build_dir / COUNTS_FILE).stat().st_size) if build_dir else (0, 0)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    ratios = [s / r for r, s in zip(reusing_s, scratch_s, strict=True)]
    replicated = " (SciFact's 5,183 abstracts, then replicas with distinct titles)" if records > 5_183 else ""
    print(f"## {records:,} records{replicated}; {args.changed} edited, {args.changed} added and {args.changed} "
          f"deleted per round; {rounds} rounds, median\n")
    print(markdown_table(
        ["rebuild", "seconds", "from scratch / this"],
        [["from scratch (every record tokenised)", f"{statistics.median(scratch_s):.2f}", "1.00"],
         ["reusing the last build's term counts", f"{statistics.median(reusing_s):.2f}",
          f"{statistics.median(ratios):.2f}x (rounds " + ", ".join(f"{r:.2f}x" for r in ratios) + ")"]]))
    print(f"\nFirst build (nothing to reuse; counts saved): {first_build:.2f} s. Build folder {sizes[0] / 1e6:.0f} MB, "
          f"of which the term counts {sizes[1] / 1e6:.0f} MB.")
    print(f"Same results for {len(QUERIES)} queries in every round: {'yes' if agree else 'NO'}.")
    print(f"\nHost at end: {host_description()}\n({time.perf_counter() - started:.0f} s)")
    return 0 if agree else 1


if __name__ == "__main__":
    raise SystemExit(main())
