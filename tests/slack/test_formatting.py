"""Slack text rules: escaping, safe links, splitting, pagination."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from bot.slack.formatting import (
    MAX_BLOCKS,
    SECTION_LIMIT,
    block_text_length,
    context,
    escape,
    fallback_text,
    incoming_text,
    link,
    markdown_to_mrkdwn,
    mentions_other_user,
    paginate,
    redact,
    safe_url,
    sections,
    split_text,
)

ATTACKS = [
    "<!channel>", "<!here>", "<!everyone>", "<@U024BE7LH>", "<!subteam^SAZ94GDB8>",
    "<http://evil.example|trusted.example>", "<#C024BE7LR>", "&lt;!here&gt;",
]


def _unescape(text: str) -> str:
    return text.replace("\u2060", "").replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def test_escape_neutralises_every_control_sequence() -> None:
    for attack in ATTACKS:
        escaped = escape(f"see {attack} now")
        assert "<" not in escaped and ">" not in escaped
        assert _unescape(escaped) == f"see {attack} now"


def test_plain_broadcast_words_get_a_word_joiner() -> None:
    assert escape("ping @here and @channel") == "ping @\u2060here and @\u2060channel"
    assert escape("mail me@herewith.org") == "mail me@herewith.org"


@given(st.text())
def test_escape_is_reversible_and_inert(text: str) -> None:
    escaped = escape(text)
    assert "<" not in escaped and ">" not in escaped
    assert not re.search(r"&(?!amp;|lt;|gt;)", escaped)
    assert _unescape(escaped) == text.replace("\u2060", "")


def test_links_only_http_and_encoded() -> None:
    assert safe_url("javascript:alert(1)") is None
    assert safe_url("ftp://example.org/x") is None
    assert safe_url("https://") is None
    assert safe_url(None) is None
    assert link("javascript:alert(1)", "click <me>") == "click &lt;me&gt;"
    built = link("https://example.org/a b|c<d>?x=1&y=2", "Title | <!here>")
    target, label = built[1:-1].split("|", 1)
    assert target == "https://example.org/a%20b%7Cc%3Cd%3E?x=1&amp;y=2"
    assert "<" not in label and ">" not in label and "|" not in label


def test_markdown_links_and_bold_survive_but_bad_schemes_do_not() -> None:
    text = markdown_to_mrkdwn("**Key** result [1], see [doc](https://x.org/p) or [evil](javascript:x) <!here>")
    assert text.startswith("*Key* result [1]")
    assert "<https://x.org/p|doc>" in text
    assert "javascript" in text and "<javascript" not in text
    assert "&lt;!here&gt;" in text


def test_split_keeps_all_text_and_respects_the_limit() -> None:
    paragraph = "Sentence number one is here. " * 40
    text = "\n\n".join([paragraph] * 8)
    chunks = split_text(text)
    assert all(len(chunk) <= SECTION_LIMIT for chunk in chunks)
    assert len(chunks) > 1
    assert "".join(chunks).replace(" ", "").replace("\n", "") == text.replace(" ", "").replace("\n", "")


def test_split_never_cuts_a_link_or_an_entity() -> None:
    text = " ".join(f"<https://example.org/{i}|label number {i}> &amp;" for i in range(400))
    for chunk in split_text(text, limit=500):
        assert chunk.count("<") == chunk.count(">")
        assert not re.search(r"&[a-z]*$", chunk)


@settings(max_examples=60)
@given(st.text(alphabet=st.sampled_from(list("ab <>|&;.\n")), min_size=0, max_size=3000), st.integers(40, 400))
def test_split_property(text: str, limit: int) -> None:
    chunks = split_text(text, limit=limit)
    assert all(0 < len(chunk) <= limit for chunk in chunks)
    squeeze = lambda value: re.sub(r"\s+", "", value)  # noqa: E731
    assert squeeze("".join(chunks)) == squeeze(text)


def test_paginate_caps_blocks_and_keeps_order_with_markers() -> None:
    body = [context(f"item {i}") for i in range(130)]
    footer = [{"type": "actions", "elements": []}]
    pages = paginate(body, footer=footer)
    assert len(pages) == 3
    assert all(len(page) <= MAX_BLOCKS for page in pages)
    flat = [block for page in pages for block in page if block not in footer and "continued" not in str(block).lower()]
    assert flat == body
    assert pages[-1][-1] == footer[0]
    assert "(continued, 2/3)" in str(pages[1][0])
    assert "Continued in the next message (1/3)" in str(pages[0][-1])


def test_paginate_respects_the_text_budget() -> None:
    body = sections("x " * 20_000)
    pages = paginate(body)
    assert len(pages) >= 4
    assert all(sum(block_text_length(block) for block in page) <= 11_000 for page in pages)


def test_single_page_has_no_markers() -> None:
    body = sections("short")
    assert paginate(body) == [body]


def test_fallback_text_is_escaped_and_marked_when_shortened() -> None:
    text = fallback_text("<!channel> " + "word " * 2000)
    assert text.startswith("&lt;!channel&gt;")
    assert text.endswith("…") and len(text) < 3100


def test_redact_hides_tokens() -> None:
    text = redact("token xoxb-1234-5678-abcdefgh, xapp-1-A0-123456789, s3cr3t-value and abc", ["s3cr3t-value", "abc"])
    assert "xoxb-" not in text and "xapp-" not in text and "s3cr3t" not in text
    assert text.count("[redacted]") == 3
    assert text.endswith("and abc")  # too short to be a secret worth corrupting text for


def test_incoming_text_decodes_slack_markup() -> None:
    raw = "<@UBOT> compare &lt;b&gt; &amp; <https://x.org|x.org> in <#C1|general> <!here> <@U2|ann>"
    assert incoming_text(raw, bot_user_id="UBOT") == "compare <b> & x.org in #general @here @ann"
    assert mentions_other_user("<@UBOT> hi <@U2>", "UBOT")
    assert not mentions_other_user("<@UBOT> hi", "UBOT")


HIDDEN = "\u202e\u2066\u200b\u200d\ufeff\x1b[31m\x1b]0;title\x07\x00\x7f"  # bidi, zero-width, terminal, control


def test_incoming_text_drops_bidi_zero_width_and_terminal_escapes() -> None:
    raw = f"<@UBOT> follow topic {HIDDEN}graph\u200b neural{HIDDEN}  networks\u202c"
    assert incoming_text(raw, bot_user_id="UBOT") == "follow topic graph neural networks"


def test_context_lines_stay_within_the_limit_and_show_cuts() -> None:
    short = context("a notice")
    assert short["elements"] == [{"type": "mrkdwn", "text": "a notice", "verbatim": True}]
    long = context("word " * 1000)
    [element] = long["elements"]
    assert len(element["text"]) <= SECTION_LIMIT and element["text"].endswith("…")
