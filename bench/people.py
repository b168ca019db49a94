"""One person, one profile: author identity on 40 real researchers' own publication lists.

    python bench/people.py [--quick] [--data DIR] [--out DIR] [--reuse-index] [--verbose]
                           [--max-queries-per-owner N] [--json OUT]

Data: ``scholars-real/`` (default ``../shared/datasets/scholars-real``, read at run time, never
copied): ``bib/<slug>.bib`` is one owner's own list (exactly one file per owner; a few owners'
websites had several .bib files, concatenated into one) and ``owners.json`` gives ``name`` and
``name_variants`` (how the owner is written in the entries).

Protocol. All 40 files are ingested into one index through the real ``Assistant.library.ingest_files``
(embedded Chroma + BM25, the local encoder of ``--encoder``, default ``auto`` as paperbot chooses, a
scratch ``PAPERBOT_DATA_DIR`` under ``bench/out/people-index/<hash>/``, rebuilt unless
``--reuse-index``; the hash covers the files, the encoder actually used and ``retrieval/``'s code,
so a changed parser never reuses stale ids). Then, for each policy, in the same run and over the
same records:

* **baseline** (today): ``PeopleDirectory(papers, clustering="strict")`` and
  ``summarize_scholar(..., choose=False)`` (an ambiguous name lists its candidates);
* **new**: ``clustering="evidence"`` (plus ``vectors=`` when the directory accepts it) and
  ``choose=True`` (a dominant candidate is answered for, the rest in ``others_with_this_name``).

Every owner's ``name`` is summarised with ``since=1900`` (every paper in the window).

Metrics (decided before any figure was seen):

* **Record ids of a file**: each entry parsed with ``retrieval.sources.files.detect.parse_file`` is
  looked up in the index by its ``Paper.id``; failing that, by the index's own duplicate
  finder (``find_matches`` + ``same_paper``: a record merged with another file's copy may carry
  the other copy's id), failing that by ``title_key``. How many needed each way is printed.
* **Gold** (recall) = records of the owner's entries that *name the owner*: an author of the
  parsed entry whose judge key equals the judge key of one of ``name_variants`` (or of
  ``name``). The judge key is the parser's own decoding of one BibTeX name
  (``retrieval.sources.files.bibtex_names.parse_name``: LaTeX -> text, "Last, First" -> "First Last"), then
  HTML tags, parenthesised remarks and the marks ``*†‡§¶`` removed, accents folded, lowercased,
  punctuation to spaces, tokens sorted. Exact key equality; the product's name matcher is not
  the judge. Entries naming nobody like the owner are left out of recall and counted by reason
  (no author: an editors-only volume; the owner inside one malformed parsed name; the owner not
  among the authors: a list cut with ``and others``, or a paper that is not theirs).
* **Returned** = every paper of the resolved person (``directory.papers_of``), checked to be
  exactly what ``summarize`` summarises (``paper_count``; ``papers`` cites the themes' subset).
  Precision = returned records that are in the owner's file / returned. Recall = gold records
  returned / gold. **Resolved** = a ``ScholarSummaryResult`` (not ambiguous, no error).
  Means over all owners count an unresolved owner as P = R = 0; means over resolved owners too.
* **Namesakes merged**: an ordered pair (A, B) of owners counts when A's profile holds a record
  of B's file that is neither in A's file nor names A (judge key over the entry's and the
  record's authors): A's profile contains B's work. Goal 0. **Traps**: the named co-authors
  below (found by parsing) must not sit in the listed owners' profiles.
* **Leave-one-out expert finding**: for each gold record with an abstract in the owner's own
  entry (``--max-queries-per-owner`` caps per owner, lowest record ids first), the query is the
  abstract's first two sentences (split after . ! ? followed by a space and a capital, digit or
  bracket) and ``find_collaborators(limit=10)`` ranks people over an index wrapper whose
  ``retrieve`` drops the held-out record from one more hit than asked (the rest keep the full
  index's order; the record still weighs in BM25 statistics) and whose stored vectors leave it
  out (the work similarity never sees it). Approximation: the directory is
  built once per policy over all records, so the held-out paper still counts as identity
  evidence (co-authors, names, topics) and in paper counts; only retrieval loses it. The owner is found
  at rank r when the r-th person is the owner's resolved person (*strict*). For the baseline,
  which may split an owner into several people, a ranked person also counts when more than
  half of their papers are in the owner's file and one of their names has the owner's family
  name (last token) and first initial (*lenient*): this favours the baseline. Headline: strict
  for the new policy, lenient for the baseline; both are printed. Recall@10 = share of queries
  with the owner in the top 10; MRR over the 10 listed (0 when absent).
* **et-al people**: directory people one of whose written names folds to "et al"/"others"/
  "al" or contains "<". **Self co-authorship**: resolved owners with one of their own judge
  keys among ``summarize``'s ``coauthors``.
* **Timing**: the directory build of each policy over the same materialised records: one
  untimed build each (it warms shared caches), then the median of ``--timing-rounds``
  interleaved builds.

``--quick``: the namesake, trap and shared-paper owners (15), at most 3 queries each; every
file is still ingested. ``--json OUT`` writes the figures. Exit status 0 unless the data is
missing.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import shutil
import statistics
import sys
import time
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import date
from pathlib import Path
from typing import Any, get_args

import numpy as np

if __package__ in (None, ""):  # run as a script: make ``bench.common`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import (
    DEFAULT_DATASETS,
    REPO,
    bench_settings,
    load_note,
    markdown_table,
    out_dir,
    shared_cache_dir,
    start_scratch_run,
    write_json,
)
from retrieval.config import Settings
from retrieval.errors import PaperbotError, UnknownScholarError
from retrieval.index.paper_index import PaperIndex
from retrieval.index.search import SearchOutcome
from retrieval.records.merge import same_paper
from retrieval.records.paper import Paper, title_key
from retrieval.results import ScholarSummaryResult, SearchFilters
from retrieval.scholars.people import PeopleDirectory, Person, stored_vectors_of
from retrieval.sources.files.bibtex_names import parse_name as decode_bibtex_name
from retrieval.sources.files.detect import parse_file
from retrieval.text import LATIN_LETTERS, fold

ENCODER_CHOICES: tuple[str, ...] = get_args(Settings.model_fields["encoder"].annotation)  # auto, torch, onnx, onnx-int8
DEFAULT_DATA = REPO.parent / "shared" / "datasets" / "scholars-real"
TODAY = date(2026, 12, 1)  # fixed: recency weights and affiliations do not drift with the calendar
SINCE = 1900
TOP = 10
QUICK_QUERIES = 3
POLICIES = {"baseline": "strict", "new": "evidence"}
LABELS = {"baseline": "baseline (strict, candidates listed)", "new": "new (evidence, dominant chosen)"}
QUICK_OWNERS = (
    "bowen-wang", "boxiang-wang", "bo-wang", "yuguang-chen", "yi-chao-chen", "hongkai-chen", "hongbo-chen",
    "tao-e-li", "jindong-wang", "jilin-hu", "elias-stengel-eskin", "jiaming-song", "aditya-grover",
    "avishek-anand", "firoj-alam",
)
# (file, how the co-author is written there, owners whose profile must not hold those papers)
TRAPS = (
    ("jindong-wang", ("Li, Tao",), ("tao-e-li",)),
    ("elias-stengel-eskin", ("Hu, J. Edward",), ("jilin-hu",)),
    ("boxiang-wang", ("Y.K. Chen", "Chen, Y. K.", "Chen, Y.K."),
     ("yuguang-chen", "yi-chao-chen", "hongkai-chen", "hongbo-chen")),
    ("boxiang-wang", ("Wang, B. X.",), ("bo-wang", "bowen-wang")),
)
GOALS = {"resolved": 0.95, "precision": 0.95, "recall": 0.90, "namesake_merges": 0, "expert_recall_at_10": 0.82,
         "et_al_people": 0, "self_coauthorship": 0}
_TAG = re.compile(r"<[^>]*>")
_REMARK = re.compile(r"\([^)]*\)")
_MARKS = re.compile(r"[*†‡§¶]")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9(\[\"“])")
_ET_AL = {"et al", "others", "al", "et"}


# The judge ----------------------------------------------------------------------------------


def judge_tokens(display: str) -> list[str]:
    """A decoded name as comparable tokens: no tags, remarks or marks, accents folded, lowercase."""
    text = _MARKS.sub(" ", _REMARK.sub(" ", _TAG.sub(" ", display)))
    text = unicodedata.normalize("NFKD", text.translate(LATIN_LETTERS))
    text = "".join(ch for ch in text if not unicodedata.combining(ch)).lower()
    return "".join(ch if ch.isalnum() else " " for ch in text).split()


def judge_key(display: str) -> str:
    return " ".join(sorted(judge_tokens(display)))


@dataclass
class Owner:
    slug: str
    name: str
    variants: list[str]
    path: Path
    keys: set[str] = field(default_factory=set)  # judge keys of every way the owner is written
    forms: list[tuple[str, str]] = field(default_factory=list)  # (family = last token, first initial)

    def __post_init__(self) -> None:
        decoded = [decode_bibtex_name(v) for v in self.variants] + [self.name]
        self.keys = {judge_key(d) for d in decoded} - {""}
        for d in decoded:
            tokens = judge_tokens(d)
            if tokens:
                self.forms.append((tokens[-1], tokens[0][0]))

    def named_in(self, names: Iterable[str]) -> bool:
        return any(judge_key(n) in self.keys for n in names)

    def inside(self, names: Iterable[str]) -> bool:
        """The owner's tokens within a longer parsed name ("Chunxia Yang, Bo Wang, Yunong Xie")."""
        wanted = [set(key.split()) for key in self.keys]
        return any(any(w < set(judge_tokens(n)) for w in wanted) for n in names)

    def looks_like(self, names: Iterable[str]) -> bool:
        """Lenient: a name with the owner's family name (last token) and first initial."""
        for name in names:
            tokens = judge_tokens(name)
            if tokens and any(tokens[-1] == family and tokens[0][0] == initial for family, initial in self.forms):
                return True
        return False


def load_owners(data: Path) -> list[Owner]:
    listing = data / "owners.json"
    if not listing.exists():
        raise SystemExit(f"scholars-real not found at {data}: pass --data DIR (the folder holding owners.json and bib/).")
    owners = [Owner(o["slug"], o["name"], list(o["name_variants"]), data / "bib" / f"{o['slug']}.bib")
              for o in json.loads(listing.read_text(encoding="utf-8"))]
    missing = [str(o.path) for o in owners if not o.path.exists()]
    if missing:
        raise SystemExit(f"missing publication lists: {', '.join(missing)}")
    return owners


# The index ----------------------------------------------------------------------------------


def content_key(paths: Sequence[Path], encoder: str) -> str:
    """Hash of the files, the encoder's name (for ``auto``, what it chose) and the core's code
    (parsing and merging change ids)."""
    digest = hashlib.sha256(encoder.encode())
    code = sorted((REPO / "retrieval").rglob("*.py"))
    for path in [*sorted(paths), *code]:
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def add_index_arguments(parser: argparse.ArgumentParser, *, scifact: bool = False) -> None:
    """The arguments of every benchmark that asks questions of ``open_index``'s index: ``--data``
    (the scholars-real folder), ``--out`` (caches and scratch indexes), ``--reuse-index``,
    ``--encoder``, and with ``scifact`` ``--datasets`` (the folder that holds SciFact)."""
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the scholars-real folder")
    if scifact:
        parser.add_argument("--datasets", type=Path, default=DEFAULT_DATASETS, help="the folder that holds scifact/")
    parser.add_argument("--out", type=Path, default=None, help="caches and scratch indexes (default bench/out)")
    parser.add_argument("--reuse-index", action="store_true", help="keep the indexes of identical files and encoder")
    parser.add_argument("--encoder", choices=ENCODER_CHOICES, default="auto",
                        help="the encoder (default auto: what paperbot chooses on this CPU; onnx is float32, whose "
                             "vectors are the same on every CPU, and what auto may choose on one without AVX-512)")


def open_index(owners: Sequence[Owner], reuse: bool, progress: Callable[[str], None], *, encoder: str = "auto",
               extra: Sequence[Paper] = (), extra_name: str = "") -> tuple[PaperIndex, Settings, dict[str, Any]]:
    """The index of all files, ingested with ``Assistant.library.ingest_files`` (cached by content hash).

    ``encoder`` is the setting (``auto``, as paperbot chooses, or a variant); the index is kept
    per encoder actually used, so a reused index never has another encoder's vectors.
    ``extra`` records (e.g. the SciFact corpus as distractors, named ``extra_name``) are merged
    in after the files with ``Assistant.library.ingest_papers``; such an index lives in its own folder.
    """
    from bot.progress import line_progress
    from retrieval.assistant import Assistant
    from retrieval.index.embedding_cache import EmbeddingCache, default_cache_path, paper_embedder
    from retrieval.index.encoders import loading as embeddings

    paths = [o.path for o in owners]
    encoder_settings = bench_settings(out_dir(), encoder=encoder, _env_file=None)  # ONNX export shared by benches
    loaded = embeddings.load_encoder(encoder_settings)
    key = content_key(paths, loaded.name)  # what auto chose, not "auto"
    if extra:
        digest = hashlib.sha256(key.encode())
        for paper in extra:
            digest.update(paper.model_dump_json().encode())
        key = f"{extra_name or 'extra'}-{digest.hexdigest()[:16]}"
    folder = out_dir() / ("people-index" if not extra else f"people-index-{extra_name or 'extra'}") / key
    settings = bench_settings(folder, encoder=encoder, _env_file=None)
    marker = folder / "ingest.json"
    if not (reuse and marker.exists()):
        for stale in folder.parent.glob("*"):  # this one, and indexes of older files or code
            shutil.rmtree(stale, ignore_errors=True)
    cache = EmbeddingCache(default_cache_path(shared_cache_dir()))  # vectors by text hash: re-runs never re-encode
    index = PaperIndex.open(settings, loaded, embed=paper_embedder(cache))
    if marker.exists():
        info = json.loads(marker.read_text(encoding="utf-8"))
        info["reused"] = True
        progress(f"reusing the index at {folder} ({index.count():,} records)")
        return index, settings, info
    started = time.perf_counter()
    assistant = Assistant(settings, index=index, chat_model=None)
    with line_progress(f"Indexing {len(paths)} files", progress) as update:  # minutes at first; emulated, an hour
        report = assistant.library.ingest_files(paths, progress=update)
    if extra:
        with line_progress(f"Indexing {len(extra):,} {extra_name or 'extra'} records", progress) as update:
            report.extend(assistant.library.ingest_papers(list(extra), progress=update))
    info = {"seconds": round(time.perf_counter() - started, 1), "records": index.count(), **report.as_dict(),
            "encoder": loaded.name, "reused": False}
    marker.write_text(json.dumps(info, indent=1), encoding="utf-8")
    progress(f"ingested {len(paths)} files -> {index.count():,} records in {info['seconds']:.0f} s ({folder})")
    return index, settings, info


# Ground truth --------------------------------------------------------------------------------


@dataclass
class Truth:
    """What one owner's file says, in record ids of the index."""

    file_ids: set[str] = field(default_factory=set)  # every entry's record
    gold: set[str] = field(default_factory=set)  # entries naming the owner
    excluded: Counter[str] = field(default_factory=Counter)  # entries not naming the owner, by reason
    queries: list[tuple[str, str]] = field(default_factory=list)  # (record id, first sentences)
    names: dict[str, list[str]] = field(default_factory=dict)  # record id -> entry's + record's authors
    parse_skipped: list[str] = field(default_factory=list)
    unmapped: list[str] = field(default_factory=list)
    entries: int = 0  # parsed entries


def first_sentences(text: str, n: int = 2) -> str:
    return " ".join(_SENTENCE_END.split(" ".join(text.split()))[:n])


class RecordFinder:
    """Parsed entry -> the index record holding it (by id, duplicate finder, then title)."""

    def __init__(self, index: PaperIndex, records: Sequence[Paper]) -> None:
        self.index = index
        self.by_id = {p.id: p for p in records}
        self.ids = set(self.by_id)
        self.by_title: dict[str, set[str]] = {}
        for paper in records:
            self.by_title.setdefault(title_key(paper.title), set()).add(paper.id)
        self.how: Counter[str] = Counter()

    def find(self, paper: Paper) -> str | None:
        # the id alone is not enough: a file can give two papers one id, and ingest keeps the
        # second apart under another id (``titles_conflict``)
        if paper.id in self.ids and same_paper(self.by_id[paper.id], paper):
            self.how["by id"] += 1
            return paper.id
        matches = [m.id for m in self.index.find_matches(paper) if same_paper(m, paper) and m.id in self.ids]
        if matches:
            self.how["by duplicate finder"] += 1
            return matches[0]
        titled = self.by_title.get(title_key(paper.title), set())
        if len(titled) == 1:
            self.how["by title"] += 1
            return next(iter(titled))
        self.how["unmapped"] += 1
        return None


def ground_truth(index: PaperIndex, records: Sequence[Paper], owners: Sequence[Owner]) -> tuple[dict[str, Truth], Counter[str]]:
    finder = RecordFinder(index, records)
    by_id = {p.id: p for p in records}
    truth: dict[str, Truth] = {}
    for owner in owners:
        parsed = parse_file(owner.path)
        t = Truth(parse_skipped=[f"{s.item}: {s.reason}" for s in parsed.skipped], entries=len(parsed.papers))
        for paper in parsed.papers:
            record_id = finder.find(paper)
            if record_id is None:
                t.unmapped.append(paper.title)
                continue
            t.file_ids.add(record_id)
            names = [a.name for a in paper.authors]
            t.names[record_id] = t.names.get(record_id, []) + names + by_id[record_id].author_names
            if owner.named_in(names):
                t.gold.add(record_id)
                if paper.abstract and record_id not in {q for q, _ in t.queries}:
                    t.queries.append((record_id, first_sentences(paper.abstract)))
            elif not names:
                t.excluded["no author (editors only)"] += 1
            elif owner.inside(names):
                t.excluded["owner inside a malformed parsed name"] += 1
            else:
                t.excluded["owner not among the authors ('and others', or not theirs)"] += 1
        t.queries.sort()
        truth[owner.slug] = t
    return truth, finder.how


# One policy ----------------------------------------------------------------------------------


def make_directory(records: Sequence[Paper], index: PaperIndex, clustering: str) -> tuple[PeopleDirectory, list[str]]:
    """The directory of ``clustering`` (the new policy reads the stored vectors, as the product
    does), and the keywords it was built with."""
    if clustering == "strict":
        return PeopleDirectory(records, clustering="strict"), ["clustering"]
    return PeopleDirectory(records, clustering=clustering, vectors=stored_vectors_of(index)), ["clustering", "vectors"]


def chosen_people(directory: PeopleDirectory, result: ScholarSummaryResult) -> list[Person]:
    """The person ``summarize`` summarised, found by the ``person_id`` it returned."""
    person = directory.find_person_id(result.person_id) if result.person_id else None
    return [person] if person is not None else []


@dataclass
class OwnerRun:
    slug: str
    status: str  # "resolved" | "ambiguous (n)" | "unknown" | "error: ..."
    keys: set[str] = field(default_factory=set)  # person key(s) of the resolved person
    returned: set[str] = field(default_factory=set)
    precision: float = 0.0
    recall: float = 0.0
    others: int = 0
    count_mismatch: bool = False
    self_coauthor: list[str] = field(default_factory=list)

    @property
    def resolved(self) -> bool:
        return self.status == "resolved"


def summarize_owner(index: PaperIndex, settings: Settings, directory: PeopleDirectory, owner: Owner,
                    truth: Truth, choose: bool) -> OwnerRun:
    from retrieval.scholars.summary import summarize_scholar

    try:
        result = summarize_scholar(index, settings, owner.name, since=SINCE, directory=directory, today=TODAY, choose=choose)
    except UnknownScholarError:
        return OwnerRun(owner.slug, "unknown")
    except PaperbotError as exc:
        return OwnerRun(owner.slug, f"error: {exc}")
    if not isinstance(result, ScholarSummaryResult):
        return OwnerRun(owner.slug, f"ambiguous ({len(result.candidates) + result.more})")
    people = chosen_people(directory, result)
    run = OwnerRun(owner.slug, "resolved", {p.key for p in people}, others=result.others_with_this_name)
    if not people:  # cannot tell which person was summarised: score nothing rather than guess
        run.count_mismatch = True
        return run
    run.returned = {paper.id for p in people for paper in directory.papers_of(p)}
    run.count_mismatch = len(run.returned) != result.paper_count
    run.precision = len(run.returned & truth.file_ids) / max(1, len(run.returned))
    run.recall = len(run.returned & truth.gold) / max(1, len(truth.gold))
    run.self_coauthor = [c.name for c in result.coauthors if owner.named_in([c.name])]
    return run


def namesake_merges(runs: dict[str, OwnerRun], owners: Sequence[Owner], truth: dict[str, Truth]) -> list[dict[str, Any]]:
    by_slug = {o.slug: o for o in owners}
    merges = []
    for a, run in runs.items():
        if not run.returned:
            continue
        for b in truth:
            if b == a:
                continue
            foreign = [pid for pid in (run.returned & truth[b].file_ids) - truth[a].file_ids
                       if not by_slug[a].named_in(truth[b].names.get(pid, []))]
            if foreign:
                merges.append({"profile_of": a, "holds_work_of": b, "papers": len(foreign)})
    return merges


def trap_checks(runs: dict[str, OwnerRun], truth: dict[str, Truth], records: dict[str, Paper]) -> list[dict[str, Any]]:
    checks = []
    for slug, written, forbidden in TRAPS:
        keys = {judge_key(decode_bibtex_name(w)) for w in written}
        papers = {pid for pid, names in truth[slug].names.items() if any(judge_key(n) in keys for n in names)}
        for other in forbidden:
            if other not in runs:
                continue
            inside = papers & runs[other].returned
            checks.append({"file": slug, "coauthor": written[0], "papers": len(papers), "profile_of": other,
                           "inside": len(inside), "titles": sorted(records[p].title[:70] for p in inside)})
    return checks


def et_al_people(directory: PeopleDirectory) -> list[str]:
    return sorted({n for p in directory.people for n in p.names if fold(n) in _ET_AL or "<" in n})


# Leave-one-out expert finding ---------------------------------------------------------------


class HeldOut:
    """The index with one record hidden from ``retrieve``, from its stored vectors and from their
    nearest neighbours; searches are shared across policies."""

    def __init__(self, index: PaperIndex, cache: dict[tuple[str, int], SearchOutcome]) -> None:
        self.index = index
        self.cache = cache
        self.held: str | None = None

    def retrieve(self, query: str, k: int = 10, filters: SearchFilters | None = None) -> SearchOutcome:
        key = (query, k)
        if key not in self.cache:
            self.cache[key] = self.index.retrieve(query, k=k + 1, filters=filters)
        found = self.cache[key]
        return replace(found, hits=[h for h in found.hits if h.paper.id != self.held][:k])

    def vectors(self, ids: Sequence[str]) -> dict[str, np.ndarray]:
        return self.index.dense.vectors([i for i in ids if i != self.held])

    def nearest_many(self, vectors: np.ndarray, n: int) -> list[list[tuple[str, float]]]:
        """The index's nearest stored neighbours, the hidden record never among them."""
        found = self.index.dense.nearest_many(vectors, n + 1)
        return [[(i, cosine) for i, cosine in near if i != self.held][:n] for near in found]

    def iter_papers(self) -> Iterator[Paper]:
        return self.index.iter_papers()


def ranked_people(directory: PeopleDirectory, person_id: str | None) -> list[Person]:
    """The directory person behind one ranked expert (by the ``person_id`` it carries)."""
    person = directory.find_person_id(person_id) if person_id else None
    return [person] if person is not None else []


def expert_finding(held: HeldOut, settings: Settings, directory: PeopleDirectory, owners: Sequence[Owner],
                   truth: dict[str, Truth], runs: dict[str, OwnerRun], cap: int | None) -> dict[str, Any]:
    from retrieval.scholars.collaborators import find_collaborators

    ranks: dict[str, list[int | None]] = {"strict": [], "lenient": []}
    unmapped = 0
    for owner in owners:
        own_keys = runs[owner.slug].keys
        for record_id, query in truth[owner.slug].queries[:cap]:
            held.held = record_id
            result = find_collaborators(held, settings, query, directory=directory, limit=TOP, today=TODAY)
            first: dict[str, int | None] = {"strict": None, "lenient": None}
            for rank, scholar in enumerate(result.scholars, start=1):
                people = ranked_people(directory, scholar.person_id)
                if not people:
                    unmapped += 1
                    continue
                strict = bool(own_keys) and {p.key for p in people} <= own_keys
                ids = {pid for p in people for pid in p.paper_ids}
                mostly = sum(1 for pid in ids if pid in truth[owner.slug].file_ids) > len(ids) / 2
                lenient = strict or (mostly and owner.looks_like(n for p in people for n in p.names))
                for rule, hit in (("strict", strict), ("lenient", lenient)):
                    if hit and first[rule] is None:
                        first[rule] = rank
            for rule in ranks:
                ranks[rule].append(first[rule])
    held.held = None
    out: dict[str, Any] = {"queries": len(ranks["strict"]), "unmapped_people": unmapped}
    for rule, found in ranks.items():
        n = max(1, len(found))
        out[rule] = {"recall_at_10": sum(r is not None for r in found) / n,
                     "mrr": sum(1 / r for r in found if r is not None) / n}
    return out


def build_directories(records: Sequence[Paper], index: PaperIndex, rounds: int) -> dict[str, tuple[PeopleDirectory, list[str], float]]:
    """Each policy's directory (the first, untimed build also warms shared caches) and the median
    seconds of ``rounds`` further builds, the policies interleaved."""
    built = {policy: make_directory(records, index, clustering) for policy, clustering in POLICIES.items()}
    seconds: dict[str, list[float]] = {policy: [] for policy in POLICIES}
    for _ in range(rounds):
        for policy, clustering in POLICIES.items():
            started = time.perf_counter()
            make_directory(records, index, clustering)
            seconds[policy].append(time.perf_counter() - started)
    return {p: (built[p][0], built[p][1], statistics.median(seconds[p])) for p in POLICIES}


def run_policy(policy: str, built: tuple[PeopleDirectory, list[str], float], index: PaperIndex, settings: Settings,
               owners: Sequence[Owner], scored: Sequence[Owner], truth: dict[str, Truth], records: Sequence[Paper],
               held: HeldOut, cap: int | None, progress: Callable[[str], None]) -> dict[str, Any]:

    directory, kwargs, build_s = built
    choose = policy == "new"
    started = time.perf_counter()
    runs = {o.slug: summarize_owner(index, settings, directory, o, truth[o.slug], choose) for o in scored}
    summarize_s = time.perf_counter() - started
    progress(f"{policy}: directory {build_s:.2f} s (median), {len(scored)} summaries {summarize_s:.1f} s")
    by_id = {p.id: p for p in records}
    merges = namesake_merges(runs, owners, truth)
    traps = trap_checks(runs, truth, by_id)
    started = time.perf_counter()
    experts = expert_finding(held, settings, directory, scored, truth, runs, cap)
    progress(f"{policy}: {experts['queries']} leave-one-out queries {time.perf_counter() - started:.1f} s")
    headline = "lenient" if policy == "baseline" else "strict"
    resolved = [r for r in runs.values() if r.resolved]
    n, m = max(1, len(runs)), max(1, len(resolved))
    etal = et_al_people(directory)
    return {
        "label": LABELS[policy], "clustering": POLICIES[policy], "directory_kwargs": kwargs, "choose": choose,
        "directory_seconds": round(build_s, 3), "summarize_seconds": round(summarize_s, 2),
        "people": len(directory.people), "owners": len(runs),
        "resolved": len(resolved) / n,
        "precision": sum(r.precision for r in runs.values()) / n,
        "recall": sum(r.recall for r in runs.values()) / n,
        "precision_resolved": sum(r.precision for r in resolved) / m,
        "recall_resolved": sum(r.recall for r in resolved) / m,
        "count_mismatches": sorted(r.slug for r in runs.values() if r.count_mismatch),
        "namesake_merges": len(merges), "merges": merges,
        "trap_violations": sum(1 for t in traps if t["inside"]), "traps": traps,
        "et_al_people": len(etal), "et_al_names": etal[:20],
        "self_coauthorship": sum(1 for r in runs.values() if r.self_coauthor),
        "self_coauthors": {r.slug: r.self_coauthor for r in runs.values() if r.self_coauthor},
        "experts": {**experts, "headline": headline, "recall_at_10": experts[headline]["recall_at_10"],
                    "mrr": experts[headline]["mrr"]},
        "per_owner": [{"slug": r.slug, "status": r.status, "returned": len(r.returned), "gold": len(truth[r.slug].gold),
                       "precision": round(r.precision, 4), "recall": round(r.recall, 4),
                       "others_with_this_name": r.others} for r in runs.values()],
    }


# Report --------------------------------------------------------------------------------------


def _f(value: float) -> str:
    return f"{value:.3f}"


def report(figures: dict[str, Any], verbose: bool) -> str:
    base, new = figures["policies"]["baseline"], figures["policies"]["new"]
    rows = [
        ("owners resolved (share)", _f(base["resolved"]), _f(new["resolved"]), f"≥ {GOALS['resolved']:.2f}"),
        ("mean precision (unresolved = 0)", _f(base["precision"]), _f(new["precision"]), f"≥ {GOALS['precision']:.2f}"),
        ("mean recall (unresolved = 0)", _f(base["recall"]), _f(new["recall"]), f"≥ {GOALS['recall']:.2f}"),
        ("mean precision, resolved owners", _f(base["precision_resolved"]), _f(new["precision_resolved"]), ""),
        ("mean recall, resolved owners", _f(base["recall_resolved"]), _f(new["recall_resolved"]), ""),
        ("namesake merges (owner pairs)", base["namesake_merges"], new["namesake_merges"], "0"),
        ("trap violations", base["trap_violations"], new["trap_violations"], "0"),
        ("expert Recall@10 (headline rule)", _f(base["experts"]["recall_at_10"]), _f(new["experts"]["recall_at_10"]),
         f"≥ {GOALS['expert_recall_at_10']:.2f}"),
        ("expert MRR (headline rule)", _f(base["experts"]["mrr"]), _f(new["experts"]["mrr"]), ""),
        ("expert Recall@10 strict / lenient",
         f"{_f(base['experts']['strict']['recall_at_10'])} / {_f(base['experts']['lenient']['recall_at_10'])}",
         f"{_f(new['experts']['strict']['recall_at_10'])} / {_f(new['experts']['lenient']['recall_at_10'])}", ""),
        ("et-al / others / HTML people", base["et_al_people"], new["et_al_people"], "0"),
        ("owners listed as their own co-author", base["self_coauthorship"], new["self_coauthorship"], "0"),
        ("people in the directory", f"{base['people']:,}", f"{new['people']:,}", ""),
        ("directory build (s)", f"{base['directory_seconds']:.2f}", f"{new['directory_seconds']:.2f}",
         f"new/baseline {figures['ratios']['directory_build_new_over_baseline']:.2f}x"),
    ]
    truth, ingest = figures["truth"], figures["ingest"]
    built = "reused index" if ingest["reused"] else f"ingested in {ingest['seconds']:.0f} s"
    lines = [markdown_table(["metric", LABELS["baseline"], LABELS["new"], "goal"], rows), ""]
    lines.append(
        f"{figures['scored_owners']} of {figures['owners']} owners scored{' (--quick)' if figures['quick'] else ''}; "
        f"{ingest['records']:,} records from {figures['entries']:,} parsed entries "
        f"({built}, encoder {ingest['encoder']}); "
        f"gold {truth['gold']:,} records; entries left out of recall: "
        + (", ".join(f"{n} {why}" for why, n in truth["excluded"].items()) or "none")
        + "; entries -> records: " + ", ".join(f"{n} {how}" for how, n in truth["mapped"].items())
        + f" ({truth['duplicate_entries']} entries repeat another of their file)"
        + f"; parser skipped {len(truth['parse_skipped'])} entr{'y' if len(truth['parse_skipped']) == 1 else 'ies'}. "
        f"Leave-one-out: {base['experts']['queries']} queries (first two abstract sentences); headline rule lenient "
        f"for the baseline, strict for the new policy. {load_note()}."
    )
    for policy in ("baseline", "new"):
        p = figures["policies"][policy]
        merges = "; ".join(f"{m['profile_of']} holds {m['papers']} of {m['holds_work_of']}" for m in p["merges"])
        traps = "; ".join(f"{t['coauthor']} ({t['file']}, {t['papers']} papers) in {t['profile_of']}: {t['inside']}"
                          for t in p["traps"])
        lines.append(f"\n{policy}: merges: {merges or 'none'}\n{policy}: traps: {traps}")
        if p["et_al_names"]:
            lines.append(f"{policy}: et-al people written as: {', '.join(repr(n) for n in p['et_al_names'])}")
        if p["self_coauthors"]:
            lines.append(f"{policy}: self co-authors: {p['self_coauthors']}")
        if p["count_mismatches"]:
            lines.append(f"{policy}: person not identified or paper_count differs for: {', '.join(p['count_mismatches'])}")
        if p["experts"]["unmapped_people"]:
            lines.append(f"{policy}: {p['experts']['unmapped_people']} ranked people could not be mapped to a directory person")
    if verbose:
        # both policies ran over the same owners, in the same order
        owner_rows = [(b["slug"], b["gold"], b["status"], b["returned"], _f(b["precision"]), _f(b["recall"]),
                 n["status"], n["returned"], _f(n["precision"]), _f(n["recall"]), n["others_with_this_name"])
                for b, n in zip(base["per_owner"], new["per_owner"], strict=True)]
        lines += ["", markdown_table(["owner", "gold", "baseline", "returned", "P", "R", "new", "returned", "P", "R",
                                      "others with this name"], owner_rows)]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="15 namesake/trap owners, 3 queries each")
    add_index_arguments(parser)
    parser.add_argument("--max-queries-per-owner", type=int, default=None, help="leave-one-out cap (default all)")
    parser.add_argument("--timing-rounds", type=int, default=3, help="timed directory builds per policy (median)")
    parser.add_argument("--verbose", action="store_true", help="per-owner table")
    parser.add_argument("--json", type=Path, default=None, metavar="OUT", help="write the figures as JSON")
    args = parser.parse_args(argv)
    progress = start_scratch_run(args.out)

    owners = load_owners(args.data)
    index, settings, ingest = open_index(owners, args.reuse_index, progress, encoder=args.encoder)
    records = list(index.iter_papers())
    truth, mapped = ground_truth(index, records, owners)
    scored = [o for o in owners if o.slug in QUICK_OWNERS] if args.quick else list(owners)
    cap = args.max_queries_per_owner or (QUICK_QUERIES if args.quick else None)
    held = HeldOut(index, {})
    directories = build_directories(records, index, max(1, args.timing_rounds))
    policies = {p: run_policy(p, directories[p], index, settings, owners, scored, truth, records, held, cap, progress)
                for p in POLICIES}
    index.close()
    figures = {
        "data": str(args.data), "quick": args.quick, "owners": len(owners), "scored_owners": len(scored),
        "entries": sum(t.entries for t in truth.values()),
        "ingest": {k: ingest[k] for k in ("seconds", "records", "added", "updated", "unchanged", "merged_duplicates",
                                          "encoder", "reused") if k in ingest} | {"skipped": len(ingest.get("skipped", []))},
        "truth": {"gold": sum(len(truth[o.slug].gold) for o in scored),
                  "duplicate_entries": sum(t.entries - len(t.file_ids) - len(t.unmapped) for t in truth.values()),
                  "excluded": dict(sum((truth[o.slug].excluded for o in scored), Counter())),
                  "mapped": dict(mapped),
                  "parse_skipped": [f"{o.slug}: {s}" for o in owners for s in truth[o.slug].parse_skipped],
                  "unmapped": [f"{o.slug}: {t}" for o in owners for t in truth[o.slug].unmapped]},
        "goals": GOALS,
        "policies": policies,
        "ratios": {"directory_build_new_over_baseline":
                   policies["new"]["directory_seconds"] / max(1e-9, policies["baseline"]["directory_seconds"])},
    }
    print(report(figures, args.verbose))
    if args.json is not None:
        write_json(args.json, figures)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
