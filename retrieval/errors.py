"""The errors paperbot raises on purpose.

Every error carries a ``user_message``: one line a person can act on, safe to show in a
terminal or in Slack (it never contains a secret or a traceback). The doors print that line
and exit non-zero (CLI) or post it (Slack); anything that is *not* a ``PaperbotError`` is a bug,
logged with a reference id and shown only as a short apology.

    PaperbotError
    ├── ConfigError            a setting is missing or invalid (names the variable)
    │   └── NotInstalledError      an optional part is not installed (names the extra)
    ├── InputError             the user's own input is unusable (empty question, bad option)
    │   └── UnknownScholarError    no indexed person matches a name (carries suggestions)
    ├── ParseError             one item of a file or response cannot be read (names the item)
    ├── SourceError            an external API (arXiv, OpenAlex, Crossref) failed or stayed down
    ├── IndexUnavailableError  the vector store (embedded or server) cannot be reached or written
    │   ├── IndexDamagedError      the embedded index's files are damaged (`doctor --repair`)
    │   └── IndexDiskFullError     the disk under the embedded index is full (also a DiskFullError)
    ├── LLMUnavailableError    the chat model endpoint failed after retries
    ├── RepairRefusedError     `doctor --repair` would destroy what the record store cannot give back
    ├── StoppedFollowingError  a stopping process let go of a queued job it followed (the job runs on)
    └── StorageError           the data directory cannot be written (disk full, permissions)
        ├── DiskFullError          the disk holding the data dir is full; nothing was lost
        │   └── IndexDiskFullError     (also an IndexUnavailableError, above)
        ├── BusyError              another process is writing to the data dir (names its pid)
        ├── DataDirReadOnlyError   a write was asked of a read-only data dir (names the cause)
        ├── DatabaseDamagedError   the database's file or pages are damaged (names it, says what to do)
        └── PartlySavedError       a write failed part-way: how much was saved, how to finish

Defined elsewhere, beside what raises it: ``bot.slack.queue.QueueFullError`` (an
``InputError``: one person already has as many questions waiting as allowed).
"""

from __future__ import annotations


class PaperbotError(Exception):
    """Base of every error paperbot raises deliberately."""

    def __init__(self, user_message: str, *, hint: str | None = None) -> None:
        super().__init__(user_message)
        self.user_message = user_message
        self.hint = hint

    def __str__(self) -> str:
        if self.hint:
            return f"{self.user_message} {self.hint}"
        return self.user_message


class ConfigError(PaperbotError):
    """A setting is missing or invalid; the message names the variable."""


class NotInstalledError(ConfigError):
    """An optional part of paperbot is not installed; the hint names the extra that brings it
    (``pip install 'paperbot[plots]'``)."""


class InputError(PaperbotError):
    """The user's own input cannot be used as given."""


class UnknownScholarError(InputError):
    """No indexed or rostered person matches the name."""

    def __init__(
        self,
        name: str,
        suggestions: list[str] | None = None,
        *,
        message: str | None = None,
        hint: str | None = None,
    ) -> None:
        self.name = name
        self.suggestions = list(suggestions or [])
        message = message or f"No indexed scholar matches {name!r}."
        if self.suggestions:
            hint = "Did you mean: " + ", ".join(self.suggestions) + "?"
        elif hint is None:
            hint = "Index their papers first, e.g. `paperbot ingest openalex --author ID`."
        super().__init__(message, hint=hint)


class ParseError(PaperbotError):
    """One item of a file or an API response cannot be read."""

    def __init__(self, user_message: str, *, source: str = "", item: str = "") -> None:
        super().__init__(user_message)
        self.source = source
        self.item = item


class SourceError(PaperbotError):
    """An external metadata API failed or stayed down after retries."""

    def __init__(self, source: str, user_message: str, *, status: int | None = None) -> None:
        super().__init__(f"{source}: {user_message}")
        self.source = source
        self.status = status


class IndexUnavailableError(PaperbotError):
    """The vector store cannot be reached or written."""


class LLMUnavailableError(PaperbotError):
    """The chat model endpoint failed after retries (down, slow, or answering garbage)."""


class StorageError(PaperbotError):
    """The data directory cannot be written (disk full, permissions, read-only mount)."""


class DiskFullError(StorageError):
    """The disk holding the data directory is full: a recoverable state, nothing was lost.

    ``doing`` says what could not be done ("write to the record store /data/records.sqlite3");
    ``where`` is the data directory on that disk, when known; ``disk`` says which disk (a database
    server's, for PostgreSQL). Free space and run it again.
    """

    def __init__(self, doing: str, *, where: str | None = None, disk: str = "the disk holding PAPERBOT_DATA_DIR") -> None:
        place = f"{disk}, {where}" if where else disk
        super().__init__(f"Cannot {doing}: the disk is full ({place}); nothing was changed.",
                         hint="Free some disk space and retry; nothing was lost.")
        self.doing = doing
        self.where = where


class IndexDiskFullError(DiskFullError, IndexUnavailableError):
    """The disk under the embedded vector index is full: both a full disk and an index that
    cannot be written (or, for Chroma, even opened)."""


class IndexDamagedError(IndexUnavailableError):
    """The embedded vector index (Chroma's files) is damaged; ``doctor --repair`` rebuilds it.

    ``detail`` is what Chroma said ("database disk image is malformed").
    """

    def __init__(self, user_message: str, *, hint: str | None = None, detail: str = "") -> None:
        super().__init__(user_message, hint=hint)
        self.detail = detail


class RepairRefusedError(PaperbotError):
    """``doctor --repair`` would destroy derived data that the record store cannot give back."""


class DataDirReadOnlyError(StorageError):
    """Something must be written to a data dir this process cannot write: a read-only mount (a
    snapshot on a shared volume, a backup) or a directory without write permission.

    Reads work on such a dir; this is raised by what must write (ingest, sync, a repair, a roster
    change) before anything was changed. ``doing`` says what could not be done ("ingest"),
    ``data_dir`` which dir and ``reason`` why it cannot be written ("a read-only file system").
    """

    def __init__(self, doing: str, *, data_dir: str, reason: str) -> None:
        super().__init__(f"Cannot {doing}: the data dir {data_dir} is read-only ({reason}); nothing was changed.",
                         hint="Copy it to a writable place, or point PAPERBOT_DATA_DIR at a writable copy.")
        self.doing = doing
        self.data_dir = data_dir
        self.reason = reason


class DatabaseDamagedError(StorageError):
    """The database (``storage.database``) is damaged: SQLite says its file is not a database or
    is malformed, or PostgreSQL reports corrupted data. ``where`` names the database (a path, or
    a URL without its password); nothing was changed by the failed call."""

    def __init__(self, doing: str, *, where: str) -> None:
        super().__init__(f"Cannot {doing}: the database {where} is damaged; nothing was changed.",
                         hint="Restore it from a backup (docs/postgres.md says how to take one).")
        self.doing = doing
        self.where = where


class BusyError(StorageError):
    """Another process held the data dir's writer lock for longer than the wait allowed.

    Raised before anything was written; ``pid``, ``activity`` ("ingest", "sync", "repair") and
    ``since`` describe the holder when it said who it is (None otherwise).
    """

    def __init__(self, user_message: str, *, hint: str | None = None, pid: int | None = None,
                 activity: str | None = None, since: str | None = None) -> None:
        super().__init__(user_message, hint=hint)
        self.pid = pid
        self.activity = activity
        self.since = since


class StoppedFollowingError(PaperbotError):
    """This process stopped following a queued job (it is shutting down); the job runs on in its
    worker and leaves its report in the database for whoever follows it next."""


class PartlySavedError(StorageError):
    """A long write (an ingest) stopped on ``cause`` after some of its committed batches: the
    message says how many of ``total`` records were saved, and that running the same command
    again completes the rest (saved records come back unchanged)."""

    def __init__(self, cause: StorageError, *, saved: int, total: int) -> None:
        reason = cause.user_message.removesuffix(" nothing was changed.").removesuffix(";")
        super().__init__(f"{reason}. {saved:,} of {total:,} records were saved before that; "
                         "each saved batch is complete and consistent.",
                         hint="Fix the cause and run the same command again: it completes the rest.")
        self.cause = cause
        self.saved = saved
        self.total = total
