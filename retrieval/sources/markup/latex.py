"""LaTeX markup in metadata -> readable Unicode text.

BibTeX values and arXiv titles/abstracts carry accents (``{\\"o}``, ``\\'{e}``, ``\\c{c}``),
symbols (``\\ss``, ``--``, ``~``), case protection (``{PETSc}``) and inline math
(``$\\alpha$``, ``$O(n^2)$``). ``latex_to_text`` turns them into what a reader expects
("Öz", "–", "α", "O(n²)"); ``latex_to_verbatim`` is for URLs and DOIs, where only escapes are
undone and nothing else may change.

pylatexenc does the heavy lifting. Strings without any markup take a fast path (most BibTeX
values), which keeps a 4,000-entry file well under a second; short values (names, venues,
titles: up to ``_CACHED_LENGTH`` characters) are decoded once and cached, since a publication
list repeats them. Whatever pylatexenc cannot digest
(it is tolerant, but hostile input can still make it raise) falls back to a crude strip of
macros and braces, so decoding never raises.
"""

from __future__ import annotations

import logging
import re
import unicodedata
from functools import lru_cache

from pylatexenc import latexwalker
from pylatexenc.latex2text import LatexNodes2Text, MacroTextSpec
from pylatexenc.latex2text import get_default_latex_context_db as text_context_db
from pylatexenc.macrospec import std_macro

from retrieval.text import short_text_cache

# Anything that can change under decoding; strings without it are returned as they are.
# Written as alternatives that each start with one literal character, the search skips ahead
# to candidate characters (a character class first would make it try every position).
_MARKUP = re.compile(r"\\|\{|\}|\$|~|%|&|#|--|``|''|\?`|!`")
_BARE_SPECIAL = re.compile(r"(?<!\\)([%&#])")
_BARE_TILDE = re.compile(r"(?<!\\)~")
_MATH = re.compile(r"(?<!\\)\$((?:\\.|[^$\\])+)\$")
_SUPERSCRIPT = re.compile(r"\^(?:\{([0-9+\-=()ni]+)\}|([0-9+\-=()ni]))")
_SUBSCRIPT = re.compile(r"_(?:\{([0-9+\-=()]+)\}|([0-9]))")
_SUPER_MAP = str.maketrans("0123456789+-=()ni", "⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁼⁽⁾ⁿⁱ")
_SUB_MAP = str.maketrans("0123456789+-=()", "₀₁₂₃₄₅₆₇₈₉₊₋₌₍₎")
_MAX_DEPTH = 64  # deeper brace nesting goes to the fallback (pylatexenc recurses per level)

# Accents: \'e \'{e} {\'e} \"{\i} \c{c} \c c \v{r} (letter accents need a brace or a space).
_ACCENTS = {
    "'": "\u0301", "`": "\u0300", "^": "\u0302", '"': "\u0308", "~": "\u0303", "=": "\u0304",
    ".": "\u0307", "u": "\u0306", "v": "\u030c", "H": "\u030b", "c": "\u0327", "k": "\u0328",
    "d": "\u0323", "b": "\u0331", "r": "\u030a",
}  # fmt: skip
_ACCENT = re.compile(
    r"""\\(?:(['"`^~=.])\s*|([uvHckdbr])(?:\s+|(?=\{)))"""
    r"(?:\{\s*([A-Za-zıȷ])\s*\}|([A-Za-zıȷ]))"
)
_SYMBOLS = {
    "ss": "ß", "o": "ø", "O": "Ø", "aa": "å", "AA": "Å", "ae": "æ", "AE": "Æ", "oe": "œ",
    "OE": "Œ", "l": "ł", "L": "Ł", "i": "ı", "j": "ȷ",
}  # fmt: skip
_SYMBOL = re.compile(r"\\(ss|aa|AA|ae|AE|oe|OE|o|O|l|L|i|j)(?![a-zA-Z])(?:\s*\{\s*\}|\s+)?")
# What the table cannot decode: another macro or escape, or math (a "$" not escaped). Here and
# in ``_UNESCAPED_BRACE`` the lookbehind follows the character, so that every alternative starts
# with a literal (as in ``_MARKUP``).
_NEEDS_PARSER = re.compile(r"\\(?![&%_#${}])|\$(?<!\\\$)")
_UNESCAPED_BRACE = re.compile(r"\{(?<!\\\{)|\}(?<!\\\})")
_SIMPLE_ESCAPE = re.compile(r"\\([&%_#${}])")
_LIGATURES = (
    ("---", "\u2014"), ("--", "\u2013"), ("``", "\u201c"), ("''", "\u201d"),
    ("?`", "\u00bf"), ("!`", "\u00a1"),
)  # fmt: skip

# Structure that decides where a word ends: escapes and macros (skipped), braces, math, spaces.
_STRUCTURE = re.compile(r"\\[^a-zA-Z]|\\[a-zA-Z]+|[{}$]|\s+")

_FALLBACK_MACRO = re.compile(r"\\([a-zA-Z]+\*?|.)")
_SPACES = re.compile(r"\s+")


@lru_cache(maxsize=1)
def _converter() -> tuple[LatexNodes2Text, object]:
    """The pylatexenc converter with our few overrides, built once."""
    # pylatexenc logs a WARNING for every malformed macro it meets; on hostile or sloppy input
    # that floods the log without telling the user anything (the text is decoded regardless).
    logging.getLogger("pylatexenc").setLevel(logging.ERROR)
    walker_db = latexwalker.get_default_latex_context_db()
    walker_db.add_context_category(
        "paperbot",
        prepend=True,
        macros=[
            std_macro("href", False, 2),
            std_macro("url", False, 1),
            std_macro("textbraceleft", False, 0),
            std_macro("textbraceright", False, 0),
        ],
    )
    text_db = text_context_db()
    text_db.add_context_category(
        "paperbot",
        prepend=True,
        macros=[
            MacroTextSpec("url", simplify_repl="%(1)s"),
            MacroTextSpec("href", simplify_repl="%(2)s"),
            MacroTextSpec("textbraceleft", simplify_repl="{"),
            MacroTextSpec("textbraceright", simplify_repl="}"),
            MacroTextSpec("textasciicircum", simplify_repl="^"),
            MacroTextSpec("cite", simplify_repl=""),
        ],
    )
    return LatexNodes2Text(latex_context=text_db, math_mode="text"), walker_db


def _scripts(math: re.Match[str]) -> str:
    """In math: ``n^2`` -> ``n²``, ``x_{10}`` -> ``x₁₀`` (when every character has a form)."""
    body = _SUPERSCRIPT.sub(lambda m: (m.group(1) or m.group(2)).translate(_SUPER_MAP), math[1])
    body = _SUBSCRIPT.sub(lambda m: (m.group(1) or m.group(2)).translate(_SUB_MAP), body)
    return f"${body}$"


def _depth(value: str) -> int:
    depth = deepest = 0
    for char in value:
        if char == "{":
            depth += 1
            deepest = max(deepest, depth)
        elif char == "}":
            depth -= 1
    return deepest


def _fallback(value: str) -> str:
    """Crude but safe: drop macro names and grouping characters, keep the words."""
    text = _FALLBACK_MACRO.sub(lambda m: m.group(1) if not m.group(1)[0].isalpha() else "", value)
    return text.replace("{", "").replace("}", "").replace("$", "")


def _accent(match: re.Match[str]) -> str:
    letter = match.group(3) or match.group(4)
    letter = {"ı": "i", "ȷ": "j"}.get(letter, letter)  # dotless i/j carry the accent
    return letter + _ACCENTS[match.group(1) or match.group(2)]


def _quick(text: str, tilde_is_space: bool) -> str | None:
    """Decode escapes, braces and ligatures by table (accents already done); None if more is needed.

    Covers nearly every BibTeX value (pylatexenc would give the same result, 50x slower).
    Without a backslash (case-protecting braces, "--"), no escape can apply: "$" needs the
    parser, every brace goes, and the regular expressions for escapes are not run.
    """
    escaped = "\\" in text  # the ligatures below add no backslash
    if (_NEEDS_PARSER.search(text) if escaped else "$" in text):
        return None
    for ligature, replacement in _LIGATURES:  # before brace removal: "-{}-" is no ligature
        text = text.replace(ligature, replacement)
    if escaped:
        text = _UNESCAPED_BRACE.sub("", text)
        text = _SIMPLE_ESCAPE.sub(r"\1", text)
    else:
        text = text.replace("{", "").replace("}", "")
    return text.replace("~", " " if tilde_is_space else "~")


def _parse(text: str, tilde_is_space: bool) -> str:
    """pylatexenc on one piece of text (math, macros), with our pre-escaping and fallbacks."""
    text = _BARE_SPECIAL.sub(r"\\\1", text)
    if not tilde_is_space:
        text = _BARE_TILDE.sub(r"\\textasciitilde{}", text)
    text = _MATH.sub(_scripts, text)
    if _depth(text) > _MAX_DEPTH:
        return _fallback(text)
    converter, walker_db = _converter()
    try:
        nodes = latexwalker.LatexWalker(
            text, latex_context=walker_db, tolerant_parsing=True
        ).get_latex_nodes()[0]
        return str(converter.nodelist_to_text(nodes))
    except Exception:  # noqa: BLE001 - third-party parser on hostile input: fall back
        return _fallback(text)


def _words(text: str) -> list[str]:
    """Split at whitespace outside braces and math, so that each piece decodes on its own."""
    words, depth, math, start = [], 0, False, 0
    for match in _STRUCTURE.finditer(text):
        token = match.group()
        if token == "{":
            depth += 1
        elif token == "}":
            depth = max(depth - 1, 0)
        elif token == "$":
            math = not math
        elif token[0].isspace() and depth == 0 and not math:
            words.append(text[start : match.start()])
            start = match.end()
    words.append(text[start:])
    return [word for word in words if word]


#: Values up to this many characters are decoded once and cached (``_decode``): names,
#: venues and publishers repeat across a publication list. Longer ones (abstracts) are decoded
#: each time, which keeps the cache small: at most ``_CACHE_ENTRIES`` short strings.
_CACHED_LENGTH = 512
_CACHE_ENTRIES = 16_384


def latex_to_text(value: str | None, *, tilde_is_space: bool = True) -> str:
    """Decode LaTeX markup to Unicode text; never raises.

    ``tilde_is_space=False`` keeps ``~`` literal: arXiv abstracts use it for "approximately",
    BibTeX uses it as a non-breaking space. Only the words that need pylatexenc go through
    it (an abstract with two formulas costs two small parses, not one large one).
    """
    if not value:
        return ""
    return _decode(value, tilde_is_space)


@short_text_cache(max_length=_CACHED_LENGTH, maxsize=_CACHE_ENTRIES)
def _decode(value: str, tilde_is_space: bool) -> str:
    """``latex_to_text`` of a non-empty value (a pure function of its arguments)."""
    if not _MARKUP.search(value):
        return unicodedata.normalize("NFC", value)
    text = value
    if "\\" in text:  # both tables match a macro
        # Symbols first (\L\'o: the accent must not glue an "o" to \L), then accents (\'\i -> í).
        text = _SYMBOL.sub(lambda m: _SYMBOLS[m.group(1)], text)
        text = _ACCENT.sub(_accent, text)
    decoded = _quick(text, tilde_is_space)
    if decoded is None:
        pieces = []
        for word in _words(text):
            if not _MARKUP.search(word):
                pieces.append(word)
                continue
            quick = _quick(word, tilde_is_space)
            pieces.append(quick if quick is not None else _parse(word, tilde_is_space))
        decoded = " ".join(pieces)
    decoded = decoded.replace("\xa0", " ")
    return unicodedata.normalize("NFC", _SPACES.sub(" ", decoded).strip())


_URL_WRAPPER = re.compile(r"\\(?:url|href)\s*\{([^{}]*)\}(?:\s*\{[^{}]*\})?")
_VERBATIM_ESCAPES = (
    (re.compile(r"\\textasciitilde\s*(?:\{\s*\})?|\\~\s*\{\s*\}|\{\\~\s*\}|\\~|\$\\sim\$"), "~"),
    (re.compile(r"\\([_%&#$])"), r"\1"),
)


def latex_to_verbatim(value: str | None) -> str:
    """A URL or DOI as written in BibTeX -> the literal string (escapes undone, no spaces)."""
    if not value:
        return ""
    text = value
    if "\\" in text:  # the URL wrapper and every escape pattern need a backslash
        text = _URL_WRAPPER.sub(r"\1", text)
        for pattern, replacement in _VERBATIM_ESCAPES:
            text = pattern.sub(replacement, text)
    text = text.replace("{", "").replace("}", "")
    return _SPACES.sub("", text)


# Text -> LaTeX ----------------------------------------------------------------------------

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


def text_to_latex(text: str) -> str:
    """Plain Unicode text -> a BibTeX/LaTeX value that ``latex_to_text`` decodes back to the same
    text (the choices are explained in ``bibtex_writer``)."""
    text = _SPECIAL.sub(lambda m: _ESCAPES[m.group()], text)
    return _LIGATURE.sub("{}", text)
