"""The `paperbot` commands: one module each, with ``register(subparsers: Subcommands)`` (``bot/cli.py``)."""

from __future__ import annotations

import argparse
from typing import Protocol


class Subcommands(Protocol):
    """What a command's ``register`` uses of ``ArgumentParser.add_subparsers()``: its documented
    ``add_parser`` method (the object's class, ``argparse._SubParsersAction``, is private)."""

    def add_parser(self, name: str, *, help: str | None = ..., description: str | None = ...) -> argparse.ArgumentParser:
        ...
