"""A tolerant BibTeX reader: entries -> ``Paper`` records, bad entries skipped with a reason.

Syntax follows BibTeX itself: text outside entries is ignored (``%`` lines there are
comments), ``@comment``/``@preamble`` are skipped, ``@string`` defines macros (case-insensitive,
months predefined), values are ``{braced}``, ``"quoted"``, numbers or macro names joined by
``#``; braces are counted even after a backslash, exactly as BibTeX counts them.

Tolerance: whitespace anywhere between tokens (tab alignment, a space before the key), ``%``
comment lines between fields, trailing or doubled commas, ``(...)``-delimited entries, an empty
key. An entry that is broken (unbalanced braces, missing ``=``, a field over
``MAX_FIELD_CHARS``, no title) is reported as a ``SkippedItem`` and reading resumes at the next
``@``. A braced or quoted value that runs into a line starting with ``@type{`` is taken to be
unbalanced: that line starts the next entry, so one missing brace costs one entry, not the rest
of the file.

Mapping to ``Paper``: journal > booktitle > howpublished > institution > school -> venue;
publisher (else organization); ``date`` or year+month(+day) -> published; doi, or a doi.org
url -> doi; eprint (+archiveprefix arXiv), or "arXiv:<id>" in journal/note/howpublished, or an
arxiv.org url -> arxiv_id; keywords -> categories; ``author`` -> authors (display name "First
von Last Jr", and the family part BibTeX reads: ``Author.family``/``particle``), ``editor`` ->
editors (and ``editor_families``), both read by BibTeX's name rules (``bibtex_names``); ``and others``
(or "et al.") is no author: it sets ``authors_truncated``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from retrieval.records.merge import MAX_PROVENANCE_ENTRIES, merge_provenance
from retrieval.records.paper import Provenance, split_arxiv_id
from retrieval.results import SkippedItem
from retrieval.sources.files.base import MAX_FIELD_CHARS, ItemRejected, ParseOutcome, build_item
from retrieval.sources.files.bibtex_names import ReadName, read_names
from retrieval.sources.files.jsonl import load_json
from retrieval.sources.markup.inline_html import inline_html_to_text
from retrieval.sources.markup.latex import latex_to_text, latex_to_verbatim

FORMAT = "bibtex"

#: Where a venue is read from, in this order (the export writes it back where it reads first).
VENUE_FIELDS = ("journal", "booktitle", "howpublished", "institution", "school")
MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_MONTH_NAMES = (
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
)  # fmt: skip

# Top level: a '%' comment line, or the start of an entry ("@type{" / "@type(").
_TOP = re.compile(r"%[^\n]*|@[ \t\r\n]*([A-Za-z][\w-]*)[ \t\r\n]*([{(])")
# Inside a value: a brace, or a line that starts a new entry (the value was unbalanced). Each
# alternative starts with a literal character, which lets the search skip ahead to candidates.
_BRACE_OR_ENTRY = re.compile(r"\{|\}|\n[ \t]*@[ \t]*[A-Za-z][\w-]*[ \t]*[{(]")
_QUOTE_BRACE_OR_ENTRY = re.compile(r'\{|\}|"|\n[ \t]*@[ \t]*[A-Za-z][\w-]*[ \t]*[{(]')
_SPACE_OR_COMMENT = re.compile(r"(?:\s+|%[^\n]*)*")
# The usual field in one match: the commas and space before it, name = {a value without braces
# or line breaks}, "value" or a number, and the space after it. Atomic groups and possessive
# repeats take exactly what the step-by-step reading (``_SPACE_OR_COMMENT``, ``_NAME``,
# ``braced``...) would; anything else (nested braces, ``#``, a line break in a value, a macro, an
# error) is read step by step.
_SKIP = r"(?>(?:\s+|%[^\n]*)*)"
_SIMPLE_FIELD = re.compile(
    r"(?>(?:\s+|%[^\n]*|,)*)"
    rf'([A-Za-z_][\w\-:.+/]*+){_SKIP}={_SKIP}(?:\{{([^{{}}\n]*+)\}}|"([^{{}}"\n]*+)"|(\d++)){_SKIP}'
)
_KEY = re.compile(r"[^\s,{}()\"#%=]*")
# "@article{ZHAO Changying:108," (a real file): a key with inner spaces, read up to its comma
_SPACED_KEY = re.compile(r"[^\s,{}()\"#%=]+(?:[ \t]+[^\s,{}()\"#%=]+)+(?=[ \t]*,)")
_NAME = re.compile(r"[A-Za-z_][\w\-:.+/]*")
_NUMBER = re.compile(r"\d+")
_NOT_ENTRIES = {"comment", "preamble", "string"}
# A line that starts like an entry but has no opening delimiter after the type (``_no_openers``).
_NO_OPENER = re.compile(r"@[ \t]*([A-Za-z]+)[ \t]+(?=[^\s{(])")
_ENTRY_TYPES = {
    "article", "book", "booklet", "conference", "inbook", "incollection", "inproceedings", "manual",
    "mastersthesis", "misc", "phdthesis", "proceedings", "techreport", "unpublished", "online", "report",
    "thesis", "software", "dataset", "patent",
}  # fmt: skip

_YEAR = re.compile(r"(?<!\d)(\d{4})(?!\d)")
_ISO_DATE = re.compile(r"^\s*(\d{4})(?:-(\d{1,2})(?:-(\d{1,2}))?)?")
# "arXiv:2303.08774v2", "arXiv preprint arXiv:2303.08774", "arXiv 2303.08774", "arXiv:hep-th/9901001"
_ARXIV_IN_TEXT = re.compile(
    r"arxiv(?:\s+preprint)?(?:\s*:\s*|\s+)(?:arxiv\s*:\s*)?([a-z\-.]+/\d{7}|\d{4}\.\d{4,5})(v\d+)?\b",
    re.IGNORECASE,
)
# DBLP's CoRR entries: journal = {CoRR}, volume = {abs/1606.06565}
_CORR_VOLUME = re.compile(r"^\s*abs/(\d{4}\.\d{4,5}|[a-z\-.]+/\d{7})(v\d+)?\s*$", re.IGNORECASE)
_URL_IN_TEXT = re.compile(r"\\url\s*\{([^{}]+)\}|(https?://[^\s{}]+)")
# A DOI in a link (doi.org/10..., a publisher's /doi/abs/10...) or labelled in text ("doi: 10...")
_DOI_IN_URL = re.compile(r"(?:doi\.org/|/doi/(?:abs/|full/|pdf/|epdf/|book/)?)(10\.\d{4,9}/[^\s?#{}\"]+)", re.I)
_DOI_IN_TEXT = re.compile(r"\bdoi\s*[:=]?\s*(10\.\d{4,9}/[^\s{}\",;]+)", re.IGNORECASE)
_DOI_SHAPE = re.compile(r"^(?:(?:https?://)?(?:dx\.)?doi\.org/|doi\s*:?\s*)?10\.\d{4,9}/\S+$", re.I)
_DOI_URL = re.compile(r"^https?://(?:dx\.)?doi\.org/", re.IGNORECASE)
_URL = re.compile(r"https?://\S+")
_WWW = re.compile(r"www\.[\w-]+\.\S+", re.IGNORECASE)
_QUERY_OR_FRAGMENT = re.compile(r"[?#].*$")


class _SyntaxFault(Exception):
    """Where and why an entry stopped parsing."""

    def __init__(self, reason: str, pos: int) -> None:
        super().__init__(reason)
        self.reason = reason
        self.pos = pos


@dataclass
class BibEntry:
    """One entry as written: lowercased type and field names, raw (undecoded) values."""

    type: str
    key: str
    line: int
    fields: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    @property
    def label(self) -> str:
        if self.type == "string":
            return f"@string at line {self.line}"
        if self.key:
            return f"entry {self.key!r} (line {self.line})"
        return f"entry at line {self.line}"


def _no_openers(text: str) -> Iterator[re.Match[str]]:
    """``_NO_OPENER`` matches that start a line (after blanks): the lines "@article key, ...".

    The same as a multiline "^[ \\t]*@..." pattern, several times faster: the search jumps from
    '@' to '@' instead of trying every position (a match never spans lines).
    """
    for match in _NO_OPENER.finditer(text):
        at = match.start()
        if not text[text.rfind("\n", 0, at) + 1 : at].strip(" \t"):
            yield match


class _Reader:
    """Cursor over the whole text; one instance per document."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.macros: dict[str, str] = dict(zip(MONTHS, _MONTH_NAMES, strict=True))
        self._counted = (0, 1)  # (position, its line): readers ask in text order, so count onwards

    def line_of(self, pos: int) -> int:
        """The line number of ``pos``, counting newlines from the last position asked (not a list
        of every newline of a file of millions of lines)."""
        start, line = self._counted if pos >= self._counted[0] else (0, 1)
        line += self.text.count("\n", start, pos)
        self._counted = (pos, line)
        return line

    def skip_space(self, pos: int) -> int:
        return _SPACE_OR_COMMENT.match(self.text, pos).end()  # type: ignore[union-attr]

    def describe(self, pos: int) -> str:
        if pos >= len(self.text):
            return "end of file"
        return repr(self.text[pos : pos + 12].split("\n")[0] or "\\n")

    # --- values ---------------------------------------------------------------------------

    def braced(self, pos: int, name: str) -> tuple[str, int]:
        """Value starting at ``{`` (pos points at it); returns (content, position after)."""
        depth, start = 0, pos + 1
        text = self.text
        close = text.find("}", start)
        if close >= 0 and text.find("{", start, close) < 0 and text.find("\n", start, close) < 0:
            return text[start:close], close + 1  # no inner brace, no line that could start an entry
        for match in _BRACE_OR_ENTRY.finditer(text, pos):
            token = match.group()
            if token == "{":
                depth += 1
            elif token == "}":
                depth -= 1
                if depth == 0:
                    return self.text[start : match.start()], match.end()
            else:
                raise _SyntaxFault(f"unbalanced braces in field {name!r}", match.start() + 1)
        raise _SyntaxFault(f"unbalanced braces in field {name!r}", len(self.text))

    def quoted(self, pos: int, name: str) -> tuple[str, int]:
        depth, start = 0, pos + 1
        for match in _QUOTE_BRACE_OR_ENTRY.finditer(self.text, pos + 1):
            token = match.group()
            if token == "{":
                depth += 1
            elif token == "}":
                depth -= 1
                if depth < 0:
                    raise _SyntaxFault(
                        f"unterminated quoted value or unbalanced braces in field {name!r}",
                        match.end(),
                    )
            elif token == '"':
                if depth == 0:
                    return self.text[start : match.start()], match.end()
            else:
                reason = f"unterminated quoted value in field {name!r}"
                raise _SyntaxFault(reason, match.start() + 1)
        raise _SyntaxFault(f"unterminated quoted value in field {name!r}", len(self.text))

    def value(self, pos: int, name: str, warnings: list[str]) -> tuple[str, int]:
        """``part # part # ...``; returns the concatenated raw value and the position after."""
        text, skip = self.text, _SPACE_OR_COMMENT.match  # locals: this runs for every field
        parts: list[str] = []
        size = 0
        while True:
            pos = skip(text, pos).end()  # type: ignore[union-attr]
            char = text[pos : pos + 1]
            if char == "{":
                part, pos = self.braced(pos, name)
            elif char == '"':
                part, pos = self.quoted(pos, name)
            elif number := _NUMBER.match(text, pos):
                part, pos = number.group(), number.end()
            elif macro := _NAME.match(text, pos):
                defined = self.macros.get(macro.group().lower())
                if defined is None:
                    warnings.append(f"undefined macro {macro.group()!r} in field {name!r}")
                part, pos = defined or "", macro.end()
            else:
                raise _SyntaxFault(f"field {name!r} has no value (found {self.describe(pos)})", pos)
            parts.append(part)
            size += len(part)
            if size > MAX_FIELD_CHARS:
                raise _SyntaxFault(f"field {name!r} exceeds {MAX_FIELD_CHARS} characters", pos)
            pos = skip(text, pos).end()  # type: ignore[union-attr]
            if text.startswith("#", pos):
                pos += 1
                continue
            return (parts[0] if len(parts) == 1 else "".join(parts)), pos

    # --- entries --------------------------------------------------------------------------

    def fields(self, pos: int, closer: str, entry: BibEntry) -> int:
        """``name = value`` pairs up to the closing delimiter; returns the position after it."""
        text, skip = self.text, _SPACE_OR_COMMENT.match  # locals: a hot loop
        while True:
            simple = _SIMPLE_FIELD.match(text, pos)
            if simple and text.startswith((",", closer), simple.end()):
                braced, quoted, number = simple.group(2, 3, 4)
                value = braced if braced is not None else quoted if quoted is not None else number
                if len(value) <= MAX_FIELD_CHARS:
                    self._keep(entry, simple.group(1).lower(), value)
                    pos = simple.end()
                    continue
            pos = skip(text, pos).end()  # type: ignore[union-attr]
            char = text[pos : pos + 1]
            if char == closer:
                return pos + 1
            if char == ",":
                pos += 1
                continue
            name_match = _NAME.match(text, pos)
            if not name_match:
                raise _SyntaxFault(self._unexpected(f"a field name or {closer!r}", pos), pos)
            name = name_match.group().lower()
            pos = skip(text, name_match.end()).end()  # type: ignore[union-attr]
            if not text.startswith("=", pos):
                raise _SyntaxFault(f"field {name!r} has no '='", pos)
            value, pos = self.value(pos + 1, name, entry.warnings)
            self._keep(entry, name, value)
            pos = skip(text, pos).end()  # type: ignore[union-attr]
            if not text.startswith((",", closer), pos):
                expected = f"',' or {closer!r} after field {name!r}"
                raise _SyntaxFault(self._unexpected(expected, pos), pos)

    @staticmethod
    def _keep(entry: BibEntry, name: str, value: str) -> None:
        """The first value of a field counts (BibTeX's rule); a repeat is a warning."""
        if name in entry.fields:
            entry.warnings.append(f"repeated field {name!r} ignored")
        else:
            entry.fields[name] = value

    def _unexpected(self, expected: str, pos: int) -> str:
        """Reason for a syntax error; the usual cause, a brace too few, is named as such."""
        if _TOP.match(self.text, pos) and self.text.startswith("@", pos):
            return (
                "unbalanced braces: the entry is not closed before the next '@' "
                f"(expected {expected})"
            )
        return f"expected {expected}, found {self.describe(pos)}"

    def entries(self, outcome: ParseOutcome) -> list[BibEntry]:
        """Every regular entry of the text; broken ones go to ``outcome.skipped``. Each entry,
        good or broken, counts against the file's budget: reading stops when it is spent."""
        found: list[BibEntry] = []
        budget = outcome.budget
        for match in _no_openers(self.text):  # "@article key, ...": BibTeX skips it too
            if match.group(1).lower() in _ENTRY_TYPES:
                label = f"entry at line {self.line_of(match.start(1))}"
                if not budget.take(label):
                    return found
                outcome.skipped.append(SkippedItem(
                    label,
                    f"no '{{' after @{match.group(1)}: the entry is not read (write @{match.group(1)}{{key, ...}})"))
        pos = 0
        while (top := _TOP.search(self.text, pos)) is not None:
            if top.group(1) is None:  # a '%' comment line
                pos = top.end()
                continue
            kind = top.group(1).lower()
            closer = "}" if top.group(2) == "{" else ")"
            entry = BibEntry(type=kind, key="", line=self.line_of(top.start()))
            label = f"entry at line {entry.line}"
            if not (budget.in_time(label) if kind in _NOT_ENTRIES else budget.take(label)):
                break
            try:
                pos = self._entry_body(top.end(), closer, entry)
            except _SyntaxFault as fault:
                if kind not in {"comment", "preamble"}:
                    outcome.skipped.append(SkippedItem(entry.label, fault.reason))
                pos = max(fault.pos, top.start() + 1)
                continue
            if kind not in _NOT_ENTRIES:
                found.append(entry)
        return found

    def _entry_body(self, pos: int, closer: str, entry: BibEntry) -> int:
        if entry.type in {"comment", "preamble"}:
            opener = "{" if closer == "}" else "("
            if opener == "{":
                return self.braced(pos - 1, entry.type)[1]
            end = self.text.find(")", pos)
            return len(self.text) if end < 0 else end + 1
        if entry.type == "string":
            scratch = BibEntry(type="string", key="", line=entry.line)
            end = self.fields(pos, closer, scratch)
            for name, value in scratch.fields.items():
                self.macros[name] = value
            return end
        pos = self.skip_space(pos)
        key_match = _SPACED_KEY.match(self.text, pos) or _KEY.match(self.text, pos)
        entry.key = key_match.group() if key_match else ""
        if " " in entry.key or "\t" in entry.key:
            entry.warnings.append("the entry key contains spaces, which LaTeX cannot cite; "
                                  "an export gives this entry a generated key")
        pos = self.skip_space(key_match.end() if key_match else pos)
        if self.text.startswith(closer, pos):
            return pos + 1
        if not self.text.startswith(",", pos):
            raise _SyntaxFault(f"expected ',' after the entry key, found {self.describe(pos)}", pos)
        return self.fields(pos + 1, closer, entry)


# Entry -> Paper ----------------------------------------------------------------------------


def _month(raw: str) -> int | None:
    text = latex_to_text(raw).strip().lower()
    if text.isdigit():
        number = int(text)
        return number if 1 <= number <= 12 else None
    return MONTHS.index(text[:3]) + 1 if text[:3] in MONTHS else None


def _published(fields: dict[str, str], warnings: list[str], used: set[str]) -> str | None:
    """The date, from ``date`` or year (+ month (+ day)); ``used`` gains the fields it read,
    which the export writes back (a month such as "Summer" is not read: it stays as written)."""
    raw_date = latex_to_text(fields.get("date", ""))
    if match := _ISO_DATE.match(raw_date):
        used.update({"date", "year"} | ({"month"} if match.group(2) else set()) | ({"day"} if match.group(3) else set()))
        return "-".join(part for part in match.groups() if part)
    raw_year = fields.get("year", "").strip()
    if not raw_year:
        return None
    year = _YEAR.search(raw_year)
    if not year or year.group(1) != latex_to_text(raw_year).strip():
        if not year:
            warnings.append(f"field 'year' ({latex_to_text(raw_year)!r}) is not a year; kept as written, "
                            "not used as the date")
            return None
        # "2020 (in press)": the year counts, the field is kept as the user wrote it
        return year.group(1)
    used.add("year")
    month = _month(fields.get("month", ""))
    if month is None:
        return year.group(1)
    used.add("month")
    day = fields.get("day", "").strip()
    if day.isdigit() and 1 <= int(day) <= 31:
        used.add("day")
        return f"{year.group(1)}-{month:02d}-{int(day):02d}"
    return f"{year.group(1)}-{month:02d}"


def url_only(text: str) -> str | None:
    """The URL when a value is nothing but a (``\\url``-wrapped) URL."""
    for candidate in (latex_to_verbatim(text), latex_to_text(text)):
        if _URL.fullmatch(candidate):
            return candidate
    return None


# Fields that hold a link to the paper on personal sites (al-folio: html, pdf, website), in the
# order a reader's link is taken from them; a relative "paper.pdf" is no link.
_LINK_FIELDS = ("url", "html", "website", "pdf", "arxiv", "adsurl", "doi", "ee", "link")
_TEXT_FIELDS = ("note", "howpublished", "source")
_LAST_RESORT_TEXT_FIELDS = ("title",)  # a web page entry "Multigrid Net; http://www.mgnet.org/"
# Fields where an arXiv id is written in prose ("arXiv preprint arXiv:2303.08774").
_ARXIV_TEXT_FIELDS = ("journal", "note", "howpublished", "booktitle", "eid", "pubstate")


def link_value(raw: str) -> str | None:
    """A link field's URL ("www.x.org" is read as "http://www.x.org"), or None."""
    if not raw:
        return None
    value = latex_to_verbatim(raw).strip()
    if _WWW.fullmatch(value):
        value = "http://" + value
    return value if _URL.fullmatch(value) else None


def _links(fields: dict[str, str]) -> tuple[str | None, list[str]]:
    """(the reader's URL, every absolute URL the entry carries, in field order)."""
    found: list[str] = []
    for name in _LINK_FIELDS:
        raw = fields.get(name)
        if not raw:  # an empty field is no link
            continue
        if name == "doi" and _DOI_SHAPE.match(latex_to_verbatim(raw).strip()):
            continue  # a DOI is the DOI, not also the URL
        if value := link_value(raw):
            found.append(value)
    for names in (_TEXT_FIELDS, _LAST_RESORT_TEXT_FIELDS):
        if found and names is _LAST_RESORT_TEXT_FIELDS:
            break
        for name in names:
            text = fields.get(name, "")
            if "://" in text or "\\url" in text:  # what ``_URL_IN_TEXT`` needs to match at all
                found.extend(latex_to_verbatim(match.group(1) or match.group(2)).rstrip(".,;)")
                             for match in _URL_IN_TEXT.finditer(text))
    return (found[0] if found else None), found


def _doi(fields: dict[str, str], links: list[str], warnings: list[str]) -> str | None:
    doi = latex_to_verbatim(fields.get("doi", "")).strip() or None
    if doi and not _DOI_SHAPE.match(doi):
        warnings.append(f"field 'doi' ({doi!r}) is not a DOI; kept as written but not used as the DOI")
        doi = None
    if doi:
        return doi
    for link in links:
        if found := _DOI_IN_URL.search(link):
            return found.group(1).rstrip(".")
    for name in _TEXT_FIELDS:
        if (text := fields.get(name)) and (found := _DOI_IN_TEXT.search(latex_to_verbatim(text))):
            return found.group(1).rstrip(".")
    return None


def _arxiv(fields: dict[str, str], links: list[str]) -> tuple[str, str | None] | None:
    """eprint (+ archiveprefix arXiv) > an ``arxiv`` field > "arXiv:<id>" in prose fields >
    DBLP's CoRR volume "abs/<id>" > an arxiv.org link."""
    eprint = latex_to_verbatim(fields.get("eprint", ""))
    prefix = latex_to_text(fields.get("archiveprefix") or fields.get("eprinttype") or "").lower()
    if eprint and prefix in {"", "arxiv"} and (found := split_arxiv_id(eprint.strip())):
        return found
    if found := split_arxiv_id(latex_to_verbatim(fields.get("arxiv", "")).strip()):
        return found
    for name in _ARXIV_TEXT_FIELDS:
        if (text := fields.get(name)) and (match := _ARXIV_IN_TEXT.search(latex_to_text(text))):
            return match.group(1), match.group(2)
    if match := _CORR_VOLUME.match(latex_to_text(fields.get("volume", ""))):
        return match.group(1), match.group(2)
    for link in links:
        if "arxiv.org/" in link and (found := split_arxiv_id(_QUERY_OR_FRAGMENT.sub("", link))):
            return found
    return None


def _identifiers(fields: dict[str, str], warnings: list[str]) -> dict[str, str | None]:
    url, links = _links(fields)
    arxiv = _arxiv(fields, links)
    return {
        "url": url,
        "doi": _doi(fields, links, warnings),
        "arxiv_id": arxiv[0] if arxiv else None,
        "arxiv_version": arxiv[1] if arxiv else None,
    }


def _keywords(fields: dict[str, str], used: set[str]) -> list[str]:
    name = "keywords" if fields.get("keywords", "").strip() else "keyword"
    text = latex_to_text(fields.get(name, ""))
    separator = ";" if ";" in text else ","
    words = [word.strip() for word in text.split(separator) if word.strip()]
    if words:
        used.add(name)
    return words


#: The custom field an export carries the record's provenance in (JSON; see ``bibtex_writer``).
PROVENANCE_FIELD = "paperbot-provenance"
#: The custom field an export carries what BibTeX has no field for in (JSON): the record's own
#: type when BibTeX's differs ("article-journal"), open access, citation count, OpenAlex id, and
#: the authors' ORCIDs, OpenAlex ids and affiliations (by position).
RECORD_FIELD = "paperbot-record"
_RECORD_AUTHOR_KEYS = ("orcid", "openalex_id", "affiliations")
# Fields the reader turns into ``Paper`` columns and the export writes back from them.
_ALWAYS_USED = {"title", "author", "abstract", "editor", "pages", "volume", "number", "crossref", PROVENANCE_FIELD,
                RECORD_FIELD}


def generated_key(raw: str) -> str | None:
    """The key an export generated for the entry (``RECORD_FIELD``'s "key"), or None."""
    try:
        record = load_json(raw) if raw else None
    except ValueError:
        return None
    key = record.get("key") if isinstance(record, dict) else None
    return key if isinstance(key, str) else None


def _json_field(raw: str, name: str, shape: type, what: str, warnings: list[str]) -> Any:
    """The JSON value of an export's custom field, or None with a warning when it is not ``shape``."""
    try:
        value = load_json(raw)
    except ValueError:
        value = None
    if not isinstance(value, shape):
        warnings.append(f"field {name!r} is not {what}; ignored")
        return None
    return value


def _restore_record(raw: str, data: dict[str, object], warnings: list[str]) -> None:
    """Apply an export's ``RECORD_FIELD`` to the fields read so far (``Paper`` validates them)."""
    record = _json_field(raw, RECORD_FIELD, dict, "a JSON object", warnings)
    if record is None:
        return
    for name in ("type", "open_access", "citation_count", "openalex_id"):
        if name in record:
            data[name] = record[name]
    authors = record.get("authors")
    people = data.get("authors")
    if isinstance(authors, list) and isinstance(people, list):
        if len(authors) != len(people):
            warnings.append(f"field {RECORD_FIELD!r} describes {len(authors)} authors, the entry has "
                            f"{len(people)}; their ids are ignored")
            return
        data["authors"] = [
            {**person, **{key: value for key, value in extra.items() if key in _RECORD_AUTHOR_KEYS}}
            if isinstance(extra, dict) else person
            for person, extra in zip(people, authors, strict=True)  # lengths checked just above
        ]


def _extra_fields(fields: dict[str, str], used: set[str]) -> dict[str, str]:
    """The fields no column took, as written (LaTeX source), for the export to write back."""
    return {name: value.strip() for name, value in fields.items()
            if name not in used and name not in _ALWAYS_USED and value.strip()}


def _family_fields(name: ReadName) -> dict[str, str]:
    """The family part BibTeX reads in a name, as ``Author``/``FamilyPart`` fields."""
    return {"family": name.family, **({"particle": name.particle} if name.particle else {})}


def _author_fields(name: ReadName) -> dict[str, str]:
    """An author as ``Author`` fields: the display name and the family part BibTeX reads."""
    return {"name": name.name, **_family_fields(name)}


def entry_to_fields(entry: BibEntry) -> dict[str, object]:
    """The Paper fields of one entry (decoded); raises ItemRejected for an unusable entry."""
    fields = entry.fields
    title = inline_html_to_text(latex_to_text(fields.get("title", "")))
    if not title:
        raise ItemRejected("no title")
    used: set[str] = set()
    venue = None
    for name in VENUE_FIELDS:
        raw = fields.get(name, "")
        if raw.strip() and not (name == "howpublished" and url_only(raw)):
            venue = inline_html_to_text(latex_to_text(raw))
            if venue:
                used.add(name)
                break
    publisher = inline_html_to_text(latex_to_text(fields.get("publisher", "")))
    if publisher:
        used.add("publisher")
    else:  # the organization stands in for a publisher; it is still written back as itself
        publisher = inline_html_to_text(latex_to_text(fields.get("organization", "")))
    identifiers = _identifiers(fields, entry.warnings)
    if identifiers["url"] and identifiers["url"] == link_value(fields.get("url", "")):
        used.add("url")
    if identifiers["doi"] and identifiers["doi"] == latex_to_verbatim(fields.get("doi", "")).strip():
        used.add("doi")
    if identifiers["arxiv_id"]:  # written back as eprint + archiveprefix = {arXiv}
        if split_arxiv_id(latex_to_verbatim(fields.get("eprint", "")).strip()):
            used.add("eprint")
        used.update(name for name in ("archiveprefix", "eprinttype")
                    if latex_to_text(fields.get(name, "")).strip().lower() == "arxiv")
    names, truncated = read_names(fields.get("author", ""))
    editors, _ = read_names(fields.get("editor", ""))
    published = _published(fields, entry.warnings, used)
    categories = _keywords(fields, used)
    data: dict[str, object] = {
        "title": title,
        "authors": [_author_fields(name) for name in names],
        "authors_truncated": truncated,
        "abstract": inline_html_to_text(latex_to_text(fields.get("abstract", ""))),
        "published": published,
        "venue": venue,
        "publisher": publisher,
        "type": entry.type,
        "categories": categories,
        "pages": latex_to_text(fields.get("pages", "")),
        "volume": latex_to_text(fields.get("volume", "")),
        "issue": latex_to_text(fields.get("number", "")),
        "editors": [editor.name for editor in editors],
        "editor_families": {editor.name: _family_fields(editor) for editor in editors},
        "extra_fields": _extra_fields(fields, used),
        **identifiers,
    }
    if RECORD_FIELD in fields:
        _restore_record(fields[RECORD_FIELD], data, entry.warnings)
    return data


def read_entries(text: str, outcome: ParseOutcome) -> list[BibEntry]:
    """Every entry of a BibTeX document as written (``@string`` macros expanded, ``crossref``
    parents not yet applied: ``resolve_crossrefs``), in file order; a broken entry, or the file's
    budget running out, is recorded in ``outcome.skipped`` instead."""
    return _Reader(text).entries(outcome)


def resolve_crossrefs(entries: list[BibEntry]) -> None:
    """Copy missing fields from a ``crossref`` parent (its title becomes the booktitle), in place."""
    by_key = {entry.key.lower(): entry for entry in entries if entry.key}
    for entry in entries:
        parent = by_key.get(entry.fields.get("crossref", "").strip().lower())
        if parent is None or parent is entry:
            continue
        for name, value in parent.fields.items():
            if name == "title":
                entry.fields.setdefault("booktitle", value)
            elif name not in {"crossref", "key"}:
                entry.fields.setdefault(name, value)


def restored_provenance(raw: str, warnings: list[str]) -> list[Provenance]:
    """The provenance an export wrote (``PROVENANCE_FIELD``: a JSON list), or [] with a warning
    when it is not that; at most ``MAX_PROVENANCE_ENTRIES`` entries are kept."""
    data = _json_field(raw, PROVENANCE_FIELD, list, "a JSON list of sources", warnings)
    if data is None:
        return []
    entries: list[Provenance] = []
    for item in data[:MAX_PROVENANCE_ENTRIES]:
        try:
            entries.append(Provenance.model_validate(item))
        except ValidationError:
            warnings.append(f"an entry of field {PROVENANCE_FIELD!r} is not a source record; ignored")
    return entries


def parse_bibtex(text: str) -> ParseOutcome:
    """Every entry of a BibTeX document as a Paper; broken entries are reported, not fatal.

    An entry exported by paperbot carries its record's provenance (``PROVENANCE_FIELD``): it is
    restored, so the record keeps every source it was merged from; the file's own entry is added
    only when the entry's key is new there (a generated key), so re-importing an export and
    exporting again gives the same text.
    """
    outcome = ParseOutcome(format=FORMAT)
    entries = read_entries(text, outcome)
    resolve_crossrefs(entries)
    line_of_key: dict[str, int] = {}  # key -> line of its first entry
    entries.reverse()
    while entries:  # each entry is dropped once it is a paper: never both held for the whole file
        entry = entries.pop()
        if not outcome.budget.in_time(entry.label):
            break
        key = entry.key
        first_line = line_of_key.get(key.lower()) if key else None
        if key and first_line is None:
            line_of_key[key.lower()] = entry.line
        elif first_line is not None:
            # BibTeX cites the first entry of a key and ignores the others: so does the export
            entry.warnings.append(f"repeats the key of the entry at line {first_line}, which is the one "
                                  "LaTeX cites; this entry gets a generated key on export")
            key = ""
        paper = build_item(entry_to_fields, entry, source=FORMAT, source_id=key, item=entry.label,
                           outcome=outcome)
        if paper is None:
            continue
        if PROVENANCE_FIELD in entry.fields:
            restored = restored_provenance(entry.fields[PROVENANCE_FIELD], entry.warnings)
            if any((item.source, item.source_id) == (FORMAT, key) for item in restored) or (
                    key and generated_key(entry.fields.get(RECORD_FIELD, "")) == key):
                paper.provenance = restored  # this very entry, re-imported: nothing new to record
            else:
                paper.provenance = merge_provenance(restored, paper.provenance)
        outcome.warnings.extend(SkippedItem(entry.label, note) for note in entry.warnings)
    return outcome
