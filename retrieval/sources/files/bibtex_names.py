"""BibTeX's name rules, both ways: an ``author``/``editor`` value -> names, and a name -> text
that BibTeX splits the same way.

Reading follows BibTeX: names are separated by ``and`` outside braces; a name is "First von
Last", "von Last, First" or "von Last, Jr, First"; its words are separated by spaces and ``~``
outside braces; "von" is the run of words up to the last one that starts in lower case (a
braced group counts as neither case unless it is an accented letter, ``{\\"o}``), the last word
is never von; a braced ``{de Vos}`` is one word. ``and others`` (or "et al.") is no author: it
marks the list as cut. Personal-site decorations ("<b>Name</b>", "Song*, Jiaming", a remark in
brackets, a trailing comma) go before a name is split at its commas; the rest of the cleaning is
``Paper``'s (``author_cleaning``).

A name read here has a display form, "First von Last Jr" (decoded from LaTeX), and its family
part as BibTeX splits it (von + Last: "de Vos", "Da San Martino", "van Durme"), with the von
words apart (``ReadName``). One reading differs from BibTeX on purpose: a Vancouver-style "Smith
JA" (trailing initials) is "JA Smith", family name Smith, where BibTeX would make "JA" the last
name.

Writing (``written_name``) gives "von Last, Jr, First" when the family part is known, with
Last braced when BibTeX would otherwise take some of its words for von ("{de Vos}, Martijn")
and a capitalised von word written as sources do, ``{V}an``;
a name known only by its display form is written "Last, First" with its last word as the
family name; a name holding a comma or a word "and" is braced whole.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from retrieval.records.author_cleaning import is_truncation_marker, strip_annotations
from retrieval.records.name_parts import split_name, whole_name_is_family
from retrieval.sources.markup.latex import latex_to_text
from retrieval.sources.markup.latex import text_to_latex as escape
from retrieval.text import short_text_cache

# "A and  and B" (an empty name, seen in real files) is one separator, not a person "and B"
_AND = re.compile(r"\s+and(?:\s+and)*\s+", re.IGNORECASE)
_AND_WORD = re.compile(r"(?:^|\s)and(?:\s|$)", re.IGNORECASE)
_COMMA = re.compile(r",")
_WHITESPACE = re.compile(r"\s+")
# BibTeX's word separators inside a name: spaces, an unescaped "~", a control space "\ "
_NAME_SPACE = re.compile(r"(?:\\ |\s|(?<!\\)~)+")
_BRACE = re.compile(r"[{}]")
_INITIALS = re.compile(r"^(?:(?:[A-Z]\.-?)+|[A-Z]{1,2})$")
_ROMAN = {"II", "III", "IV", "VI", "VII", "VIII", "IX", "XI", "XII"}


@dataclass(frozen=True)
class ReadName:
    """One name as read: ``name`` for display, ``family`` (von + Last, decoded) and
    ``particle`` (the von words, decoded; "" when none)."""

    name: str
    family: str
    particle: str = ""


# Braces and words ---------------------------------------------------------------------------


def _mask_groups(text: str) -> str:
    """Same-length copy of ``text`` with every brace, and everything inside braces, replaced by
    '_' (a stray '}' counts as closing nothing)."""
    out, depth, start = [], 0, 0
    for brace in _BRACE.finditer(text):
        at = brace.start()
        out.append("_" * (at - start) if depth else text[start:at])
        out.append("_")
        depth = depth + 1 if brace.group() == "{" else max(depth - 1, 0)
        start = at + 1
    out.append("_" * (len(text) - start) if depth else text[start:])
    return "".join(out)


def split_top_level(text: str, pattern: re.Pattern[str]) -> list[str]:
    """``text`` split at the matches of ``pattern`` that are outside braces (``pattern`` never
    matches "")."""
    if "{" not in text and "}" not in text:  # nothing is inside braces: the mask is the text
        return pattern.split(text)
    mask = _mask_groups(text)
    pieces, start = [], 0
    for match in pattern.finditer(mask):
        pieces.append(text[start : match.start()])
        start = match.end()
    pieces.append(text[start:])
    return pieces


def _words(text: str) -> list[str]:
    """A name part's words as BibTeX separates them (raw LaTeX, braces kept)."""
    return [word for word in split_top_level(text.strip(), _NAME_SPACE) if word]


def _special_is_lower(group: str) -> bool:
    """Case of an accented-letter group ``{\\'E}`` / ``{\\"o}``: its first letter after the
    control word, as BibTeX reads it; False when it has none."""
    in_control_word = True
    for char in group[2:]:  # after "{\"
        if in_control_word:
            in_control_word = char.isalpha()
        elif char.isalpha():
            return char.islower()
    return False


def is_von(word: str) -> bool:
    """Whether BibTeX takes ``word`` (raw LaTeX) for a von word: its first letter outside
    braces is lower case, or its first accented-letter group ``{\\...}`` holds a lower-case
    letter; other braced groups have no case."""
    if word[:1].isupper():
        return False
    if word[:1].islower():
        return True
    depth = 0
    for at, char in enumerate(word):
        if char == "{":
            if depth == 0 and word.startswith("\\", at + 1):
                end = _group_end(word, at)
                return _special_is_lower(word[at:end])
            depth += 1
        elif char == "}":
            depth = max(depth - 1, 0)
        elif depth == 0 and char.isalpha():
            return char.islower()
    return False


def _group_end(text: str, start: int) -> int:
    """Position after the brace group that opens at ``start``."""
    depth = 0
    for at in range(start, len(text)):
        depth += (text[at] == "{") - (text[at] == "}")
        if depth == 0:
            return at + 1
    return len(text)


def _von_last(words: list[str]) -> tuple[list[str], list[str]]:
    """The part before the first comma (or after First) -> (von words, Last words): von runs up
    to the last von word, which is never the final word."""
    cut = 0
    for i, word in enumerate(words[:-1]):
        if is_von(word):
            cut = i + 1
    return words[:cut], words[cut:]


def _decoded(words: list[str]) -> str:
    return latex_to_text(" ".join(words)) if words else ""


# Reading ------------------------------------------------------------------------------------


def _is_initials(token: str) -> bool:
    return bool(_INITIALS.match(token)) and token not in _ROMAN


def _display_without_commas(raw: str) -> tuple[str, bool]:
    """"First von Last" -> (display name, whether trailing initials were moved to the front:
    the Vancouver-style "Smith JA" read as "JA Smith")."""
    tokens = [latex_to_text(tok) for tok in split_top_level(raw, _WHITESPACE)]
    tokens = [tok for tok in tokens if tok]
    trailing = 0
    while trailing < len(tokens) and _is_initials(tokens[-1 - trailing]):
        trailing += 1
    if 0 < trailing < len(tokens) and not _is_initials(tokens[0]):
        return " ".join(tokens[-trailing:] + tokens[:-trailing]), True
    return " ".join(tokens), False


def read_name(raw: str) -> ReadName:
    """One BibTeX name -> its display form "First von Last Jr" and family part; the display
    name is "" when nothing is left. A Vancouver-style name's family part is its first word."""
    parts = [part.strip() for part in split_top_level(raw.strip(), _COMMA)]
    if len(parts) == 1:
        name, reordered = _display_without_commas(parts[0])
        words = _words(parts[0])
        if reordered:
            return ReadName(name, _decoded(words[:1]))
        start = next((i for i, word in enumerate(words[:-1]) if is_von(word)), len(words) - 1)
        von, last = _von_last(words[max(start, 0):])
        return ReadName(name, _decoded(von + last), _decoded(von))
    last_part = latex_to_text(parts[0])
    if len(parts) == 2:
        first, junior = latex_to_text(parts[1]), ""
    else:
        junior, first = latex_to_text(parts[1]), latex_to_text(", ".join(parts[2:]))
    von, last = _von_last(_words(parts[0]))
    name = " ".join(piece for piece in (first, last_part, junior) if piece)
    return ReadName(name, _decoded(von + last), _decoded(von))


def parse_name(raw: str) -> str:
    """One BibTeX name -> "First von Last Jr" (decoded); "" when nothing is left."""
    return read_name(raw).name


# Names up to 256 characters are read once and cached: a list's owner and co-authors recur in
# every entry. A longer piece (no "and" in a huge field) is not kept.
@short_text_cache(max_length=256, maxsize=16_384)
def _author(piece: str) -> tuple[ReadName | None, bool]:
    """One name of an author list -> (the name, or None when nothing is left; whether it is a
    truncation marker)."""
    piece = strip_annotations(piece)  # before the commas count: "Song, Qun (equal, first)"
    if is_truncation_marker(piece):
        return None, True
    name = read_name(piece) if piece else None
    return (name if name is not None and name.name else None), False


def read_names(raw: str) -> tuple[list[ReadName], bool]:
    """A BibTeX ``author``/``editor`` value -> (its names, whether the list was cut).

    ``and others`` (BibTeX's own "et al.") ends a cut list; so do "et al." and "etc.".
    """
    names: list[ReadName] = []
    truncated = False
    if not raw or raw.isspace():  # no field: no piece can be a name or a truncation marker
        return names, truncated
    for piece in split_top_level(" ".join(raw.split()), _AND):
        name, marker = _author(piece)
        truncated = truncated or marker
        if name is not None:
            names.append(name)
    return names, truncated


def parse_author_list(raw: str) -> tuple[list[str], bool]:
    """A BibTeX ``author``/``editor`` value -> (display names, whether the list was cut)."""
    names, truncated = read_names(raw)
    return [name.name for name in names], truncated


def parse_names(raw: str) -> list[str]:
    """A BibTeX ``author``/``editor`` value -> display names (``and others`` dropped)."""
    return parse_author_list(raw)[0]


# Writing ------------------------------------------------------------------------------------


def _braced_if(text: str, condition: bool) -> str:
    return "{" + text + "}" if condition else text


def _part(text: str) -> str:
    """A given name or suffix, escaped; braced when a comma or a word "and" would split it."""
    written = escape(text)
    return _braced_if(written, "," in written or bool(_AND_WORD.search(written)))


def _display_only(name: str) -> str:
    """A name known by its display form alone: "Last, First" with the last word as the family
    name, or one brace group (``name_parts.whole_name_is_family``); the reader turns either back
    into the same display string and ``name_parts.default_family``."""
    words = name.split()
    if whole_name_is_family(name):  # "Barnes and Noble, Inc.", "others", "0: A"
        return "{" + escape(name) + "}"
    if len(words) == 1:
        return escape(name)
    return f"{escape(words[-1])}, {escape(' '.join(words[:-1]))}"


def _as_von(word: str) -> str:
    """A particle word written so that BibTeX takes it for von: "Van" as ``{V}an`` (its first
    letter braced, the next one lower case), as a source writes it; a word without a lower-case
    letter cannot be (BibTeX then reads it as part of Last: the family part stays the same)."""
    if is_von(word) or not word[:1].isupper():
        return word
    braced = "{" + word[0] + "}" + word[1:]
    return braced if is_von(braced) else word


def written_name(name: str, family: str | None = None, particle: str | None = None) -> str:
    """BibTeX text for a display name whose family part (``family``, von words ``particle``)
    may be known: BibTeX and ``read_name`` read the same family part and von words back, and
    the reader the same display name. Without a family part that fits the name, the display
    form alone is written (see the module docstring)."""
    parts = split_name(name, family, particle) if family else None
    if parts is None:
        return _display_only(name)
    von, last = " ".join(_as_von(word) for word in _words(escape(parts.particle))), escape(parts.last)
    last_words = _words(last)
    # BibTeX would pull a von-looking word of Last into von, or (with no comma after it) split
    # a Last of several words into First and Last: one brace group keeps it whole
    group = (any(is_von(word) for word in last_words[:-1]) or "," in last or bool(_AND_WORD.search(last))
             or (not parts.given and not parts.suffix and len(last_words) > 1))
    family_text = " ".join(piece for piece in (von, _braced_if(last, group)) if piece)
    if parts.suffix:
        written = f"{family_text}, {_part(parts.suffix)}, {_part(parts.given)}"
    elif parts.given:
        written = f"{family_text}, {_part(parts.given)}"
    else:
        written = family_text
    return written if strip_annotations(written) == written else "{" + escape(name) + "}"
