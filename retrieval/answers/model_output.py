"""The model's reply is untrusted text: cleaned before anyone sees it, judged before it counts.

A model (a small local one above all) echoes its instructions, writes markdown links the
prompt forbade, copies markers and control characters from its input, or runs on to its
context limit. Nothing it writes reaches a door unchecked:

* ``clean_reply`` removes what the answer format does not allow: links (markdown
  ``[text](url)``, Slack ``<url|text>``, bare URLs; the text of a link is kept), markdown
  headings, emphasis markers and code fences, terminal escapes, control, bidirectional and
  zero-width characters. Anything shaped like the evidence boundary (even a fragment such as
  ``@PB-3f2a``) is made the whole boundary, so that validation drops the sentence that echoed
  it. ``[n]`` citations and line breaks stay.
* ``unusable_reason`` says why a reply is not an answer at all: no words once citations and
  markers are gone ("[1]", "@PB-3f2a"), or nothing but record numbers and titles copied from the
  evidence (a listing, not an answer); or, once validated, several sentences of the prompt
  (``echoes_prompt``: a model repeating its instructions), or citations that point at the wrong
  records (``miscites``, judged by ``retrieval.answers.attribution``). Such a reply is a failure of the model, reported as
  "the model's reply was unusable (...)", never as "unreachable".
* ``DegenerationGuard`` stops a reply as soon as it is recognisably degenerate, instead of at the
  token limit (a small model looping "[1] [2] [3] … [180]" used 800 tokens and 20 minutes): citation
  marks with no word yet (``MAX_WORDLESS_CITATIONS``), a run of citation marks with no word
  between (``MAX_CITATION_RUN``), or one short unit repeated (``MIN_REPEATS`` times over at least
  ``MIN_REPEATED_CHARS``). ``bounded_pieces`` applies it to every streamed reply.
* ``ValidatedStream`` turns raw deltas into text that may be shown while the model writes: only
  complete sentences that pass the same validation as the final answer (valid citations that
  point at the right records, no prompt echo), so an invented ``[99]``, an uncited claim or the system prompt is never on
  screen, even for a moment. It also enforces the answer's size caps (``MAX_REPLY_CHARS``,
  ``MAX_REPLY_SENTENCES``): a runaway reply raises ``ReplyRejected``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from retrieval.answers.citations import Attribution, cited_numbers, split_sentences, validate_answer, visible_text
from retrieval.config import Settings
from retrieval.records.paper import clean_field_value
from retrieval.results import ValidationReport
from retrieval.text import fold

#: A reply that leaks this many sentences of the prompt is echoing its instructions: what is
#: left of it (short lines such as "How to answer:") cannot be trusted either.
MAX_PROMPT_LEAKS = 2
#: A reply whose citations point at the wrong record this many times numbers its records wrongly
#: (a list position taken for a record number, every ``[k]`` shifted): none of its citations
#: can be trusted.
MAX_MISCITES = 2
#: A reply longer than this is a runaway, not an answer (the prompt asks for five sentences).
MAX_REPLY_CHARS = 6_000
MAX_REPLY_SENTENCES = 40
#: Citation marks before the first word that make a reply degenerate (no answer opens with six).
MAX_WORDLESS_CITATIONS = 6
#: Citation marks in a row with no word between them (a prompt offers at most k = 8 records to cite
#: in one place; the listings of up to 50 are never written by the model).
MAX_CITATION_RUN = 12
#: A unit of up to ``MAX_REPEATED_UNIT`` characters repeated this often at the end of the reply, over
#: at least ``MIN_REPEATED_CHARS``, is a loop ("the the the ...", "of the model of the model ...").
MIN_REPEATS = 8
MIN_REPEATED_CHARS = 60
MAX_REPEATED_UNIT = 40

_MARKDOWN_IMAGE = re.compile(r"!\[([^\]\n]{0,300})\]\([^)\s]{0,2000}\)")
_MARKDOWN_LINK = re.compile(r"\[([^\]\n]{0,300})\]\(\s*<?[^)\s]{0,2000}>?(?:\s+\"[^\"\n]{0,200}\")?\s*\)")
_SLACK_LINK = re.compile(r"<((?:https?|mailto|ftp|file|slack)[^<>|\s]{0,2000})(?:\|([^<>\n]{0,300}))?>", re.IGNORECASE)
_BARE_URL = re.compile(r"\b(?:(?:https?|ftp|file)://|www\.)[^\s<>\[\]()]+", re.IGNORECASE)
_HEADING = re.compile(r"^[ \t]{0,3}#{1,6}[ \t]+", re.MULTILINE)
_FENCE = re.compile(r"^[ \t]*(?:```|~~~)[^\n]*$", re.MULTILINE)
_EMPHASIS = re.compile(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1")
# Any piece of the boundary marker ("@@PB-3f2a@@", "@PB-3f2a", "PB-3f2a@@"): never in an answer.
_BOUNDARY_PIECE = re.compile(r"@+\s*PB\s*-\s*[0-9A-Za-z]*@*|\bPB-[0-9a-f]{6,}@*", re.IGNORECASE)
_THINK = re.compile(r"<think>.*?(?:</think>|$)", re.DOTALL | re.IGNORECASE)
_CITATION = re.compile(r"\[\s*\d{1,4}(?:\s*[,;\-–—]\s*\d{1,4})*\s*\]")
_SPACES = re.compile(r"[ \t]+")
_LIST_MARK = re.compile(r"^\s*(?:[-*•]|\d{1,3}[.)])\s*")


def clean_reply(text: str, boundary: str | None = None) -> str:
    """The reply with everything the answer format does not allow removed (module docstring)."""
    # terminal escapes, control, format (bidi, zero-width) and unassigned characters; lines kept
    out = clean_field_value(_THINK.sub(" ", text))
    # any piece of the marker becomes the whole marker: validation then drops the sentence that
    # echoed it as a prompt leak, instead of keeping the rest of an echoed marker line
    out = _BOUNDARY_PIECE.sub(f" {boundary} " if boundary else " ", out)
    out = _MARKDOWN_IMAGE.sub(lambda m: m.group(1), out)
    out = _MARKDOWN_LINK.sub(lambda m: m.group(1), out)
    out = _SLACK_LINK.sub(lambda m: m.group(2) or " ", out)
    out = _BARE_URL.sub(" ", out)
    out = _FENCE.sub("", out)
    out = _HEADING.sub("", out)
    out = _EMPHASIS.sub(lambda m: m.group(2), out)
    lines = (_citations_after_sentences(_SPACES.sub(" ", line).strip()) for line in out.split("\n"))
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


# a citation group opening a line or a sentence, before the sentence it belongs to
_CITATION_RUN = _CITATION.pattern + r"(?:\s*" + _CITATION.pattern + r")*"  # "[1]", "[1][3]", "[2, 4] [5]"
_LEADING_CITATION = re.compile(r"(?:^|(?<=[.!?]))\s*(" + _CITATION_RUN + r")\s+(?=[A-Z\"“(])")


_DANGLING_CITATIONS = re.compile(r"(?<=[.!?])\s*" + _CITATION_RUN + r"\s*$")


def _citations_after_sentences(line: str) -> str:
    """``[2] Claim one. [3] Claim two.`` -> ``Claim one [2]. Claim two [3].``

    Some models put each citation before its sentence. Read the usual way, every number would
    belong to the sentence before it and the first sentence would have none. A line that opens
    (after any list marker) with a citation group is taken to be written that way throughout:
    each group that opens a sentence moves to that sentence's end, and a group with no sentence
    after it is dropped.
    """
    marker = _LIST_MARK.match(line)
    start = marker.end() if marker else 0
    body = line[start:]
    matches = list(_LEADING_CITATION.finditer(body))
    if not matches or matches[0].start() != 0:
        return line
    body = _DANGLING_CITATIONS.sub("", body)  # a group with no sentence after it (yet, when streaming)
    pieces = [body[: matches[0].start()]] if matches[0].start() else []
    for i, match in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(body)
        sentence = body[match.end() : end].rstrip()
        stop = len(sentence) - len(sentence.rstrip(".!?"))
        pieces.append(f"{sentence[: len(sentence) - stop].rstrip()} {match.group(1)}{sentence[len(sentence) - stop :]}")
    return line[:start] + " ".join(pieces)


_WORD = re.compile(r"[^\W\d_]{2,}")
# matched against the reversed end of the reply: one start position, so cheap on every piece
_REPEATED_HEAD = re.compile(rf"(.{{1,{MAX_REPEATED_UNIT}}}?)\1{{{MIN_REPEATS - 1},}}", re.DOTALL)
_TAIL_CHARS = 2 * MAX_REPEATED_UNIT * MIN_REPEATS


class DegenerationGuard:
    """Raw reply text in, piece by piece; ``feed`` raises ``ReplyRejected`` as soon as the reply
    is recognisably degenerate (module docstring), so the call stops there."""

    def __init__(self) -> None:
        self._text = ""
        self._worded = False

    def feed(self, piece: str) -> None:
        """Take the next piece; raises ``ReplyRejected`` when the reply so far is degenerate."""
        self._text += piece
        if not self._worded:
            self._worded = bool(_WORD.search(_BOUNDARY_PIECE.sub(" ", _CITATION.sub(" ", self._text))))
            if not self._worded and len(_CITATION.findall(self._text)) >= MAX_WORDLESS_CITATIONS:
                raise ReplyRejected("it wrote citation marks and no words")
        tail = self._text[-_TAIL_CHARS:]
        if "]" in piece and _longest_citation_run(tail) >= MAX_CITATION_RUN:
            raise ReplyRejected(f"it wrote {MAX_CITATION_RUN} or more citation marks in a row with no words")
        repeated = _REPEATED_HEAD.match(tail.rstrip()[::-1])
        if repeated is not None and len(repeated.group(0).strip()) >= MIN_REPEATED_CHARS:
            raise ReplyRejected("it repeated the same words over and over")


def _longest_citation_run(text: str) -> int:
    """The most citation marks in ``text`` with nothing but spaces, commas and dots between."""
    longest = run = 0
    end = 0
    for match in _CITATION.finditer(text):
        between = text[end:match.start()]
        run = run + 1 if not _WORD.search(between) and len(between.strip(" ,.;…\n\t")) == 0 else 1
        longest = max(longest, run)
        end = match.end()
    return longest


def unusable_reason(text: str, titles: Sequence[str] = ()) -> str | None:
    """Why a cleaned reply is no answer, or None when it may be one (see the module docstring).

    ``titles`` are the evidence records' titles, in order: a reply made only of them (with
    their numbers) lists the evidence back instead of answering.
    """
    words = _BOUNDARY_PIECE.sub(" ", visible_text(_CITATION.sub(" ", text)))
    if not re.search(r"[^\W\d_]{2,}", words):
        return "it held no words, only citation marks or markers"
    known = {fold(title) for title in titles if title}
    lines = [line for line in text.split("\n") if line.strip()]
    if known and lines and all(_is_title_line(line, known) for line in lines):
        return "it only listed the records' titles back"
    return None


def _is_title_line(line: str, titles: set[str]) -> bool:
    body = fold(_CITATION.sub(" ", _LIST_MARK.sub("", line)))
    return not body or body in titles


def echoes_prompt(report: ValidationReport) -> bool:
    """True when validation dropped ``MAX_PROMPT_LEAKS`` or more sentences as prompt leaks."""
    return sum(dropped.reason == "prompt leak" for dropped in report.dropped) >= MAX_PROMPT_LEAKS


def miscites(report: ValidationReport) -> bool:
    """True when the reply's citations are systematically wrong: ``MAX_MISCITES`` or more
    sentences credited the wrong record, or every claim that went was one of those."""
    wrong = sum(dropped.reason == "wrong citation" for dropped in report.dropped)
    return wrong >= MAX_MISCITES or (wrong > 0 and report.abstained and report.reason == "no valid citation")


def unusable_answer_reason(report: ValidationReport, attribution: Attribution | None = None) -> str | None:
    """Why a validated reply cannot be used as the answer, or None when it can.

    Beyond ``echoes_prompt`` and ``miscites``: a reply that made claims but cited none of them
    validly is the model failing to cite, not the records failing to answer (the evidence
    passed the relevance policy), so it is unusable rather than an abstention; so is one whose
    every claim went because the records it cites do not support it ("The answer to the
    question is [2].", "The cited work proves that P equals NP [1].") or name other authors; and
    a reply whose every kept claim shares no content term with the records it cites says
    nothing about them.
    """
    if echoes_prompt(report):
        return "it repeated its instructions"
    if miscites(report):
        return "its citations pointed at the wrong records"
    if report.abstained:
        if report.reason != "no valid citation":
            return None
        reasons = {d.reason for d in report.dropped}
        if reasons & {"uncited", "invalid citation only"}:
            return "none of its claims cited a record validly"
        if reasons & {"says nothing", "unsupported"}:
            return "its sentences said nothing the cited records say"
        if "wrong author" in reasons:
            return "it credited authors with records they did not write"
        return None
    if attribution is not None and not any(
            attribution.says_something(sentence, [report.order[n - 1] for n in cited_numbers(sentence)])
            for line in report.text.split("\n") for sentence in split_sentences(line) if cited_numbers(sentence)):
        return "its sentences said nothing the cited records say"
    return None


class ReplyRejected(Exception):
    """The model's reply broke a bound (size) or was unusable; ``reason`` says how."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class ValidatedStream:
    """Raw model deltas in, displayable text out: ``feed`` returns what may be appended to the
    text shown so far (often ""), only ever extending it.

    The shown text is the validated answer of the complete sentences received so far, cleaned
    (``clean_reply``) and checked as the final answer is (``validate_answer``), so it only holds
    sentences that would survive. When validation of a longer prefix no longer extends what was
    shown (the model turned to a refusal, say), nothing more is shown: the final answer replaces
    the live text anyway.
    """

    def __init__(self, evidence_count: int, *, boundary: str, protected: Sequence[str] = (),
                 attribution: Attribution | None = None) -> None:
        self.evidence_count = evidence_count
        self.boundary = boundary
        self.protected = list(protected)
        self.attribution = attribution
        self.raw = ""
        self.shown = ""
        self._settled = 0  # raw characters that form complete sentences
        self._stopped = False

    def feed(self, piece: str) -> str:
        """Take one raw delta; return the newly displayable text. Raises ``ReplyRejected`` when
        the reply passes ``MAX_REPLY_CHARS`` or ``MAX_REPLY_SENTENCES``."""
        self.raw += piece
        if len(self.raw) > MAX_REPLY_CHARS:
            raise ReplyRejected(f"it ran past {MAX_REPLY_CHARS:,} characters")
        ends_sentence = "\n" in piece or "." in piece or "]" in piece or "?" in piece or "!" in piece
        if ends_sentence and sum(len(split_sentences(line)) for line in self.raw.split("\n")) > MAX_REPLY_SENTENCES:
            raise ReplyRejected(f"it ran past {MAX_REPLY_SENTENCES} sentences")
        complete = self._complete_prefix()
        if self._stopped or complete <= self._settled:
            return ""
        self._settled = complete
        return self._extend(self.raw[:complete])

    def _complete_prefix(self) -> int:
        """Characters of ``raw`` that form complete lines and sentences (what follows may still
        grow into the sentence it starts)."""
        cut = self.raw.rfind("\n") + 1
        last_line = self.raw[cut:]
        sentences = split_sentences(last_line)
        if len(sentences) >= 2:
            cut += last_line.rfind(sentences[-1])
        return cut

    def _extend(self, prefix: str) -> str:
        report = validate_answer(clean_reply(prefix, self.boundary), self.evidence_count,
                                 forbidden=[self.boundary], protected=self.protected,
                                 attribution=self.attribution)
        if echoes_prompt(report) or miscites(report):
            self._stopped = True
            return ""
        if report.abstained:
            return ""
        text = report.text
        if not text.startswith(self.shown):
            self._stopped = True
            return ""
        added, self.shown = text[len(self.shown):], text
        return added


def bounded_pieces(chunks: Iterable[Any], settings: Settings, *, max_chars: int | None = None) -> Iterator[str]:
    """The text pieces of a streamed reply (langchain message chunks), within its size bounds.

    Raises ``ReplyRejected`` past ``max_chars``, as soon as the reply is degenerate
    (``DegenerationGuard``), and when the stream ended incomplete: cut at the token limit
    (``finish_reason`` "length"), or, from an OpenAI-compatible server, without any
    ``finish_reason`` (the connection closed mid-reply). Time limits are the stream's own
    (``retrieval.answers.model_calls.stream_within``); stopping to read closes it.
    """
    max_chars = MAX_REPLY_CHARS if max_chars is None else max_chars
    guard = DegenerationGuard()
    finish: str | None = None
    openai_style = False
    total = 0
    try:
        for chunk in chunks:
            metadata = getattr(chunk, "response_metadata", None) or {}
            finish = metadata.get("finish_reason") or finish
            openai_style = openai_style or bool(metadata.get("model_provider"))
            content = getattr(chunk, "content", "")
            if isinstance(content, str) and content:
                total += len(content)
                if total > max_chars:
                    raise ReplyRejected(f"it ran past {max_chars:,} characters")
                guard.feed(content)
                yield content
    finally:
        close = getattr(chunks, "close", None)
        if callable(close):
            close()  # a model call stopped here ends its request (retrieval.answers.model_calls)
    if finish == "length":
        raise ReplyRejected(f"it was cut at the {settings.llm_max_tokens}-token limit")
    if openai_style and finish is None:
        raise ReplyRejected("the stream ended before the reply was complete")
