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
* **Keys** are deterministic: first author's family name + year + first significant title word
  (``smith2020deep``), ASCII-folded; repeats get ``a``, ``b``, ... suffixes in input order.
* **Names** are written "Family, Given" with the last word as family name, which our reader
  turns back into the same display string; a name with a comma or a word "and" is braced whole.
  A list the source cut (``Paper.authors_truncated``) ends in BibTeX's own `` and others``.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

from retrieval.records import Paper, fold

_ESCAPES = {
    "\\": r"\textbackslash{}",
    "{": r"\textbraceleft{}",
    "}": r"\textbraceright{}",
    "%": r"\%",
    "&": r"\&",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}
_SPECIAL = re.compile(r"[\\{}%&$#_~^]")
# Character pairs TeX would fuse into another character; a "{}" between them keeps them apart.
_LIGATURE = re.compile(r"(?<=-)(?=-)|(?<=`)(?=`)|(?<=')(?=')|(?<=[?!])(?=`)")
# Entry types BibTeX and biblatex know are kept; other vocabularies (CSL, Crossref) are mapped.
_KNOWN_TYPES = {
    "article", "book", "booklet", "conference", "inbook", "incollection", "inproceedings",
    "manual", "mastersthesis", "misc", "phdthesis", "proceedings", "techreport", "unpublished",
    "online", "software", "report", "thesis", "dataset",
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


def escape(text: str) -> str:
    """Plain Unicode text -> a BibTeX/LaTeX value that decodes back to the same text."""
    text = _SPECIAL.sub(lambda m: _ESCAPES[m.group()], text)
    return _LIGATURE.sub("{}", text)


def _braced(value: str) -> str:
    return "{" + value + "}"


def _name(name: str) -> str:
    """A display name written so that our reader gives back the same string."""
    words = name.split()
    if "," in name or name.lower() == "others" or any(word.lower() == "and" for word in words):
        return "{" + escape(name) + "}"
    if len(words) == 1:
        return escape(name)
    return f"{escape(words[-1])}, {escape(' '.join(words[:-1]))}"


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


def citation_keys(papers: list[Paper]) -> list[str]:
    """One unique key per paper, stable for the same input order."""
    bases = [_base_key(paper) for paper in papers]
    counts = Counter(bases)
    used: set[str] = {base for base in bases if counts[base] == 1}
    seen: Counter[str] = Counter()
    keys: list[str] = []
    for base in bases:
        if counts[base] == 1:
            keys.append(base)
            continue
        while True:
            candidate = base + _suffix(seen[base])
            seen[base] += 1
            if candidate not in used:
                break
        used.add(candidate)
        keys.append(candidate)
    return keys


def escape_verbatim(text: str) -> str:
    """URL/DOI: written as is (biblatex reads these fields verbatim) except ``%`` and braces."""
    return text.replace("%", r"\%").replace("{", "%7B").replace("}", "%7D")


def _entry_type(paper: Paper) -> str:
    kind = (paper.type or "").lower()
    return kind if kind in _KNOWN_TYPES else _MAPPED_TYPES.get(kind, "misc")


def _fields(paper: Paper, entry_type: str) -> list[tuple[str, str]]:
    """(name, value as written); braced values carry their braces, a month is a bare macro."""
    fields: list[tuple[str, str]] = [("title", "{{" + escape(paper.title) + "}}")]
    names = [_name(n) for n in paper.author_names] + (["others"] if paper.authors_truncated else [])
    if names:
        fields.append(("author", _braced(" and ".join(names))))
    if paper.published:
        parts = paper.published.split("-")
        fields.append(("year", _braced(parts[0])))
        if len(parts) > 1:
            fields.append(("month", _MONTH_MACROS[int(parts[1]) - 1]))
        if len(parts) > 2:
            fields.append(("date", _braced(paper.published)))
    if paper.venue:
        fields.append((_VENUE_FIELD.get(entry_type, "howpublished"), _braced(escape(paper.venue))))
    if paper.publisher:
        fields.append(("publisher", _braced(escape(paper.publisher))))
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
    return fields


def to_bibtex(papers: Iterable[Paper]) -> str:
    """A BibTeX document with one entry per paper (see the module docstring for the choices)."""
    items = list(papers)
    chunks: list[str] = []
    for paper, key in zip(items, citation_keys(items), strict=True):
        entry_type = _entry_type(paper)
        body = ",\n".join(f"  {name:<13} = {value}" for name, value in _fields(paper, entry_type))
        chunks.append(f"@{entry_type}{{{key},\n{body}\n}}\n")
    return "\n".join(chunks)
