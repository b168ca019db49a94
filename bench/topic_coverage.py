"""Collaborators: does the index cover the topic? The judgement's flags on real topics and near misses.

    python bench/topic_coverage.py [--data DIR] [--out DIR] [--reuse-index] [--encoder E] [--json OUT]

``paperbot collaborators`` ranks whoever wrote the closest papers, and flags a topic the index
does not seem to cover (``retrieval.scholars.coverage``: ``ask``'s evidence judgement, read with
the cut ``NOT_COVERED_BELOW``). A flag is a notice beside the ranking, so what matters is how
rarely it fires on a topic the index does cover, and how often on one it does not. Over the 40
real lists of ``scholars-real`` (``bench/people.py``'s index; read at run time, never copied):

* **Covered topics.** (1) The titles of ``bench/experts_scholars.py``'s held-out records, each asked
  of its fold's index, which lacks that record but keeps the owner's other work and everyone
  else's (its protocol, folds and halves); (2) the paraphrases of ``bench/data/paraphrase_questions.jsonl``
  whose gold records are in the lists; (3) the topic and mixed questions of
  ``scholars_questions.jsonl``. Each is asked of the full index, except the titles.
* **Topics the index does not cover.** ``near_miss_questions.jsonl`` (the field's words, a topic
  no record covers) and the unanswerable questions of ``scholars_questions.jsonl``.

Every question and title is in the tuning or the held-out half of its set (``bench.common.split_half``);
the cut was chosen on the tuning halves only (the highest at which at most 10 % of the covered
tuning topics are flagged). Reported per set and half: the share flagged at the cut, and at
``ask``'s own answer cut (0.5) for comparison. Exit status 0 unless the data is missing.
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

from bench.answers_scholars import Question, load_set
from bench.common import HELD_OUT, TUNE, load_note, markdown_table, start_scratch_run, write_json
from bench.experts_scholars import FOLDS, PER_FOLD, choose_queries, fold_index
from bench.people import add_index_arguments, ground_truth, load_owners, open_index
from retrieval.answers.judgement import ANSWER_PROBABILITY
from retrieval.index.paper_index import PaperIndex
from retrieval.scholars.collaborators import RETRIEVE_K
from retrieval.scholars.coverage import NOT_COVERED_BELOW, topic_judge

SETS = Path(__file__).resolve().parent / "data"
COVERED = ("experts titles", "paraphrases", "scholars topic", "scholars mixed")
NOT_COVERED = ("near misses", "scholars unanswerable")


def probability(index: PaperIndex, topic: str) -> float | None:
    """The judgement's probability that ``index`` covers ``topic`` (None: it cannot judge), read
    from the hits ``find_collaborators`` retrieves."""
    verdict = topic_judge(index)(topic, index.retrieve(topic, k=RETRIEVE_K).hits)
    return None if verdict is None else verdict.probability


def question_rows(index: PaperIndex) -> list[dict[str, Any]]:
    """The question sets over the full index: paraphrases with gold in the lists, the scholars'
    topic, mixed and unanswerable questions, every near miss."""
    def row(name: str, question: Question) -> dict[str, Any]:
        return {"set": name, "id": question.id, "half": question.half, "text": question.question}

    rows = [row("paraphrases", q) for q in load_set(SETS / "paraphrase_questions.jsonl")
            if not any("scifact" in ref for ref in q.gold)]
    rows += [row(f"scholars {q.kind}", q) for q in load_set(SETS / "scholars_questions.jsonl")
             if q.kind in ("topic", "mixed", "unanswerable")]
    rows += [row("near misses", q) for q in load_set(SETS / "near_miss_questions.jsonl")]
    for item in rows:
        item["probability"] = probability(index, item["text"])
    return rows


def flagged(rows: Sequence[dict[str, Any]], cut: float) -> float:
    """Share of ``rows`` judged not covered at ``cut`` (a row the judgement cannot judge is not flagged)."""
    return sum(1 for row in rows if row["probability"] is not None and row["probability"] < cut) / max(1, len(rows))


def summarise(rows: Sequence[dict[str, Any]]) -> dict[str, dict[str, dict[str, float | int]]]:
    """Per set and half (and the covered and not-covered sets pooled): count and shares flagged."""
    groups = {name: [row for row in rows if row["set"] == name] for name in (*COVERED, *NOT_COVERED)}
    groups["all covered"] = [row for row in rows if row["set"] in COVERED]
    groups["all not covered"] = [row for row in rows if row["set"] in NOT_COVERED]
    return {name: {half: {"queries": len(chosen := [r for r in group if r["half"] == half]),
                          "flagged": flagged(chosen, NOT_COVERED_BELOW),
                          "flagged_at_answer_cut": flagged(chosen, ANSWER_PROBABILITY)}
                   for half in (TUNE, HELD_OUT)} for name, group in groups.items()}


def report(figures: dict[str, Any]) -> str:
    rows = []
    for name, halves in figures["results"].items():
        cells: list[object] = [name]
        for half in (TUNE, HELD_OUT):
            s = halves[half]
            cells += [s["queries"], f"{s['flagged']:.3f}", f"{s['flagged_at_answer_cut']:.3f}"]
        rows.append(cells)
    cut = figures["cut"]
    return "\n".join([
        f"Share flagged 'may not cover this topic' (probability below {cut}; ask's cut {ANSWER_PROBABILITY} "
        "beside it). Covered sets: lower is better; not-covered sets: higher is better.", "",
        markdown_table(["set", "tune n", f"tune flagged (<{cut})", f"tune (<{ANSWER_PROBABILITY})",
                        "held-out n", f"held-out flagged (<{cut})", f"held-out (<{ANSWER_PROBABILITY})"], rows), "",
        f"{figures['records']:,} records, encoder {figures['encoder']}; titles asked of {FOLDS} fold indexes; "
        f"{figures['seconds']:.0f} s; {load_note()}."])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_index_arguments(parser)
    parser.add_argument("--json", type=Path, default=None, metavar="OUT", help="write the figures as JSON")
    args = parser.parse_args(argv)
    progress = start_scratch_run(args.out)
    started = time.perf_counter()
    owners = load_owners(args.data)
    index, _, ingest = open_index(owners, args.reuse_index, progress, encoder=args.encoder)
    records = list(index.iter_papers())
    truth, _ = ground_truth(index, records, owners)
    rows = question_rows(index)
    queries = choose_queries(owners, truth, {p.id: p for p in records}, FOLDS, PER_FOLD)
    for fold in range(FOLDS):
        chosen = [q for q in queries if q.fold == fold]
        fold_idx = fold_index(records, {q.record_id for q in chosen}, args.encoder, index.encoder, progress)
        try:
            rows += [{"set": "experts titles", "id": f"{q.slug}/{q.record_id}", "half": q.half, "text": q.title,
                      "probability": probability(fold_idx, q.title)} for q in chosen]
        finally:
            fold_idx.close()
    index.close()
    figures = {"cut": NOT_COVERED_BELOW, "encoder": ingest["encoder"], "records": len(records),
               "results": summarise(rows), "rows": rows, "seconds": time.perf_counter() - started}
    print(report(figures))
    if args.json is not None:
        write_json(args.json, figures)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
