"""What every CLI command receives: settings, the assistant (the only way into the core), and where to write.

rich is imported when the first message or progress bar is shown, not before. Progress is a rich
bar at a terminal and plain lines elsewhere (``progress``).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TextIO

from bot.render import visible
from retrieval.config import Settings

if TYPE_CHECKING:
    from rich.console import Console

    from retrieval.assistant import Assistant


@dataclass
class CliContext:
    """Built once in ``main``; the assistant (and so the index and model) opens lazily, and with
    it the data dir (``config.open_data_dir``: made private, created when missing): a command
    that never needs the assistant (`paperbot demo` for the user's own dir) leaves it alone."""

    settings: Settings
    stdout: TextIO = field(default_factory=lambda: sys.stdout)
    console: Console | None = None  # for stderr; None: a plain one, made on first use
    _assistant: Assistant | None = None

    @property
    def assistant(self) -> Assistant:
        if self._assistant is None:
            from retrieval.assistant import Assistant

            self._assistant = Assistant(self.settings, notice=self.note)
        return self._assistant

    def lacks_data_dir(self) -> bool:
        """Whether the records would be in a data dir that does not exist (no database server is
        configured): a mistyped ``PAPERBOT_DATA_DIR``, or nothing indexed yet."""
        return self.settings.database_url is None and not self.settings.data_dir.exists()

    def over_empty_data_dir(self) -> CliContext:
        """For a command that only reads, when ``lacks_data_dir``: say so once on stderr, and return a
        context whose data dir is an empty one of this process's own (removed when it exits), with
        an embedded vector store, so that the command answers as over an empty index (its output
        and exit status unchanged) without creating the user's data dir or touching a server."""
        import atexit
        import shutil
        import tempfile
        from pathlib import Path

        self.note(f"The data dir {self.settings.data_dir} does not exist, so nothing is indexed there (it was not "
                  "created). Check PAPERBOT_DATA_DIR, or add papers with `paperbot ingest FILE` (or try `paperbot demo`).")
        holder = Path(tempfile.mkdtemp(prefix="paperbot-empty-"))
        atexit.register(shutil.rmtree, holder, True)
        empty = self.settings.model_copy(update={"data_dir": holder / "data", "chroma_url": None})
        return CliContext(settings=empty, stdout=self.stdout, console=self.console)

    @property
    def width(self) -> int | None:
        """The columns text results wrap at when stdout is a terminal (``bot.render.text_width``);
        None for a pipe or a file (``bot.render``: one record per line)."""
        isatty = getattr(self.stdout, "isatty", None)
        if isatty is None or not isatty():
            return None
        from bot.render import text_width

        return text_width()

    def out(self, text: str = "") -> None:
        """Write a line of the command's result to stdout (messages and progress go to stderr)."""
        self.stdout.write(visible(text) + "\n")

    def out_json(self, payload: Any) -> None:
        self.stdout.write(json.dumps(payload, ensure_ascii=False, indent=2) + "\n")

    def note(self, text: str) -> None:
        """A one-line message on stderr (never mixed into --json output)."""
        console = self._stderr()  # wrapped at a terminal's width; to a pipe or a file, one line
        console.print(visible(text), markup=False, highlight=False, soft_wrap=not console.is_terminal)

    def _stderr(self) -> Console:
        if self.console is None:
            from rich.console import Console

            self.console = Console(stderr=True, highlight=False)
        return self.console

    @contextmanager
    def progress(self, description: str, total: int | None = None, *,
                 unit: str = "records") -> Iterator[Callable[[int, int | None], None]]:
        """Progress on stderr; yields ``update(done, total)`` (total None: not known).

        At a terminal, a rich bar. Otherwise (a file, a pipe: cron, nohup, CI, a container log),
        where a bar shows nothing until the end, plain lines (``bot.progress.line_progress``): one
        at least every ``settings.progress_interval`` seconds however rarely ``update`` is
        called, and a last one saying how it ended. ``unit`` names what ``done`` counts.
        """
        console = self._stderr()
        if not console.is_terminal:
            from bot.progress import line_progress

            with line_progress(description, self.note, total=total, unit=unit,
                               interval=self.settings.progress_interval) as update:
                yield update
            return

        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        bar = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=console,
            transient=False,
        )
        with bar:
            task = bar.add_task(description, total=total)

            def update(done: int, new_total: int | None) -> None:
                bar.update(task, completed=done, total=new_total)

            yield update
