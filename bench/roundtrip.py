"""BibTeX round trip: what survives ``export`` -> ``ingest`` -> ``export``, and which entries get a link.

    python bench/roundtrip.py [--quick] [--shared DIR] [--out FILE] [--keep]

Data (read at run time, never copied into the tree): ``fixtures/bibtex/petsc_doc_petsc.bib``
and every ``datasets/scholars-real/bib/*.bib`` under ``--shared`` (default ``../shared`` next to
the repo). ``--quick``: the 8 scholars files of ``QUICK_FILES`` (the test suite runs it; the
petsc file's 3,968 entries round-trip through the reader and writer alone in
``tests/sources/test_bibtex_writer.py``, which needs no index and takes a second).

Protocol, in one process, through the product's own code paths:

1. **A**: every file is ingested into a fresh scratch data dir with
   ``Assistant(settings, index=...).library.ingest_files(paths)`` (embedded Chroma + BM25, the local
   encoder, real embeddings; the index is opened as ``Assistant.index`` opens it, only the
   encoder is loaded from the benches' shared ONNX export, ``bench/out/cache``).
2. **E1** = ``Assistant.records.to_bibtex(every record of A)``, the call ``paperbot export --format bibtex``
   makes, in the order it makes it (``iter_papers``).
3. **B**: E1, written as a file, is ingested into a second fresh data dir. A's embedding cache is
   copied into B's cache dir first: it maps (encoder, hash of the embedded text) to a vector, so
   it only saves encoder time and changes no result.
4. **E2** = the export of B.

Figures (counts beside every share):

* **ids**: share of A's record ids found in B, and of B's in A. Goal: identical sets. Records
  whose id changed are paired through provenance (B restores A's ``paperbot-provenance``) and
  listed with the fields that differ.
* **fields**: over records in both, the share of (record, field) pairs identical, for every
  ``Paper`` field except ``provenance`` (``extra_fields``: one pair per key either side has),
  mismatches per field with up to 3 examples each, and the share of records identical in every
  field. Goal 100 %. Provenance is compared apart, as the set of (source, source_id) pairs.
* **keys**: E1 and E2 are read with the project's reader (``bibtex.read_entries``); an entry's record
  is the one written at its position (by the writer's own key when the reader skipped an entry).
  Share of records with the same key in E1 and E2 (goal >= 99 %); share of records that came
  with a key LaTeX can cite (``bibtex_writer.user_key``) whose E1 key is that key ("user keys
  kept"); share of entries whose text is identical in E1 and E2, and whether the whole texts are.
* **links**: share of records with a link (``Paper.link``: DOI, arXiv id or URL) in A and in B.
  Per source entry (``read_entries``, crossrefs resolved, ``build_item(entry_to_fields)``
  as ``parse_bibtex`` does): the share of entries whose raw text carries an identifier (the broad
  scan of ``carried_ids``: a DOI, an arXiv id, any http(s) URL, in any field) that got a link.
  Goal 100 %; up to 10 misses are listed (one of each carrying field first), with counts per
  carrying field. The "before" figure is ``baseline_link``: the same entries when only the
  explicit ``doi``, ``url`` and ``eprint`` fields are read.
* **seconds** per phase.

The JSON (``--out``, default ``bench/out/roundtrip[-quick].json``), E1 and E2 (``*-e1.bib``,
``*-e2.bib``) and the scratch data dirs (removed unless ``--keep``) go beside each other. Exit
status: 0 when every goal holds, 1 when one fails (named on stderr), 2 when the data is missing.
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import shutil
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make ``bench.common`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import (
    OUT_DIR,
    REPO,
    bench_settings,
    load_note,
    markdown_table,
    shared_cache_dir,
    start_scratch_run,
)
from retrieval.config import Settings
from retrieval.records.paper import Paper, normalize_doi, split_arxiv_id
from retrieval.sources.files.base import ParseOutcome, build_item
from retrieval.sources.files.bibtex import entry_to_fields, read_entries, resolve_crossrefs
from retrieval.sources.files.bibtex_writer import citation_keys, user_key
from retrieval.sources.files.detect import decode_text
from retrieval.sources.markup.latex import latex_to_text, latex_to_verbatim

DEFAULT_SHARED = REPO.parent / "shared"
PETSC = Path("fixtures/bibtex/petsc_doc_petsc.bib")
SCHOLARS = Path("datasets/scholars-real/bib")
# varied link shapes: pdf/code (al-folio), arxiv fields, eprint + adsurl, note URLs, website,
# biburl; jiaming-song/aditya-grover and avishek-anand/firoj-alam share papers (merged records)
QUICK_FILES = ("aditya-grover", "jiaming-song", "avishek-anand", "firoj-alam", "jindong-wang", "boxiang-wang",
               "yuguang-chen", "ellis-brown")
GOALS = {"ids_identical": True, "fields": 1.0, "keys": 0.99, "links_of_entries_with_an_id": 1.0}
MAX_MISSES = 10
MAX_EXAMPLES = 3

# The broad scan (independent of the reader): what counts as "the entry carries an identifier".
_SCAN_DOI = re.compile(r"10\.\d{4,9}/[^\s{}]+")
_SCAN_ARXIV = re.compile(r"(?:arxiv|abs/)[^\d\n]{0,20}?(\d{4}\.\d{4,5}|[a-z][a-z.\-]+/\d{7})", re.IGNORECASE)
_SCAN_URL = re.compile(r"https?://[^\s{}]+", re.IGNORECASE)


# Source entries and their links ---------------------------------------------------------------


# Fields whose URL points at something beside the paper (its code, slides, talk, dataset) or at
# a bibliography service's copy of the entry: a link there is no link to the paper.
NOT_THE_PAPER = frozenset({
    "code", "slides", "poster", "video", "data", "dataset", "blog", "supp", "supplementary", "demo",
    "talk", "biburl", "bibsource", "zhihu", "media", "press", "github",
})


def carried_ids(fields: dict[str, str]) -> list[tuple[str, str, str]]:
    """(field, kind, what matched) for every identifier of the paper the raw fields carry: a DOI
    (``10.NNNN/...``), an arXiv id after "arxiv" / "abs/" / arxiv.org (the field name counts, so
    ``arxiv = {2303.08774}`` is one), or any http(s) URL, in any field but ``NOT_THE_PAPER``'s.
    The values are scanned as written."""
    found: list[tuple[str, str, str]] = []
    for name, value in fields.items():
        if name in NOT_THE_PAPER:
            continue
        text = f"{name} = {value}"
        for kind, pattern in (("doi", _SCAN_DOI), ("arxiv", _SCAN_ARXIV), ("url", _SCAN_URL)):
            found.extend((name, kind, match.group()) for match in pattern.finditer(text))
    return found


def baseline_link(fields: dict[str, str]) -> bool:
    """The reader before it looked into prose fields: a link only from an explicit ``doi`` (a
    DOI), ``url`` (an http(s) URL) or ``eprint`` (an arXiv id, archiveprefix absent or arXiv)."""
    if normalize_doi(latex_to_verbatim(fields.get("doi", ""))):
        return True
    if re.fullmatch(r"https?://\S+", latex_to_verbatim(fields.get("url", "")).strip()):
        return True
    prefix = latex_to_text(fields.get("archiveprefix") or fields.get("eprinttype") or "").strip().lower()
    return prefix in {"", "arxiv"} and split_arxiv_id(latex_to_verbatim(fields.get("eprint", "")).strip()) is not None


@dataclass
class EntryLinks:
    """Entry-level link figures over the source files."""

    entries: int = 0  # regular entries the reader found
    no_record: int = 0  # entries that made no Paper (no title, ...)
    records: int = 0
    with_link: int = 0
    baseline_with_link: int = 0
    carrying: int = 0  # records whose raw entry carries an identifier
    carrying_linked: int = 0
    carrying_baseline_linked: int = 0
    misses: list[dict[str, str]] = field(default_factory=list)
    miss_fields: Counter[str] = field(default_factory=Counter)  # carrying field of each miss (each counted once)
    miss_kinds: Counter[str] = field(default_factory=Counter)
    per_file: dict[str, dict[str, int]] = field(default_factory=dict)


def source_links(paths: Sequence[Path]) -> EntryLinks:
    """Parse every source entry as ``parse_bibtex`` does and score its link against the raw scan."""
    result = EntryLinks()
    for path in paths:
        text = decode_text(path.read_bytes(), path.name)
        outcome = ParseOutcome(format="bibtex")
        entries = read_entries(text, outcome)
        raw = [dict(entry.fields) for entry in entries]  # as written, before crossrefs fill them in
        resolve_crossrefs(entries)
        counts: Counter[str] = Counter()
        for entry, fields in zip(entries, raw, strict=True):
            result.entries += 1
            paper = build_item(entry_to_fields, entry, source="bibtex", source_id=entry.key, item=entry.label,
                               outcome=outcome)
            if paper is None:
                result.no_record += 1
                continue
            linked, before = paper.link is not None, baseline_link(entry.fields)
            ids = carried_ids(fields)
            result.records += 1
            result.with_link += linked
            result.baseline_with_link += before
            counts.update(records=1, with_link=linked, baseline_with_link=before)
            if not ids:
                continue
            result.carrying += 1
            result.carrying_linked += linked
            result.carrying_baseline_linked += before
            counts.update(carrying=1, carrying_linked=linked)
            if not linked:
                result.miss_fields.update({name for name, _, _ in ids})
                result.miss_kinds.update({kind for _, kind, _ in ids})
                name, kind, _ = ids[0]
                result.misses.append({"file": path.name, "key": entry.key, "line": str(entry.line), "field": name,
                                      "kind": kind, "raw": " ".join(fields[name].split())[:160]})
        result.per_file[path.name] = dict(counts)
    return result


def shown_misses(misses: Sequence[dict[str, str]], limit: int = MAX_MISSES) -> list[dict[str, str]]:
    """Up to ``limit`` misses: the first of each carrying field first, then the rest in file order."""
    first: dict[str, dict[str, str]] = {}
    for miss in misses:
        first.setdefault(miss["field"], miss)
    chosen = list(first.values())[:limit]
    chosen += [m for m in misses if m not in chosen][: limit - len(chosen)]
    return chosen


# The two installations ------------------------------------------------------------------------


@dataclass
class Installation:
    """One scratch data dir, its records after the ingest, and their BibTeX export."""

    settings: Settings
    papers: list[Paper]
    export: str
    report: dict[str, Any]
    ingest_seconds: float
    export_seconds: float


def build(folder: Path, paths: Sequence[Path], label: str, progress: Callable[[str], None],
          seed_cache: Path | None = None) -> Installation:
    """Ingest ``paths`` into a fresh data dir with the product's code, then export it as BibTeX."""
    from retrieval.assistant import Assistant
    from retrieval.index.embedding_cache import EmbeddingCache, default_cache_path, paper_embedder
    from retrieval.index.encoders import loading as embeddings
    from retrieval.index.paper_index import PaperIndex

    shutil.rmtree(folder, ignore_errors=True)
    settings = bench_settings(folder, encoder="auto", _env_file=None)
    cache_path = default_cache_path(settings.cache_dir)
    if seed_cache is not None:
        # Only a cache keyed by (encoder, hash of the embedded text): a copy saves encoder time
        # and cannot change a record, an id or a vector.
        cache_path.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(seed_cache, cache_path)
    encoder = embeddings.load_encoder(bench_settings(shared_cache_dir().parent, encoder="auto", _env_file=None))
    cache = EmbeddingCache(cache_path)
    index = PaperIndex.open(settings, encoder, embed=paper_embedder(cache))  # as ``Assistant.index`` opens it
    assistant = Assistant(settings, index=index, chat_model=None)
    started = time.perf_counter()
    last = [0.0]

    def update(done: int, total: int) -> None:
        now = time.perf_counter()
        if done == total or now - last[0] >= 10:
            last[0] = now
            progress(f"{label}: ingested {done:,}/{total:,} records ({now - started:.0f} s)")

    report = assistant.library.ingest_files(list(paths), progress=update)
    ingest_seconds = time.perf_counter() - started
    started = time.perf_counter()
    papers = list(index.iter_papers())
    export = assistant.records.to_bibtex(papers)  # what ``paperbot export --format bibtex`` writes
    export_seconds = time.perf_counter() - started
    index.close()
    cache.close()  # the last connection: WAL checkpointed, so the file alone is the whole cache
    summary = report.as_dict()
    progress(f"{label}: {len(papers):,} records, {len(report.added):,} added, {len(report.skipped)} skipped items, "
             f"{len(report.warnings)} warnings; ingest {ingest_seconds:.0f} s, export {export_seconds:.1f} s")
    return Installation(settings, papers, export, summary, ingest_seconds, export_seconds)


# Comparisons ---------------------------------------------------------------------------------


_FIELDS = tuple(name for name in Paper.model_fields if name != "provenance")


def field_pairs(paper: Paper) -> dict[str, Any]:
    """Every stored field but provenance, JSON-shaped; ``extra_fields`` split into one per key; a
    field left out of dumps while empty (``editor_families``) is None."""
    data = paper.model_dump(mode="json", include=set(_FIELDS))
    pairs = {name: data.get(name) for name in _FIELDS if name != "extra_fields"}
    pairs.update({f"extra_fields.{key}": value for key, value in paper.extra_fields.items()})
    return pairs


def differing(a: Paper, b: Paper) -> dict[str, tuple[Any, Any]]:
    left, right = field_pairs(a), field_pairs(b)
    return {name: (left.get(name), right.get(name)) for name in dict.fromkeys([*left, *right])
            if left.get(name) != right.get(name)}


def provenance_pairs(paper: Paper) -> set[tuple[str, str]]:
    return {(p.source, p.source_id or "") for p in paper.provenance}


def _short(value: Any, limit: int = 120) -> Any:
    text = json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else value
    return text if len(text) <= limit else text[:limit] + "…"


def compare_records(a: Sequence[Paper], b: Sequence[Paper]) -> dict[str, Any]:
    by_a, by_b = {p.id: p for p in a}, {p.id: p for p in b}
    common = sorted(set(by_a) & set(by_b))
    only_a, only_b = sorted(set(by_a) - set(by_b)), sorted(set(by_b) - set(by_a))
    pairs = same = 0
    identical_records = 0
    mismatches: Counter[str] = Counter()
    examples: dict[str, list[dict[str, Any]]] = {}
    prov_same = 0
    prov_extra: Counter[str] = Counter()
    prov_missing = 0
    prov_examples: list[dict[str, Any]] = []
    for paper_id in common:
        left, right = by_a[paper_id], by_b[paper_id]
        names = set(field_pairs(left)) | set(field_pairs(right))
        diff = differing(left, right)
        pairs += len(names)
        same += len(names) - len(diff)
        identical_records += not diff
        for name, (x, y) in diff.items():
            kind = "extra_fields" if name.startswith("extra_fields.") else name
            mismatches[name] += 1
            if len(examples.setdefault(kind, [])) < MAX_EXAMPLES:
                examples[kind].append({"id": paper_id, "field": name, "A": _short(x), "B": _short(y)})
        pa, pb = provenance_pairs(left), provenance_pairs(right)
        prov_same += pa == pb
        prov_missing += bool(pa - pb)
        prov_extra.update(source for source, _ in pb - pa)
        if pa != pb and len(prov_examples) < MAX_EXAMPLES:
            prov_examples.append({"id": paper_id, "only_A": sorted(pa - pb), "only_B": sorted(pb - pa)})
    # records whose id changed: B restored A's provenance, so they share a (source, source_id) pair
    owner_b = {pair: p.id for p in b if p.id in only_b for pair in provenance_pairs(p)}
    changed = []
    for paper_id in only_a:
        match = next((owner_b[pair] for pair in sorted(provenance_pairs(by_a[paper_id])) if pair in owner_b), None)
        entry: dict[str, Any] = {"A": paper_id, "B": match}
        if match is not None:
            entry["differs"] = {name: [_short(x), _short(y)] for name, (x, y) in differing(by_a[paper_id],
                                                                                           by_b[match]).items()}
        changed.append(entry)
    n = len(common)
    return {
        "records_A": len(by_a), "records_B": len(by_b), "common": n,
        "A_in_B": n / max(1, len(by_a)), "B_in_A": n / max(1, len(by_b)),
        "only_A": only_a[:MAX_MISSES], "only_B": only_b[:MAX_MISSES], "only_A_count": len(only_a),
        "only_B_count": len(only_b), "id_changes": changed[:MAX_MISSES],
        "fields": {"pairs": pairs, "identical": same, "share": same / max(1, pairs),
                   "records_identical": identical_records, "records_share": identical_records / max(1, n),
                   "mismatches": dict(mismatches.most_common()), "examples": examples},
        "provenance": {"records_identical": prov_same, "share": prov_same / max(1, n),
                       "records_missing_a_pair": prov_missing, "extra_pairs_in_B_by_source": dict(prov_extra),
                       "examples": prov_examples},
    }


def export_entries(text: str, papers: Sequence[Paper]) -> dict[str, tuple[str, str]]:
    """Record id -> (parsed key, entry text) of an export, read back with the project's reader."""
    outcome = ParseOutcome(format="bibtex")
    entries = read_entries(text, outcome)
    lines = text.split("\n")
    starts = [entry.line for entry in entries] + [len(lines) + 1]
    chunks = ["\n".join(lines[start - 1 : end - 1]).strip() for start, end in itertools.pairwise(starts)]
    if len(entries) == len(papers):  # the writer writes one entry per record, in order
        ids = [paper.id for paper in papers]
    else:  # the reader lost an entry: place the others by the key the writer gave them
        by_key = {key: paper.id for key, paper in zip(citation_keys(list(papers)), papers, strict=True)}
        ids = [by_key.get(entry.key, f"?{entry.key}") for entry in entries]
    return {paper_id: (entry.key, chunk) for paper_id, entry, chunk in zip(ids, entries, chunks, strict=True)}


def compare_keys(a: Installation, b: Installation, e1: dict[str, tuple[str, str]],
                 e2: dict[str, tuple[str, str]]) -> dict[str, Any]:
    common = sorted(set(e1) & set(e2))
    same_key = [i for i in common if e1[i][0] == e2[i][0]]
    same_text = [i for i in common if e1[i][1] == e2[i][1]]
    written = dict(zip((p.id for p in a.papers), citation_keys(a.papers), strict=True))
    parsed_differs = [i for i in e1 if i in written and written[i] != e1[i][0]]
    with_user = [(p, user_key(p)) for p in a.papers if user_key(p) is not None]
    uncitable = sum(1 for p in a.papers if p.citation_keys and user_key(p) is None)
    kept = [p for p, own in with_user if p.id in e1 and e1[p.id][0] == own]
    lost = [{"id": p.id, "user_key": own, "E1": e1.get(p.id, ("(no entry)", ""))[0]}
            for p, own in with_user if not (p.id in e1 and e1[p.id][0] == own)]
    changed = [{"id": i, "E1": e1[i][0], "E2": e2[i][0]} for i in common if e1[i][0] != e2[i][0]]
    text_diff = [i for i in common if e1[i][1] != e2[i][1]]
    return {
        "entries_E1": len(e1), "entries_E2": len(e2), "common": len(common),
        "identical": len(same_key), "share": len(same_key) / max(1, len(common)), "changed": changed[:MAX_MISSES],
        "parsed_differs_from_written": len(parsed_differs),
        "user_keys": len(with_user), "user_keys_kept": len(kept), "user_keys_share": len(kept) / max(1, len(with_user)),
        "user_keys_lost": lost[:MAX_MISSES], "user_keys_lost_count": len(lost), "uncitable_user_keys_only": uncitable,
        "entries_identical": len(same_text), "entries_share": len(same_text) / max(1, len(common)),
        "entries_differing": [{"id": i, "E1": e1[i][1], "E2": e2[i][1]} for i in text_diff[:MAX_EXAMPLES]],
        "texts_identical": a.export == b.export,
    }


def link_share(papers: Iterable[Paper]) -> tuple[int, int]:
    items = list(papers)
    return sum(1 for p in items if p.link is not None), len(items)


# Report --------------------------------------------------------------------------------------


def _pct(part: float, whole: float) -> str:
    return f"{100.0 * part / whole:.2f} % ({part:,} / {whole:,})" if whole else "n/a (0)"


def failed_goals(figures: dict[str, Any]) -> list[str]:
    ids, keys, links = figures["records"], figures["keys"], figures["links"]["entries"]
    failed = []
    if ids["only_A_count"] or ids["only_B_count"]:
        failed.append(f"ids: {ids['only_A_count']} ids of A missing from B, {ids['only_B_count']} of B not in A")
    if ids["fields"]["share"] < GOALS["fields"]:
        failed.append(f"fields: {ids['fields']['pairs'] - ids['fields']['identical']} (record, field) pairs differ")
    if keys["share"] < GOALS["keys"]:
        failed.append(f"keys: {keys['share']:.4f} of keys identical E1 -> E2 < {GOALS['keys']}")
    if links["carrying_linked"] < links["carrying"]:
        failed.append(f"links: {links['carrying'] - links['carrying_linked']} entries carry an id but got no link")
    return failed


def report(figures: dict[str, Any]) -> str:
    rec, keys, links, sec = figures["records"], figures["keys"], figures["links"], figures["seconds"]
    entries, fields, prov = links["entries"], rec["fields"], rec["provenance"]
    ok = {True: "ok", False: "FAIL"}
    rows = [
        ("ids of A found in B", _pct(rec["common"], rec["records_A"]), "identical sets",
         ok[not rec["only_A_count"] and not rec["only_B_count"]]),
        ("ids of B found in A", _pct(rec["common"], rec["records_B"]), "identical sets", ""),
        ("(record, field) pairs identical", _pct(fields["identical"], fields["pairs"]), "100 %",
         ok[fields["share"] >= GOALS["fields"]]),
        ("records identical in every field", _pct(fields["records_identical"], rec["common"]), "", ""),
        ("provenance (source, id) sets identical", _pct(prov["records_identical"], rec["common"]), "", ""),
        ("keys identical E1 -> E2", _pct(keys["identical"], keys["common"]), "≥ 99 %", ok[keys["share"] >= GOALS["keys"]]),
        ("user keys kept in E1", _pct(keys["user_keys_kept"], keys["user_keys"]), "", ""),
        ("entries textually identical E1 = E2", _pct(keys["entries_identical"], keys["common"]), "", ""),
        ("E1 == E2 as whole texts", "yes" if keys["texts_identical"] else "no", "", ""),
        ("records with a link, A", _pct(*links["A"]), "", ""),
        ("records with a link, B", _pct(*links["B"]), "", ""),
        ("entries with a link, baseline (doi/url/eprint)", _pct(entries["baseline_with_link"], entries["records"]), "", ""),
        ("entries with a link, reader", _pct(entries["with_link"], entries["records"]), "", ""),
        ("entries carrying an id with a link, baseline", _pct(entries["carrying_baseline_linked"], entries["carrying"]),
         "", ""),
        ("entries carrying an id with a link, reader", _pct(entries["carrying_linked"], entries["carrying"]), "100 %",
         ok[entries["carrying_linked"] == entries["carrying"]]),
    ]
    timing = ", ".join(f"{name} {value:.1f} s" for name, value in sec.items())
    lines = [
        markdown_table(["figure", "value (count)", "goal", "status"], rows), "",
        f"{figures['files']} files{' (--quick)' if figures['quick'] else ''}: {entries['entries']:,} entries "
        f"({entries['no_record']} made no record) -> {rec['records_A']:,} records in A, {rec['records_B']:,} in B. "
        f"Seconds: {timing}. {load_note()}.",
    ]
    if fields["mismatches"]:
        lines.append("field mismatches: " + ", ".join(f"{k} {v}" for k, v in fields["mismatches"].items()))
        lines.extend(f"  {item['field']} {item['id']}: A {item['A']!r} | B {item['B']!r}"
                     for items in fields["examples"].values() for item in items)
    lines.extend(f"id changed: {change['A']} -> {change['B']}: {change.get('differs', {})}" for change in rec["id_changes"])
    if rec["only_B_count"]:
        lines.append(f"ids only in B: {', '.join(rec['only_B'])}")
    if prov["examples"]:
        lines.append(f"provenance differs ({rec['common'] - prov['records_identical']} records; extra pairs in B by "
                     f"source {prov['extra_pairs_in_B_by_source']}), e.g. "
                     + "; ".join(f"{e['id']}: only A {e['only_A']} only B {e['only_B']}" for e in prov["examples"]))
    lines.extend(f"key changed E1 -> E2: {change['id']}: {change['E1']} -> {change['E2']}" for change in keys["changed"])
    lines.extend(f"user key not kept: {lost['id']}: {lost['user_key']!r} exported as {lost['E1']!r}"
                 for lost in keys["user_keys_lost"])
    if keys["parsed_differs_from_written"]:
        lines.append(f"{keys['parsed_differs_from_written']} E1 keys read back differ from the keys the writer gave")
    if entries["misses"]:
        lines.append(f"entries carrying an id without a link: {entries['carrying'] - entries['carrying_linked']}; "
                     f"by carrying field: {entries['miss_fields']}; by kind: {entries['miss_kinds']}")
        lines.extend(f"  {miss['file']}:{miss['line']} {miss['key']!r} {miss['field']} ({miss['kind']}) = {miss['raw']}"
                     for miss in entries["misses"])
    return "\n".join(lines)


# Main ----------------------------------------------------------------------------------------


def source_files(shared: Path, quick: bool) -> list[Path] | str:
    """The files to round-trip, or why they cannot be found."""
    petsc, folder = shared / PETSC, shared / SCHOLARS
    if not petsc.exists() or not folder.is_dir():
        return (f"the round-trip data is not under {shared} (needs {PETSC} and {SCHOLARS}/*.bib): "
                "pass --shared DIR, the folder holding fixtures/ and datasets/")
    scholars = sorted(folder.glob("*.bib"))
    if quick:
        scholars = [folder / f"{slug}.bib" for slug in QUICK_FILES]
        missing = [str(path) for path in scholars if not path.exists()]
        if missing:
            return f"--quick needs {', '.join(missing)}"
    return scholars if quick else [petsc, *scholars]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shared", type=Path, default=DEFAULT_SHARED, help="the folder holding fixtures/ and datasets/")
    parser.add_argument("--quick", action="store_true", help=f"{len(QUICK_FILES)} scholars files, no petsc (for the test suite)")
    parser.add_argument("--out", type=Path, default=None, metavar="FILE",
                        help="the JSON figures (default bench/out/roundtrip[-quick].json); E1, E2 and the scratch "
                             "data dirs go beside it")
    parser.add_argument("--keep", action="store_true", help="keep the scratch data dirs A and B")
    args = parser.parse_args(argv)
    paths = source_files(args.shared.resolve(), args.quick)
    if isinstance(paths, str):
        print(f"roundtrip: {paths}", file=sys.stderr)
        return 2
    progress = start_scratch_run(None)  # the ONNX export stays in bench/out/cache, shared by every bench
    out = (args.out or OUT_DIR / f"roundtrip{'-quick' if args.quick else ''}.json").resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    stem = out.with_suffix("")
    scratch = out.parent / f"{stem.name}-scratch"
    seconds: dict[str, float] = {}

    started = time.perf_counter()
    entries = source_links(paths)
    seconds["read sources"] = time.perf_counter() - started
    progress(f"read {len(paths)} files: {entries.entries:,} entries, {entries.carrying:,} carry an id")

    a = build(scratch / "A", paths, "A", progress)
    seconds["ingest A"], seconds["export A"] = a.ingest_seconds, a.export_seconds
    e1_path = stem.parent / f"{stem.name}-e1.bib"
    e1_path.write_text(a.export, encoding="utf-8")
    b = build(scratch / "B", [e1_path], "B", progress,
              seed_cache=scratch / "A" / "cache" / "embeddings.sqlite3")
    seconds["ingest B"], seconds["export B"] = b.ingest_seconds, b.export_seconds
    (stem.parent / f"{stem.name}-e2.bib").write_text(b.export, encoding="utf-8")

    started = time.perf_counter()
    records = compare_records(a.papers, b.papers)
    keys = compare_keys(a, b, export_entries(a.export, a.papers), export_entries(b.export, b.papers))
    seconds["compare"] = time.perf_counter() - started
    if not args.keep:
        shutil.rmtree(scratch, ignore_errors=True)

    entry_figures = {
        "entries": entries.entries, "no_record": entries.no_record, "records": entries.records,
        "with_link": entries.with_link, "baseline_with_link": entries.baseline_with_link,
        "carrying": entries.carrying, "carrying_linked": entries.carrying_linked,
        "carrying_baseline_linked": entries.carrying_baseline_linked,
        "share": entries.carrying_linked / max(1, entries.carrying),
        "baseline_share": entries.carrying_baseline_linked / max(1, entries.carrying),
        "miss_fields": dict(entries.miss_fields.most_common()), "miss_kinds": dict(entries.miss_kinds.most_common()),
        "misses": shown_misses(entries.misses), "per_file": entries.per_file,
    }
    figures: dict[str, Any] = {
        "quick": args.quick, "files": len(paths), "paths": [str(p) for p in paths], "goals": GOALS,
        "records": records, "keys": keys,
        "links": {"A": link_share(a.papers), "B": link_share(b.papers), "entries": entry_figures},
        "ingest": {"A": {k: v for k, v in a.report.items() if k != "files"} | {"skipped": len(a.report["skipped"]),
                                                                              "warnings": len(a.report["warnings"])},
                   "B": {k: v for k, v in b.report.items() if k != "files"} | {"skipped": b.report["skipped"][:MAX_MISSES],
                                                                              "warnings": b.report["warnings"][:MAX_MISSES]}},
        "exports": {"E1": str(e1_path), "E2": str(stem.parent / f"{stem.name}-e2.bib")},
        "seconds": {name: round(value, 2) for name, value in seconds.items()},
    }
    failed = failed_goals(figures)
    figures["failed_goals"] = failed
    out.write_text(json.dumps(figures, indent=1, ensure_ascii=False), encoding="utf-8")
    print(report(figures))
    print(f"figures: {out}", file=sys.stderr)
    for reason in failed:
        print(f"goal failed: {reason}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
