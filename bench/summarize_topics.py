"""Summarize: do a scholar's listed topics set them apart? Asked of collaborators, each should find them.

    python bench/summarize_topics.py [--data DIR] [--out DIR] [--reuse-index] [--encoder E] [--json OUT]

``paperbot summarize`` lists a scholar's topics: their most frequent categories, then the terms
that set their papers apart from the index (``retrieval.scholars.themes.salient_terms``). A topic
that sets someone apart is one that, asked of ``paperbot collaborators``, finds them; a word every
paper of the field uses ("model", "systems") or a verb of one title ("increases") finds others, or
nobody in particular.

Over the 40 real lists of ``scholars-real`` (``bench/people.py``'s index; read at run time, never
copied), every owner whose name ``summarize`` resolves to one person (``choose``, as the product
does) is summarised over all years; their topics are listed under two scorings of the candidate
terms, in the same run over the same papers and background:

* **paperbot**: ``themes.keyness`` (used by more of the person's papers than the background would
  lead one to expect), with the rule that a single word must be in two titles;
* **previous**: how many of the papers use the term times its inverse document frequency in the
  index, without that rule (the code before, kept here as ``previous_salient_terms``).

Each topic is asked of ``find_collaborators`` (the first 10 people). Per owner: the share of their
topics that rank them in the first 10 and in the first 3, and the mean reciprocal rank (0 when not
in the first 10); averaged over owners, per half of the owners (``bench.common.split_half``,
set ``summarize_topics``; the rule was chosen on the tuning half only). The categories come first
under both scorings and are asked too. Exit status 1 when paperbot's topics differ from what
``summarize`` printed (the bench would not measure the product), else 0.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from datetime import date
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make ``bench.common`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import HELD_OUT, TUNE, load_note, markdown_table, split_half, start_scratch_run, write_json
from bench.people import Owner, add_index_arguments, load_owners, open_index
from retrieval.config import Settings
from retrieval.index.paper_index import PaperIndex
from retrieval.records.paper import Paper
from retrieval.results import ScholarSummaryResult
from retrieval.scholars.cache import background_of, directory_for
from retrieval.scholars.collaborators import find_collaborators
from retrieval.scholars.profile import topics
from retrieval.scholars.summary import summarize_scholar
from retrieval.scholars.themes import TermStats, best_surface, best_terms, paper_terms, phrase_bonus, title_keys

TODAY = date(2026, 12, 1)  # fixed: the collaborators ranking's recency weights do not drift
TOP = 10
SCORINGS = ("paperbot", "previous")


def previous_salient_terms(papers: Sequence[Paper], background: TermStats, *, limit: int) -> list[str]:
    """The code before, kept to measure against: the title terms, counted in the papers using them
    anywhere (two with four papers or more), scored by that count x idf x the phrase bonus."""
    terms = [paper_terms(p) for p in papers]
    titles = set().union(*(title_keys(p) for p in papers))
    share: Counter[str] = Counter()
    for t in terms:
        share.update(k for k in t.counts if k in titles)
    needed = 2 if len(papers) >= 4 else 1
    scored = [(count * background.idf(key) * phrase_bonus(key), key) for key, count in share.items() if count >= needed]
    return [best_surface(key, terms) for key in best_terms(scored, limit)]


def owner_rows(index: PaperIndex, settings: Settings, owners: Sequence[Owner],
               progress: Callable[[str], None]) -> tuple[list[dict[str, Any]], list[str], list[str]]:
    """One row per resolved owner and scoring: the topics and the owner's rank for each; the
    owners not resolved to one person; the owners whose printed topics differ from the bench's."""
    directory = directory_for(index, cache_dir=settings.cache_dir)
    background = background_of(directory)
    ranked: dict[str, list[str | None]] = {}  # topic -> person ids of the first TOP people

    def rank_of(topic: str, person_id: str) -> int | None:
        if topic not in ranked:
            result = find_collaborators(index, settings, topic, limit=TOP, today=TODAY, directory=directory)
            ranked[topic] = [scholar.person_id for scholar in result.scholars]
        return next((n for n, found in enumerate(ranked[topic], start=1) if found == person_id), None)

    rows: list[dict[str, Any]] = []
    unresolved: list[str] = []
    mismatched: list[str] = []
    for number, owner in enumerate(owners, start=1):
        result = summarize_scholar(index, settings, owner.name, since=1900, today=TODAY, directory=directory)
        person_id = result.person_id if isinstance(result, ScholarSummaryResult) else None
        person = directory.find_person_id(person_id) if person_id else None
        if person is None or person_id is None or not isinstance(result, ScholarSummaryResult):
            unresolved.append(owner.slug)
            continue
        papers = directory.papers_of(person)
        listed = {"paperbot": topics(papers, background),
                  "previous": topics(papers, background, salient=previous_salient_terms)}
        if listed["paperbot"] != result.topics:
            mismatched.append(owner.slug)
        half = split_half("summarize_topics", owner.slug)
        for scoring, terms in listed.items():
            rows.append({"slug": owner.slug, "half": half, "scoring": scoring, "papers": len(papers),
                         "topics": terms, "ranks": [rank_of(term, person_id) for term in terms]})
        progress(f"{number}/{len(owners)} {owner.slug}: {len(papers)} papers, {len(listed['paperbot'])} topics")
    return rows, unresolved, mismatched


def summarise(rows: Sequence[dict[str, Any]]) -> dict[str, dict[str, dict[str, float | int]]]:
    """Per scoring and half (and both halves): owners, topics, and the means over owners of the
    share of topics finding them in the first 10 and 3 and of the reciprocal rank."""
    out: dict[str, dict[str, dict[str, float | int]]] = {}
    for scoring in SCORINGS:
        out[scoring] = {}
        for half in (TUNE, HELD_OUT, "all"):
            chosen = [r for r in rows if r["scoring"] == scoring and half in (r["half"], "all")]
            per_owner = [(sum(x is not None for x in r["ranks"]) / n, sum(x is not None and x <= 3 for x in r["ranks"]) / n,
                          sum(1 / x for x in r["ranks"] if x) / n) for r in chosen if (n := len(r["ranks"]))]
            owners = max(1, len(per_owner))
            out[scoring][half] = {"owners": len(per_owner), "topics": sum(len(r["ranks"]) for r in chosen),
                                  "found_at_10": sum(x[0] for x in per_owner) / owners,
                                  "found_at_3": sum(x[1] for x in per_owner) / owners,
                                  "mrr": sum(x[2] for x in per_owner) / owners}
    return out


def report(figures: dict[str, Any]) -> str:
    names = {"paperbot": "paperbot: keyness, a single word in two titles", "previous": "previous: count x idf"}
    rows = []
    for scoring in SCORINGS:
        cells: list[object] = [names[scoring]]
        for half in (TUNE, HELD_OUT, "all"):
            s = figures["results"][scoring][half]
            cells += [f"{s['found_at_10']:.3f} / {s['found_at_3']:.3f} / {s['mrr']:.3f}"]
        rows.append(cells)
    halves = figures["results"]["paperbot"]
    return "\n".join([
        "Share of a scholar's topics that find them among collaborators' first 10 / first 3, and the mean "
        "reciprocal rank (means over owners; higher is better).", "",
        markdown_table(["topics", f"tune ({halves[TUNE]['owners']} owners)", f"held-out ({halves[HELD_OUT]['owners']})",
                        f"all ({halves['all']['owners']})"], rows), "",
        f"Not resolved to one person: {', '.join(figures['unresolved']) or 'none'}. "
        f"Topics printed by summarize differ from the bench's for: {', '.join(figures['mismatched']) or 'none'}.",
        f"{figures['records']:,} records, encoder {figures['encoder']}; {figures['seconds']:.0f} s; {load_note()}."])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_index_arguments(parser)
    parser.add_argument("--json", type=Path, default=None, metavar="OUT", help="write the figures as JSON")
    args = parser.parse_args(argv)
    progress = start_scratch_run(args.out)
    started = time.perf_counter()
    owners = load_owners(args.data)
    index, settings, ingest = open_index(owners, args.reuse_index, progress, encoder=args.encoder)
    try:
        rows, unresolved, mismatched = owner_rows(index, settings, owners, progress)
        records = index.count()
    finally:
        index.close()
    figures = {"encoder": ingest["encoder"], "records": records, "results": summarise(rows), "rows": rows,
               "unresolved": unresolved, "mismatched": mismatched, "seconds": time.perf_counter() - started}
    print(report(figures))
    if args.json is not None:
        write_json(args.json, figures)
    return 1 if mismatched else 0


if __name__ == "__main__":
    raise SystemExit(main())
