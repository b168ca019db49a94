"""Inline HTML formatting in text fields -> the plain text it formats.

Publication files carry HTML where LaTeX or plain text belongs: ``<i>sunblock</i>`` in a BibTeX
title (Google Scholar and some publishers export it), ``<sub>2</sub>`` in CSL-JSON from Zotero,
``<scp>`` small capitals from Crossref. A reader should see "sunblock", not the tags.

Only a closed set of inline formatting tags is removed (``FORMATTING_TAGS``), keeping the text
they enclose; a line break tag becomes a space. Anything else that looks like a tag ("x <y> z",
"<T>" in a generics paper, "a < b") is text and stays as written.
"""

from __future__ import annotations

import re

FORMATTING_TAGS = ("i", "b", "em", "strong", "u", "sub", "sup", "inf", "scp", "sc", "tt", "small", "span", "font")

_TAG = re.compile(r"</?(?:" + "|".join(FORMATTING_TAGS) + r")(?:\s+[a-z-]+\s*=\s*(?:\"[^\"<>]*\"|'[^'<>]*'|[^\s<>]+))*\s*/?>",
                  re.IGNORECASE)
_LINE_BREAK = re.compile(r"<br\s*/?>", re.IGNORECASE)
_SPACES = re.compile(r"[ \t]{2,}")


def inline_html_to_text(value: str) -> str:
    """``value`` without inline formatting tags (their text kept) and with ``<br>`` as a space;
    ``value`` itself when it has none."""
    if "<" not in value:
        return value
    text = _LINE_BREAK.sub(" ", _TAG.sub("", value))
    return _SPACES.sub(" ", text).strip() if text != value else value
