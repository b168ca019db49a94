"""Benchmark expert finding: "who would write this?" from a held-out paper's title.

    python bench/experts.py [--quick] [--data ../shared/datasets] [--queries N] [--seeds 13,14,15]

Data: ``conference-authors/`` (CVPR 2024, MLSys 2023/2024: titles with full author lists, no
abstracts, no ids). Protocol, fixed before any figure was seen and not tuned on it:

1. Papers are read as paperbot records (author "first last", year, venue).
2. Per fold (one per seed in ``--seeds``), ``--queries`` papers are held out at random among
   papers with at least one author who has another paper in the data. The rest is indexed
   with the real ``PaperIndex`` (Chroma + BM25, the configured local encoder) in a temporary
   data dir. Seeds 1 and 2 were used to choose the ranking's constants (see
   ``retrieval.scholars.expertise``); the default seeds were not looked at before that.
3. For each held-out paper, its title is the query. ``index.retrieve(title, k=150)`` runs once;
   the same hits, query vector and people (``retrieval.scholars.people`` over the indexed papers)
   feed every ranking:
   * **paperbot**: ``retrieval.scholars.collaborators.rank_experts``, the ranking of ``paperbot
     collaborators`` (the document model below, then the first 100 people rescored by how close
     their indexed work is to the query: ``retrieval.scholars.work_similarity``);
   * **document model** alone: ``retrieval.scholars.expertise.document_model_scores`` (a
     saturating sum over a person's retrieved papers of relevance relative to the best hit's
     score x recency; what ``paperbot collaborators`` ranked by before the work similarity);
   * **previous document model** (baseline): ``rank_sum_scores``, the plain sum over a person's
     retrieved papers of rank relevance x recency x authorship position;
   * **single best paper** (baseline): ``single_best_scores``, each person scored by their best
     retrieved paper with the previous model's weights.
4. Relevant people: the held-out paper's authors who have another indexed paper (the others
   cannot be found from the index). A ranked person counts as one of them when one of their
   written names equals the author's (case and accents aside).

Reported: Recall@10 (share of relevant authors in the top 10, averaged over queries), MRR of
the first relevant author, and how many queries each ranking wins (a recall above every other
ranking's), over all folds; the spread
of Recall@10 across folds shows the noise. ``--quick`` (under a minute) is one fold of 30
queries over the 300 papers of the most prolific authors.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # runnable as a plain script
    sys.path.insert(0, str(REPO))

from retrieval.config import Settings  # noqa: E402
from retrieval.records.paper import Author, Paper  # noqa: E402
from retrieval.results import SearchHit  # noqa: E402
from retrieval.scholars.cache import directory_for  # noqa: E402
from retrieval.scholars.clustering import Vectors  # noqa: E402
from retrieval.scholars.collaborators import rank_experts  # noqa: E402
from retrieval.scholars.expertise import (  # noqa: E402
    Expert,
    document_model_scores,
    rank_sum_scores,
    single_best_scores,
)
from retrieval.scholars.hubness import Neighbours, stored_neighbours_of  # noqa: E402
from retrieval.scholars.people import PeopleDirectory, stored_vectors_of  # noqa: E402
from retrieval.text import fold  # noqa: E402

FILES = ("cvpr24.json", "mlsys2023.json", "mlsys2024.json")
RETRIEVE_K = 150
CUTOFF = 10
TODAY = date(2025, 1, 1)  # just after the data: recency weights stay meaningful


def load_conference_authors(folder: Path) -> list[Paper]:
    """The conference-authors files as records (one per distinct paper)."""
    papers: dict[str, Paper] = {}
    for name in FILES:
        path = folder / name
        if not path.exists():
            raise SystemExit(f"missing {path}: pass --data pointing at the shared datasets folder")
        data = json.loads(path.read_text(encoding="utf-8"))
        venue = f"{data['info']['short_name']} {data['info']['date']}"
        for item in data["collection"]:
            authors = []
            for person in item.get("authors", []):
                written = " ".join(part for part in (person.get("first_name", ""), person.get("last_name", "")) if part)
                if written.strip():
                    authors.append(Author(name=written))
            if not authors or not item.get("title", "").strip():
                continue
            paper = Paper(title=item["title"], authors=authors, published=item.get("pubTime"), venue=venue)
            papers.setdefault(paper.id, paper)
    return list(papers.values())


def _key(name: str) -> str:
    return fold(name)


def quick_corpus(papers: Sequence[Paper], size: int = 300) -> list[Paper]:
    """The papers of the most prolific authors, until ``size``: a dense small problem."""
    counts = Counter(_key(n) for p in papers for n in p.author_names)
    ranked = sorted(papers, key=lambda p: (-max(counts[_key(n)] for n in p.author_names), p.title))
    return ranked[:size]


def split(papers: Sequence[Paper], queries: int, seed: int) -> tuple[list[Paper], list[Paper]]:
    """(indexed, held out): held-out papers have an author with another paper."""
    counts = Counter(_key(n) for p in papers for n in set(p.author_names))
    eligible = [p for p in papers if any(counts[_key(n)] >= 2 for n in p.author_names)]
    rng = random.Random(seed)
    held = rng.sample(eligible, min(queries, len(eligible)))
    held_ids = {p.id for p in held}
    return [p for p in papers if p.id not in held_ids], held


@dataclass
class Scores:
    recall: list[float]
    reciprocal_rank: list[float]


def evaluate(ranking: Sequence[Expert], relevant: set[str]) -> tuple[float, float]:
    """(recall@CUTOFF, reciprocal rank of the first relevant person)."""
    found: set[str] = set()
    first: int | None = None
    for position, expert in enumerate(ranking, start=1):
        matched = {_key(n) for n in expert.person.names} & relevant
        if matched:
            if first is None:
                first = position
            if position <= CUTOFF:
                found |= matched
    return len(found) / len(relevant), (1.0 / first if first else 0.0)


@dataclass(frozen=True)
class Fold:
    """What one fold measured."""

    indexed: int  # papers indexed
    queries: int  # held-out titles with an indexed author
    results: dict[str, Scores]  # per ranking method
    wins: Counter[str]  # queries on which a method's recall beat every other method's
    reachable: list[float]  # per query: share of the relevant authors with a paper among the hits
    indexing_s: float
    query_s: float  # per query


def run_fold(papers: Sequence[Paper], queries: int, seed: int, settings: Settings,
             progress: Callable[[str], None]) -> Fold:
    """One fold: index all but ``queries`` held-out papers, rank people for each held-out title."""
    from retrieval.index.paper_index import PaperIndex

    indexed, held = split(papers, queries, seed)
    started = time.perf_counter()
    index = PaperIndex.open(settings)
    index.upsert(indexed)
    indexing = time.perf_counter() - started
    progress(f"seed {seed}: indexed {len(indexed)} papers in {indexing:.0f} s")
    people = directory_for(index)  # as the product groups them: with the stored vectors
    stored = stored_of(index)
    indexed_names = Counter(_key(n) for p in indexed for n in p.author_names)
    results = {name: Scores([], []) for name in METHODS}
    reachable: list[float] = []  # share of relevant authors with any paper among the hits
    wins: Counter[str] = Counter()
    started = time.perf_counter()
    for paper in held:
        relevant = {_key(n) for n in paper.author_names if indexed_names[_key(n)] >= 1}
        if not relevant:
            continue
        retrieved = index.retrieve(paper.title, k=RETRIEVE_K)
        hits = retrieved.hits
        in_hits = {_key(n) for hit in hits for n in hit.paper.author_names}
        reachable.append(len(relevant & in_hits) / len(relevant))
        recalls: dict[str, float] = {}
        for name, method in METHODS.items():
            recall, rr = evaluate(method(hits, people, TODAY, retrieved.query_vector, stored), relevant)
            results[name].recall.append(recall)
            results[name].reciprocal_rank.append(rr)
            recalls[name] = recall
        for name, recall in recalls.items():
            wins[name] += all(recall > other for rival, other in recalls.items() if rival != name)
    used = len(results[PAPERBOT].recall)
    index.close()
    return Fold(indexed=len(indexed), queries=used, results=results, wins=wins, reachable=reachable,
                indexing_s=indexing, query_s=(time.perf_counter() - started) / max(1, used))


PAPERBOT = "paperbot collaborators"
WITHOUT_HUBS = "without the hubness discount (round 2)"
DOCUMENT = "document model alone (round 1)"
PREVIOUS = "previous: sum over ranks"
BASELINE = "baseline: single best paper"
@dataclass(frozen=True)
class Stored:
    """What a ranking may read of the index besides its hits: the stored vectors by id and the
    nearest stored neighbours of vectors (either None when the index has none)."""

    vectors: Vectors | None
    neighbours: Neighbours | None


def stored_of(index: object) -> Stored:
    """``Stored`` of an index, as ``find_collaborators`` reads it."""
    return Stored(stored_vectors_of(index), stored_neighbours_of(index))


# (hits, people, today, query vector, what is stored) -> ranking
Method = Callable[[Sequence[SearchHit], PeopleDirectory, date, "np.ndarray | None", Stored], list[Expert]]


def ranking_methods(round_one: str) -> dict[str, Method]:
    """The rankings both expert benchmarks compare, in report order; ``round_one`` names the
    score-relative ranking without the work similarity in that benchmark's tables."""
    return {
        PAPERBOT: lambda hits, people, today, query, stored: rank_experts(
            hits, people, today, query_vector=query, vectors=stored.vectors, neighbours=stored.neighbours),
        WITHOUT_HUBS: lambda hits, people, today, query, stored: rank_experts(
            hits, people, today, query_vector=query, vectors=stored.vectors),
        round_one: lambda hits, people, today, query, stored: document_model_scores(hits, people, today),
        PREVIOUS: lambda hits, people, today, query, stored: rank_sum_scores(hits, people, today),
        BASELINE: lambda hits, people, today, query, stored: single_best_scores(hits, people, today),
    }


METHODS = ranking_methods(DOCUMENT)


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def table(papers: int, folds: Sequence[Fold]) -> str:
    lines = [
        f"| ranking | Recall@{CUTOFF} | Recall@{CUTOFF} per fold | MRR | queries won |",
        "|---|---:|---|---:|---:|",
    ]
    for name in METHODS:
        per_fold = [fold.results[name] for fold in folds]
        recall = [r for scores in per_fold for r in scores.recall]
        rr = [r for scores in per_fold for r in scores.reciprocal_rank]
        spread = " / ".join(f"{_mean(scores.recall):.3f}" for scores in per_fold)
        won = sum(fold.wins[name] for fold in folds)
        lines.append(f"| {name} | {_mean(recall):.3f} | {spread} | {_mean(rr):.3f} | {won} |")
    queries = sum(fold.queries for fold in folds)
    indexed = folds[0].indexed
    indexing = _mean([fold.indexing_s for fold in folds])
    per_query = _mean([fold.query_s for fold in folds])
    reachable = _mean([r for fold in folds for r in fold.reachable])
    lines += ["", (
        f"{queries} held-out titles in {len(folds)} fold(s), about {indexed:,} indexed papers each (of {papers:,}); "
        f"top {RETRIEVE_K} hybrid hits per query; indexing {indexing:.0f} s per fold, "
        f"{1000 * per_query:.0f} ms per query (search + every ranking). "
        f"Ceiling: {reachable:.3f} of the relevant authors have any paper among the {RETRIEVE_K} hits "
        f"(titles only, no abstracts)."
    )]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="one fold, 300 papers, 30 queries: under a minute")
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "datasets",
                        help="folder holding conference-authors/ (default: ../shared/datasets)")
    parser.add_argument("--queries", type=int, default=None, help="held-out titles per fold (default 300; 30 with --quick)")
    parser.add_argument("--seeds", default=None, help="comma-separated fold seeds (default 13,14,15; 13 with --quick)")
    args = parser.parse_args(argv)
    papers = load_conference_authors(args.data / "conference-authors")
    queries = args.queries or (30 if args.quick else 300)
    seeds = [int(s) for s in (args.seeds or ("13" if args.quick else "13,14,15")).split(",")]
    if args.quick:
        papers = quick_corpus(papers)
    folds: list[Fold] = []
    for seed in seeds:
        with tempfile.TemporaryDirectory(prefix="paperbot-bench-experts-") as tmp:
            settings = Settings(_env_file=None, data_dir=Path(tmp), chroma_url=None)
            folds.append(run_fold(papers, queries, seed, settings, lambda line: print(line, file=sys.stderr)))
    print(table(len(papers), folds))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
