"""Inline HTML in text fields -> the plain text it stands for.

Publication files carry HTML where LaTeX or plain text belongs: ``<i>sunblock</i>`` in a BibTeX
title (Google Scholar and some publishers export it), ``<sub>2</sub>`` in CSL-JSON from Zotero,
``<scp>`` small capitals from Crossref, and character references from web pages: ``Knowledge
\\&amp; Data Engineering`` in a venue, ``β \\&gt; 0.5`` in an abstract. A reader should see
"sunblock", "Knowledge & Data Engineering" and "β > 0.5", not the markup.

Only a closed set of inline formatting tags is removed (``FORMATTING_TAGS``), keeping the text
they enclose; a line break tag becomes a space. Anything else that looks like a tag ("x <y> z",
"<T>" in a generics paper, "a < b") is text and stays as written. Then character references
with their closing semicolon (``&amp;``, ``&#8211;``, ``&#x2013;``) become their characters, once
(``&amp;lt;`` reads "&lt;", an escaped tag ``&lt;i&gt;`` reads "<i>" and stays); a name HTML does
not define (``Q&As;``) and a bare ampersand (``AT&T``, ``R&D``) stay as written; a reference to
white space reads as a space, one to an invisible character (a soft hyphen) as nothing.
"""

from __future__ import annotations

import html
import re

FORMATTING_TAGS = ("i", "b", "em", "strong", "u", "sub", "sup", "inf", "scp", "sc", "tt", "small", "span", "font")

_TAG = re.compile(r"</?(?:" + "|".join(FORMATTING_TAGS) + r")(?:\s+[a-z-]+\s*=\s*(?:\"[^\"<>]*\"|'[^'<>]*'|[^\s<>]+))*\s*/?>",
                  re.IGNORECASE)
_LINE_BREAK = re.compile(r"<br\s*/?>", re.IGNORECASE)
_SPACES = re.compile(r"[ \t]{2,}")
_CHARACTER_REFERENCE = re.compile(r"&(?:#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});")


def _character(match: re.Match[str]) -> str:
    reference = match.group()
    character = html.unescape(reference)
    if character == reference:  # not a name HTML defines: text
        return reference
    if character.isspace():
        return " "
    return character if character.isprintable() else ""


def inline_html_to_text(value: str) -> str:
    """``value`` without inline formatting tags (their text kept), with ``<br>`` as a space and
    character references decoded (module docstring); ``value`` itself when it has none."""
    if "<" not in value and "&" not in value:
        return value
    text = _LINE_BREAK.sub(" ", _TAG.sub("", value)) if "<" in value else value
    if "&" in text:
        text = _CHARACTER_REFERENCE.sub(_character, text)
    return _SPACES.sub(" ", text).strip() if text != value else value
