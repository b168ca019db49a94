"""Markup from APIs -> data we can trust: safe XML parsing and JATS abstracts as plain text.

``parse_xml`` refuses any document with a DOCTYPE (and so any ENTITY declaration): Atom feeds
never need one, and refusing it rules out entity-expansion bombs and external entities.

``jats_to_text`` reads the JATS fragments Crossref puts in ``abstract``
(``<jats:sec><jats:title>Background</jats:title><jats:p>...</jats:p></jats:sec>``). They are
fragments with undeclared namespace prefixes and sometimes HTML entities, so they are read
with the forgiving ``html.parser`` (which never fetches or expands anything) rather than as XML.
Section titles are kept as run-in headings ("Background: ..."), a leading "Abstract" heading
is dropped, figures and tables are skipped, inline markup (italics, sub/superscripts, MathML
tokens) keeps its text.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from html.parser import HTMLParser

from retrieval.records.paper import clean_text


class UnsafeXMLError(ValueError):
    """The document declares a DOCTYPE (possibly entities); it is refused unparsed."""


class _NoDoctypeBuilder(ET.TreeBuilder):
    """Tree builder that aborts the parse as soon as a DOCTYPE declaration starts."""

    def doctype(self, name: str, pubid: str | None, system: str | None) -> None:
        raise UnsafeXMLError(f"the document declares a DOCTYPE ({name!r}); refusing to parse it")


def parse_xml(data: str | bytes) -> ET.Element:
    """Parse an XML document without DTD processing.

    Raises ``UnsafeXMLError`` for a DOCTYPE/ENTITY declaration and ``ET.ParseError`` for
    malformed or truncated XML, including bytes that declare an unknown encoding.
    """
    encoding = None
    if isinstance(data, str):
        # The text is already decoded: its encoding declaration (even "TF-8") must not count.
        # A lone surrogate cannot be XML: it becomes U+FFFD and expat judges the rest.
        data, encoding = data.encode("utf-8", "replace"), "utf-8"
    try:
        parser = ET.XMLParser(target=_NoDoctypeBuilder(), encoding=encoding)
        parser.feed(data)
        return parser.close()
    except LookupError as exc:  # expat looks the declared encoding up and raises this
        raise ET.ParseError(f"the document declares an unknown encoding ({exc})") from exc


# --- JATS ---------------------------------------------------------------------------------

_BLOCKS = frozenset(
    {"p", "sec", "title", "list-item", "list", "abstract", "trans-abstract", "div", "br", "disp-quote"}
)
_SKIPPED = frozenset(
    {"fig", "table-wrap", "graphic", "inline-graphic", "media", "object-id", "label", "script", "style"}
)
_SPACE_BEFORE_CLOSER = re.compile(r"\s+([)\]},.;:!?])")
_SPACE_AFTER_OPENER = re.compile(r"([(\[{])\s+")


def _local(tag: str) -> str:
    return tag.rsplit(":", 1)[-1].lower()


class _JatsText(HTMLParser):
    """Collects text per block; titles are remembered so they can become run-in headings."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.blocks: list[tuple[str, str]] = []  # (kind, text), kind "title" or "text"
        self._buffer: list[str] = []
        self._kind = "text"
        self._skip_depth = 0

    def _flush(self) -> None:
        text = clean_text("".join(self._buffer))
        text = _SPACE_AFTER_OPENER.sub(r"\1", _SPACE_BEFORE_CLOSER.sub(r"\1", text))
        if text:
            self.blocks.append((self._kind, text))
        self._buffer = []
        self._kind = "text"

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        name = _local(tag)
        if name in _SKIPPED:
            self._skip_depth += 1
        elif name in _BLOCKS:
            self._flush()
            if name == "title":
                self._kind = "title"

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if _local(tag) in _BLOCKS:
            self._flush()

    def handle_endtag(self, tag: str) -> None:
        name = _local(tag)
        if name in _SKIPPED:
            self._skip_depth = max(0, self._skip_depth - 1)
        elif name in _BLOCKS:
            self._flush()

    def handle_data(self, data: str) -> None:
        if not self._skip_depth:
            self._buffer.append(data)

    def close(self) -> None:
        super().close()
        self._flush()


def jats_to_text(markup: str | None) -> str:
    """Plain text of a JATS (or simple HTML) abstract; "" when there is none."""
    if not markup or not markup.strip():
        return ""
    reader = _JatsText()
    reader.feed(markup)
    reader.close()
    blocks = reader.blocks
    if blocks and blocks[0][0] == "title" and blocks[0][1].rstrip(":. ").lower() == "abstract":
        blocks = blocks[1:]
    parts: list[str] = []
    pending_title: str | None = None
    for kind, text in blocks:
        if kind == "title":
            if pending_title:
                parts.append(pending_title)
            pending_title = text
            continue
        if pending_title:
            heading = pending_title if pending_title[-1] in ".:?!" else pending_title + ":"
            text = f"{heading} {text}"
            pending_title = None
        parts.append(text)
    if pending_title:
        parts.append(pending_title)
    return "\n\n".join(parts)
