"""The ceiling of expert finding by any aggregation of the retrieved hits (issue #27 item 6).

    python bench/experts_ceiling.py [--data DIR] [--out DIR] [--reuse-index] [--deep K] [--json OUT]

Same folds, held-out records, queries (abstract, title) and halves as ``bench/experts_scholars.py``
(its ``choose_queries`` and ``fold_index``). Per query it measures the rank, among the
``RETRIEVE_K`` hits every ranking there consumes (``index.retrieve(query, k=RETRIEVE_K)``), of the
best-ranked paper *of the owner*: a hit with an author whom the people directory maps to a person
that passes the bench's judge (``is_owner``: one of the owner's written names, most of their
papers in the owner's file). A ranking of the people in the hits can only find the owner if such a
paper is among them, so the share of queries with one anywhere in the hits bounds Recall@10 of any
aggregation of these hits from above. Also measured: the same in a deeper search of ``--deep``
hits (the search's cap raised for this run only; its ranking of the first 150 may differ a
little), the rank of the first hit among the owner's gold records (any person), and paperbot's
Recall@10 on the same hits (to check the run against the bench). Lists the held-out abstract
queries whose owner paperbot does not rank in the first 10.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make ``bench.common`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import retrieval.index.search as search_module
from bench.common import HELD_OUT, TUNE, load_note, markdown_table, start_scratch_run, write_json
from bench.experts import PAPERBOT, stored_of
from bench.experts_scholars import (
    FOLDS,
    METHODS,
    MODES,
    PER_FOLD,
    choose_queries,
    fold_index,
    is_owner,
    owner_rank,
)
from bench.people import TODAY, Owner, add_index_arguments, ground_truth, load_owners, open_index
from retrieval.results import SearchHit
from retrieval.scholars.cache import directory_for
from retrieval.scholars.collaborators import RETRIEVE_K
from retrieval.scholars.people import PeopleDirectory

DEPTHS = (1, 5, 10, 20, 50, RETRIEVE_K)
DEEP_K = 500


def best_owner_hit(hits: Sequence[SearchHit], people: PeopleDirectory, owner: Owner, file_ids: set[str]) -> int | None:
    """1-based rank of the first hit with an author who is the owner by the bench's judge."""
    for rank, hit in enumerate(hits, start=1):
        for position in range(len(hit.paper.authors)):
            person = people.person_at(hit.paper.id, position)
            if person is not None and is_owner(person, owner, file_ids):
                return rank
    return None


def fractions(ranks: Sequence[int | None]) -> list[str]:
    """Shares of queries with a rank within each of ``DEPTHS``, anywhere, and none."""
    n = max(1, len(ranks))
    found = [r for r in ranks if r is not None]
    cells = [sum(1 for r in found if r <= depth) / n for depth in DEPTHS]
    return [f"{c:.3f}" for c in (*cells, len(found) / n, (len(ranks) - len(found)) / n)]


def report(rows: Sequence[dict[str, Any]], deep: int) -> str:
    lines = []
    lists = {f"owner's paper in the {RETRIEVE_K} hits": "hit", f"owner's paper in {deep} hits": "deep",
             f"owner's gold record in the {RETRIEVE_K} hits": "gold"}
    for mode in MODES:
        table = []
        for half in (TUNE, HELD_OUT):
            chosen = [r[mode] for r in rows if r["half"] == half]
            recall = sum(1 for r in chosen if r["paperbot"] is not None and r["paperbot"] <= 10) / max(1, len(chosen))
            for label, key in lists.items():
                table.append([f"{half} ({len(chosen)})", label, *fractions([r[key] for r in chosen]),
                              f"{recall:.3f}"])
        lines += [f"Query: the held-out record's {mode}.", "", markdown_table(
            ["half", "rank of", *(f"top {d}" for d in DEPTHS), "any", "none", "paperbot R@10"], table), ""]
    lines.append("Held-out abstracts whose owner paperbot ranks below 10 (owner; title; owner's best hit "
                 f"in {RETRIEVE_K} / in {deep}; paperbot's rank of the owner; its top 3):")
    for row in rows:
        cell = row["abstract"]
        if row["half"] == HELD_OUT and (cell["paperbot"] is None or cell["paperbot"] > 10):
            lines.append(f"- {row['slug']}; {row['record'][:70]}; {cell['hit']} / {cell['deep']}; {cell['paperbot']}; "
                         f"{', '.join(cell['top3'])}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_index_arguments(parser)
    parser.add_argument("--deep", type=int, default=DEEP_K, help=f"hits of the deeper search (default {DEEP_K})")
    parser.add_argument("--json", type=Path, default=None, metavar="OUT", help="write every query's ranks as JSON")
    args = parser.parse_args(argv)
    progress = start_scratch_run(args.out)
    started = time.perf_counter()
    search_module.MAX_K = max(search_module.MAX_K, args.deep)  # this run only: the deeper search

    owners = load_owners(args.data)
    by_slug = {o.slug: o for o in owners}
    index, _, _ = open_index(owners, args.reuse_index, progress, encoder=args.encoder)
    records = list(index.iter_papers())
    truth, _ = ground_truth(index, records, owners)
    queries = choose_queries(owners, truth, {p.id: p for p in records}, FOLDS, PER_FOLD)
    loaded = index.encoder
    index.close()
    rows: list[dict[str, Any]] = []
    for fold in range(FOLDS):
        chosen = [q for q in queries if q.fold == fold]
        fold_idx = fold_index(records, {q.record_id for q in chosen}, args.encoder, loaded, progress)
        try:
            people = directory_for(fold_idx)
            stored = stored_of(fold_idx)
            for query in chosen:
                owner, own = by_slug[query.slug], truth[query.slug]
                row: dict[str, Any] = {"slug": query.slug, "record": query.title, "fold": fold, "half": query.half}
                for mode in MODES:
                    retrieved = fold_idx.retrieve(query.text(mode), k=RETRIEVE_K)
                    deep = fold_idx.retrieve(query.text(mode), k=args.deep).hits
                    ranking = [e.person for e in METHODS[PAPERBOT](retrieved.hits, people, TODAY,
                                                                   retrieved.query_vector, stored)]
                    row[mode] = {"hit": best_owner_hit(retrieved.hits, people, owner, own.file_ids),
                                 "deep": best_owner_hit(deep, people, owner, own.file_ids),
                                 "gold": next((r for r, h in enumerate(retrieved.hits, 1) if h.paper.id in own.gold),
                                              None),
                                 "paperbot": owner_rank(ranking, owner, own.file_ids),
                                 "top3": [p.name for p in ranking[:3]]}
                rows.append(row)
        finally:
            fold_idx.close()
        progress(f"fold {fold}: {len(chosen)} queries")
    if args.json is not None:
        write_json(args.json, {"deep": args.deep, "rows": rows})
    print(report(rows, args.deep))
    print(f"\n{len(rows)} queries, {len(records):,} records; {time.perf_counter() - started:.0f} s; {load_note()}.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
