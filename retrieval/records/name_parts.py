"""A written name split at its family part, as the source gave it.

An ``Author``'s ``name`` is a display string, "Given family Suffix" ("Martijn de Vos",
"Giovanni Da San Martino", "Ludwig van Beethoven Jr"). Which words make the family part cannot
be told from that string ("Da San" is not a given name); a source that knows it says so, and
``Author`` keeps it beside the name as ``family`` (the whole family part, particles included:
"de Vos", "Da San Martino") and ``particle`` (its leading words that BibTeX calls the "von"
part, "de" of ``de Vos, Martijn``; none for ``{de Vos}, Martijn``, where the source made the
whole "de Vos" one last name).

The family part must be a run of whole words of the name: the rightmost one; the words before
it are the given names, the words after it the suffix ("Jr"). ``kept_family`` applies that rule
and leaves out what says nothing beyond the display name: the family part a display name has
when nothing else is known (``default_family``: its last word, or the whole name for an
organisation) is not stored, so a name written from its display form alone and read back
gets no family part either.
"""

from __future__ import annotations

from dataclasses import dataclass

from retrieval.records.author_cleaning import strip_annotations


@dataclass(frozen=True)
class NameParts:
    """A display name cut into given names, particle, the rest of the family name and suffix.

    Each part is the name's own words joined by single spaces, "" when absent.
    """

    given: str
    particle: str
    last: str
    suffix: str

    @property
    def family(self) -> str:
        """The whole family part: particle and last name ("de Vos")."""
        return f"{self.particle} {self.last}".strip()


def _words(text: str | None) -> list[str]:
    return (text or "").split()


def _rightmost(words: list[str], run: list[str]) -> int | None:
    """Where the rightmost occurrence of ``run`` starts in ``words``, or None."""
    for start in range(len(words) - len(run), -1, -1):
        if words[start : start + len(run)] == run:
            return start
    return None


def split_name(name: str, family: str | None, particle: str | None = None) -> NameParts | None:
    """``name`` cut around its family part ``family`` (of which ``particle`` is the leading
    words), or None when ``family`` is not a run of the name's words or ``particle`` is not a
    proper leading part of ``family`` (it is then dropped, not an error: "de" of "de Vos")."""
    words, family_words = _words(name), _words(family)
    if not family_words:
        return None
    start = _rightmost(words, family_words)
    if start is None:
        return None
    particle_words = _words(particle)
    if len(particle_words) >= len(family_words) or family_words[: len(particle_words)] != particle_words:
        particle_words = []
    end = start + len(family_words)
    return NameParts(
        given=" ".join(words[:start]),
        particle=" ".join(particle_words),
        last=" ".join(family_words[len(particle_words):]),
        suffix=" ".join(words[end:]),
    )


def whole_name_is_family(name: str) -> bool:
    """Whether a display name alone reads as one family name without given names: a comma or
    a word "and" in it ("Barnes and Noble, Inc."), "others", or words that, cut into "Last,
    First", would read as a remark (``author_cleaning.strip_annotations``: "0: A")."""
    words = name.split()
    written = f"{words[-1]}, {' '.join(words[:-1])}" if len(words) > 1 else name
    return ("," in name or name.lower() == "others" or any(word.lower() == "and" for word in words)
            or strip_annotations(written) != written)


def default_family(name: str) -> str:
    """The family part of a display name when nothing else is known: the whole name when
    ``whole_name_is_family``, else its last word."""
    return name if whole_name_is_family(name) else (_words(name) or [""])[-1]


def kept_family(name: str, family: str | None, particle: str | None) -> tuple[str | None, str | None]:
    """The (family, particle) an ``Author`` named ``name`` keeps: both None when ``family`` is
    missing, is not a run of the name's words, or is ``default_family`` without a particle;
    ``particle`` None unless it leads ``family``. Whitespace is normalised to single spaces."""
    parts = split_name(name, family, particle)
    if parts is None or (not parts.particle and parts.family == default_family(" ".join(_words(name)))):
        return None, None
    return parts.family, parts.particle or None


def leading_particle(family: str) -> str | None:
    """The particle of a family name written as plain text, by BibTeX's rule for the part
    before the comma of "von Last, First": the words up to the last one that starts with a
    lower-case letter, never the final word ("van der" of "van der Berg", "de" of "de Vos";
    None for "Da San Martino" or "Van Durme")."""
    words = _words(family)
    cut = 0
    for i, word in enumerate(words[:-1]):
        letter = next((char for char in word if char.isalpha()), "")
        if letter.islower():
            cut = i + 1
    return " ".join(words[:cut]) or None
