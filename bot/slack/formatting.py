"""Slack text rules, in one place: mrkdwn escaping, safe links, section splitting, message caps.

Every piece of text that did not come from this codebase (questions, paper titles, author
names, LLM output, error hints) reaches Slack through :func:`escape` or :func:`link`:

* ``&``, ``<`` and ``>`` become entities, which neutralises ``<!channel>``, ``<!here>``,
  ``<@U123>``, ``<!subteam^…>`` and spoofed links such as ``<https://evil|trusted>``;
* plain ``@channel``/``@here``/``@everyone`` get an invisible word joiner after the ``@`` so
  they stay inert even where a client would parse them;
* links are built only by :func:`link`, which accepts ``http``/``https`` URLs only.

Slack limits (Block Kit reference): 50 blocks per message, 3,000 characters per section text,
and in practice ~12,000 characters of block text per message (``msg_blocks_too_long``).
:func:`split_text` and :func:`paginate` keep every message inside those limits; content that
does not fit continues in further messages with a visible "continued" marker, never cut off.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any
from urllib.parse import quote, urlsplit

from retrieval.records.paper import clean_text

Block = dict[str, Any]

SECTION_LIMIT = 3000
MAX_BLOCKS = 50
MESSAGE_TEXT_BUDGET = 11_000
FALLBACK_LIMIT = 2_900
HEADER_LIMIT = 150
BUTTON_TEXT_LIMIT = 75
BUTTON_VALUE_LIMIT = 2000
ELLIPSIS = "…"

_BROADCAST = re.compile(r"@(channel|here|everyone)\b", re.IGNORECASE)
_WORD_JOINER = "\u2060"
_SECRET_SHAPES = re.compile(
    r"\b(?:xox[abposre]-[A-Za-z0-9-]{8,}|xapp-[A-Za-z0-9-]{8,}|sk-[A-Za-z0-9_-]{16,})"
)
_MD_LINK = re.compile(r"\[([^\]\n]{1,300})\]\((https?://[^\s)]{1,2000})\)")
_MD_BOLD = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*")
_MD_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*$", re.MULTILINE)
_USER_ID = re.compile(r"^[UW][A-Z0-9]{2,30}$")


# --- escaping --------------------------------------------------------------------------------


def escape(text: str | None) -> str:
    """Make untrusted text inert in a mrkdwn object (control sequences and broadcasts)."""
    if not text:
        return ""
    escaped = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _BROADCAST.sub("@" + _WORD_JOINER + r"\1", escaped)


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """Replace known secret values and anything shaped like a Slack/OpenAI token."""
    for secret in secrets:
        if secret and len(secret) >= 6:
            text = text.replace(secret, "[redacted]")
    return _SECRET_SHAPES.sub("[redacted]", text)


def mention(user_id: str | None) -> str:
    """``<@U…>`` for a well-formed user id from a Slack payload, else nothing (never user text)."""
    if user_id and _USER_ID.match(user_id):
        return f"<@{user_id}>"
    return ""


def bold(text: str) -> str:
    """Escaped text in mrkdwn bold; asterisks inside would end the span, so they are dropped."""
    inner = escape(text).replace("*", "").strip()
    return f"*{inner}*" if inner else ""


def truncate(text: str, limit: int) -> str:
    """Shorten our own labels (buttons, headers) with a visible ellipsis."""
    return text if len(text) <= limit else text[: limit - 1].rstrip() + ELLIPSIS


_INCOMING_LINK = re.compile(r"<((?:https?|mailto):[^|>]+)(?:\|([^>]*))?>")
_INCOMING_USER = re.compile(r"<@([UW][A-Z0-9]+)(?:\|([^>]*))?>")
_INCOMING_CHANNEL = re.compile(r"<#([CGD][A-Z0-9]+)(?:\|([^>]*))?>")
_INCOMING_SPECIAL = re.compile(r"<!([a-z]+)(?:\^[^|>]*)?(?:\|([^>]*))?>")


def incoming_text(text: str | None, *, bot_user_id: str | None = None) -> str:
    """What a person typed, from Slack's encoded message text: plain characters, no markup.

    Mentions of the bot are removed, other mentions/channels/links become their labels, and
    ``&amp;`` ``&lt;`` ``&gt;`` are decoded (everything is escaped again on the way out). Terminal
    escapes, control and format characters (bidi overrides, zero-width characters) are removed
    and whitespace is collapsed (``clean_text``, as for records): nothing typed can reorder or
    hide text where it is stored or shown again (follows, their alerts, echoed questions).
    """
    if not text:
        return ""

    def user(match: re.Match[str]) -> str:
        if bot_user_id and match.group(1) == bot_user_id:
            return " "
        return "@" + (match.group(2) or match.group(1))

    plain = _INCOMING_USER.sub(user, text)
    plain = _INCOMING_CHANNEL.sub(lambda m: "#" + (m.group(2) or m.group(1)), plain)
    plain = _INCOMING_LINK.sub(lambda m: m.group(2) or m.group(1), plain)
    plain = _INCOMING_SPECIAL.sub(lambda m: "@" + (m.group(2) or m.group(1)), plain)
    plain = plain.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
    return clean_text(plain)


def mentions_other_user(text: str | None, bot_user_id: str | None) -> bool:
    """True when the message tags someone other than the bot (then it is not for the bot)."""
    return any(match.group(1) != bot_user_id for match in _INCOMING_USER.finditer(text or ""))


def mentions_user(text: str | None, user_id: str | None) -> bool:
    return bool(user_id) and any(match.group(1) == user_id for match in _INCOMING_USER.finditer(text or ""))


# --- links -----------------------------------------------------------------------------------


def safe_url(url: str | None) -> str | None:
    """The URL ready to sit inside ``<…|…>``, or None unless it is http(s) with a host.

    Characters that would end or split a Slack link (``|``, ``<``, ``>``, spaces, quotes,
    control characters) are percent-encoded, and ``&`` becomes ``&amp;`` as Slack requires.
    """
    if not url:
        return None
    candidate = url.strip()
    try:
        parts = urlsplit(candidate)
    except ValueError:
        return None
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        return None
    encoded = quote(candidate, safe=":/?#[]@!$&'()*+,;=%~-._")
    return encoded.replace("&", "&amp;")


def link(url: str | None, label: str) -> str:
    """A mrkdwn link with an escaped label; just the label when the URL is not http(s)."""
    text = escape(label).replace("|", "\u2758") or escape(url or "")
    target = safe_url(url)
    if target is None:
        return text
    return f"<{target}|{text}>"


def markdown_to_mrkdwn(text: str | None) -> str:
    """Escape LLM/markdown text and keep its harmless formatting: links, bold, headings.

    ``[label](https://…)`` becomes a safe Slack link (other schemes stay as escaped text),
    ``**bold**`` becomes ``*bold*`` and ``## Heading`` becomes a bold line.
    """
    if not text:
        return ""
    pieces: list[str] = []
    position = 0
    for match in _MD_LINK.finditer(text):
        pieces.append(_markdown_inline(text[position : match.start()]))
        pieces.append(link(match.group(2), match.group(1)))
        position = match.end()
    pieces.append(_markdown_inline(text[position:]))
    return "".join(pieces)


def _markdown_inline(text: str) -> str:
    escaped = escape(text)
    escaped = _MD_HEADING.sub(lambda m: f"*{m.group(1).replace('*', '')}*", escaped)
    return _MD_BOLD.sub(lambda m: f"*{m.group(1)}*", escaped)


# --- splitting -------------------------------------------------------------------------------


def split_text(text: str, limit: int = SECTION_LIMIT) -> list[str]:
    """Cut mrkdwn into pieces of at most ``limit`` characters, all text kept.

    Cuts prefer paragraph, line, sentence and word boundaries, and never fall inside a
    ``<…>`` link or an ``&…;`` entity (which would show broken markup).
    """
    rest = text.strip()
    chunks: list[str] = []
    while len(rest) > limit:
        cut = _cut_point(rest, limit)
        head = rest[:cut].rstrip()
        chunks.append(head)
        rest = rest[cut:].lstrip()
    if rest:
        chunks.append(rest)
    return chunks


def _cut_point(text: str, limit: int) -> int:
    window = text[: limit + 1]
    for separator in ("\n\n", "\n", ". ", " "):
        index = window.rfind(separator, 0, limit)
        if index > limit // 3:
            cut = _outside_markup(text, index + len(separator))
            if cut > limit // 3:
                return cut
    cut = _outside_markup(text, limit)
    return cut if cut > 0 else limit


def _outside_markup(text: str, cut: int) -> int:
    """Move ``cut`` left so it does not split a ``<…>`` link or an ``&…;`` entity."""
    opened, closed = text.rfind("<", 0, cut), text.rfind(">", 0, cut)
    if opened > closed:
        cut = opened
    ampersand, semicolon = text.rfind("&", 0, cut), text.rfind(";", 0, cut)
    if ampersand > semicolon and cut - ampersand <= 6:
        cut = ampersand
    return cut


# --- blocks ----------------------------------------------------------------------------------


def mrkdwn(text: str) -> dict[str, Any]:
    """A mrkdwn text object; ``verbatim`` stops Slack from auto-linking names and channels."""
    return {"type": "mrkdwn", "text": text, "verbatim": True}


def plain_text(text: str, limit: int = SECTION_LIMIT) -> dict[str, Any]:
    return {"type": "plain_text", "text": truncate(text, limit) or " ", "emoji": True}


def sections(text: str) -> list[Block]:
    """One section per ≤3,000-char piece of already-escaped mrkdwn."""
    return [{"type": "section", "text": mrkdwn(piece)} for piece in split_text(text)]


def context(text: str) -> Block:
    """A small grey line of already-escaped mrkdwn (notices, markers: short by nature).

    Anything over 3,000 characters is cut at a safe point with a visible ellipsis.
    """
    pieces = split_text(text, SECTION_LIMIT - 1) or [" "]
    shown = pieces[0] + (ELLIPSIS if len(pieces) > 1 else "")
    return {"type": "context", "elements": [mrkdwn(shown)]}


def header(text: str) -> Block:
    return {"type": "header", "text": plain_text(text, HEADER_LIMIT)}


def divider() -> Block:
    return {"type": "divider"}


def fallback_text(text: str) -> str:
    """The top-level ``text`` of a message (notifications, screen readers): short and escaped.

    The blocks carry the full content; this is only the preview, hence the ellipsis.
    """
    flat = " ".join(text.split())
    return escape(truncate(flat, FALLBACK_LIMIT)) or " "


def block_text_length(block: Block) -> int:
    """Characters of text a block contributes to Slack's per-message budget."""
    total = 0
    stack: list[Any] = [block]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key, value in item.items():
                if key == "text" and isinstance(value, str):
                    total += len(value)
                else:
                    stack.append(value)
        elif isinstance(item, list):
            stack.extend(item)
    return total


def paginate(
    blocks: Sequence[Block],
    *,
    footer: Sequence[Block] = (),
    max_blocks: int = MAX_BLOCKS,
    text_budget: int = MESSAGE_TEXT_BUDGET,
) -> list[list[Block]]:
    """Split blocks into messages that each respect the block and text limits.

    Every page but the last ends with "continued in the next message (i/n)"; every page but
    the first starts with "(continued, i/n)". ``footer`` (e.g. the feedback buttons) goes on
    the last page only.
    """
    marker_cost = 2
    body_limit = max_blocks - marker_cost
    pages: list[list[Block]] = [[]]
    used = 0
    for block in blocks:
        size = block_text_length(block)
        if pages[-1] and (len(pages[-1]) >= body_limit or used + size > text_budget - 200):
            pages.append([])
            used = 0
        pages[-1].append(block)
        used += size
    footer_size = sum(block_text_length(block) for block in footer)
    if footer and (len(pages[-1]) + len(footer) > body_limit or used + footer_size > text_budget - 200):
        pages.append([])
    pages[-1].extend(footer)
    if len(pages) == 1:
        return pages
    return mark_continued(pages)


def mark_continued(pages: Sequence[Sequence[Block]]) -> list[list[Block]]:
    """``pages`` of one reply, each but the last ending with "continued in the next message
    (i/n)" and each but the first starting with "(continued, i/n)"; one page is left as it is.
    Each page must leave room for the two markers (``paginate`` does)."""
    total = len(pages)
    marked: list[list[Block]] = []
    for number, page in enumerate(pages, start=1):
        page = list(page)
        if number > 1:
            page.insert(0, context(f"_(continued, {number}/{total})_"))
        if number < total:
            page.append(context(f"_Continued in the next message ({number}/{total})…_"))
        marked.append(page)
    return marked
