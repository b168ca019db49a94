"""Fit the evidence judgement's weights on the tuning halves; measure them on the held-out halves.

    python bench/fit_judgement.py [--data DIR] [--datasets DIR] [--out DIR] [--reuse-index]
                                  [--k 8] [--json OUT] [--trust-power P] [--drop SIGNAL ...]
                                  [--rows FILE] [--balance-groups] [--tune-only]
                                  [--occlusion] [--separability]

What it fits: the logistic model of ``retrieval.answers.judgement`` (weights per signal, a bias),
from the signals of the records the product retrieves for each question (``PaperIndex.search``
with the question's filters, ``k`` records, as ``Assistant.ask`` retrieves them).

The rows, each labelled answerable (1) or not (0), and the index each is asked of:

* ``scholars_questions`` (the 78 hand-written questions, topic and mixed = 1, unanswerable = 0)
  over the 40 real publication lists (``bench.people.open_index``);
* ``paraphrase_questions`` (1) and ``near_miss_questions`` (0) over the 40 lists plus the 5,183
  SciFact abstracts as distractors (the sets were written for that index);
* 200 SciFact train claims (1; their judged documents are in the same index).

An answerable question whose gold record is not among the retrieved ones is left out of the fit
(no verdict can make it cite gold) but stays in the figures. Only rows of the *tuning* half
(``bench.common.split_half``; SciFact train claims are all tuning) are fitted; the figures are
printed for both halves. The weights are printed as the Python to paste into
``retrieval/answers/judgement.py``; the cut ``ANSWER_PROBABILITY`` is 0.5, the bias lowered
by the amount that balances answered and abstained shares on the tuning rows
(``balanced_shift``).

``--balance-groups`` weighs each (set, label) group of tuning rows the same in the fit, so the
200 SciFact claims do not outweigh the development sets' 14-40 rows each;
``--trust-power P`` ranks with ``FusionConfig(lexical_trust_power=P)`` (the default: the live
fusion); ``--drop`` leaves a signal out of the fit (its weight 0), so feature sets can be compared;
``--rows FILE`` keeps the measured rows (read back when the file exists: no retrieval); and
``--tune-only`` prints the tuning halves' figures only, for choosing among fits without reading
the held-out rows.

``--separability`` asks how far *any* weighing of the signals can go, on the tuning rows only:
per signal, the AUC of each answerable set against the unanswerable one it must be told from
(paraphrases with gold retrieved against near misses, SciFact claims against near misses, the
scholars' answerable against their unanswerable questions); then, fitted leave-one-out
(group-balanced), the share of answerable rows answered at the cut that abstains on 90 % of the
near misses (the goal's rate). ``--occlusion`` measures, beside the product's signals, a probe
signal not in the product (``occlusion_gain``: how much the best record's cosine rises when one
content word is left out of the question, the largest over the words), which the separability
report then includes; it needs the rows measured afresh (``--rows`` to a new file).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

if __package__ in (None, ""):  # run as a script: make ``bench.common`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.answers_scholars import Question, load_corpus, load_set
from bench.common import (
    HELD_OUT,
    REPO,
    TUNE,
    load_note,
    load_scifact,
    markdown_table,
    scifact_papers,
    start_scratch_run,
)
from bench.people import add_index_arguments, load_owners, open_index
from retrieval.answers.judgement import SIGNAL_NAMES, measure_signals
from retrieval.index.background import BackgroundCache
from retrieval.index.filters import merge_filters
from retrieval.index.fusion import FusionConfig
from retrieval.index.paper_index import PaperIndex
from retrieval.results import SearchFilters, SearchHit
from retrieval.text import content_words, fold

SETS = REPO / "bench" / "data"
SCIFACT_CLAIMS = 200
L2 = 0.01  # ridge on the standardised weights: keeps them finite when a signal separates the tuning rows


@dataclass
class Row:
    set: str
    id: str
    half: str
    label: int
    gold_retrieved: bool
    values: tuple[float, ...]
    extra: dict[str, float] = field(default_factory=dict)  # probe signals not in the product (--occlusion)


def question_filters(index: PaperIndex, question: Question) -> SearchFilters | None:
    _, parsed = index.parse_question(question.question)
    merged = merge_filters(SearchFilters(**question.filters) if question.filters else None, parsed)
    return None if merged.is_empty() else merged


def occlusion_gain(question: str, hits: Sequence[SearchHit], encode: Any) -> float:
    """How much the best dense record's cosine to ``question`` rises, at most, when one of the
    question's content words (every occurrence) is left out: a word no record covers pulls the
    question away from it ("how much *water* do data centres use to cool GPUs"). 0.0 without a
    dense hit or content words. ``encode``: texts -> vectors (the index's encoder)."""
    dense = [hit for hit in hits if hit.dense_score is not None]
    words = fold(question).split()
    content = list(dict.fromkeys(content_words(question)))
    if not dense or not content:
        return 0.0
    best = max(dense, key=lambda hit: hit.dense_score or 0.0)
    texts = [best.paper.embedding_text, " ".join(words)]
    texts += [" ".join(w for w in words if w != left_out) for left_out in content]
    vectors = np.asarray(encode(texts), dtype=np.float64)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    cosines = vectors[1:] @ vectors[0]
    return float((cosines[1:] - cosines[0]).max())


def rows_of(index: PaperIndex, questions: Sequence[Question], resolve: Any, k: int,
            occlusion: bool = False) -> list[Row]:
    """The signals of each topic, mixed or unanswerable question over ``index`` (with
    ``occlusion``, also ``occlusion_gain`` in each row's ``extra``)."""
    background = BackgroundCache(index.settings.data_dir).of(index)
    out = []
    for question in questions:
        if question.kind == "listing":
            continue
        cleaned, _ = index.parse_question(question.question)
        hits = index.search(cleaned or question.question, k=k, filters=question_filters(index, question))
        signals = measure_signals(cleaned or question.question, hits, background, index.term_rarity)
        if signals is None:
            continue
        gold = {resolve(ref) for ref in question.gold}
        retrieved = bool(gold & {hit.paper.id for hit in hits})
        extra = ({"occlusion_gain": occlusion_gain(cleaned or question.question, hits, index.encoder.encode)}
                 if occlusion else {})
        out.append(Row(question.set, question.id, question.half, int(question.kind != "unanswerable"),
                       retrieved, signals.values(), extra))
    return out


def group_weights(rows: Sequence[Row]) -> np.ndarray:
    """Per-row weights under which every (set, label) group weighs the same in total (and all
    rows together as many as there are rows): 199 SciFact claims count as much as 14 of the
    scholars' questions."""
    sizes: dict[tuple[str, int], int] = {}
    for row in rows:
        sizes[(row.set, row.label)] = sizes.get((row.set, row.label), 0) + 1
    return np.asarray([len(rows) / len(sizes) / sizes[(row.set, row.label)] for row in rows], dtype=np.float64)


def fit(rows: Sequence[Row], drop: Sequence[str] = (), balance_groups: bool = False) -> tuple[dict[str, float], float]:
    """L2-regularised logistic regression by Newton's method on standardised signals; the
    weights returned apply to the raw signals. Signals named in ``drop`` get weight 0; with
    ``balance_groups`` each (set, label) group weighs the same (``group_weights``), else each row."""
    unknown = set(drop) - set(SIGNAL_NAMES)
    if unknown:
        raise ValueError(f"unknown signals: {sorted(unknown)}")
    kept = [name for name in SIGNAL_NAMES if name not in drop]
    weights, bias = fit_columns(rows, kept, balance_groups)
    fitted = {name: round(float(value), 4) for name, value in zip(kept, weights, strict=True)}
    return {name: fitted.get(name, 0.0) for name in SIGNAL_NAMES}, round(bias, 4)


def column(row: Row, name: str) -> float:
    """A product signal (``SIGNAL_NAMES``) or a probe signal in ``row.extra``."""
    return row.values[SIGNAL_NAMES.index(name)] if name in SIGNAL_NAMES else row.extra[name]


def fit_columns(rows: Sequence[Row], columns: Sequence[str], balance_groups: bool = False) -> tuple[np.ndarray, float]:
    """``fit`` over the named columns (product or probe signals): raw weights in ``columns``
    order and the bias."""
    x = np.asarray([[column(r, name) for name in columns] for r in rows], dtype=np.float64)
    y = np.asarray([r.label for r in rows], dtype=np.float64)
    row_weight = group_weights(rows) if balance_groups else np.ones(len(rows))
    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale[scale == 0] = 1.0
    z = np.hstack([np.ones((len(x), 1)), (x - mean) / scale])
    w = np.zeros(z.shape[1])
    penalty = np.diag([0.0] + [L2 * len(x)] * x.shape[1])
    for _ in range(50):
        p = 1.0 / (1.0 + np.exp(-z @ w))
        gradient = z.T @ (row_weight * (p - y)) + penalty @ w
        hessian = (z * (row_weight * p * (1 - p))[:, None]).T @ z + penalty
        step = np.linalg.solve(hessian, gradient)
        w -= step
        if np.abs(step).max() < 1e-9:
            break
    weights = w[1:] / scale
    return weights, float(w[0] - (weights * mean).sum())


def auc(positive: Sequence[float], negative: Sequence[float]) -> float:
    """The chance that a random positive scores above a random negative (ties count half)."""
    if not positive or not negative:
        raise ValueError("auc needs at least one positive and one negative score")
    pos, neg = np.asarray(positive, dtype=np.float64)[:, None], np.asarray(negative, dtype=np.float64)[None, :]
    return float((pos > neg).mean() + 0.5 * (pos == neg).mean())


def held_back_scores(rows: Sequence[Row], columns: Sequence[str]) -> list[float]:
    """Each row's score under a group-balanced fit of ``columns`` on all the *other* rows
    (leave-one-out): what a weighing chosen without that row makes of it."""
    scores = []
    for n, row in enumerate(rows):
        weights, bias = fit_columns([r for m, r in enumerate(rows) if m != n], columns, balance_groups=True)
        scores.append(bias + float(np.dot(weights, [column(row, name) for name in columns])))
    return scores


# (answerable set, unanswerable set) pairs the judgement must tell apart, in the separability report
PAIRS = (("paraphrase_questions", "near_miss_questions"), ("scifact_train", "near_miss_questions"),
         ("scholars_questions", "scholars_questions"))
NEAR_MISS_ABSTAINED = 0.90  # the goal's rate: the cut the separability report answers at


def separability(rows: Sequence[Row], columns: Sequence[str]) -> dict[str, Any]:
    """How well ``columns`` can tell the tuning rows' answerable questions (gold retrieved) from
    the unanswerable ones (module docstring): per column and pair, the AUC; and for the
    leave-one-out fit of all of them, its AUCs and each answerable set's share answered at the cut
    that abstains on ``NEAR_MISS_ABSTAINED`` of the near misses."""
    tuning = [r for r in rows if r.half == TUNE and (r.gold_retrieved or not r.label)]
    scores = held_back_scores(tuning, columns)

    def side(name: str, label: int, values: Sequence[float]) -> list[float]:
        return [v for r, v in zip(tuning, values, strict=True) if r.set == name and r.label == label]

    per_column: dict[str, dict[str, float]] = {}
    for name in [*columns, "leave-one-out fit"]:
        values = scores if name == "leave-one-out fit" else [column(r, name) for r in tuning]
        per_column[name] = {}
        for yes, no in PAIRS:
            positive, negative = side(yes, 1, values), side(no, 0, values)
            if positive and negative:
                per_column[name][f"{yes} / {no}"] = round(auc(positive, negative), 3)
    near = side("near_miss_questions", 0, scores)
    cut = float(np.quantile(near, NEAR_MISS_ABSTAINED)) if near else 0.0
    answered = {}
    for name in dict.fromkeys(yes for yes, _ in PAIRS):
        everyone = [r for r in rows if r.half == TUNE and r.set == name and r.label]
        kept = side(name, 1, scores)
        if everyone:
            answered[name] = round(sum(v > cut for v in kept) / len(everyone), 3)
    return {"columns": list(columns), "auc": per_column, "answered_at_cut": answered,
            "near_miss_abstained": NEAR_MISS_ABSTAINED}


def balanced_shift(rows: Sequence[Row], weights: dict[str, float], bias: float) -> float:
    """The amount taken off the bias (0 to 3 in steps of 0.1) that maximises the mean of the
    answered share of answerable rows and the abstained share of unanswerable rows: the fit
    weighs rows, not kinds, and the tuning rows hold more answerable questions."""
    positive = [r for r in rows if r.label]
    negative = [r for r in rows if not r.label]

    def balance(shift: float) -> float:
        answered = sum(decide(r, weights, bias - shift) for r in positive) / max(len(positive), 1)
        abstained = sum(not decide(r, weights, bias - shift) for r in negative) / max(len(negative), 1)
        return (answered + abstained) / 2

    return max((round(step / 10, 1) for step in range(31)), key=lambda shift: (balance(shift), -shift))


def decide(row: Row, weights: dict[str, float], bias: float) -> bool:
    score = bias + sum(weights[name] * value for name, value in zip(SIGNAL_NAMES, row.values, strict=True))
    return score >= 0.0  # probability 0.5


def figures(rows: Sequence[Row], weights: dict[str, float], bias: float) -> list[dict[str, Any]]:
    table = []
    for name in dict.fromkeys(r.set for r in rows):
        for half in (TUNE, HELD_OUT):
            mine = [r for r in rows if r.set == name and r.half == half]
            if not mine:
                continue
            positive = [r for r in mine if r.label]
            negative = [r for r in mine if not r.label]
            table.append({
                "set": name, "half": half, "answerable": len(positive), "unanswerable": len(negative),
                "answered_gold_retrieved": (sum(decide(r, weights, bias) and r.gold_retrieved for r in positive)
                                            / len(positive)) if positive else None,
                "abstained": (sum(not decide(r, weights, bias) for r in negative) / len(negative)) if negative else None,
            })
    return table


def with_fusion(index: PaperIndex, fusion: FusionConfig | None) -> PaperIndex:
    """``index`` itself, or a view of its stores that ranks with ``fusion``."""
    if fusion is None:
        return index
    return PaperIndex(index.settings, index.store, index.dense, index.lexical, index.encoder, fusion=fusion)


def measure_rows(args: argparse.Namespace, progress: Any) -> list[Row]:
    """The rows of every set (module docstring), retrieved under ``args.trust_power``'s fusion."""
    owners = load_owners(args.data)
    scifact = load_scifact(args.datasets)
    extra, back = scifact_papers(scifact)
    record_of_doc = {doc: record for record, doc in back.items()}
    fusion = None if args.trust_power is None else FusionConfig(lexical_trust_power=args.trust_power)

    rows: list[Row] = []
    lists, _, _ = open_index(owners, args.reuse_index, progress, encoder=args.encoder)
    corpus, _ = load_corpus(lists, list(lists.iter_papers()), owners)
    rows += rows_of(with_fusion(lists, fusion), load_set(SETS / "scholars_questions.jsonl"), corpus.resolve, args.k, args.occlusion)
    lists.close()

    mixed, _, _ = open_index(owners, args.reuse_index, progress, encoder=args.encoder, extra=extra, extra_name="scifact")
    corpus, _ = load_corpus(mixed, list(mixed.iter_papers()), owners)
    corpus.scifact = record_of_doc
    searched = with_fusion(mixed, fusion)
    for name in ("paraphrase_questions", "near_miss_questions"):
        if not (SETS / f"{name}.jsonl").exists():
            raise SystemExit(f"{SETS / name}.jsonl is missing")
        rows += rows_of(searched, load_set(SETS / f"{name}.jsonl"), corpus.resolve, args.k, args.occlusion)
    train = scifact.split("train")
    claims = random.Random(5).sample(sorted(train), min(SCIFACT_CLAIMS, len(train)))
    questions = [Question(qid, "topic", scifact.queries[qid], {}, [{"scifact": doc} for doc in train[qid]],
                          "scifact_train") for qid in claims]
    rows += [Row(r.set, r.id, TUNE, r.label, r.gold_retrieved, r.values, r.extra)
             for r in rows_of(searched, questions, corpus.resolve, args.k, args.occlusion)]
    mixed.close()
    return rows


def print_separability(rows: Sequence[Row], signals: Sequence[str], json_out: Path | None) -> None:
    """The separability report of ``signals``, and again with each probe signal the rows hold."""
    probes = sorted({name for row in rows for name in row.extra})
    reports = [separability(rows, signals)] + ([separability(rows, [*signals, *probes])] if probes else [])
    for report in reports:
        pairs = list(next(iter(report["auc"].values())))
        print(markdown_table(["signal (tuning rows)", *[f"AUC {pair}" for pair in pairs]],
                             [(name, *[f"{aucs.get(pair, float('nan')):.3f}" for pair in pairs])
                              for name, aucs in report["auc"].items()]))
        answered = ", ".join(f"{name} {share:.2f}" for name, share in report["answered_at_cut"].items())
        print(f"\nleave-one-out fit of {len(report['columns'])} signals, at the cut abstaining on "
              f"{report['near_miss_abstained']:.0%} of near misses: answered with gold retrieved: {answered}\n")
    print(load_note())
    if json_out is not None:
        json_out.parent.mkdir(parents=True, exist_ok=True)
        json_out.write_text(json.dumps(reports, indent=1), encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_index_arguments(parser, scifact=True)
    parser.add_argument("--k", type=int, default=8, help="records retrieved per question (Assistant.ask's default)")
    parser.add_argument("--json", type=Path, default=None, metavar="OUT", help="write weights and figures as JSON")
    parser.add_argument("--trust-power", type=float, default=None,
                        help="rank with this lexical_trust_power (default: the live fusion)")
    parser.add_argument("--drop", action="append", default=[], choices=SIGNAL_NAMES,
                        help="leave this signal out of the fit; repeatable")
    parser.add_argument("--rows", type=Path, default=None, metavar="FILE",
                        help="keep the measured rows here; read them back when the file exists")
    parser.add_argument("--balance-groups", action="store_true",
                        help="weigh each (set, label) group of tuning rows the same, not each row")
    parser.add_argument("--tune-only", action="store_true", help="print the tuning halves' figures only")
    parser.add_argument("--occlusion", action="store_true",
                        help="also measure the probe signal occlusion_gain (module docstring)")
    parser.add_argument("--separability", action="store_true",
                        help="report how far any weighing of the signals can go on the tuning rows, then stop")
    args = parser.parse_args(argv)
    progress = start_scratch_run(args.out)

    if args.rows is not None and args.rows.exists():
        rows = [Row(**{**row, "values": tuple(row["values"])})
                for row in json.loads(args.rows.read_text(encoding="utf-8"))]
    else:
        rows = measure_rows(args, progress)
        if args.rows is not None:
            args.rows.parent.mkdir(parents=True, exist_ok=True)
            args.rows.write_text(json.dumps([asdict(row) for row in rows]), encoding="utf-8")

    if args.separability:
        print_separability(rows, [name for name in SIGNAL_NAMES if name not in args.drop], args.json)
        return 0
    tuning = [r for r in rows if r.half == TUNE and (r.gold_retrieved or not r.label)]
    weights, bias = fit(tuning, args.drop, args.balance_groups)
    bias = round(bias - balanced_shift(tuning, weights, bias), 4)
    table = [t for t in figures(rows, weights, bias) if not args.tune_only or t["half"] == TUNE]
    print(markdown_table(["set", "half", "answerable", "answered (gold retrieved)", "unanswerable", "abstained"],
                         [(t["set"], t["half"], t["answerable"], "-" if t["answered_gold_retrieved"] is None
                           else f"{t['answered_gold_retrieved']:.2f}", t["unanswerable"],
                           "-" if t["abstained"] is None else f"{t['abstained']:.2f}") for t in table]))
    print(f"\nfitted on {len(tuning)} tuning rows; {load_note()}\n")
    print("WEIGHTS: dict[str, float] = {")
    print("    " + ", ".join(f'"{name}": {value}' for name, value in weights.items()) + ",")
    print("}")
    print(f"BIAS = {bias}")
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"weights": weights, "bias": bias, "figures": table}, indent=1),
                             encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
