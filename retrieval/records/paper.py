"""Publication records: ``Paper`` and ``Author``, identifiers and their normalisation.

A paper's canonical id is chosen from the strongest identifier it has:
``doi:<lowercased DOI>`` > ``arxiv:<id without version>`` > ``openalex:<W...>`` >
``hash:<sha1 of normalised title + year + first author's family name>``. Every parser
produces ``Paper`` objects; the record store, the index and the doors only ever see these.

Author names are cleaned here, whichever parser or file a record comes from
(``author_cleaning``: no ``<b>`` or "Song*" in a name, "et al." is no person); a list the
source cut sets ``authors_truncated``. A name may come with the family part its source gave
("de Vos", "Da San Martino": ``Author.family``, ``Paper.editor_families``, ``name_parts``).
Title keys, and hence ``hash:`` ids, are ``retrieval.text.fold`` of the title: it keeps every
script (other scripts than Latin are transliterated).
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Sequence
from datetime import date
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, computed_field, field_validator, model_validator

from retrieval.records.author_cleaning import clean_author
from retrieval.records.name_parts import kept_family
from retrieval.text import fold, short_text_cache

# Identifier normalisation ------------------------------------------------------------------

_DOI_PREFIX = re.compile(r"^(?:(?:https?://)?(?:dx\.)?doi\.org/|doi\s*:?\s*)", re.IGNORECASE)
_DOI_SHAPE = re.compile(r"^10\.\d{4,9}/\S+$")
_ARXIV_PREFIX = re.compile(r"^(?:https?://(?:export\.)?arxiv\.org/(?:abs|pdf)/|arxiv:\s*)", re.IGNORECASE)
_ARXIV_NEW = re.compile(r"^(\d{4}\.\d{4,5})(v\d+)?$")
_ARXIV_OLD = re.compile(r"^([a-z][a-z.\-]+/\d{7})(v\d+)?$", re.IGNORECASE)
_PDF_SUFFIX = re.compile(r"\.pdf$")
_OPENALEX = re.compile(r"^(?:https?://openalex\.org/)?([WAISCFPTwaiscfpt]\d+)$")
_ORCID = re.compile(r"^(?:https?://orcid\.org/)?(\d{4}-\d{4}-\d{4}-\d{3}[\dX])$", re.IGNORECASE)


def normalize_doi(value: str | None) -> str | None:
    """Lowercased bare DOI (``10.x/y``), or None when the value is not a DOI."""
    if not value:
        return None
    doi = _DOI_PREFIX.sub("", value.strip()).strip().rstrip(".").lower()
    return doi if _DOI_SHAPE.match(doi) else None


def split_arxiv_id(value: str | None) -> tuple[str, str | None] | None:
    """(id without version, version or None) for an arXiv id or abs/pdf URL, else None."""
    if not value:
        return None
    text = _ARXIV_PREFIX.sub("", value.strip()).strip()
    text = _PDF_SUFFIX.sub("", text)
    for pattern in (_ARXIV_NEW, _ARXIV_OLD):
        match = pattern.match(text)
        if match:
            return match.group(1), match.group(2)
    return None


def normalize_arxiv_id(value: str | None) -> str | None:
    """arXiv id without its version suffix, or None when the value is not an arXiv id."""
    parts = split_arxiv_id(value)
    return parts[0] if parts else None


def normalize_openalex_id(value: str | None) -> str | None:
    """Bare OpenAlex id (``W2741809807``), or None."""
    if not value:
        return None
    match = _OPENALEX.match(value.strip())
    return match.group(1).upper() if match else None


def normalize_orcid(value: str | None) -> str | None:
    """Bare ORCID (``0000-0002-1825-0097``), or None."""
    if not value:
        return None
    match = _ORCID.match(value.strip())
    return match.group(1).upper() if match else None


# Text normalisation ------------------------------------------------------------------------

_SPACE = re.compile(r"\s+")


# Terminal escape sequences (CSI "ESC [ 31m", OSC "ESC ] 0;title BEL"): their printable tail
# ("[31m") would otherwise survive the control-character strip as words.
_TERMINAL_ESCAPE = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_])")


def clean_text(value: str | None) -> str:
    """Collapse whitespace (hard-wrapped abstracts, tabs) and strip terminal escape sequences
    and control characters."""
    if not value:
        return ""
    if value.isprintable():
        # The one printable whitespace character is " " (the others are control characters or
        # separators): without a double space there is no run to collapse, only ends to strip.
        return value.strip() if "  " not in value else _SPACE.sub(" ", value).strip()
    # Line breaks and tabs are kept (as whitespace): with every other character printable there
    # is no control character or escape sequence to strip.
    if not value.replace("\n", " ").replace("\t", " ").isprintable():
        if "\x1b" in value:
            value = _TERMINAL_ESCAPE.sub("", value)
        value = "".join(ch for ch in value if ch in "\n\t" or unicodedata.category(ch)[0] != "C")
    return _SPACE.sub(" ", value).strip()


@short_text_cache(max_length=1_000, maxsize=65_536)
def title_key(title: str) -> str:
    """Normalised title used to recognise the same paper across sources.

    Cached: an ingest folds each title four times (dedupe's blocking keys and title variants,
    the store's lookup and its write), and a title with one curly quote takes the slow path
    of ``fold``.
    """
    return fold(title)


@short_text_cache(max_length=1_000, maxsize=65_536)
def _fingerprint(title: str, year: int | None, first_family: str | None) -> str:
    """``Paper.fingerprint``: sha1 of title key + year + the first author's folded family name.

    Cached on its exact inputs (never on the mutable record): an ingest asks a record for its id
    many times (dedupe, merge, the store's lookups), and the hash needs two folds.
    """
    first = fold(first_family) if first_family is not None else ""
    basis = f"{title_key(title)}|{year or ''}|{first}"
    return hashlib.sha1(basis.encode("utf-8")).hexdigest()[:20]


def unique_clean(values: list[str]) -> list[str]:
    """Cleaned, non-empty, first-seen-order unique strings."""
    seen: list[str] = []
    for item in values:
        text = clean_text(item)
        if text and text not in seen:
            seen.append(text)
    return seen


# Models ------------------------------------------------------------------------------------

Doi = Annotated[str | None, AfterValidator(normalize_doi)]
ArxivId = Annotated[str | None, AfterValidator(normalize_arxiv_id)]
OpenAlexId = Annotated[str | None, AfterValidator(normalize_openalex_id)]
Orcid = Annotated[str | None, AfterValidator(normalize_orcid)]
CleanList = Annotated[list[str], AfterValidator(unique_clean)]


class Author(BaseModel):
    """One author of a paper, as one source names them."""

    model_config = ConfigDict(extra="ignore")

    name: str
    orcid: Orcid = None
    openalex_id: OpenAlexId = None
    affiliations: CleanList = Field(default_factory=list)
    # The family part as the source gave it, particles included ("de Vos", "Da San Martino"),
    # and its leading "von" words ("de" of ``de Vos, Martijn``); see ``name_parts``. Left out of
    # dumps while None, so records stored before they existed keep their content hash.
    family: str | None = Field(default=None, exclude_if=lambda value: value is None)
    particle: str | None = Field(default=None, exclude_if=lambda value: value is None)

    @field_validator("name")
    @classmethod
    def _clean_name(cls, value: str) -> str:
        """``author_cleaning.clean_author``: markup and footnote marks off; "et al." is no one."""
        cleaned = clean_author(clean_text(value))
        if cleaned.name is None:
            raise ValueError("author name is empty" if not cleaned.truncated else f"{value!r} is not a person")
        return cleaned.name

    @field_validator("family", "particle")
    @classmethod
    def _clean_part(cls, value: str | None) -> str | None:
        """Cleaned as the name is ("Da San Martino*" -> "Da San Martino"); None when empty."""
        return clean_author(clean_text(value)).name if value else None

    @model_validator(mode="after")
    def _fitting_family(self) -> Author:
        """``name_parts.kept_family``: a family part that is not words of the name is dropped,
        and so is one that only repeats the name's last word."""
        self.family, self.particle = kept_family(self.name, self.family, self.particle)
        return self

    @property
    def family_name(self) -> str:
        """Best guess at the family name from the display name alone: text before a comma, else
        the last word. Hash ids and generated citation keys are built on it, so they do not change
        when a source gives ``family``."""
        if "," in self.name:
            return self.name.split(",", 1)[0].strip()
        parts = self.name.split()
        return parts[-1] if parts else self.name


class FamilyPart(BaseModel):
    """An editor's family part as the source gave it (what ``Author.family`` and ``particle``
    are for an author)."""

    model_config = ConfigDict(extra="ignore")

    family: str
    particle: str | None = Field(default=None, exclude_if=lambda value: value is None)


class Provenance(BaseModel):
    """Which source contributed to a record, and which fields it supplied."""

    source: str  # "bibtex", "jsonl", "arxiv", "openalex", "crossref", ...
    source_id: str | None = None  # the id the source uses (BibTeX key, OpenAlex W id, ...)
    fields: list[str] = Field(default_factory=list)
    retrieved: str | None = None  # ISO date of the fetch or file ingest
    # The file the entry was read from (its absolute path; ``sources.files.detect.parse_file``),
    # when its key names one entry there: a re-read of the file finds the record the entry made
    # by it even after its title was corrected (``ingest.pipeline``). Absent for fetched records.
    file: str | None = Field(default=None, exclude_if=lambda value: value is None)


def clean_authors(authors: Sequence[Any]) -> tuple[list[Any], bool]:
    """Author entries (dicts or ``Author``) with cleaned names, minus those that name no person,
    and whether one of them said the list was cut ("et al.", "and others").

    Entries of another shape and empty names are passed through untouched, for pydantic to
    reject as before (a parser then drops that author with a warning).
    """
    kept: list[Any] = []
    truncated = False
    for entry in authors:
        raw = entry.name if isinstance(entry, Author) else entry.get("name") if isinstance(entry, dict) else None
        text = clean_text(raw) if isinstance(raw, str) else ""
        if not text:  # not a name at all: ``Author`` rejects it ("author name is empty")
            kept.append(entry)
            continue
        cleaned = clean_author(text)
        truncated = truncated or cleaned.truncated
        if cleaned.name is None:
            continue
        if cleaned.name != raw:
            entry = entry.model_copy(update={"name": cleaned.name}) if isinstance(entry, Author) else {
                **entry, "name": cleaned.name}
        kept.append(entry)
    return kept, truncated


# Fields added after records were first stored: left out of ``content_hash`` while empty.
_LATER_FIELDS = ("authors_truncated", "pages", "volume", "issue", "editors", "extra_fields")
_FIELD_NAME = re.compile(r"[a-z_][a-z0-9_\-:.+/]*")
_PAGE_RANGE = re.compile(r"\s*(?:[-\u2010-\u2015\u2212]{2,}|[\u2010-\u2015\u2212])\s*|(?<=\d)\s*-\s*(?=\d)")


def normalize_pages(value: str | None) -> str | None:
    """Pages as a reader writes them: "123–145" for ``123--145``, ``123-145`` or ``123 – 145``
    (any dash run, or one hyphen between digits, becomes an en dash); None when empty."""
    text = clean_text(value)
    return _PAGE_RANGE.sub("\u2013", text) or None


def clean_field_value(value: str) -> str:
    """A value kept as written: control characters and terminal escapes removed, line breaks
    and indentation kept, surrounding whitespace stripped."""
    if not value.isprintable():
        value = _TERMINAL_ESCAPE.sub("", value) if "\x1b" in value else value
        value = "".join(ch for ch in value if ch in "\n\t" or unicodedata.category(ch)[0] != "C")
    return value.strip()


#: Sources whose ``source_id`` is a citation key the user chose.
CITATION_KEY_SOURCES = ("bibtex", "csl-json", "ris")
ARXIV_DOI_PREFIX = "10.48550/arxiv."
_DATE = re.compile(r"^(\d{4})(?:-(\d{1,2})(?:-(\d{1,2}))?)?")


def format_authors(names: Sequence[str], limit: int = 3, *, truncated: bool = False) -> str:
    """"A, B and C" or "A, B, C et al." ("Unknown authors" for none).

    ``truncated``: the list itself is known to be cut ("A and others"), so it ends in "et al."
    however short it is.
    """
    if not names:
        return "Unknown authors"
    if len(names) > limit or truncated:
        return ", ".join(names[:limit]) + " et al."
    if len(names) == 1:
        return names[0]
    return ", ".join(names[:-1]) + " and " + names[-1]


class Paper(BaseModel):
    """One publication, merged from every source that described it."""

    model_config = ConfigDict(extra="ignore", validate_assignment=False)

    title: str
    authors: list[Author] = Field(default_factory=list)
    # The source cut the list ("and others", "et al."): more people wrote it than ``authors``.
    authors_truncated: bool = False
    abstract: str | None = None
    published: str | None = Field(default=None, description="YYYY, YYYY-MM or YYYY-MM-DD")
    venue: str | None = None
    publisher: str | None = None
    doi: Doi = None
    arxiv_id: ArxivId = None
    arxiv_version: str | None = None
    openalex_id: OpenAlexId = None
    url: str | None = None
    type: str | None = None  # article, inproceedings, preprint, book, ...
    pages: str | None = None  # "123–145" (a range joined by an en dash), "e1002", "12"
    volume: str | None = None
    issue: str | None = None  # BibTeX's ``number``
    editors: CleanList = Field(default_factory=list)  # display names, as ``authors`` are written
    # Editors' family parts by display name, for those whose source gave one (``FamilyPart``);
    # left out of dumps while empty, so records stored before it existed keep their hash.
    editor_families: dict[str, FamilyPart] = Field(default_factory=dict, exclude_if=lambda value: not value)
    # Fields the source carried that have no column here, for export: BibTeX field name ->
    # value in BibTeX form (a BibTeX file's as written; other sources' text escaped on parse).
    extra_fields: dict[str, str] = Field(default_factory=dict)
    categories: CleanList = Field(default_factory=list)
    open_access: bool | None = None
    citation_count: int | None = Field(default=None, ge=0)
    provenance: list[Provenance] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _accept_year(cls, data: Any) -> Any:
        """Allow ``year`` as an input alias for ``published`` (JSONL written by people)."""
        if isinstance(data, dict) and not data.get("published") and data.get("year") is not None:
            data = dict(data)
            data["published"] = str(data.pop("year"))
        return data

    @model_validator(mode="before")
    @classmethod
    def _clean_author_list(cls, data: Any) -> Any:
        """Clean every author name (``clean_authors``): whichever parser, file or store the
        record comes from, "et al." is dropped and marks the list truncated, and no name
        keeps HTML or footnote marks. An author that cleans to nothing is dropped, the record
        kept."""
        if isinstance(data, dict) and isinstance(data.get("authors"), list):
            authors, truncated = clean_authors(data["authors"])
            data = {**data, "authors": authors}
            if truncated:
                data["authors_truncated"] = True
        return data

    @model_validator(mode="after")
    def _arxiv_datacite_doi(self) -> Paper:
        """arXiv's DataCite DOI (10.48550/arXiv.X) names the preprint: keep it as the arXiv id.

        OpenAlex reports preprints under that DOI while the arXiv API reports the bare id; one
        canonical form makes both sources produce the same record id.
        """
        if self.doi and self.doi.startswith(ARXIV_DOI_PREFIX):
            arxiv_id = normalize_arxiv_id(self.doi[len(ARXIV_DOI_PREFIX):])
            if arxiv_id and (self.arxiv_id is None or self.arxiv_id == arxiv_id):
                self.arxiv_id = arxiv_id
                self.doi = None
        return self

    @field_validator("title")
    @classmethod
    def _title(cls, value: str) -> str:
        title = clean_text(value)
        if not title:
            raise ValueError("title is empty")
        return title

    @field_validator("abstract", "venue", "publisher", "type")
    @classmethod
    def _optional_text(cls, value: str | None) -> str | None:
        text = clean_text(value)
        return text or None

    @field_validator("volume", "issue", mode="before")
    @classmethod
    def _short_text(cls, value: str | int | None) -> str | None:
        text = clean_text(str(value)) if value is not None else ""
        return text or None

    @field_validator("editors")
    @classmethod
    def _editors(cls, value: list[str]) -> list[str]:
        """Editor names cleaned as author names are ("et al." and "others" are no one)."""
        names = (clean_author(name).name for name in value)
        return list(dict.fromkeys(name for name in names if name))

    @field_validator("editor_families", mode="before")
    @classmethod
    def _editor_family_keys(cls, value: Any) -> Any:
        """Keys cleaned as editor names are, so that they name an editor of ``editors``."""
        if not isinstance(value, dict):
            return {}
        return {name: part for key, part in value.items()
                if isinstance(key, str) and (name := clean_author(clean_text(key)).name)}

    @model_validator(mode="after")
    def _fitting_editor_families(self) -> Paper:
        """Only editors of the list keep a family part, and only one that ``Author`` would keep
        (``name_parts.kept_family``)."""
        if not self.editor_families:
            return self
        kept: dict[str, FamilyPart] = {}
        for name, part in self.editor_families.items():
            family, particle = kept_family(name, clean_author(clean_text(part.family)).name, part.particle)
            if family and name in self.editors:
                kept[name] = FamilyPart(family=family, particle=particle)
        self.editor_families = kept
        return self

    @field_validator("pages", mode="before")
    @classmethod
    def _pages(cls, value: str | int | None) -> str | None:
        return normalize_pages(str(value)) if value is not None else None

    @field_validator("extra_fields", mode="before")
    @classmethod
    def _extra_fields(cls, value: Any) -> dict[str, str]:
        """Field names lowercased and BibTeX-shaped; values kept as written (line breaks too),
        minus control characters; empty values and other shapes dropped."""
        if not isinstance(value, dict):
            return {}
        kept: dict[str, str] = {}
        for name, text in value.items():
            if not isinstance(name, str) or not isinstance(text, str):
                continue
            key = name.strip().lower()
            body = clean_field_value(text)
            if _FIELD_NAME.fullmatch(key) and body and key not in kept:
                kept[key] = body
        return kept

    @field_validator("url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        value = (value or "").strip()
        return value if value.startswith(("http://", "https://")) else None

    @field_validator("published")
    @classmethod
    def _published(cls, value: str | int | None) -> str | None:
        if value is None or value == "":
            return None
        match = _DATE.match(str(value).strip())
        if not match:
            raise ValueError(f"publication date {value!r} is not YYYY[-MM[-DD]]")
        year, month, day = match.groups()
        if not 1000 <= int(year) <= date.today().year + 2:
            raise ValueError(f"publication year {year} is out of range")
        if month is None or not 1 <= int(month) <= 12:
            return year
        if day is None or not 1 <= int(day) <= 31:
            return f"{year}-{int(month):02d}"
        return f"{year}-{int(month):02d}-{int(day):02d}"

    # --- derived -------------------------------------------------------------------------

    @computed_field  # type: ignore[prop-decorator]
    @property
    def id(self) -> str:
        """Canonical id: DOI > arXiv id (no version) > OpenAlex id > hash of title/year/author."""
        if self.doi:
            return f"doi:{self.doi}"
        if self.arxiv_id:
            return f"arxiv:{self.arxiv_id}"
        if self.openalex_id:
            return f"openalex:{self.openalex_id}"
        return f"hash:{self.fingerprint}"

    @property
    def fingerprint(self) -> str:
        """Hash of normalised title + year + first author's family name (``_fingerprint``)."""
        return _fingerprint(self.title, self.year, self.authors[0].family_name if self.authors else None)

    @property
    def year(self) -> int | None:
        return int(self.published[:4]) if self.published else None

    @property
    def link(self) -> str | None:
        """The best link for a reader: DOI, else arXiv abstract page, else the record's URL."""
        if self.doi:
            return f"https://doi.org/{self.doi}"
        if self.arxiv_id:
            return f"https://arxiv.org/abs/{self.arxiv_id}"
        return self.url

    @property
    def author_names(self) -> list[str]:
        return [author.name for author in self.authors]

    def short_authors(self, limit: int = 3) -> str:
        """"A, B and C" or "A, B, C et al." for citation lines (``format_authors``)."""
        return format_authors(self.author_names, limit, truncated=self.authors_truncated)

    @property
    def embedding_text(self) -> str:
        """What the encoder sees: title, then abstract."""
        return f"{self.title}. {self.abstract}" if self.abstract else self.title

    @property
    def embedding_hash(self) -> str:
        """Content hash of the embedded text: unchanged text is never re-embedded."""
        return hashlib.sha256(self.embedding_text.encode("utf-8")).hexdigest()

    @property
    def content_hash(self) -> str:
        """Hash of the whole record except provenance timestamps: decides updated vs unchanged."""
        # a field at its default hashes as before the field existed: stored hashes stay valid
        exclude = {"provenance"} | {name for name in _LATER_FIELDS if not getattr(self, name)}
        payload = self.model_dump_json(exclude=exclude)
        # a file an entry was read from counts (a record then names a file it did not): only where
        # named, so that the hashes of records that name none stay as they were
        sources = sorted({(p.source, p.source_id or "", p.file) if p.file else (p.source, p.source_id or "")
                          for p in self.provenance})
        return hashlib.sha256((payload + repr(sources)).encode("utf-8")).hexdigest()

    def with_clean_authors(self) -> Paper:
        """This record with ``clean_authors`` applied (itself when nothing changes).

        For records that skipped validation (``RecordStore`` decodes without it, and records
        stored before the cleaning existed hold "et al." or ``<b>`` names).
        """
        authors, truncated = clean_authors(self.authors)
        if authors == self.authors and (self.authors_truncated or not truncated):
            return self
        return self.model_copy(update={"authors": authors, "authors_truncated": self.authors_truncated or truncated})

    @property
    def citation_keys(self) -> list[str]:
        """The citation keys the record came with, first seen first (BibTeX keys, CSL-JSON and
        RIS ids): what a LaTeX user cites it by."""
        keys: list[str] = []
        for item in self.provenance:
            if item.source in CITATION_KEY_SOURCES and item.source_id and item.source_id not in keys:
                keys.append(item.source_id)
        return keys

    @property
    def sources(self) -> list[str]:
        """Distinct source names in contribution order."""
        seen: list[str] = []
        for item in self.provenance:
            if item.source not in seen:
                seen.append(item.source)
        return seen
