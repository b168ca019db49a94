"""Author names as people write them on their own publication lists -> names of people.

Personal websites and exported lists decorate names: ``<b>Shaden Smith</b>`` (the owner in
bold), ``Song*, Jiaming`` and ``Wu†, Zhaomin`` (equal contribution, corresponding author),
``Jiang<sup>†</sup>, Daohuai``, ``Smith1`` / ``Smith^1`` / ``Smith¹`` (affiliation numbers),
``Song, Qun* (*corresponding author)``, ``Torralba-Agell, Adrià,`` (a stray comma). And they
cut lists short: ``and others``, ``et al.``, ``etc.``, ``...``. Left alone, "et al." became a
person with 41 papers and ``<b>`` became part of a name, so every source's names pass through
``clean_author`` (``records.Paper`` applies it to every record, whichever parser made it).

What is removed, and why it is safe for real names:

- HTML tags (their text is kept; ``<sup>...</sup>`` is dropped whole: it holds footnote
  markers) and HTML entities (decoded);
- footnote markers ``* † ‡ § ¶ #`` (and look-alikes ``∗ ⋆ ★ ✉``) anywhere: no name contains them;
- superscripts and ``^1`` / ``^{a,b}`` marks, and 1-2 digit numbers glued to the end of a word
  (``Smith1``, ``Smith12,3``): "3M" or "802.11" are not glued to a letter;
- parenthesised or bracketed remarks, but only when they are remarks: markers and digits alone
  (``(*)``, ``[1]``) or a remark word (``(equal contribution)``, ``(corresponding)``);
  a nickname stays (``W.J. (Chris) Zhang``);
- stray commas, semicolons and colons at either end (``Adrià,``).

Nothing else is touched: "Al-Ghamdi", "O'Neil", "Smith, Jr.", "Ettore Alani" and organisations
("The ATLAS Collaboration") come out as they went in. A name that cleans to nothing (no letter
left) is not a person; a truncation marker is not a person either but says the list was cut
(``CleanName.truncated``), as does a name ending or starting with "et al." ("J. Smith et al.").
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from functools import lru_cache

# Anything that may need cleaning; names without any of it take the fast path.
_SUSPICIOUS = re.compile(
    r"[<>&*∗⋆★✉†‡§¶#()\[\]^\d\u00b9\u00b2\u00b3\u2070-\u209f…]|[,;:]\s*$|^\s*[,;:]"
    r"|\.\.\.|\bet\.?\s*al\b|\bothers\b|\betc\b",
    re.IGNORECASE,
)
_ENTITY = re.compile(r"&(?:#\d{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});")
_SUP = re.compile(r"<\s*sup\b[^<>]*>.*?<\s*/\s*sup\s*>", re.IGNORECASE | re.DOTALL)
_TAG = re.compile(r"<\s*/?\s*([A-Za-z][A-Za-z0-9:-]*)(?:\s[^<>]*)?/?\s*>")
_BREAKING_TAGS = {"br", "p", "div", "li", "ul", "ol", "tr", "td", "hr"}  # the others are inline
_MARKERS = re.compile(r"[*∗⋆★✉†‡§¶#]")
_SUPERSCRIPTS = re.compile(r"[\u00b9\u00b2\u00b3\u2070-\u209f]+")
_CARET = re.compile(r"\^\s*(?:\{[^{}]*\}|[\w,*∗⋆★✉†‡§¶#]+)?")
_GLUED_NUMBER = re.compile(r"(?<=[^\W\d_])\d{1,2}(?:,\d{1,2})*(?=[\s,;]|$)")
_BRACKETED = re.compile(r"\s*(?:\(([^()]*)\)|\[([^\[\]]*)\])")
_REMARK_WORDS = re.compile(
    r"\b(?:equal(?:ly)?|contribut\w*|correspond\w*|co-?first|first|last|senior|joint|shared"
    r"|lead|presenter|presenting|speaker|advisor|adviser|supervisor|mentor|intern|student"
    r"|authors?|these|alphabetical|order)\b",
    re.IGNORECASE,
)
_ONLY_MARKS = re.compile(r"^[\s\d,;.*∗⋆★✉†‡§¶#a-z]?[\s\d,;.*∗⋆★✉†‡§¶#]*$", re.IGNORECASE)
_ENDS = " \t,;:"
_TRUNCATION = re.compile(
    r"(?:(?:and|&)\s+)?(?:et\.?\s*al(?:ii|ia)?\.?|others|etc\.?|\.{3}|…)", re.IGNORECASE
)
_TRAILING_ET_AL = re.compile(r"[\s,;]+(?:and\s+)?et\.?\s*al(?:ii|ia)?\.?$", re.IGNORECASE)
_LEADING_ET_AL = re.compile(r"^(?:and\s+)?et\.?\s*al(?:ii|ia)?\.?[\s,;]+", re.IGNORECASE)
_SPACE = re.compile(r"\s+")
_LETTER = re.compile(r"[^\W\d_]")


@dataclass(frozen=True)
class CleanName:
    """What one written author name stands for: a person's ``name`` (None: no person) and
    whether it said the list goes on (``truncated``: "et al.", "and others")."""

    name: str | None
    truncated: bool = False


def is_truncation_marker(text: str) -> bool:
    """True for "et al.", "et al", "others", "and others", "etc.", "..." in any case."""
    return bool(_TRUNCATION.fullmatch(_SPACE.sub(" ", text).strip(_ENDS)))


def _is_remark(content: str) -> bool:
    """A bracket's content is a remark (markers, numbers, "equal contribution"), not a nickname."""
    return bool(_ONLY_MARKS.match(content)) or bool(_REMARK_WORDS.search(content))


def _drop_remarks(text: str) -> str:
    def replace(match: re.Match[str]) -> str:
        content = match.group(1) if match.group(1) is not None else match.group(2)
        return "" if _is_remark(content) else match.group(0)

    return _BRACKETED.sub(replace, text)


def strip_annotations(raw: str) -> str:
    """HTML, remarks in brackets and stray end punctuation removed; footnote markers kept.

    For parsers that split a written name on commas ("Song, Qun* (equal contribution, first)"):
    run this before splitting, the full ``clean_author`` after. Safe on LaTeX source.
    """
    text = raw
    if "&" in text and _ENTITY.search(text):
        text = html.unescape(text)
    if "<" in text:
        text = _TAG.sub(lambda m: " " if m.group(1).lower() in _BREAKING_TAGS else "", _SUP.sub("", text))
    if "(" in text or "[" in text:
        text = _drop_remarks(text)
    return _SPACE.sub(" ", text).strip(_ENDS)


@lru_cache(maxsize=65536)
def clean_author(raw: str) -> CleanName:
    """One written author name -> the person's name, or None; see the module docstring.

    Cached: the same decorated names repeat across a publication list.
    """
    text = _SPACE.sub(" ", raw or "").strip()
    if not text:
        return CleanName(None)
    if not _SUSPICIOUS.search(text):
        return CleanName(text if _LETTER.search(text) else None)
    text = strip_annotations(text)
    text = _CARET.sub("", text)
    text = _MARKERS.sub("", text)
    text = _SUPERSCRIPTS.sub("", text)
    text = _GLUED_NUMBER.sub("", text)
    text = _SPACE.sub(" ", text).strip(_ENDS)
    if is_truncation_marker(text):
        return CleanName(None, truncated=True)
    truncated = False
    for pattern in (_TRAILING_ET_AL, _LEADING_ET_AL):  # "Smith et al.", "et al. Robert Armstrong"
        found = pattern.search(text)
        if found:
            text, truncated = (text[: found.start()] + text[found.end():]).strip(_ENDS), True
    text = _SPACE.sub(" ", text).strip(_ENDS)
    if not _LETTER.search(text):
        return CleanName(None, truncated=truncated)
    return CleanName(text, truncated=truncated)


def clean_author_name(raw: str) -> str | None:
    """The person's name in ``raw`` (see ``clean_author``), or None when it names no person."""
    return clean_author(raw).name
