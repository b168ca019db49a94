"""The command line as a user feels it: seconds per call of `paperbot`, as ratios to a floor.

    python bench/cli.py [--rounds N] [--datasets DIR] [--out DIR] [--baseline CHECKOUT]

* **Variants**, each a fresh process, as a user runs them: `paperbot --help`, `search`, an
  extractive `ask` (no LLM configured) and `summarize`, beside the floor: `python -c "import
  chromadb, onnxruntime, numpy"`, the least any Chroma-backed query must import. The figure of
  a variant is its median wall time over the rounds divided by the floor's median: a ratio
  measured in one run, so a loaded machine moves both alike. The absolute medians are printed
  too, with the load average and the CPU, before and after, and the CPU time (user + system)
  of each call, which other load on the machine moves less than the wall time.
* **Rounds** are interleaved: each round runs every variant once, in a shuffled order, after one
  warm-up round that is not counted (page cache, the encoder's first load in the data dir).
* **Index**: the bundled sample corpus (`retrieval/sample/arxiv_sample.jsonl`) plus the real
  publication lists of `scholars-real/bib/` named in ``SCHOLAR_FILES`` (read at run time, never
  copied), ingested once through `paperbot ingest` into a scratch data dir under
  ``--out`` (default `bench/out`) and reused while the inputs are unchanged. Without those
  files the sample alone is indexed and a sample author is summarised.
* **Environment**: ``bench.common.clean_env``: no PAPERBOT_/OPENAI_/SLACK_ variables, so no LLM;
  output goes to a pipe. The warm-up checks that each call succeeds and that `ask` and
  `summarize` answered without a model (``mode: extractive``), citing records: `ask`'s question
  is one the bundled sample answers, so the row times an answer, not an abstention.
* **Baseline** (``--baseline CHECKOUT``, e.g. a worktree of ``main``): every `paperbot` variant
  also runs with ``PYTHONPATH=CHECKOUT``, that checkout's code on the same dependencies and the
  same data dir, interleaved in the same rounds; the table adds each command's ratio to its
  baseline twin. Each side reads an index made by its own code, in a data dir of its own with
  the same files (a newer paperbot upgrades an older database's schema in place, which the older
  code then refuses to read).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make ``bench.common`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import DEFAULT_DATASETS, REPO, clean_env, markdown_table, out_dir, set_out_dir

PAPERBOT = Path(sys.executable).with_name("paperbot")
SAMPLE = REPO / "retrieval" / "sample" / "arxiv_sample.jsonl"
SCHOLAR_FILES = ("aditya-grover.bib", "jiaming-song.bib")  # 109 entries; the two share 3 papers
SCHOLAR = "Aditya Grover"
SAMPLE_SCHOLAR = "Gordon Fraser"  # when scholars-real is absent
QUERY = "diffusion models for molecules"
QUESTION = "Which papers use large language models for software testing?"  # answered from the sample
FLOOR = "import chromadb, onnxruntime, numpy"


BASELINE = " [baseline]"  # suffix of a variant run with the baseline checkout's code


@dataclass(frozen=True)
class Variant:
    name: str
    argv: tuple[str, ...]
    goal: float | None  # the ratio to the floor it must stay under
    env: tuple[tuple[str, str], ...] = ()  # set on top of clean_env


def variants(scholar: str, baseline: Path | None = None) -> list[Variant]:
    chosen = [
        Variant("floor: python -c \"import chromadb, onnxruntime, numpy\"", (sys.executable, "-c", FLOOR), None),
        Variant("paperbot --help", (str(PAPERBOT), "--help"), 0.3),
        Variant(f"paperbot search \"{QUERY}\"", (str(PAPERBOT), "search", QUERY), 1.5),
        Variant(f"paperbot ask \"{QUESTION}\" (extractive)", (str(PAPERBOT), "ask", QUESTION), 1.7),
        Variant(f"paperbot summarize \"{scholar}\"", (str(PAPERBOT), "summarize", scholar), 2.0),
    ]
    if baseline is None:
        return chosen
    return [*chosen, *(Variant(v.name + BASELINE, v.argv, None, (("PYTHONPATH", str(baseline.resolve())),))
                       for v in chosen[1:])]


def host_line() -> str:
    """CPU model and cores, and the load averages now."""
    model = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    try:
        load = "load average " + " / ".join(f"{x:.2f}" for x in os.getloadavg()) + " (1/5/15 min)"
    except OSError:
        load = "load average unknown"
    return f"{model}, {cores} cores; {load}"


def corpus_files(datasets: Path) -> tuple[list[Path], str]:
    """The files to index and the scholar to summarise."""
    bib = datasets / "scholars-real" / "bib"
    found = [bib / name for name in SCHOLAR_FILES if (bib / name).exists()]
    if len(found) == len(SCHOLAR_FILES):
        return [SAMPLE, *found], SCHOLAR
    print(f"note: {bib} lacks {', '.join(SCHOLAR_FILES)}: indexing the sample corpus alone", file=sys.stderr)
    return [SAMPLE], SAMPLE_SCHOLAR


def prepared_index(files: Sequence[Path], baseline: Path | None = None) -> Path:
    """A data dir with ``files`` ingested through the CLI (the ``baseline`` checkout's, when given),
    reused while their bytes are unchanged."""
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    extra = {} if baseline is None else {"PYTHONPATH": str(baseline.resolve())}
    if baseline is not None:
        digest.update(b"baseline\0" + str(baseline.resolve()).encode())
    root = out_dir() / f"cli-index-{digest.hexdigest()[:12]}"
    data_dir, ready = root / "data", root / "ready.json"
    if ready.exists():
        return data_dir
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    print(f"indexing {len(files)} file(s) into {data_dir} (once) ...", file=sys.stderr, flush=True)
    run = subprocess.run([str(PAPERBOT), "ingest", *map(str, files), "--json"], capture_output=True, text=True,
                         cwd=root, env=clean_env(data_dir, **extra))
    if run.returncode != 0:
        raise SystemExit(f"paperbot ingest failed ({run.returncode}):\n{run.stderr}")
    report = json.loads(run.stdout)
    records = report["added"] + report["updated"] + report["unchanged"]
    ready.write_text(json.dumps({"files": [str(p) for p in files], "records": records}), encoding="utf-8")
    return data_dir


def check(variant: Variant, data_dir: Path) -> str:
    """One untimed call with --json (where there is one): it must succeed, and answer without a
    model, citing records (an abstention is timed by nothing here)."""
    argv = list(variant.argv)
    wants_mode = argv[1:2] in (["ask"], ["summarize"])
    if argv[1:2] in (["ask"], ["search"], ["summarize"]):
        argv.append("--json")
    run = subprocess.run(argv, capture_output=True, text=True, cwd=data_dir.parent,
                         env=clean_env(data_dir, **dict(variant.env)))
    if run.returncode != 0:
        raise SystemExit(f"{variant.name} failed ({run.returncode}):\n{run.stderr}")
    if not wants_mode:
        return ""
    payload = json.loads(run.stdout)
    mode = payload.get("mode")
    if mode != "extractive":
        raise SystemExit(f"{variant.name} answered in mode {mode!r}, not extractive: is a model configured?")
    cited = len(payload.get("citations") or payload.get("papers") or [])
    if not cited:
        raise SystemExit(f"{variant.name} cited no record: its time would be an abstention's, not an answer's")
    return f"{variant.name.split()[1]}: mode {mode}, {cited} cited records"


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(variant: Variant, data_dir: Path) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one call."""
    cpu, start = _children_cpu(), time.perf_counter()
    run = subprocess.run(variant.argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         cwd=data_dir.parent, env=clean_env(data_dir, **dict(variant.env)))
    seconds = time.perf_counter() - start
    if run.returncode != 0:
        raise SystemExit(f"{variant.name} failed ({run.returncode}) during the timed rounds")
    return seconds, _children_cpu() - cpu


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7, help="timed rounds (default 7), after one warm-up round")
    parser.add_argument("--datasets", type=Path, default=DEFAULT_DATASETS, help="the folder holding scholars-real/")
    parser.add_argument("--out", type=Path, help="where the scratch index lives (default bench/out)")
    parser.add_argument("--seed", type=int, default=16, help="seed of the per-round order")
    parser.add_argument("--baseline", type=Path, help="another checkout of paperbot to time beside this one")
    args = parser.parse_args(argv)
    if args.out is not None:
        set_out_dir(args.out)
    files, scholar = corpus_files(args.datasets)
    data_dir = prepared_index(files)
    baseline_dir = prepared_index(files, args.baseline) if args.baseline is not None else None

    def where(variant: Variant) -> Path:
        return baseline_dir if baseline_dir is not None and variant.name.endswith(BASELINE) else data_dir

    records = json.loads((data_dir.parent / "ready.json").read_text(encoding="utf-8")).get("records")
    chosen = variants(scholar, args.baseline)
    notes = [note for variant in chosen if (note := check(variant, where(variant)))]
    rng = random.Random(args.seed)
    before = host_line()
    times: dict[str, list[float]] = {v.name: [] for v in chosen}
    cpu: dict[str, list[float]] = {v.name: [] for v in chosen}
    for round_no in range(args.rounds + 1):  # round 0 warms up
        order = chosen[:]
        rng.shuffle(order)
        for variant in order:
            seconds, cpu_seconds = timed(variant, where(variant))
            if round_no:
                times[variant.name].append(seconds)
                cpu[variant.name].append(cpu_seconds)
        print(f"round {round_no}/{args.rounds} done", file=sys.stderr, flush=True)
    after = host_line()
    floor = statistics.median(times[chosen[0].name])
    floor_cpu = statistics.median(cpu[chosen[0].name])
    rows = []
    for variant in chosen:
        median, median_cpu = statistics.median(times[variant.name]), statistics.median(cpu[variant.name])
        ratio = median / floor
        verdict = "" if variant.goal is None else ("met" if ratio <= variant.goal else "**missed**")
        spread = f"{min(times[variant.name]):.2f}-{max(times[variant.name]):.2f}"
        twin = times.get(variant.name + BASELINE)
        row = [variant.name, f"{median:.2f}", spread, f"**{ratio:.2f}×**",
               "" if variant.goal is None else f"≤ {variant.goal}×", verdict,
               f"{median_cpu:.2f}", f"{median_cpu / floor_cpu:.2f}×"]
        rows.append([*row, f"{median / statistics.median(twin):.3f}×" if twin else ""] if args.baseline else row)
    print(f"Index: {records} records from {', '.join(p.name for p in files)} ({data_dir})")
    print(f"Host before: {before}")
    print(f"Host after:  {after}")
    print(f"{args.rounds} interleaved rounds (+1 warm-up); checked: {'; '.join(notes)}")
    print()
    headers = ["command", "median s", "min-max s", "vs floor", "goal", "", "CPU s", "CPU vs floor"]
    print(markdown_table([*headers, "vs baseline"] if args.baseline else headers, rows))
    return 0 if all(row[5] != "**missed**" for row in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
