"""Prompt templates stored as ``.txt`` files next to this module, with checked placeholders.

A template uses ``{name}`` placeholders (``str.format`` syntax; write ``{{`` and ``}}`` for
literal braces). ``load_prompt(name, required={...})`` reads ``<name>.txt`` and fails at load
time, not at the first request, when the file's placeholders differ from the set the caller
will fill: a missing placeholder would silently drop data, an unknown one would fail mid-answer.

This package imports nothing from the rest of paperbot.
"""

from __future__ import annotations

import re
import string
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

__all__ = ["PROMPT_DIR", "Prompt", "PromptError", "load_prompt", "placeholders"]

PROMPT_DIR = Path(__file__).resolve().parent

_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class PromptError(ValueError):
    """A template file is missing, malformed, or its placeholders differ from the expected set."""


def placeholders(text: str) -> frozenset[str]:
    """The ``{name}`` placeholders of a template; raises PromptError on anything fancier.

    Positional (``{}``, ``{0}``), attribute/index (``{a.b}``, ``{a[0]}``), conversion
    (``{a!r}``) and format-spec (``{a:>4}``) fields are rejected: templates only substitute
    plain text, and the same text must also work as a LangChain f-string template.
    """
    found: set[str] = set()
    try:
        parsed = list(string.Formatter().parse(text))
    except ValueError as exc:  # unbalanced braces
        raise PromptError(f"malformed template: {exc}") from None
    for _literal, field, spec, conversion in parsed:
        if field is None:
            continue
        if not _IDENTIFIER.match(field) or spec or conversion:
            shown = "{" + field + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "") + "}"
            raise PromptError(f"placeholder {shown} is not a plain {{name}}")
        found.add(field)
    return frozenset(found)


@dataclass(frozen=True)
class Prompt:
    """A loaded template: its name, its text and the placeholders it expects."""

    name: str
    text: str
    fields: frozenset[str]

    def format(self, **values: str) -> str:
        """Fill every placeholder; missing or unexpected values raise PromptError."""
        missing = self.fields - values.keys()
        extra = values.keys() - self.fields
        if missing or extra:
            raise PromptError(_mismatch(self.name, missing, extra, "values"))
        return self.text.format(**values)


def _mismatch(name: str, missing: Iterable[str], extra: Iterable[str], what: str) -> str:
    parts = []
    if missing:
        parts.append("missing " + ", ".join("{" + m + "}" for m in sorted(missing)))
    if extra:
        parts.append("unexpected " + ", ".join("{" + e + "}" for e in sorted(extra)))
    return f"prompt {name!r}: {what} do not match the template ({'; '.join(parts)})"


def load_prompt(name: str, *, required: Iterable[str], directory: Path | None = None) -> Prompt:
    """Read ``<directory>/<name>.txt`` and check its placeholders are exactly ``required``.

    ``directory`` defaults to this package. Results are cached per (name, required, directory).
    """
    return _load(name, frozenset(required), (directory or PROMPT_DIR).resolve())


@lru_cache(maxsize=64)
def _load(name: str, required: frozenset[str], directory: Path) -> Prompt:
    if not _NAME.match(name):
        raise PromptError(f"prompt name {name!r} must be lowercase letters, digits and underscores")
    path = directory / f"{name}.txt"
    try:
        text = path.read_text(encoding="utf-8").rstrip()
    except FileNotFoundError:
        raise PromptError(f"prompt {name!r} not found: expected the file {path}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise PromptError(f"prompt {name!r} cannot be read from {path}: {exc}") from None
    if not text:
        raise PromptError(f"prompt {name!r} is empty ({path})")
    try:
        fields = placeholders(text)
    except PromptError as exc:
        raise PromptError(f"prompt {name!r}: {exc}") from None
    if fields != required:
        raise PromptError(_mismatch(name, required - fields, fields - required, "placeholders"))
    return Prompt(name=name, text=text, fields=fields)

