"""The expert ranking's own arithmetic and the record decoding every search does: new against the
code they replaced, in one process.

    python bench/expert_ranking_speed.py [--quick] [--data DIR] [--out DIR] [--reuse-index]
                                         [--queries N] [--rounds R] [--json OUT]

Index: the 40 publication lists of ``scholars-real`` (read at run time), ingested as
``bench/people.py`` does (``open_index``; ``--reuse-index`` keeps it), grouped into people as
``paperbot collaborators`` groups them (``directory_for``). Queries: the titles of ``--queries``
records (default 120; quick 30), chosen by a hash of their ids. Each query's 150 hits (what
``find_collaborators`` retrieves) and their hubness are obtained once, untimed; then, in rounds
whose order alternates:

* **people through their papers**: ``document_model_scores`` (the evidence of ``paperbot
  collaborators`` before the work similarity), against the **baseline** ``rank_by_scanning``,
  the same arithmetic as it was computed before 2026-12-05: each author's mention found by
  scanning the person's mentions, each hit's weight worked out again for every author, and the
  person's paper count and display name worked out again at every comparison of the sort.
* **reading records**: ``decode`` of the stored JSON of every record the queries' hits name
  (what each search does for its hits), against the **baseline** ``decode_reading_fields``,
  which asked pydantic for a model's field names once per key (as ``decode`` did before), and
  against full validation (``Paper.model_validate_json``, what ``decode`` avoids).

Both sides must give the same result: the same people in the same order with the same scores,
and equal records. The table gives the median seconds per round over all queries and the ratio
baseline / new. Exit status 1 when a result differs.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from datetime import date
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make ``bench.common`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pydantic import BaseModel

from bench.common import markdown_table, start_scratch_run, timed, write_json
from bench.people import add_index_arguments, load_owners, open_index
from retrieval.index.encoders.choice import host_description
from retrieval.records.names import name_specificity
from retrieval.records.paper import Author, FamilyPart, Paper, Provenance
from retrieval.results import SearchHit
from retrieval.scholars.cache import directory_for
from retrieval.scholars.collaborators import RETRIEVE_K
from retrieval.scholars.expertise import (
    Evidence,
    Expert,
    document_model_scores,
    hub_discounted,
    recency_weight,
    saturating_sum,
    score_relevance,
)
from retrieval.scholars.hubness import paper_hubness, stored_neighbours_of
from retrieval.scholars.people import PeopleDirectory, Person, stored_vectors_of
from retrieval.storage.record_rows import decode

TODAY = date(2026, 12, 1)  # fixed, as in bench/people.py


def rank_by_scanning(hits: Sequence[SearchHit], directory: PeopleDirectory, hubness: dict[str, float]) -> list[Expert]:
    """The baseline: ``document_model_scores`` as computed before (see the module docstring)."""
    best = max((hub_discounted(hit, hubness) for hit in hits), default=0.0)
    experts: dict[str, Expert] = {}
    for rank, hit in enumerate(hits, start=1):
        for position in range(len(hit.paper.authors)):
            person = directory.person_at(hit.paper.id, position)
            if person is None:
                continue
            mention = next(m for m in person.mentions if m.paper_id == hit.paper.id)
            weight = score_relevance(hub_discounted(hit, hubness), best) * recency_weight(hit.paper.year, TODAY)
            experts.setdefault(person.key, Expert(person)).evidence.append(Evidence(hit, rank, mention, weight))
    for expert in experts.values():
        expert.evidence.sort(key=lambda e: (-e.contribution, e.rank))
        expert.score = saturating_sum([e.contribution for e in expert.evidence])

    def order(expert: Expert) -> tuple[float, int, int, str]:
        person = expert.person
        return (-expert.score, expert.best_rank, -len(dict.fromkeys(m.paper_id for m in person.mentions)),
                _name_by_scanning(person))

    return sorted(experts.values(), key=order)


def _name_by_scanning(person: Person) -> str:
    names = person.names
    return max(names, key=lambda n: (name_specificity(n), names[n], n != n.lower(), len(n), n))


def decode_reading_fields(record: str) -> Paper:
    """The baseline: ``decode`` asking pydantic for the field names once per key."""
    def known(model: type[BaseModel], data: dict[str, Any]) -> dict[str, Any]:
        return {key: value for key, value in data.items() if key in model.model_fields}

    data = json.loads(record)
    fields = known(Paper, data)
    fields["authors"] = [Author.model_construct(**known(Author, a)) for a in fields.get("authors") or []]
    fields["provenance"] = [Provenance.model_construct(**known(Provenance, p)) for p in fields.get("provenance") or []]
    fields["editor_families"] = {name: FamilyPart.model_construct(**known(FamilyPart, part))
                                 for name, part in (fields.get("editor_families") or {}).items()}
    return Paper.model_construct(**fields)


def _ranking(experts: list[Expert]) -> list[tuple[str, float]]:
    return [(expert.person.key, expert.score) for expert in experts]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="30 queries, 1 round")
    add_index_arguments(parser)
    parser.add_argument("--queries", type=int, default=0, help="titles asked (default 120; quick 30)")
    parser.add_argument("--rounds", type=int, default=0, help="rounds (default 5; quick 1)")
    parser.add_argument("--json", type=Path, default=None, metavar="OUT", help="write the figures as JSON")
    args = parser.parse_args(argv)
    wanted = args.queries or (30 if args.quick else 120)
    rounds = args.rounds or (1 if args.quick else 5)
    progress = start_scratch_run(args.out)
    started = time.perf_counter()
    print(f"# The expert ranking's arithmetic and record decoding: baseline against new\n\n"
          f"Host at start: {host_description()}\n")
    index, settings, _ = open_index(load_owners(args.data), args.reuse_index, progress, encoder=args.encoder)
    directory = directory_for(index, cache_dir=settings.cache_dir)
    papers = sorted(index.iter_papers(), key=lambda p: hashlib.sha1(p.id.encode("utf-8")).hexdigest())[:wanted]
    vectors, neighbours = stored_vectors_of(index), stored_neighbours_of(index)
    assert vectors is not None and neighbours is not None, "the index keeps no vectors to search"
    asked = []
    for paper in papers:
        hits = index.retrieve(paper.title, k=RETRIEVE_K).hits
        asked.append((hits, paper_hubness([hit.paper.id for hit in hits], vectors, neighbours)))
    stored = {hit.paper.id: hit.paper.model_dump_json() for hits, _ in asked for hit in hits}
    records = list(stored.values())
    progress(f"{len(asked)} queries, {sum(len(h) for h, _ in asked):,} hits, {len(records):,} distinct records")

    sides: dict[str, dict[str, Callable[[], object]]] = {
        "people through their papers": {
            "baseline": lambda: [_ranking(rank_by_scanning(h, directory, hubs)) for h, hubs in asked],
            "new": lambda: [_ranking(document_model_scores(h, directory, TODAY, hubs)) for h, hubs in asked],
        },
        "reading records": {
            "baseline": lambda: [decode_reading_fields(r) for r in records],
            "new": lambda: [decode(r) for r in records],
            "full validation": lambda: [Paper.model_validate_json(r) for r in records],
        },
    }
    rows: list[list[str]] = []
    figures: list[dict[str, object]] = []
    same_everywhere = True
    for task, runs in sides.items():
        seconds: dict[str, list[float]] = {label: [] for label in runs}
        results: dict[str, object] = {}
        for n in range(rounds):
            for label in (list(runs) if n % 2 == 0 else list(reversed(runs))):
                results[label], elapsed = timed(runs[label])
                seconds[label].append(elapsed)
            progress(f"  {task}, round {n + 1}/{rounds}: " + ", ".join(f"{k} {v[-1]:.2f} s" for k, v in seconds.items()))
        same = all(result == results["new"] for result in results.values())
        same_everywhere &= same
        new = statistics.median(seconds["new"])
        for label, times in seconds.items():
            median = statistics.median(times)
            rows.append([task, label, f"{median:.3f}", "1.0x" if label == "new" else f"{median / new:.1f}x",
                         "yes" if same else "NO"])
            figures.append({"task": task, "side": label, "median_s": median, "same_result": same})
    print(f"## {len(asked)} titles, {RETRIEVE_K} hits each ({len(records):,} distinct records); median of {rounds} "
          f"round(s), seconds for all queries\n")
    print(markdown_table(["task", "side", "median s", "side / new", "same result"], rows))
    print(f"\nHost at end: {host_description()}\n({time.perf_counter() - started:.0f} s)")
    if args.json:
        write_json(args.json, {"queries": len(asked), "rounds": rounds, "rows": figures})
    return 0 if same_everywhere else 1


if __name__ == "__main__":
    raise SystemExit(main())
