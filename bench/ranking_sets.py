"""Where the gold records of the development sets rank, per set and half, for fusion variants.

    python bench/ranking_sets.py [--reuse-index] [--trust-power 0 --trust-power 2] [--json OUT]

The index is the 40 real lists of ``scholars-real`` plus the 5,183 SciFact abstracts
(``bench.people.open_index``, the one ``bench/answers_scholars.py --with-scifact`` uses). Each
topic, mixed or paraphrased question of ``bench/data/`` (listing and unanswerable questions have
no gold records to rank) is searched as ``Assistant.ask`` searches it (the question's filters, the
first ``MAX_K``-capped 50 hits) under each fusion variant: ``PaperIndex.search`` with
``FusionConfig(lexical_trust_power=p)`` for every ``--trust-power p`` (0: the default fusion), and
the dense ranking alone. Reported: Recall@1/3/8/20/50 of "some gold record among the first k"
per set and half (``bench.common.split_half``), so a variant is chosen on the tuning half and
measured on the held-out half; SciFact's train and test claims as two more sets.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make ``bench.common`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.answers_scholars import Question, load_corpus, load_set, resolve_or_none
from bench.common import (
    HELD_OUT,
    REPO,
    TUNE,
    load_note,
    load_scifact,
    markdown_table,
    scifact_papers,
    start_scratch_run,
    write_json,
)
from bench.fit_judgement import question_filters, with_fusion
from bench.people import add_index_arguments, load_owners, open_index
from retrieval.index.fusion import FusionConfig
from retrieval.index.paper_index import PaperIndex
from retrieval.results import SearchHit

SETS = ("scholars_questions", "paraphrase_questions")
CUTS = (1, 3, 8, 20, 50)
DEPTH = 50


def first_gold_rank(ranked: Sequence[str], gold: set[str]) -> int | None:
    """The 1-based rank of the first gold id in ``ranked``; None when none is there."""
    return next((n for n, item in enumerate(ranked, start=1) if item in gold), None)


def recall_table(ranks: Sequence[int | None]) -> dict[str, float]:
    """``R@k``: the share of questions with a gold record among the first k, for each cut."""
    return {f"R@{k}": sum(1 for r in ranks if r is not None and r <= k) / len(ranks) for k in CUTS} if ranks else {}


def variants(index: PaperIndex, powers: Sequence[float]) -> dict[str, Callable[[str, Any], list[SearchHit]]]:
    """Name -> a search of ``index`` under that fusion variant."""
    def hybrid(power: float) -> Callable[[str, Any], list[SearchHit]]:
        fused = with_fusion(index, FusionConfig(lexical_trust_power=power))
        return lambda text, filters: fused.search(text, k=DEPTH, filters=filters)

    out = {"hybrid (default)" if power == 0 else f"hybrid, BM25 x coverage^{power:g}": hybrid(power)
           for power in powers}
    out["dense only"] = lambda text, filters: index.dense_search(text, k=DEPTH, filters=filters)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_index_arguments(parser, scifact=True)
    parser.add_argument("--trust-power", type=float, action="append", default=None,
                        help="a lexical_trust_power to rank with; repeatable (default: 0 and 2)")
    parser.add_argument("--json", type=Path, default=None, metavar="OUT", help="write the figures as JSON")
    args = parser.parse_args(argv)
    progress = start_scratch_run(args.out)

    owners = load_owners(args.data)
    scifact = load_scifact(args.datasets)
    extra, back = scifact_papers(scifact)
    index, _, _ = open_index(owners, args.reuse_index, progress, encoder=args.encoder, extra=extra, extra_name="scifact")
    corpus, _ = load_corpus(index, list(index.iter_papers()), owners)
    corpus.scifact = {doc: record for record, doc in back.items()}
    questions = [q for name in SETS for q in load_set(REPO / "bench" / "data" / f"{name}.jsonl")
                 if q.kind not in ("listing", "unanswerable")]
    for split in ("train", "test"):
        judged = scifact.split(split)
        questions += [Question(qid, "topic", scifact.queries[qid], {}, [{"scifact": doc} for doc in judged[qid]],
                               f"scifact_{split}") for qid in sorted(judged)]
    searches = variants(index, args.trust_power or [0.0, 2.0])
    ranks: dict[tuple[str, str, str], list[int | None]] = {}
    for n, question in enumerate(questions, start=1):
        gold = {found for ref in question.gold if (found := resolve_or_none(corpus, ref)) is not None}
        cleaned, _ = index.parse_question(question.question)
        filters = question_filters(index, question)
        for name, search in searches.items():
            hits = search(cleaned or question.question, filters)
            half = TUNE if question.set == "scifact_train" else HELD_OUT if question.set == "scifact_test" else question.half
            ranks.setdefault((name, question.set, half), []).append(
                first_gold_rank([hit.paper.id for hit in hits], gold))
        if n % 100 == 0:
            progress(f"{n} of {len(questions)} questions ranked")
    index.close()
    rows = [{"variant": name, "set": set_name, "half": half, "questions": len(found), **recall_table(found)}
            for (name, set_name, half), found in ranks.items()]
    rows.sort(key=lambda row: (row["set"], row["half"] != TUNE, row["variant"]))
    print(markdown_table(["set", "half", "questions", "ranking", *[f"R@{k}" for k in CUTS]],
                         [(r["set"], r["half"], r["questions"], r["variant"], *[f"{r[f'R@{k}']:.2f}" for k in CUTS])
                          for r in rows]))
    print(f"\n{load_note()}")
    if args.json is not None:
        write_json(args.json, rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
