"""The error tree drawn in ``retrieval/errors.py``'s docstring names every class of the module
under its real parents, so a reader can trust the drawing."""

from __future__ import annotations

import inspect
import re

from retrieval import errors


def _drawn_tree() -> dict[str, list[str]]:
    """Each drawn class with the classes drawn on the path above it."""
    doc = errors.__doc__ or ""
    drawn: dict[str, list[str]] = {}
    stack: list[tuple[int, str]] = []
    for line in doc.splitlines():
        match = re.match(r"^(\s*(?:[│ ]   )*(?:[├└]── )?)([A-Z]\w+Error)\b", line)
        if not match:
            continue
        depth = len(match.group(1))
        while stack and stack[-1][0] >= depth:
            stack.pop()
        drawn.setdefault(match.group(2), []).extend(name for _, name in stack)
        stack.append((depth, match.group(2)))
    return drawn


def test_every_error_class_is_drawn_under_its_bases():
    classes = {name: cls for name, cls in vars(errors).items()
               if inspect.isclass(cls) and issubclass(cls, Exception) and cls.__module__ == errors.__name__}
    drawn = _drawn_tree()
    assert sorted(set(classes) - set(drawn)) == []
    assert sorted(set(drawn) - set(classes)) == []
    for name, cls in classes.items():
        if cls is errors.PaperbotError:
            continue
        ancestors = {base.__name__ for base in cls.__mro__[1:] if base.__module__ == errors.__name__}
        assert set(drawn[name]) <= ancestors, f"{name} is drawn under a class it does not inherit from"
        assert {base.__name__ for base in cls.__bases__} <= set(drawn[name]), f"{name}: a base is not drawn above it"
