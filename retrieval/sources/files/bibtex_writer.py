"""Papers -> BibTeX text that BibTeX, biber and our own reader accept, and that round-trips.

Choices, and why:

* **Non-ASCII stays UTF-8** ("Schrödinger", "α"), it is not turned into ``{\\"o}``: biber and
  modern LaTeX read UTF-8 natively, and macro-encoding every script (Greek, CJK, math symbols)
  cannot be done faithfully. Classic 8-bit BibTeX users can run the file through biber's
  ``--output-safechars``.
* **Special characters are escaped** so that each value reads back to exactly the same text:
  ``{ } % & $ # _`` become ``\\textbraceleft{}``, ``\\textbraceright{}``, ``\\%``, ``\\&``,
  ``\\$``, ``\\#``, ``\\_``; ``\\ ~ ^`` become ``\\textbackslash{}``, ``\\textasciitilde{}``,
  ``\\textasciicircum{}``; TeX ligatures that would change the text (``--``, ``''``,
  ``` `` ```, ``?``` and ``!```) are broken with ``{}``. Braces are written as macros, not
  ``\\{``, because BibTeX counts ``\\{`` as a brace and an unbalanced one would break the file.
* **URL, DOI and eprint are written verbatim** (biblatex reads those fields verbatim, so
  ``\\_`` there would end up in the link); only ``%`` is escaped and a brace, invalid in a URL
  anyway, is percent-encoded.
* **Titles are protected** with an inner pair of braces, ``title = {{...}}``, so styles do not
  lowercase acronyms.
* **Keys**: the user's own citation key when the record came with one (``Paper.citation_keys``:
  BibTeX, CSL-JSON or RIS), so their LaTeX documents keep working; otherwise first author's
  family name + year + first significant title word (``smith2020deep``), ASCII-folded. Keys
  that collide (case-insensitively, as biber compares them) are settled by record id, not by
  export order: the user key is kept by the first record, the others get ``a``, ``b``, ...
  suffixes, so a key never changes because other records were added.
* **Every stored field is written back**: pages (``--``), volume, number, editor, and the fields
  the source carried that have no column (``Paper.extra_fields``, as written). The venue goes to
  the field its entry type reads (``journal``, ``booktitle``, ...), unless an extra field would
  be read first. Two custom fields (JSON on one line; braces and ``%`` inside strings as
  ``\\u`` escapes, so BibTeX never sees them) carry the rest: ``paperbot-provenance``, the
  record's sources (not the files they were read from: this machine's paths), and
  ``paperbot-record``, what BibTeX has no field for (the record's own type when BibTeX's
  differs, open access, citation count, OpenAlex id, the authors' ORCIDs, OpenAlex ids and
  affiliations, and a key this export generated). The reader restores both,
  so ``export`` then ``ingest`` gives the same records and a second export the same text.
* **Names** are written "von Last, Jr, First" when the source gave the family part
  (``Author.family``: "Da San Martino, Giovanni", "{de Vos}, Martijn"), so BibTeX and our reader
  split them as the source did (editors too: ``Paper.editor_families``); a name known by its
  display form alone (API records, records stored before) is written "Last, First" with its last word as family name (``bibtex_names.written_name``).
  Either way our reader turns it back into the same display string. A list the source cut
  (``Paper.authors_truncated``) ends in BibTeX's own `` and others``.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Iterable

from retrieval.records.paper import Paper, Provenance
from retrieval.sources.files.bibtex import PROVENANCE_FIELD, RECORD_FIELD, VENUE_FIELDS
from retrieval.sources.files.bibtex import url_only as _url_only
from retrieval.sources.files.bibtex_names import written_name
from retrieval.sources.markup.latex import latex_to_text
from retrieval.sources.markup.latex import text_to_latex as escape
from retrieval.text import fold

# Entry types BibTeX and biblatex know are kept; other vocabularies (CSL, Crossref) are mapped.
_KNOWN_TYPES = {
    "article", "book", "booklet", "conference", "inbook", "incollection", "inproceedings",
    "manual", "mastersthesis", "misc", "phdthesis", "proceedings", "techreport", "unpublished",
    "online", "software", "report", "thesis", "dataset",
    # biblatex's other standard types
    "artwork", "audio", "bibnote", "bookinbook", "collection", "commentary", "image", "inreference",
    "jurisdiction", "legal", "legislation", "letter", "movie", "music", "mvbook", "mvcollection",
    "mvproceedings", "mvreference", "patent", "performance", "periodical", "reference", "review",
    "standard", "suppbook", "suppcollection", "suppperiodical", "video",
}  # fmt: skip
_MAPPED_TYPES = {
    "journal-article": "article", "article-journal": "article", "paper-conference": "inproceedings",
    "proceedings-article": "inproceedings", "chapter": "incollection",
    "book-chapter": "incollection", "dissertation": "phdthesis", "preprint": "misc",
}  # fmt: skip
_VENUE_FIELD = {
    "article": "journal",
    "inproceedings": "booktitle",
    "conference": "booktitle",
    "incollection": "booktitle",
    "inbook": "booktitle",
    "phdthesis": "school",
    "mastersthesis": "school",
    "techreport": "institution",
    "report": "institution",
    "thesis": "school",
}
_MONTH_MACROS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_SKIPPED_TITLE_WORDS = {"a", "an", "the", "on", "of", "in", "to", "for", "and", "from"}


def _braced(value: str) -> str:
    return "{" + value + "}"


def _key_word(text: str, skip: set[str] = _SKIPPED_TITLE_WORDS) -> str:
    words = fold(text).split()
    significant = [word for word in words if word not in skip]
    return (significant or words or [""])[0]


def _base_key(paper: Paper) -> str:
    family = fold(paper.authors[0].family_name).replace(" ", "") if paper.authors else ""
    year = str(paper.year) if paper.year else ""
    key = f"{family or 'anon'}{year}{_key_word(paper.title)}"
    return key or "paper"


def _suffix(n: int) -> str:
    """0 -> 'a', 25 -> 'z', 26 -> 'aa', ..."""
    letters = ""
    n += 1
    while n:
        n, rest = divmod(n - 1, 26)
        letters = chr(ord("a") + rest) + letters
    return letters


# What LaTeX can \cite and BibTeX/biber read as a key.
_VALID_KEY = re.compile(r"[^\s,{}()\"#%'=~\\]{1,200}")


def user_key(paper: Paper) -> str | None:
    """The first citation key the record came with that LaTeX can cite, or None."""
    return next((key for key in paper.citation_keys if _VALID_KEY.fullmatch(key)), None)


def citation_keys(papers: list[Paper]) -> list[str]:
    """One unique key per paper (see the module docstring): the same records always get the
    same keys, whatever their order and whatever else is exported beside them."""
    wanted = [(user_key(paper), _base_key(paper)) for paper in papers]
    groups: dict[str, list[int]] = defaultdict(list)
    for i, (own, base) in enumerate(wanted):
        groups[(own or base).lower()].append(i)
    taken = set(groups)
    keys: list[str] = [""] * len(papers)
    for members in groups.values():
        members.sort(key=lambda i: (wanted[i][0] is None, papers[i].id, i))
        first = members[0]
        own, base = wanted[first]
        rest = members[1:]
        if own is not None or not rest:
            keys[first] = own or base
        else:
            rest = members  # generated keys that collide all get a suffix: smith2020deepa, ...b
        counter = 0
        for i in rest:
            stem = wanted[i][0] or wanted[i][1]
            while (candidate := stem + _suffix(counter)).lower() in taken:
                counter += 1
            taken.add(candidate.lower())
            keys[i] = candidate
    return keys


def escape_verbatim(text: str) -> str:
    """URL/DOI: written as is (biblatex reads these fields verbatim) except ``%`` and braces."""
    return text.replace("%", r"\%").replace("{", "%7B").replace("}", "%7D")


def _entry_type(paper: Paper) -> str:
    """A BibTeX/biblatex type; a custom one ("@articlebold" for a website's styling) is kept when
    it came from the user's BibTeX, another vocabulary's ("journal-article") is mapped."""
    kind = (paper.type or "").lower()
    if kind in _KNOWN_TYPES:
        return kind
    if kind in _MAPPED_TYPES:
        return _MAPPED_TYPES[kind]
    from_bibtex = any(p.source == "bibtex" and "type" in p.fields for p in paper.provenance)
    return kind if from_bibtex and _BIBTEX_TYPE.fullmatch(kind) else "misc"


_BIBTEX_TYPE = re.compile(r"[a-z][a-z0-9]{0,40}")


def _venue_field(paper: Paper, entry_type: str) -> str:
    """Where the venue is written: the entry type's own field, unless an extra field holds that
    name or would be read as the venue first (``VENUE_FIELDS`` order); then the nearest free
    field the reader takes before any extra one."""
    extra = paper.extra_fields
    readable = [VENUE_FIELDS.index(name) for name in VENUE_FIELDS if name in extra
                and not (name == "howpublished" and _url_only(extra[name]))]
    limit = min(readable, default=len(VENUE_FIELDS))
    natural = _VENUE_FIELD.get(entry_type, "howpublished")
    candidates = [natural, *reversed(VENUE_FIELDS)]
    for name in candidates:
        if name not in extra and VENUE_FIELDS.index(name) < limit:
            return name
    return VENUE_FIELDS[0]  # unreachable: the reader took the venue before every extra field


def _pages(pages: str) -> str:
    return escape(pages.replace("\u2013", "--")).replace("-{}-", "--")


def _extra_value(value: str) -> str:
    """An extra field, written as the source wrote it when that is safe BibTeX (balanced braces,
    no line that would start a new entry), else escaped as plain text."""
    depth = 0
    for char in value:
        depth += (char == "{") - (char == "}")
        if depth < 0:
            break
    if depth != 0:
        return _braced(escape(value))
    return _braced(_ENTRY_START_LINE.sub(" ", value))


_ENTRY_START_LINE = re.compile(r"\n(?=[ \t]*@)")


def provenance_value(entries: list[Provenance]) -> str:
    """The provenance as one JSON line that BibTeX carries untouched (no braces, no ``%``), without
    the files entries were read from: a BibTeX export is shared, and those are this machine's
    paths (JSON Lines export, the whole record, keeps them)."""
    return _json_value([entry.model_dump(exclude_none=True, exclude={"file"}) for entry in entries])


def record_value(paper: Paper, entry_type: str, generated_key: str | None = None) -> str | None:
    """What BibTeX has no field for, as one JSON line (``RECORD_FIELD``), or None if nothing.

    ``generated_key``: the key this export made up for a record that came with none; the reader
    then knows the entry is this record re-imported, not a new source of it."""
    data: dict[str, object] = {"key": generated_key} if generated_key else {}
    if paper.type and paper.type != entry_type:
        data["type"] = paper.type
    for name in ("open_access", "citation_count", "openalex_id"):
        if getattr(paper, name) is not None:
            data[name] = getattr(paper, name)
    authors = [author.model_dump(include={"orcid", "openalex_id", "affiliations"}, exclude_defaults=True)
               for author in paper.authors]
    if any(authors):
        data["authors"] = authors
    return _json_value(data) if data else None


def _json_value(data: object) -> str:
    text = json.dumps(data, ensure_ascii=True, separators=(",", ":"))
    # JSON's own braces are balanced; those inside strings (and "%") become \u escapes
    return _braced(_JSON_STRING.sub(_escape_json_string, text))


_JSON_STRING = re.compile(r'"(?:\\.|[^"\\])*"')


def _escape_json_string(match: re.Match[str]) -> str:
    return match.group().replace("{", "\\u007b").replace("}", "\\u007d").replace("%", "\\u0025")


def _fields(paper: Paper, entry_type: str, key: str) -> list[tuple[str, str]]:
    """(name, value as written); braced values carry their braces, a month is a bare macro."""
    extra = paper.extra_fields
    fields: list[tuple[str, str]] = [("title", "{{" + escape(paper.title) + "}}")]
    names = [written_name(a.name, a.family, a.particle) for a in paper.authors]
    names += ["others"] if paper.authors_truncated else []
    if names:
        fields.append(("author", _braced(" and ".join(names))))
    if paper.editors:
        families = paper.editor_families
        editors = (written_name(n, families[n].family, families[n].particle) if n in families else written_name(n)
                   for n in paper.editors)
        fields.append(("editor", _braced(" and ".join(editors))))
    if paper.published:
        parts = paper.published.split("-")
        if "year" not in extra:  # a year the reader did not take as a date ("2020 (in press)")
            fields.append(("year", _braced(parts[0])))
        if len(parts) > 1:
            fields.append(("month", _MONTH_MACROS[int(parts[1]) - 1]))
        if len(parts) > 2:
            fields.append(("date", _braced(paper.published)))
    if paper.venue:
        fields.append((_venue_field(paper, entry_type), _braced(escape(paper.venue))))
    organization = extra.get("organization")
    if paper.publisher and not (organization and latex_to_text(organization) == paper.publisher):
        fields.append(("publisher", _braced(escape(paper.publisher))))
    if paper.volume:
        fields.append(("volume", _braced(escape(paper.volume))))
    if paper.issue:
        fields.append(("number", _braced(escape(paper.issue))))
    if paper.pages:
        fields.append(("pages", _braced(_pages(paper.pages))))
    if paper.doi:
        fields.append(("doi", _braced(escape_verbatim(paper.doi))))
    if paper.arxiv_id:
        eprint = paper.arxiv_id + (paper.arxiv_version or "")
        fields.append(("eprint", _braced(escape_verbatim(eprint))))
        fields.append(("archiveprefix", "{arXiv}"))
    if paper.url:
        fields.append(("url", _braced(escape_verbatim(paper.url))))
    if paper.categories:
        separator = "; " if any("," in c for c in paper.categories) else ", "
        fields.append(("keywords", _braced(escape(separator.join(paper.categories)))))
    if paper.abstract:
        fields.append(("abstract", _braced(escape(paper.abstract))))
    written = {name for name, _ in fields}
    fields.extend((name, _extra_value(value)) for name, value in extra.items()
                  if name not in written and name not in (PROVENANCE_FIELD, RECORD_FIELD))
    generated = key if key != user_key(paper) else None
    if (record := record_value(paper, entry_type, generated)) is not None:
        fields.append((RECORD_FIELD, record))
    if paper.provenance:
        fields.append((PROVENANCE_FIELD, provenance_value(paper.provenance)))
    return fields


def to_bibtex(papers: Iterable[Paper]) -> str:
    """A BibTeX document with one entry per paper (see the module docstring for the choices)."""
    items = list(papers)
    chunks: list[str] = []
    for paper, key in zip(items, citation_keys(items), strict=True):
        entry_type = _entry_type(paper)
        body = ",\n".join(f"  {name:<13} = {value}" for name, value in _fields(paper, entry_type, key))
        chunks.append(f"@{entry_type}{{{key},\n{body}\n}}\n")
    return "\n".join(chunks)
