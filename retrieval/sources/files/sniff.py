"""Which file format a text is, from its start: one rule per format, the standard library only.

``Head`` is the start of a text (``HEAD_CHARS``, BOM and leading whitespace removed) and the
format its file extension suggests (``hint``). Each format of ``formats.READERS`` has one rule
here, ``Head -> bool``. The rules exclude each other (at most one is true for a given head), so
the order in which detection asks them does not matter:

- XML: ``oai_dc`` (the OAI-PMH ``oai_dc`` namespace), else ``arxiv_atom`` (an Atom feed from
  arXiv);
- JSON: a saved API response first, told apart by keys only its API writes (``saved_api``:
  ``openalex``, ``crossref``, ``semantic_scholar``, ``dblp``), else CSL-JSON, JSON Lines of
  papers or the arXiv snapshot by the keys near the start (``paper_json``: the extension breaks
  ties);
- other text: ``ris`` or ``bibtex``, whichever marker comes first (exports may start with prose).

Nothing here imports a parser: a door lists the formats without loading them.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cached_property

#: Detection looks at this many characters of the start of a text.
HEAD_CHARS = 65_536
#: The namespace of OAI-PMH ``oai_dc`` records.
OAI_DC_NAMESPACE = "http://www.openarchives.org/OAI/2.0/oai_dc/"


@dataclass
class Head:
    """The start of a text (``text``: at most ``HEAD_CHARS``, without BOM or leading whitespace)
    and the format its file name's extension suggests (``hint``), with the classifications the
    rules share computed once."""

    text: str
    hint: str | None = None

    @classmethod
    def of(cls, text: str, hint: str | None = None) -> Head:
        """The head of a whole ``text``."""
        return cls(text[:HEAD_CHARS].lstrip("\ufeff \t\r\n"), hint)

    @property
    def is_xml(self) -> bool:
        return self.text.startswith("<")

    @property
    def is_json(self) -> bool:
        return self.text.startswith(("[", "{"))

    @property
    def is_plain(self) -> bool:
        """Neither XML nor JSON: where BibTeX and RIS are looked for."""
        return not self.is_xml and not self.is_json

    @cached_property
    def saved_api(self) -> str | None:
        """The saved API response a JSON head is (``saved_api_format``), else None."""
        return saved_api_format(self.text) if self.is_json else None

    @cached_property
    def paper_json(self) -> str | None:
        """CSL-JSON, JSON Lines of papers or the arXiv snapshot, for a JSON head that is no saved
        API response (``paper_json_format``), else None."""
        return paper_json_format(self.text, self.hint) if self.is_json and self.saved_api is None else None


# --- XML ------------------------------------------------------------------------------------

_ATOM_NAMESPACE = "http://www.w3.org/2005/Atom"
_FEED_ROOT = re.compile(r"^(?:<\?xml[^>]*\?>\s*)?(?:<!--.*?-->\s*)*<(?:[\w.-]+:)?feed[\s>]", re.DOTALL)


def oai_dc(head: Head) -> bool:
    """XML in the OAI-PMH ``oai_dc`` namespace (or with an ``<oai_dc:dc`` element)."""
    return head.is_xml and (OAI_DC_NAMESPACE in head.text or "<oai_dc:dc" in head.text)


def arxiv_atom(head: Head) -> bool:
    """XML that is not ``oai_dc`` whose root is an Atom ``feed`` (the Atom namespace present) from
    arXiv (its namespace ``arxiv.org/schemas/atom`` or an ``arxiv.org`` link or id near the start)."""
    return (head.is_xml and not oai_dc(head) and bool(_FEED_ROOT.match(head.text)) and _ATOM_NAMESPACE in head.text
            and "arxiv.org" in head.text)


# --- saved API responses (JSON) -------------------------------------------------------------

_API_KEY = re.compile(r'"(@?[A-Za-z_][\w-]*)"\s*:')
_FIRST_KEY = re.compile(r'^\{\s*"([^"\\]*)"\s*:')
_OPENALEX_ID = re.compile(r'"id"\s*:\s*"https?://openalex\.org/[WASICFPTwasicfpt]\d+"')
_LIST_TITLE = re.compile(r'"(?:container-)?title"\s*:\s*\[')
# Keys only OpenAlex work objects carry (CSL, Crossref and Paper records have none of them).
_OPENALEX_KEYS = frozenset({
    "authorships", "primary_location", "publication_year", "abstract_inverted_index", "host_venue",
    "cited_by_api_url", "counts_by_year", "best_oa_location", "referenced_works", "is_authors_truncated",
    "oa_status", "any_repository_has_fulltext",  # ``select=open_access,...`` answers
    "db_response_time_ms", "groups_count",  # a list's ``meta``: an empty works list has nothing else
})  # fmt: skip
# Keys only Crossref work records carry (CSL-JSON shares DOI, URL, issued, container-title...).
_CROSSREF_KEYS = frozenset({
    "reference-count", "is-referenced-by-count", "references-count", "content-domain",
    "short-container-title", "deposited", "indexed", "member", "prefix",
})  # fmt: skip
_S2_LIST_KEYS = frozenset({"total", "offset", "next", "token", "data"})  # an empty list has only these
_S2_KEYS = frozenset({
    "externalIds", "authorId", "citationCount", "influentialCitationCount", "referenceCount",
    "fieldsOfStudy", "s2FieldsOfStudy", "publicationDate", "publicationTypes", "publicationVenue",
    "isOpenAccess", "openAccessPdf", "corpusId",
})  # fmt: skip


def saved_api_format(head: str) -> str | None:
    """The saved-response format of a JSON text from its start (``head``), else None.

    Rules, first match wins:

    - an object whose first key is ``error``: an error answer of OpenAlex (it also has
      ``message``) or Semantic Scholar (``error`` alone); ``{"message", "code"}`` is Semantic
      Scholar's rate-limit answer, and an object of only ``data`` with ``total``/``offset``/
      ``next``/``token`` is its (empty) list;
    - a ``message-type`` key: Crossref's envelope (a work, a work list or a failure);
    - a first key ``result`` with ``@``-keys (``@code``, ``@total``: DBLP's rendering of XML
      attributes), or ``result`` with ``hits``, or ``info`` with ``@score``: a DBLP search answer;
    - otherwise scores, each needing two signals: OpenAlex (an ``"id": "https://openalex.org/W..."``
      counts as three, plus keys like ``authorships``, ``primary_location``,
      ``abstract_inverted_index``, ``host_venue``), Crossref without its envelope (keys like
      ``reference-count``, ``is-referenced-by-count``, ``indexed``, ``deposited``, ``member``,
      ``prefix``, plus ``title``/``container-title`` as arrays; a list title alone is not enough,
      some CSL exporters write one), Semantic Scholar (``paperId`` counts as three, plus
      camelCase keys like ``externalIds``, ``authorId``, ``publicationDate``).

    CSL-JSON, JSON Lines of papers and the arXiv snapshot have none of these keys, so they are
    left to ``paper_json_format``.
    """
    head = head.lstrip("\ufeff \t\r\n")
    keys = set(_API_KEY.findall(head))
    first = _FIRST_KEY.match(head)
    first_key = first.group(1) if first else None
    if first_key == "error":
        return "openalex" if "message" in keys else "semantic-scholar"
    if first_key in {"message", "code"} and keys <= {"message", "code"}:
        return "semantic-scholar"
    if "data" in keys and len(keys) > 1 and keys <= _S2_LIST_KEYS:
        return "semantic-scholar"
    if "message-type" in keys:
        return "crossref"
    at_keys = any(key.startswith("@") for key in keys)  # DBLP renders XML attributes as "@code"
    if (first_key == "result" and at_keys) or {"result", "hits"} <= keys or {"info", "@score"} <= keys:
        return "dblp"
    crossref_only = len(keys & _CROSSREF_KEYS)
    scores = {
        "openalex": 3 * bool(_OPENALEX_ID.search(head)) + len(keys & _OPENALEX_KEYS),
        "crossref": crossref_only + bool(_LIST_TITLE.search(head)) if crossref_only else 0,
        "semantic-scholar": 3 * ("paperId" in keys) + len(keys & _S2_KEYS),
    }
    best = max(scores, key=lambda fmt: scores[fmt])
    return best if scores[best] >= 2 else None


def openalex(head: Head) -> bool:
    """JSON that ``saved_api_format`` finds to be an OpenAlex response."""
    return head.saved_api == "openalex"


def crossref(head: Head) -> bool:
    """JSON that ``saved_api_format`` finds to be a Crossref response."""
    return head.saved_api == "crossref"


def semantic_scholar(head: Head) -> bool:
    """JSON that ``saved_api_format`` finds to be a Semantic Scholar response."""
    return head.saved_api == "semantic-scholar"


def dblp(head: Head) -> bool:
    """JSON that ``saved_api_format`` finds to be a DBLP search answer."""
    return head.saved_api == "dblp"


# --- papers as JSON: CSL-JSON, JSON Lines, the arXiv snapshot -------------------------------

_PAPER_JSON_FORMATS = ("arxiv-snapshot", "csl-json", "jsonl")
_KEY = re.compile(r'"([A-Za-z_-]+)"\s*:')
_CSL_KEYS = {"issued", "container-title", "DOI", "URL", "author", "citation-key", "page", "ISSN"}
_PAPER_KEYS = {"authors", "published", "venue", "arxiv_id", "provenance", "openalex_id", "year"}
_SNAPSHOT_KEYS = {"authors_parsed", "versions", "journal-ref", "submitter", "update_date"}


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except (ValueError, RecursionError):  # RecursionError: a line nested too deeply
        return False
    return True


def paper_json_format(head: str, hint: str | None) -> str | None:
    """CSL-JSON, JSON Lines of papers or the arXiv snapshot, from the keys near the start.

    Each format scores the keys only it writes (the snapshot's count double); an object whose
    first line is a whole JSON value followed by more lines is one more point for JSON Lines.
    Ties go to the extension's format (``hint``) when it is among the leaders, else to the
    snapshot, then CSL-JSON; no key at all leaves the extension's format, if it is one of these.
    """
    keys = set(_KEY.findall(head))
    scores = {
        "arxiv-snapshot": len(keys & _SNAPSHOT_KEYS) * 2,
        "csl-json": len(keys & _CSL_KEYS),
        "jsonl": len(keys & _PAPER_KEYS),
    }
    if head.lstrip().startswith("{") and scores["arxiv-snapshot"] == 0:
        first_line = head.lstrip().split("\n", 1)[0]
        if _is_json(first_line) and "\n" in head.strip():  # one object per line: JSON Lines of Paper records
            scores["jsonl"] += 1
    best = max(scores.values())
    if best == 0:
        return hint if hint in _PAPER_JSON_FORMATS else None
    leaders = [fmt for fmt, score in scores.items() if score == best]
    if len(leaders) > 1 and hint in leaders:
        return hint
    return leaders[0]


def csl_json(head: Head) -> bool:
    """JSON, no saved API response, that ``paper_json_format`` finds to be CSL-JSON."""
    return head.paper_json == "csl-json"


def jsonl(head: Head) -> bool:
    """JSON, no saved API response, that ``paper_json_format`` finds to be JSON Lines of papers."""
    return head.paper_json == "jsonl"


def arxiv_snapshot(head: Head) -> bool:
    """JSON, no saved API response, that ``paper_json_format`` finds to be the arXiv snapshot."""
    return head.paper_json == "arxiv-snapshot"


# --- plain text: BibTeX and RIS -------------------------------------------------------------

_BIBTEX_ENTRY = re.compile(r"^[ \t]*@[ \t]*[A-Za-z]+[ \t]*[{(]", re.MULTILINE)
_RIS_START = re.compile(r"^[ \t]*TY  ?- ", re.MULTILINE)


def ris(head: Head) -> bool:
    """Plain text with a RIS record start (``TY  - ``) before any BibTeX entry (``@type{``)."""
    if not head.is_plain:
        return False
    start, entry = _RIS_START.search(head.text), _BIBTEX_ENTRY.search(head.text)
    return start is not None and (entry is None or start.start() < entry.start())


def bibtex(head: Head) -> bool:
    """Plain text with a BibTeX entry (``@type{`` or ``@type(``) before any RIS record start."""
    return head.is_plain and _BIBTEX_ENTRY.search(head.text) is not None and not ris(head)
