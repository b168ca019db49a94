"""Citations that point at the wrong record: how often the check is right, on real publication lists.

    python bench/attribution.py [--data DIR] [--size 8] [--sets-per-owner 12] [--json OUT]

``retrieval.answers.attribution`` drops a cited sentence that is about another evidence record than the
one it cites (a small model citing by list position, every ``[k]`` shifted). This measures,
without any model, how often it would drop a correct sentence and how often it catches a wrong one.

Data: every file of ``scholars-real/`` (default ``../shared/datasets/scholars-real``, read at run
time, never copied), parsed with the product's reader (``parse_file``).

Evidence sets are the hard case on purpose: for each owner, ``--sets-per-owner`` seed records
(evenly spread over the file), each with the ``--size - 1`` records *of the same file* whose
titles share the most content terms with the seed's. One scholar's titles share vocabulary, as
a retrieved set for a question shares its topic.

Sentences written over each set, for every record k, in the shapes models were seen to use
(known before any figure was seen):

* ``title``: the record's title as a claim, "<title> [k]." (a list line);
* ``list``: "k. <title> [k]" (a numbered list line, the list number equal to the citation);
* ``partial``: "One record studies <the first half of the title's words> [k]." (a paraphrase
  that names the record only in part);
* ``abstract``: the first sentence of the record's abstract when it has one, "<sentence> [k]."

Each shape is written correctly (citing k) and shifted (citing the next record, k+1, the last
citing the first). Figures: **false drops** = correct sentences the check flags / correct
sentences (goal: under 1 %); **caught** = shifted sentences flagged / shifted sentences; and, for
whole replies, the share of correct and of shifted ``title`` lists (one line per record) that
``model_output.miscites`` rejects after ``validate_answer``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import markdown_table
from retrieval.answers.attribution import EvidenceAttribution
from retrieval.answers.citations import split_sentences, validate_answer
from retrieval.answers.model_output import miscites
from retrieval.records.paper import Paper
from retrieval.sources.files.detect import parse_file
from retrieval.text import content_terms

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "scholars-real"
SHAPES = ("title", "list", "partial", "abstract")


def owner_papers(data: Path) -> dict[str, list[Paper]]:
    """Each owner's parsed records with a title of at least three content terms."""
    listing = data / "owners.json"
    if not listing.exists():
        raise SystemExit(f"scholars-real not found at {data}: pass --data DIR (the folder holding owners.json and bib/).")
    out: dict[str, list[Paper]] = {}
    for owner in json.loads(listing.read_text(encoding="utf-8")):
        outcome = parse_file(data / "bib" / f"{owner['slug']}.bib")
        out[owner["slug"]] = [p for p in outcome.papers if len(content_terms(p.title)) >= 3]
    return out


def evidence_sets(papers: Sequence[Paper], size: int, per_owner: int) -> list[list[Paper]]:
    """``per_owner`` sets of ``size`` records: a seed and the records most like it by title."""
    if len(papers) < size:
        return []
    terms = [content_terms(p.title) for p in papers]
    step = max(1, len(papers) // per_owner)
    sets = []
    for seed in range(0, len(papers), step)[:per_owner]:
        ranked = sorted((i for i in range(len(papers)) if i != seed),
                        key=lambda i: (-len(terms[i] & terms[seed]), i))
        sets.append([papers[seed], *(papers[i] for i in ranked[: size - 1])])
    return sets


def sentence(shape: str, paper: Paper, position: int, cited: int) -> str | None:
    """One sentence of ``shape`` about ``paper`` (list position ``position``) citing ``cited``."""
    title = paper.title.rstrip(" .")
    if shape == "title":
        return f"{title} [{cited}]."
    if shape == "list":
        return f"{position}. {title} [{cited}]"
    if shape == "partial":
        words = title.split()
        return f"One record studies {' '.join(words[: max(2, len(words) // 2)])} [{cited}]."
    first = split_sentences(paper.abstract or "")[:1]
    return f"{first[0].rstrip(' .')} [{cited}]." if first and len(first[0]) > 20 else None


def measure(sets: Sequence[Sequence[Paper]]) -> dict[str, object]:
    flagged: Counter[tuple[str, str]] = Counter()
    total: Counter[tuple[str, str]] = Counter()
    lists: Counter[str] = Counter()
    for papers in sets:
        attribution = EvidenceAttribution.from_papers(papers)
        n = len(papers)
        for k, paper in enumerate(papers, start=1):
            for shape in SHAPES:
                for kind, cited in (("correct", k), ("shifted", k % n + 1)):
                    text = sentence(shape, paper, k, cited)
                    if text is None:
                        continue
                    total[shape, kind] += 1
                    flagged[shape, kind] += attribution.misattributed(text, [cited]) is not None
        for kind, shift in (("correct", 0), ("shifted", 1)):
            reply = "\n".join(f"{p.title.rstrip(' .')} [{(k + shift - 1) % n + 1}]." for k, p in enumerate(papers, start=1))
            report = validate_answer(reply, n, attribution=attribution)
            lists[kind] += miscites(report)
    rows = {f"{shape}/{kind}": {"flagged": flagged[shape, kind], "sentences": total[shape, kind]}
            for shape in SHAPES for kind in ("correct", "shifted")}
    correct = sum(flagged[s, "correct"] for s in SHAPES), sum(total[s, "correct"] for s in SHAPES)
    shifted = sum(flagged[s, "shifted"] for s in SHAPES), sum(total[s, "shifted"] for s in SHAPES)
    return {
        "sets": len(sets), "rows": rows,
        "false_drops": correct[0] / max(1, correct[1]), "correct_sentences": correct[1],
        "caught": shifted[0] / max(1, shifted[1]), "shifted_sentences": shifted[1],
        "correct_lists_rejected": lists["correct"] / max(1, len(sets)),
        "shifted_lists_rejected": lists["shifted"] / max(1, len(sets)),
    }


def report(figures: dict[str, object]) -> str:
    rows = figures["rows"]
    assert isinstance(rows, dict)
    table = markdown_table(
        ["shape", "correct sentences dropped", "shifted sentences caught"],
        [[shape, _share(rows[f"{shape}/correct"]), _share(rows[f"{shape}/shifted"])] for shape in SHAPES],
    )
    return (f"{figures['sets']} evidence sets\n{table}\n"
            f"false drops: {figures['false_drops']:.2%} of {figures['correct_sentences']:,} correct sentences; "
            f"caught: {figures['caught']:.1%} of {figures['shifted_sentences']:,} shifted sentences\n"
            f"whole title lists rejected: correct {figures['correct_lists_rejected']:.1%}, "
            f"shifted {figures['shifted_lists_rejected']:.1%}")


def _share(row: dict[str, int]) -> str:
    return f"{row['flagged'] / max(1, row['sentences']):.1%} ({row['flagged']:,}/{row['sentences']:,})"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--size", type=int, default=8, help="records per evidence set (default 8, as ask's k)")
    parser.add_argument("--sets-per-owner", type=int, default=12)
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args(argv)
    sets = [s for papers in owner_papers(args.data).values()
            for s in evidence_sets(papers, args.size, args.sets_per_owner)]
    figures = measure(sets)
    print(report(figures))
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
