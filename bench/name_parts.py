"""BibTeX names: does the export keep every name's family part as the source file had it?

    python bench/name_parts.py [--shared DIR] [--out FILE]

Data (read at run time, never copied into the tree): every ``datasets/scholars-real/bib/*.bib``
under ``--shared`` (default ``../shared`` next to the repo).

Protocol, file by file, through the product's reader and writer, judged by pybtex (an
independent implementation of BibTeX's name rules, used through its public API):

1. The entries are read as ``parse_bibtex`` reads them (``read_entries``, crossrefs resolved,
   ``build_item(entry_to_fields)``), and the records exported with ``to_bibtex``, what
   ``paperbot export --format bibtex`` writes: one entry per record, in order.
2. **Source names**: each entry's raw ``author`` (and ``editor``) value, split by pybtex
   (``split_name_list``, ``Person``) after this bench's own removal of what is no name: HTML
   tags (``<sup>`` with its content), footnote marks ``* † ‡ § ¶``, an empty name between two
   "and"s, and BibTeX's ``others`` / "et al." / "etc.".
3. **Export names**: the export parsed by pybtex (``parse_string``), the same fields.
4. A name's **family part** is pybtex's von + Last, decoded from LaTeX by pylatexenc, spaces
   normalised. A source name is judged against the export's name at the same position; a list
   whose length differs is counted apart ("unaligned"), as are names pybtex cannot read (more
   than two commas). A Vancouver-style source name ("Venktesh V": Last made of initials only,
   First not) is read by the product on purpose as family name = first word; it is judged
   against that and counted apart.

Figures, for authors and editors apart: share of source names whose family part the export
keeps, **after** (this export) and **before** (the same records with no family part stored,
which is what the writer did for every name until ``Author.family`` and
``Paper.editor_families`` existed, and still does for records stored before them); the
mismatches by (source family, export family). Goal: 100 % of names after, authors and editors.
The JSON goes to ``--out`` (default ``bench/out/name_parts.json``); exit status 0 when the goal
holds, 1 when not, 2 when the data is missing.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
import unicodedata
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make ``bench.common`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pybtex.bibtex.utils import split_name_list
from pybtex.database import InvalidNameString, Person, parse_string
from pylatexenc.latex2text import LatexNodes2Text

from bench.common import OUT_DIR, REPO, markdown_table
from retrieval.records.paper import Paper
from retrieval.sources.files.base import ParseOutcome, build_item
from retrieval.sources.files.bibtex import entry_to_fields, read_entries, resolve_crossrefs
from retrieval.sources.files.bibtex_writer import to_bibtex
from retrieval.sources.files.detect import decode_text

DEFAULT_SHARED = REPO.parent / "shared"
SCHOLARS = Path("datasets/scholars-real/bib")
GOAL = 1.0
MAX_EXAMPLES = 12

# What is no name, by this bench's own rules (independent of the product's cleaning).
_SUP = re.compile(r"<sup>.*?</sup>", re.IGNORECASE | re.DOTALL)
_TAG = re.compile(r"</?[A-Za-z][^>]*>")
_MARKS = re.compile(r"[*†‡§¶]")
_EMPTY_NAME = re.compile(r"\band(?:\s+and)+\b", re.IGNORECASE)
_NOT_NAMES = {"others", "et al.", "et al", "etc.", "etc", "..."}
_INITIALS = re.compile(r"(?:[A-Z]\.-?)+|[A-Z]{1,2}")
_TO_TEXT = LatexNodes2Text()


def without_decorations(raw: str) -> str:
    """A raw author value minus HTML, footnote marks and empty names (see the docstring)."""
    text = _MARKS.sub("", _TAG.sub("", _SUP.sub("", raw)))
    return _EMPTY_NAME.sub("and", " ".join(text.split()))


def decoded(latex: str) -> str:
    """LaTeX -> text (pylatexenc), NFC, single spaces."""
    return " ".join(unicodedata.normalize("NFC", _TO_TEXT.latex_to_text(latex)).split())


def family_part(person: Person) -> str:
    """pybtex's von + Last of a name, decoded."""
    return decoded(" ".join(person.prelast_names + person.last_names))


def is_vancouver(person: Person, raw: str) -> bool:
    """"Smith JA": written without a comma, BibTeX's Last is initials only and First is not."""
    firsts = person.first_names + person.middle_names
    return ("," not in raw and not person.prelast_names and len(person.last_names) == 1
            and bool(_INITIALS.fullmatch(decoded(person.last_names[0])))
            and bool(firsts) and not _INITIALS.fullmatch(decoded(firsts[0])))


@dataclass
class Expected:
    """One source name: its family part as the source had it, and whether it is Vancouver-style."""

    raw: str
    family: str
    vancouver: bool


def source_names(raw: str) -> list[Expected] | None:
    """The names of a raw value as pybtex reads them (None when pybtex cannot read one)."""
    names: list[Expected] = []
    for piece in split_name_list(without_decorations(raw)):
        if piece.strip().lower() in _NOT_NAMES or not piece.strip(" ,"):
            continue
        try:
            person = Person(piece.strip(" ,"))
        except InvalidNameString:
            return None
        if is_vancouver(person, piece):
            firsts = person.first_names + person.middle_names
            names.append(Expected(piece, decoded(firsts[0]), True))
        else:
            names.append(Expected(piece, family_part(person), False))
    return names


def export_names(entry: Any, role: str) -> list[str]:
    """The family parts of an exported entry's names (``others`` dropped)."""
    return [family_part(person) for person in entry.persons.get(role, []) if str(person).lower() != "others"]


@dataclass
class Tally:
    """Counts for one role (author or editor) and one export."""

    names: int = 0
    kept: int = 0
    vancouver: int = 0
    vancouver_kept: int = 0
    unaligned_lists: int = 0
    unreadable_lists: int = 0
    mismatches: Counter[tuple[str, str]] = field(default_factory=Counter)
    unaligned_examples: list[str] = field(default_factory=list)

    def judge(self, expected: list[Expected] | None, got: list[str], where: str) -> None:
        if expected is None:
            self.unreadable_lists += 1
            return
        if len(expected) != len(got):
            self.unaligned_lists += 1
            if len(self.unaligned_examples) < MAX_EXAMPLES:
                self.unaligned_examples.append(f"{where}: {[e.family for e in expected]} -> {got}")
            return
        for name, family in zip(expected, got, strict=True):
            self.names += 1
            same = name.family == family
            self.kept += same
            self.vancouver += name.vancouver
            self.vancouver_kept += name.vancouver and same
            if not same:
                self.mismatches[(name.family, family)] += 1

    def as_dict(self) -> dict[str, Any]:
        return {
            "names": self.names, "kept": self.kept, "share": self.kept / self.names if self.names else None,
            "vancouver": self.vancouver, "vancouver_kept": self.vancouver_kept,
            "unaligned_lists": self.unaligned_lists, "unreadable_lists": self.unreadable_lists,
            "distinct_mismatches": len(self.mismatches),
            "mismatches": [{"source": a, "export": b, "count": n} for (a, b), n in self.mismatches.most_common()],
            "unaligned_examples": self.unaligned_examples,
        }


def without_family_parts(paper: Paper) -> Paper:
    """The record as stored before family parts were kept: display names only."""
    authors = [author.model_copy(update={"family": None, "particle": None}) for author in paper.authors]
    return paper.model_copy(update={"authors": authors, "editor_families": {}})


def read_file(path: Path) -> tuple[list[dict[str, str]], list[Paper]]:
    """(raw fields of each entry that made a record, the records), as ``parse_bibtex`` reads them."""
    text = decode_text(path.read_bytes(), path.name)
    outcome = ParseOutcome(format="bibtex")
    entries = read_entries(text, outcome)
    resolve_crossrefs(entries)
    fields: list[dict[str, str]] = []
    papers: list[Paper] = []
    for entry in entries:
        paper = build_item(entry_to_fields, entry, source="bibtex", source_id=entry.key, item=entry.label,
                           outcome=outcome)
        if paper is not None:
            fields.append(dict(entry.fields))
            papers.append(paper)
    return fields, papers


def measure(paths: Sequence[Path]) -> dict[str, Any]:
    """The tallies over every file: after and before, authors and editors."""
    tallies = {(when, role): Tally() for when in ("after", "before") for role in ("author", "editor")}
    entries = 0
    for path in paths:
        fields, papers = read_file(path)
        entries += len(papers)
        exports = {"after": papers, "before": [without_family_parts(paper) for paper in papers]}
        for when, records in exports.items():
            exported = list(parse_string(to_bibtex(records), "bibtex").entries.values())
            if len(exported) != len(records):
                raise SystemExit(f"{path.name}: pybtex read {len(exported)} entries of an export of {len(records)}")
            for raw, entry, paper in zip(fields, exported, records, strict=True):
                for role in ("author", "editor"):
                    if raw.get(role, "").strip():
                        where = f"{path.name} {paper.provenance[0].source_id or paper.title[:40]!r}"
                        tallies[(when, role)].judge(source_names(raw[role]), export_names(entry, role), where)
    return {"files": len(paths), "records": entries,
            **{f"{role}s_{when}": tally.as_dict() for (when, role), tally in tallies.items()}}


def _pct(part: int, whole: int) -> str:
    return f"{100.0 * part / whole:.2f} % ({part:,} / {whole:,})" if whole else "n/a (0)"


def report(figures: dict[str, Any]) -> str:
    rows = []
    for role in ("authors", "editors"):
        before, after = figures[f"{role}_before"], figures[f"{role}_after"]
        goal, status = "100 %", "ok" if after["kept"] == after["names"] else "FAIL"
        rows.append((f"{role}: family part kept, before", _pct(before["kept"], before["names"]), "", ""))
        rows.append((f"{role}: family part kept, after", _pct(after["kept"], after["names"]), goal, status))
        rows.append((f"{role}: of which Vancouver-style (\"Smith JA\")",
                     _pct(after["vancouver_kept"], after["vancouver"]), "", ""))
    lines = [markdown_table(["figure", "value (count)", "goal", "status"], rows), ""]
    authors, editors = figures["authors_after"], figures["editors_after"]
    lines.append(f"{figures['files']} files, {figures['records']:,} records; lists not judged (authors, editors): "
                 f"{authors['unaligned_lists']}, {editors['unaligned_lists']} of another length in the export; "
                 f"{authors['unreadable_lists']}, {editors['unreadable_lists']} that BibTeX cannot read (too many "
                 f"commas). Seconds: {figures['seconds']:.1f}.")
    for role in ("authors", "editors"):
        for when in ("before", "after"):
            found = figures[f"{role}_{when}"]
            if found["mismatches"]:
                shown = ", ".join(f"{m['source']!r} -> {m['export']!r} x{m['count']}"
                                  for m in found["mismatches"][:MAX_EXAMPLES])
                lines.append(f"{role} {when}: {found['distinct_mismatches']} distinct mismatches: {shown}")
    lines.extend(f"unaligned: {example}" for example in authors["unaligned_examples"] + editors["unaligned_examples"])
    return "\n".join(lines)


def source_files(shared: Path) -> list[Path] | str:
    """The publication lists, or why they cannot be found."""
    folder = shared / SCHOLARS
    paths = sorted(folder.glob("*.bib")) if folder.is_dir() else []
    return paths or f"no {SCHOLARS}/*.bib under {shared}: pass --shared DIR, the folder holding datasets/"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--shared", type=Path, default=DEFAULT_SHARED, help="the folder holding datasets/")
    parser.add_argument("--out", type=Path, default=OUT_DIR / "name_parts.json", metavar="FILE",
                        help="the JSON figures (default bench/out/name_parts.json)")
    args = parser.parse_args(argv)
    paths = source_files(args.shared.resolve())
    if isinstance(paths, str):
        print(f"name_parts: {paths}", file=sys.stderr)
        return 2
    started = time.perf_counter()
    figures = measure(paths)
    figures["seconds"] = round(time.perf_counter() - started, 2)
    judged = [figures["authors_after"], figures["editors_after"]]
    lost = sum(role["names"] - role["kept"] for role in judged)
    figures["goal"] = GOAL
    figures["goal_met"] = judged[0]["names"] > 0 and lost == 0
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(figures, indent=1, ensure_ascii=False), encoding="utf-8")
    print(report(figures))
    print(f"figures: {args.out}", file=sys.stderr)
    if not figures["goal_met"]:
        print(f"goal failed: {lost} names lost their family part", file=sys.stderr)
    return 0 if figures["goal_met"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
