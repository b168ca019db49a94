"""A scholar's summary over a whole career: theme clustering by running sums against the definition.

    python bench/summarize_speed.py [--quick] [--data DIR] [--out DIR] [--reuse-index] [--owners N]
                                    [--rounds R] [--json OUT]

Index: the 40 publication lists of ``scholars-real`` (read at run time), ingested as
``bench/people.py`` does (``open_index``: the real ingest, the configured local encoder, cached
by content hash; ``--reuse-index`` keeps it). The ``--owners`` owners (default 4) whose resolved
person holds the most papers are summarised for their whole record (``since=1900``) and for the
default window (the 24 months before ``TODAY``), extractively (no model), by ``build_summary``
twice per round, the order alternating by round:

* **baseline**: ``linkage=naive_average_linkage``, the definition, which averages every pair of
  groups afresh at every merge (as the clustering did before ``retrieval.scholars.linkage``);
* **new**: the product's ``average_linkage`` (running pair sums, each group's best partner).

The directory, the person, the term statistics and the stored vectors are obtained once,
untimed. The table gives median seconds and the ratio baseline / new; both must give the same
summary (the whole result, compared field by field). "end to end" is one warm
``summarize_scholar`` call with the new code (name resolution and vector look-up included).
Exit status 1 when a summary differs.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Sequence
from datetime import date
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make ``bench.common`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import markdown_table, start_scratch_run
from bench.people import add_index_arguments, load_owners, open_index
from retrieval.errors import UnknownScholarError
from retrieval.index.encoders.choice import host_description
from retrieval.scholars.cache import background_of, directory_for
from retrieval.scholars.linkage import Linkage, average_linkage, naive_average_linkage
from retrieval.scholars.resolve import resolve
from retrieval.scholars.summary import build_summary, recent_work, stored_vectors, summarize_scholar

TODAY = date(2026, 12, 1)  # fixed, as in bench/people.py: the default window does not drift
WINDOWS: dict[str, int | None] = {"since 1900": 1900, "last 24 months": None}
LINKAGES: dict[str, Linkage] = {"baseline": naive_average_linkage, "new": average_linkage}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="2 owners, 1 round")
    add_index_arguments(parser)
    parser.add_argument("--owners", type=int, default=0, help="owners with the most papers (default 4; quick 2)")
    parser.add_argument("--rounds", type=int, default=0, help="rounds per summary (default 3; quick 1)")
    parser.add_argument("--json", type=Path, default=None, metavar="OUT", help="write the figures as JSON")
    args = parser.parse_args(argv)
    owners_wanted = args.owners or (2 if args.quick else 4)
    rounds = args.rounds or (1 if args.quick else 3)
    progress = start_scratch_run(args.out)
    started = time.perf_counter()
    print(f"# A scholar's summary: theme clustering, baseline against new\n\nHost at start: {host_description()}\n")
    index, settings, _ = open_index(load_owners(args.data), args.reuse_index, progress, encoder=args.encoder)
    directory = directory_for(index, cache_dir=settings.cache_dir)
    background = background_of(directory, index, cache_dir=settings.cache_dir)
    people = []
    for owner in load_owners(args.data):
        try:
            person = resolve(directory, owner.name).person
        except UnknownScholarError:
            continue
        if person is not None:
            people.append((owner.name, person))
    people.sort(key=lambda item: (-len(directory.papers_of(item[1])), item[0]))
    rows: list[list[str]] = []
    figures: list[dict[str, object]] = []
    same_everywhere = True
    for name, person in people[:owners_wanted]:
        vectors = stored_vectors(index, directory.papers_of(person))
        for window, since in WINDOWS.items():
            seconds: dict[str, list[float]] = {label: [] for label in LINKAGES}
            results = {}
            for n in range(rounds):
                for label in (list(LINKAGES) if n % 2 == 0 else list(reversed(LINKAGES))):
                    begin = time.perf_counter()
                    results[label] = build_summary(directory, person, today=TODAY, since=since, background=background,
                                                   vectors=vectors, linkage=LINKAGES[label])
                    seconds[label].append(time.perf_counter() - begin)
                progress(f"  {name}, {window}, round {n + 1}/{rounds}: baseline {seconds['baseline'][-1]:.2f} s, "
                         f"new {seconds['new'][-1]:.2f} s")
            same = results["baseline"] == results["new"]
            same_everywhere &= same
            begin = time.perf_counter()
            summarize_scholar(index, settings, name, since=since, today=TODAY)
            end_to_end = time.perf_counter() - begin
            baseline, new = statistics.median(seconds["baseline"]), statistics.median(seconds["new"])
            in_window = len(recent_work(directory.papers_of(person), TODAY, since).papers)
            rows.append([name, window, str(in_window), f"{baseline:.2f}", f"{new:.2f}", f"{baseline / new:.1f}x",
                         f"{end_to_end:.2f}", "yes" if same else "NO"])
            figures.append({"scholar": name, "window": window, "papers": in_window, "baseline_s": baseline,
                            "new_s": new, "end_to_end_s": end_to_end, "same_summary": same})
    print(f"## {min(owners_wanted, len(people))} scholars with the most papers; extractive; median of {rounds} "
          f"round(s)\n")
    print(markdown_table(["scholar", "window", "papers in window", "baseline s", "new s", "baseline / new",
                          "end to end s (new)", "same summary"], rows))
    print(f"\nHost at end: {host_description()}\n({time.perf_counter() - started:.0f} s)")
    if args.json:
        args.json.write_text(json.dumps({"rounds": rounds, "rows": figures}, indent=1), encoding="utf-8")
    return 0 if same_everywhere else 1


if __name__ == "__main__":
    raise SystemExit(main())
