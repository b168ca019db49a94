"""Check the two hand-written development sets of the evidence judgement against their records.

    python bench/check_question_sets.py [--data DIR]

The sets (one JSON object a line, exactly the keys ``id``, ``kind``, ``question``, ``filters``,
``gold``; written by hand from the records, blind to how the product does on them):

* ``bench/data/paraphrase_questions.jsonl`` (ids ``p001``...): ``kind`` "topic", ``filters`` {},
  one to three gold papers, each ``{"owner": slug, "key": BibTeX entry key}`` of a
  ``scholars-real`` file or ``{"scifact": corpus _id}``. The question paraphrases what the gold
  papers do: it shares no content term (``retrieval.text.content_terms``) with any gold title.
* ``bench/data/near_miss_questions.jsonl`` (ids ``n001``...): ``kind`` "unanswerable", ``filters``
  {}, ``gold`` []. Questions in a field's words whose topic no record covers (checked by hand
  when written; this script cannot check it).

Data: ``DIR`` (default ``../shared/datasets`` next to the repo) holds ``scholars-real/``
(``owners.json``, ``bib/<slug>.bib``) and ``scifact/corpus.jsonl.gz``; read at run time, never
copied. A gold reference resolves when the owner's file, parsed by the project's own parser
(``parse_file``; ``Paper.provenance[0].source_id`` is the entry key), yields entries with that key
under exactly one title (a key the parser gives two different titles is refused), or when the
SciFact corpus holds that ``_id``.

Output: one line per problem, then per set its size and its tuning / held-out counts
(``bench.common.split_half(file stem, id)``). Exit status 1 on any problem, else 0. ``check``
and ``shape_problems`` are importable (``tests/bench/test_question_sets.py``).
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make ``bench.common`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import DEFAULT_DATASETS, HELD_OUT, REPO, TUNE, split_half
from retrieval.sources.files.detect import parse_file
from retrieval.text import content_terms

DATA_DIR = REPO / "bench" / "data"
#: set name (the file stem, also the ``split_half`` set name) -> (id prefix, kind)
SETS: dict[str, tuple[str, str]] = {
    "paraphrase_questions": ("p", "topic"),
    "near_miss_questions": ("n", "unanswerable"),
}
KEYS = {"id", "kind", "question", "filters", "gold"}
MAX_GOLD = 3

Row = dict[str, Any]


def set_path(name: str) -> Path:
    return DATA_DIR / f"{name}.jsonl"


def load_sets() -> dict[str, list[Row]]:
    """Every set's rows, by set name, in file order (blank lines skipped)."""
    sets: dict[str, list[Row]] = {}
    for name in SETS:
        lines = set_path(name).read_text(encoding="utf-8").splitlines()
        sets[name] = [json.loads(line) for line in lines if line.strip()]
    return sets


def _ref_problem(ref: Any) -> str | None:
    """Why one gold reference is malformed, or None."""
    if not isinstance(ref, dict):
        return f"gold reference is not an object: {ref!r}"
    if set(ref) == {"owner", "key"} and all(isinstance(ref[k], str) and ref[k] for k in ref):
        return None
    if set(ref) == {"scifact"} and isinstance(ref["scifact"], str) and ref["scifact"]:
        return None
    return f"gold reference must be {{owner, key}} or {{scifact}} with non-empty strings: {ref!r}"


def shape_problems(sets: Mapping[str, list[Row]]) -> list[str]:
    """Problems visible without the data: keys, kinds, ids, filters and the form of gold."""
    problems: list[str] = []
    questions: Counter[str] = Counter()
    for name, rows in sets.items():
        prefix, kind = SETS[name]
        ids = Counter(str(row.get("id")) for row in rows)
        problems += [f"{name}: id {i} repeated {n} times" for i, n in sorted(ids.items()) if n > 1]
        for n, row in enumerate(rows, start=1):
            where = f"{name}:{row.get('id', f'line {n}')}"
            if set(row) != KEYS:
                problems.append(f"{where}: keys {sorted(row)} are not exactly {sorted(KEYS)}")
                continue
            if not (isinstance(row["id"], str) and row["id"].startswith(prefix) and row["id"][1:].isdigit()):
                problems.append(f"{where}: id must be {prefix!r} followed by digits")
            if row["kind"] != kind:
                problems.append(f"{where}: kind {row['kind']!r}, expected {kind!r}")
            if not (isinstance(row["question"], str) and row["question"].strip()):
                problems.append(f"{where}: empty question")
            else:
                questions[row["question"].strip().casefold()] += 1
            if row["filters"] != {}:
                problems.append(f"{where}: filters must be {{}}")
            gold = row["gold"]
            if not isinstance(gold, list):
                problems.append(f"{where}: gold is not a list")
            elif kind == "unanswerable":
                if gold:
                    problems.append(f"{where}: an unanswerable question has gold {gold}")
            else:
                if not 1 <= len(gold) <= MAX_GOLD:
                    problems.append(f"{where}: {len(gold)} gold papers, expected 1 to {MAX_GOLD}")
                problems += [f"{where}: {p}" for p in map(_ref_problem, gold) if p]
                refs = [json.dumps(ref, sort_keys=True) for ref in gold]
                if len(set(refs)) != len(refs):
                    problems.append(f"{where}: a gold reference is repeated")
    problems += [f"question asked {n} times: {q!r}" for q, n in sorted(questions.items()) if n > 1]
    return problems


# Resolution against the data -----------------------------------------------------------------


def entry_titles(data_dir: Path, owners: Iterable[str]) -> dict[tuple[str, str], set[str]]:
    """(owner, entry key) -> the titles the parser gives that key in the owner's file."""
    titles: dict[tuple[str, str], set[str]] = {}
    for owner in owners:
        for paper in parse_file(data_dir / "scholars-real" / "bib" / f"{owner}.bib").papers:
            key = paper.provenance[0].source_id if paper.provenance else None
            if key:
                titles.setdefault((owner, key), set()).add(paper.title)
    return titles


def scifact_titles(data_dir: Path) -> dict[str, str]:
    """SciFact corpus ``_id`` -> title."""
    with gzip.open(data_dir / "scifact" / "corpus.jsonl.gz", "rt", encoding="utf-8") as handle:
        return {str(doc["_id"]): doc.get("title") or "" for doc in map(json.loads, handle)}


def check(data_dir: Path, sets: Mapping[str, list[Row]] | None = None) -> list[str]:
    """Every problem of the sets (default: the committed files) against the data in ``data_dir``."""
    sets = load_sets() if sets is None else sets
    problems = shape_problems(sets)
    owners_file = data_dir / "scholars-real" / "owners.json"
    corpus = data_dir / "scifact" / "corpus.jsonl.gz"
    missing = [str(p) for p in (owners_file, corpus) if not p.exists()]
    if missing:
        return [*problems, f"data not found: {', '.join(missing)} (pass --data DIR)"]
    known = {o["slug"] for o in json.loads(owners_file.read_text(encoding="utf-8"))}
    refs = [ref for rows in sets.values() for row in rows if isinstance(row.get("gold"), list)
            for ref in row["gold"] if _ref_problem(ref) is None]
    wanted = sorted({ref["owner"] for ref in refs if "owner" in ref} & known)
    entries = entry_titles(data_dir, wanted)
    scifact = scifact_titles(data_dir) if any("scifact" in ref for ref in refs) else {}

    for name, rows in sets.items():
        for row in rows:
            if not isinstance(row.get("gold"), list):
                continue
            question_terms = content_terms(str(row.get("question", "")))
            for ref in row["gold"]:
                if _ref_problem(ref) is not None:
                    continue  # reported by shape_problems
                where = f"{name}:{row.get('id')}"
                if "scifact" in ref:
                    if ref["scifact"] not in scifact:
                        problems.append(f"{where}: SciFact doc {ref['scifact']} not in the corpus")
                        continue
                    title = scifact[ref["scifact"]]
                elif ref["owner"] not in known:
                    problems.append(f"{where}: unknown owner {ref['owner']!r}")
                    continue
                else:
                    titles = entries.get((ref["owner"], ref["key"]), set())
                    if len(titles) != 1:
                        found = "no entry" if not titles else f"{len(titles)} entries with different titles"
                        problems.append(f"{where}: {ref['owner']}/{ref['key']} resolves to {found}")
                        continue
                    (title,) = titles
                shared = question_terms & content_terms(title)
                if shared:
                    problems.append(f"{where}: shares {sorted(shared)} with gold title {title!r}")
    return problems


def split_counts(name: str, rows: Iterable[Row]) -> Counter[str]:
    return Counter(split_half(name, str(row.get("id"))) for row in rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATASETS,
                        help="folder holding scholars-real/ and scifact/ (default ../shared/datasets)")
    args = parser.parse_args(argv)
    sets = load_sets()
    problems = check(args.data, sets)
    for problem in problems:
        print(problem)
    for name, rows in sets.items():
        halves = split_counts(name, rows)
        print(f"{name}: {len(rows)} questions ({TUNE} {halves[TUNE]}, {HELD_OUT} {halves[HELD_OUT]})")
    print(f"{len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
