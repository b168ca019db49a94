"""Expert finding on 40 real publication lists: whose held-out abstract is this?

    python bench/experts_scholars.py [--data DIR] [--out DIR] [--reuse-index] [--folds N]
                                     [--per-fold N] [--json OUT]

Data: ``scholars-real/`` (default ``../shared/datasets/scholars-real``, read at run time, never
copied), the 40 owners' own ``.bib`` files and ``owners.json`` (see ``bench/people.py``).

Protocol (fixed, with the halves, before the ranking was changed):

1. All 40 files are ingested once into the *full* index (``bench.people.open_index``: the real
   ``Assistant.library.ingest_files``, Chroma + BM25, the configured local encoder). Each owner's records
   are found as ``bench/people.py`` finds them (``ground_truth``): the owner's *gold* records are
   those whose entry names the owner.
2. **Queries.** Per owner, the gold records with an abstract that are no other owner's gold,
   ordered by a hash of ``<slug>/<title key>`` (never by content or by how a ranking does on
   them). Fold ``f`` holds out the ``f``-th chunk of ``--per-fold`` of them, as long as the owner
   keeps at least ``MIN_KEPT`` gold records indexed.
3. **Index per fold.** A fresh index (the real ``PaperIndex``, same encoder, vectors from the
   shared embedding cache) holds every record of the full index except the fold's held-out
   ones: they weigh in no BM25 statistic and no grouping of people. People are grouped over it
   as the product groups them (``retrieval.scholars.cache.directory_for``).
4. Each held-out record is asked twice: its **abstract**, and its **title** alone.
   ``index.retrieve(query, k=RETRIEVE_K)`` runs once per query (as ``find_collaborators`` does);
   the same hits, query vector and people feed every ranking of ``METHODS``: paperbot's
   (``retrieval.scholars.collaborators.rank_experts``), the same without the work similarity
   (``retrieval.scholars.expertise.document_model_scores``, the ranking of the first round of
   issue #27 item 6), the previous document model (``rank_sum_scores``) and the single best
   paper (``single_best_scores``). Each query's time is measured: the search, then each of the
   first two rankings on its hits (median over queries; the machine is shared).
5. **Judge.** The owner is found at rank r when the r-th ranked person has one of the owner's
   written names (``bench.people.Owner.named_in``: the judge key of a decoded BibTeX name,
   exact) and more than half of that person's papers are in the owner's file.
6. **Halves.** Every query is in ``bench.common.split_half("experts_scholars", "<slug>/<title
   key>")``: constants are shaped on the tuning half only; the held-out half measures them.

Reported per mode, half and ranking: Recall@10 (share of queries with the owner among the first
10) and MRR (reciprocal rank of the owner among the first ``MRR_DEPTH``, 0 beyond). Then the
issue's example topics over the full index through ``find_collaborators`` (the product path):
the rank of the person the topic is about. ``--json OUT`` writes every figure and every query's
ranks and times. Exit status 0 unless the data is missing.
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make ``bench.common`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import (
    HELD_OUT,
    TUNE,
    bench_settings,
    load_note,
    markdown_table,
    out_dir,
    shared_cache_dir,
    split_half,
    start_scratch_run,
    write_json,
)
from bench.experts import PAPERBOT, ranking_methods, stored_of
from bench.people import TODAY, Owner, Truth, add_index_arguments, ground_truth, load_owners, open_index
from retrieval.index.encoders.base import Encoder
from retrieval.index.paper_index import PaperIndex
from retrieval.records.paper import Paper, title_key
from retrieval.scholars.cache import directory_for
from retrieval.scholars.collaborators import MAX_LIMIT, RETRIEVE_K, find_collaborators
from retrieval.scholars.people import Person

SET_NAME = "experts_scholars"
CUTOFF = 10
MRR_DEPTH = MAX_LIMIT  # as deep as ``paperbot collaborators --limit`` goes
FOLDS = 3
PER_FOLD = 3
MIN_KEPT = 3
MODES = ("abstract", "title")
EVIDENCE_ONLY = "without work similarity (round 1)"
METHODS = ranking_methods(EVIDENCE_ONLY)
TIMED = (PAPERBOT, EVIDENCE_ONLY)
# The topics of issue #27 item 6, and whose work each is about (owner slug).
EXAMPLES = (
    ("neologisms and language change", "maria-ryskina"),
    ("mixture-of-experts inference on GPUs", "martijn-de-vos"),
)


@dataclass(frozen=True)
class Query:
    """One held-out record of one owner."""

    slug: str
    record_id: str
    title: str
    abstract: str
    fold: int
    half: str

    def text(self, mode: str) -> str:
        return self.abstract if mode == "abstract" else self.title


def _order(slug: str, paper: Paper) -> str:
    return hashlib.sha256(f"{slug}/{title_key(paper.title)}".encode()).hexdigest()


def choose_queries(owners: Sequence[Owner], truth: dict[str, Truth], records: dict[str, Paper],
                   folds: int, per_fold: int) -> list[Query]:
    """The held-out records of every fold (step 2 of the protocol)."""
    owners_of: dict[str, int] = {}
    for owner in owners:
        for record_id in truth[owner.slug].gold:
            owners_of[record_id] = owners_of.get(record_id, 0) + 1
    queries: list[Query] = []
    for owner in owners:
        gold = truth[owner.slug].gold
        eligible = sorted((records[r] for r in gold if owners_of[r] == 1 and (records[r].abstract or "").strip()),
                          key=lambda paper: _order(owner.slug, paper))
        most = max(0, len(gold) - MIN_KEPT)  # held out at once, in one fold
        for fold in range(folds):
            for paper in eligible[fold * per_fold:(fold + 1) * per_fold][:most]:
                half = split_half(SET_NAME, f"{owner.slug}/{title_key(paper.title)}")
                queries.append(Query(owner.slug, paper.id, paper.title, " ".join((paper.abstract or "").split()),
                                     fold, half))
    return queries


def is_owner(person: Person, owner: Owner, file_ids: set[str]) -> bool:
    """The judge of step 5: one of the owner's written names, most papers from the owner's file."""
    ids = person.paper_ids
    return owner.named_in(person.names) and sum(1 for pid in ids if pid in file_ids) > len(ids) / 2


def owner_rank(ranking: Sequence[Person], owner: Owner, file_ids: set[str]) -> int | None:
    """1-based rank of the first ranked person who is the owner, within ``MRR_DEPTH``."""
    for rank, person in enumerate(ranking[:MRR_DEPTH], start=1):
        if is_owner(person, owner, file_ids):
            return rank
    return None


def fold_index(records: Sequence[Paper], held: set[str], encoder: str, loaded: Encoder,
               progress: Callable[[str], None]) -> PaperIndex:
    """A fresh index of ``records`` minus ``held`` with the ``encoder`` setting and ``loaded``, the
    encoder the full index was opened with (loaded once per run; vectors from the shared
    embedding cache)."""
    from retrieval.index.embedding_cache import EmbeddingCache, default_cache_path, paper_embedder

    digest = hashlib.sha256(encoder.encode())
    for record_id in sorted(held):
        digest.update(record_id.encode())
    folder = out_dir() / "experts-scholars-index" / digest.hexdigest()[:16]
    shutil.rmtree(folder, ignore_errors=True)
    settings = bench_settings(folder, encoder=encoder, _env_file=None)
    cache = EmbeddingCache(default_cache_path(shared_cache_dir()))
    index = PaperIndex.open(settings, loaded, embed=paper_embedder(cache))
    started = time.perf_counter()
    index.upsert([p for p in records if p.id not in held])
    progress(f"indexed {index.count():,} records ({len(held)} held out) in {time.perf_counter() - started:.0f} s")
    return index


def run_fold(queries: Sequence[Query], records: Sequence[Paper], owners: dict[str, Owner], truth: dict[str, Truth],
             encoder: str, loaded: Encoder, progress: Callable[[str], None]) -> list[dict[str, Any]]:
    """Every ranking's owner rank for each query of one fold, in both modes."""
    index = fold_index(records, {q.record_id for q in queries}, encoder, loaded, progress)
    try:
        people = directory_for(index)
        stored = stored_of(index)
        rows = []
        for query in queries:
            owner = owners[query.slug]
            file_ids = truth[query.slug].file_ids
            row: dict[str, Any] = {**asdict(query), "ranks": {}, "ms": {}}
            del row["abstract"]
            for mode in MODES:
                started = time.perf_counter()
                retrieved = index.retrieve(query.text(mode), k=RETRIEVE_K)
                ms = {"search": 1000 * (time.perf_counter() - started)}
                ranks: dict[str, int | None] = {}
                for name, method in METHODS.items():
                    started = time.perf_counter()
                    ranking = method(retrieved.hits, people, TODAY, retrieved.query_vector, stored)
                    if name in TIMED:
                        ms[name] = 1000 * (time.perf_counter() - started)
                    ranks[name] = owner_rank([e.person for e in ranking], owner, file_ids)
                row["ranks"][mode] = ranks
                row["ms"][mode] = ms
            rows.append(row)
        return rows
    finally:
        index.close()


def summarise(rows: Sequence[dict[str, Any]], mode: str, method: str) -> dict[str, float | int]:
    """Recall@10 and MRR of one ranking over ``rows`` in one mode."""
    ranks = [row["ranks"][mode][method] for row in rows]
    n = max(1, len(ranks))
    return {"queries": len(ranks),
            "recall_at_10": sum(1 for r in ranks if r is not None and r <= CUTOFF) / n,
            "mrr": sum(1 / r for r in ranks if r is not None) / n}


def latency(rows: Sequence[dict[str, Any]]) -> dict[str, float]:
    """Median milliseconds per query (both modes): the search, and each timed ranking after it."""
    steps = ("search", *TIMED)
    return {step: statistics.median(row["ms"][mode][step] for row in rows for mode in MODES) for step in steps}


def examples(index: PaperIndex, owners: dict[str, Owner], truth: dict[str, Truth]) -> list[dict[str, Any]]:
    """The example topics over the full index through ``find_collaborators``: the owner's rank."""
    settings = index.settings
    people = directory_for(index)
    out = []
    for topic, slug in EXAMPLES:
        result = find_collaborators(index, settings, topic, limit=MAX_LIMIT, today=TODAY, directory=people)
        ranked = [people.find_person_id(s.person_id) if s.person_id else None for s in result.scholars]
        rank = owner_rank([p for p in ranked if p is not None], owners[slug], truth[slug].file_ids)
        out.append({"topic": topic, "owner": owners[slug].name, "rank": rank,
                    "top": [{"name": s.name, "score": s.score, "papers": [round(c.score, 2) for c in s.papers]}
                            for s in result.scholars[:3]]})
    return out


def report(figures: dict[str, Any]) -> str:
    lines = []
    for mode in MODES:
        rows = []
        for method in METHODS:
            cells: list[object] = [method]
            for half in (TUNE, HELD_OUT, "all"):
                s = figures["results"][mode][half][method]
                cells += [f"{s['recall_at_10']:.3f}", f"{s['mrr']:.3f}"]
            rows.append(cells)
        counts = {half: figures["results"][mode][half][PAPERBOT]["queries"] for half in (TUNE, HELD_OUT, "all")}
        lines += [f"Query: the held-out record's {mode}.", "", markdown_table(
            ["ranking", f"tune ({counts[TUNE]}) R@10", "tune MRR", f"held-out ({counts[HELD_OUT]}) R@10",
             "held-out MRR", f"all ({counts['all']}) R@10", "all MRR"], rows), ""]
    for ex in figures["examples"]:
        top = "; ".join(f"{t['name']} {t['score']} ({', '.join(f'{s:.2f}' for s in t['papers'])})" for t in ex["top"])
        lines.append(f"\"{ex['topic']}\": {ex['owner']} at rank {ex['rank']}; top 3: {top}")
    ms = figures["latency_ms"]
    lines.append(f"\nMedian per query: search {ms['search']:.0f} ms, then {PAPERBOT} {ms[PAPERBOT]:.1f} ms "
                 f"({EVIDENCE_ONLY}: {ms[EVIDENCE_ONLY]:.1f} ms).")
    lines.append(f"\n{figures['queries']} held-out records of {figures['owners_asked']} owners in {figures['folds']} "
                 f"folds ({figures['per_fold']} per owner and fold, {MIN_KEPT} gold records kept at least); "
                 f"{figures['records']:,} records in the full index, encoder {figures['encoder']}; "
                 f"top {RETRIEVE_K} hybrid hits per query; "
                 f"{figures['seconds']:.0f} s; {load_note()}.")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_index_arguments(parser)
    parser.add_argument("--folds", type=int, default=FOLDS, help=f"folds (default {FOLDS})")
    parser.add_argument("--per-fold", type=int, default=PER_FOLD, help=f"held-out records per owner and fold (default {PER_FOLD})")
    parser.add_argument("--json", type=Path, default=None, metavar="OUT", help="write the figures as JSON")
    args = parser.parse_args(argv)
    progress = start_scratch_run(args.out)
    started = time.perf_counter()

    owners = load_owners(args.data)
    by_slug = {o.slug: o for o in owners}
    index, _, ingest = open_index(owners, args.reuse_index, progress, encoder=args.encoder)
    records = list(index.iter_papers())
    truth, _ = ground_truth(index, records, owners)
    queries = choose_queries(owners, truth, {p.id: p for p in records}, args.folds, args.per_fold)
    rows: list[dict[str, Any]] = []
    for fold in range(args.folds):
        chosen = [q for q in queries if q.fold == fold]
        if chosen:
            rows += run_fold(chosen, records, by_slug, truth, args.encoder, index.encoder, progress)
    shown = examples(index, by_slug, truth)
    index.close()
    results = {mode: {half: {method: summarise([r for r in rows if half in ("all", r["half"])], mode, method)
                             for method in METHODS} for half in (TUNE, HELD_OUT, "all")} for mode in MODES}
    figures = {"data": str(args.data), "encoder": ingest["encoder"], "folds": args.folds, "per_fold": args.per_fold,
               "records": len(records),
               "queries": len(rows), "owners_asked": len({r["slug"] for r in rows}), "results": results,
               "examples": shown, "latency_ms": latency(rows), "rows": rows, "seconds": time.perf_counter() - started}
    print(report(figures))
    if args.json is not None:
        write_json(args.json, figures)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
