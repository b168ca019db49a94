"""Settings: one typed object, built once at the entry point and passed down.

Values come from the environment and from a ``.env`` file in the working directory (the
environment wins). Nothing reads ``os.environ`` anywhere else. Every field documents the
variable that sets it; ``.env.example`` lists them all.
"""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Annotated, Literal

import platformdirs
from pydantic import AliasChoices, Field, SecretStr, ValidationError, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from retrieval.errors import ConfigError

CommaList = Annotated[list[str], NoDecode]


def _default_data_dir() -> Path:
    return Path(platformdirs.user_data_dir("paperbot", appauthor=False))


def _default_encoder_cache_dir() -> Path:
    return Path(platformdirs.user_cache_dir("paperbot", appauthor=False)) / "encoders"


def _env(name: str) -> AliasChoices:
    """Bind a field to exactly one environment variable (case-insensitive)."""
    return AliasChoices(name)


class Settings(BaseSettings):
    """Everything paperbot can be configured with. See ``.env.example``."""

    model_config = SettingsConfigDict(
        env_file=".env",
        env_file_encoding="utf-8",
        extra="ignore",
        populate_by_name=True,
        case_sensitive=False,
    )

    # --- storage -------------------------------------------------------------------------
    data_dir: Path = Field(
        default_factory=_default_data_dir,
        validation_alias=_env("PAPERBOT_DATA_DIR"),
        description="Where the index, the record store and caches live; one dir = one installation.",
    )
    demo_data_dir: Path | None = Field(
        default=None,
        validation_alias=_env("PAPERBOT_DEMO_DATA_DIR"),
        description="Where `paperbot demo` keeps the sample corpus's own index; unset = beside the data dir, "
                    "named like it with -demo (never in the data dir itself).",
    )
    database_url: SecretStr | None = Field(
        default=None,
        validation_alias=_env("PAPERBOT_DATABASE_URL"),
        description="The database holding the records, the roster, the follows and the Slack state "
                    "(retrieval.storage.database): postgresql+psycopg://user@host/dbname for a PostgreSQL server. "
                    "Unset = SQLite in the data dir (records.sqlite3). Secret: it may carry a password.",
    )
    chroma_url: str | None = Field(
        default=None,
        validation_alias=_env("PAPERBOT_CHROMA_URL"),
        description="URL of a `chroma run` server, e.g. http://127.0.0.1:8000. Unset = embedded.",
    )
    chroma_timeout: float = Field(
        default=10.0, gt=0, validation_alias=_env("PAPERBOT_CHROMA_TIMEOUT"),
        description="Seconds to wait for the Chroma server (connect, each read and write) before giving up.",
    )
    writer_wait_seconds: float = Field(
        default=600.0, ge=0, validation_alias=_env("PAPERBOT_WRITER_WAIT_SECONDS"),
        description="Seconds an ingest, sync or repair waits for another one writing to the same data dir "
                    "before giving up (retrieval.storage.locks); 0 = do not wait.",
    )
    collection: str = Field(
        default="papers",
        validation_alias=_env("PAPERBOT_COLLECTION"),
        pattern=r"^[a-zA-Z0-9][a-zA-Z0-9._-]{1,510}[a-zA-Z0-9]$",
        description="Chroma collection name (3-512 chars of [a-zA-Z0-9._-]).",
    )

    job_queue: bool = Field(
        default=False,
        validation_alias=_env("PAPERBOT_JOB_QUEUE"),
        description="Run the slow work (scheduled syncs, `ingest --jobs`, `sync --queue`, `doctor --repair --queue`) as jobs of "
                    "`paperbot worker` processes, on a queue in the PostgreSQL database (retrieval.jobs, "
                    "docs/workers.md). Needs PAPERBOT_DATABASE_URL; false = in-process, as always.",
    )
    job_retention_days: float = Field(
        default=7.0, ge=0, validation_alias=_env("PAPERBOT_JOB_RETENTION_DAYS"),
        description="How long the queue keeps finished jobs (succeeded, failed or cancelled), their results and "
                    "progress, and the Slack messages that followed them; the workers delete older ones once an hour. "
                    "0 keeps everything.",
    )
    worker_heartbeat_seconds: float = Field(
        default=10.0, gt=0, validation_alias=_env("PAPERBOT_WORKER_HEARTBEAT_SECONDS"),
        description="How often a `paperbot worker` says it is alive; a worker silent for 3 heartbeats is "
                    "taken for dead and its running jobs are retried by the others.",
    )

    # --- embeddings ------------------------------------------------------------------------
    encoder: Literal["auto", "torch", "onnx", "onnx-int8"] = Field(
        default="auto",
        validation_alias=_env("PAPERBOT_ENCODER"),
        description="Local encoder backend for all-MiniLM-L6-v2; auto: the fastest within the quality bar, "
                    "measured once per CPU (retrieval.index.encoders.choice); an existing index keeps its encoder.",
    )
    encode_ahead: bool = Field(
        default=True,
        validation_alias=_env("PAPERBOT_ENCODE_AHEAD"),
        description="Let a large ingest encode in a child process of its own while it writes the index (about "
                    "200 MB more memory while it runs; retrieval.index.encoders.encode_ahead). false: encode in "
                    "the ingesting process.",
    )
    encoder_cache_dir: Path = Field(
        default_factory=_default_encoder_cache_dir,
        validation_alias=_env("PAPERBOT_ENCODER_CACHE_DIR"),
        description="Where the ONNX exports and auto's measured choice live, shared by every data dir on the "
                    "machine and keyed by model and runtime versions (retrieval.index.encoders.cache). "
                    "Default: <user cache dir>/paperbot/encoders.",
    )

    # --- command line ----------------------------------------------------------------------
    progress_interval: float = Field(
        default=10.0, gt=0, validation_alias=_env("PAPERBOT_PROGRESS_INTERVAL"),
        description="When stderr is not a terminal (a log file, cron, CI, a container), long commands "
                    "(ingest, demo, fetch, sync, doctor --repair) print a progress line at least this "
                    "often, in seconds, instead of a progress bar.",
    )

    # --- LLM -------------------------------------------------------------------------------
    openai_api_key: SecretStr | None = Field(
        default=None, validation_alias=_env("OPENAI_API_KEY"),
        description="Key for the OpenAI-compatible endpoint. Unset = extractive answers.",
    )
    openai_base_url: str | None = Field(
        default=None, validation_alias=_env("OPENAI_BASE_URL"),
        description="Base URL of an OpenAI-compatible endpoint (vLLM, Ollama, llama.cpp, Azure...).",
    )
    llm_model: str = Field(default="gpt-4o-mini", validation_alias=_env("PAPERBOT_LLM_MODEL"))
    llm_timeout: float = Field(
        default=60.0, gt=0, validation_alias=_env("PAPERBOT_LLM_TIMEOUT"),
        description="Seconds the model may take to start answering a request, reading the prompt included "
                    "(a small local model reads a few dozen prompt tokens a second). A request that passes it "
                    "is not retried: the same prompt would be as slow again.",
    )
    llm_stall_timeout: float = Field(
        default=30.0, gt=0, validation_alias=_env("PAPERBOT_LLM_STALL_TIMEOUT"),
        description="Seconds the model may pause between two pieces of its reply once it has started.",
    )
    llm_max_retries: int = Field(
        default=2, ge=0, le=10, validation_alias=_env("PAPERBOT_LLM_MAX_RETRIES"),
        description="Requests repeated after a connection failure, HTTP 408/409/429 or 5xx (honouring "
                    "Retry-After), as long as the deadline leaves room; never after a timeout.",
    )
    llm_temperature: float = Field(default=0.0, ge=0, le=2, validation_alias=_env("PAPERBOT_LLM_TEMPERATURE"))
    llm_frequency_penalty: float = Field(
        default=0.0, ge=-2, le=2, validation_alias=_env("PAPERBOT_LLM_FREQUENCY_PENALTY"),
        description="OpenAI's frequency_penalty, sent when not 0: discourages a small model's loops, but also "
                    "repeated citation marks, so keep it small (0.1-0.3). 0: not sent.",
    )
    # An answer is five cited sentences: 800 tokens is ample, and a model that runs on (small
    # local ones do, to their context limit) is cut there instead of keeping a worker for minutes.
    llm_max_tokens: int = Field(default=800, ge=16, le=32_768, validation_alias=_env("PAPERBOT_LLM_MAX_TOKENS"))
    llm_prompt_budget: int = Field(
        default=1500, ge=300, le=200_000, validation_alias=_env("PAPERBOT_LLM_PROMPT_BUDGET"),
        description="Tokens a prompt may hold (instructions, question and records): abstracts are trimmed to "
                    "the sentences that match the question and records that add nothing left out until it "
                    "fits. Counted by the server's /tokenize when it has one (llama.cpp), else as the embedding "
                    "model's WordPiece tokens x 1.1 (retrieval.answers.prompt_tokens).",
    )
    llm_deadline: float = Field(
        default=120.0, gt=0, validation_alias=_env("PAPERBOT_LLM_DEADLINE"),
        description="Seconds for all the model calls of one answer together (every attempt, every check), "
                    "however the server trickles its reply: past it the answer is the extractive one.",
    )
    # Two short calls before the answer (retrieval.answers.model_checks), inside the same deadline.
    # Off by default: with the 1.5B local model measured so far they cost answers (docs/performance.md).
    llm_field_terms: bool = Field(
        default=False, validation_alias=_env("PAPERBOT_LLM_FIELD_TERMS"),
        description="Ask the model for the question in the field's terms and retrieve for both.",
    )
    llm_judge_relevance: bool = Field(
        default=False, validation_alias=_env("PAPERBOT_LLM_JUDGE_RELEVANCE"),
        description="Ask the model which retrieved records are about the question; only those are cited.",
    )

    # --- retrieval -------------------------------------------------------------------------
    min_relevance: float | None = Field(
        default=None, validation_alias=_env("PAPERBOT_MIN_RELEVANCE"),
        description="Fused relevance score a record with an abstract needs to count as evidence (title-only "
                    "records: the same times 0.54/0.51). Unset: the evidence judgement decides by meaning "
                    "(retrieval.answers.judgement).",
    )

    # --- external sources ------------------------------------------------------------------
    arxiv_url: str = Field(default="https://export.arxiv.org/api/query", validation_alias=_env("PAPERBOT_ARXIV_URL"))
    openalex_url: str = Field(default="https://api.openalex.org", validation_alias=_env("PAPERBOT_OPENALEX_URL"))
    crossref_url: str = Field(default="https://api.crossref.org", validation_alias=_env("PAPERBOT_CROSSREF_URL"))
    contact_email: str | None = Field(
        default=None, validation_alias=_env("PAPERBOT_CONTACT_EMAIL"),
        description="Sent to OpenAlex/Crossref to join their polite pools.",
    )
    arxiv_delay: float = Field(default=3.0, ge=0, validation_alias=_env("PAPERBOT_ARXIV_DELAY"),
                               description="Seconds between arXiv API calls (their politeness rule).")
    http_timeout: float = Field(default=30.0, gt=0, validation_alias=_env("PAPERBOT_HTTP_TIMEOUT"))
    http_max_retries: int = Field(default=4, ge=0, le=10, validation_alias=_env("PAPERBOT_HTTP_MAX_RETRIES"))

    # --- Slack -----------------------------------------------------------------------------
    slack_bot_token: SecretStr | None = Field(default=None, validation_alias=_env("SLACK_BOT_TOKEN"))
    slack_app_token: SecretStr | None = Field(default=None, validation_alias=_env("SLACK_APP_TOKEN"))
    slack_signing_secret: SecretStr | None = Field(default=None, validation_alias=_env("SLACK_SIGNING_SECRET"))
    slack_api_url: str | None = Field(default=None, validation_alias=_env("SLACK_API_URL"))
    slack_allowed_teams: CommaList = Field(default_factory=list, validation_alias=_env("PAPERBOT_SLACK_ALLOWED_TEAMS"))
    slack_allowed_channels: CommaList = Field(default_factory=list, validation_alias=_env("PAPERBOT_SLACK_ALLOWED_CHANNELS"))
    slack_allowed_users: CommaList = Field(default_factory=list, validation_alias=_env("PAPERBOT_SLACK_ALLOWED_USERS"))
    slack_sync_users: CommaList = Field(
        default_factory=list, validation_alias=_env("PAPERBOT_SLACK_SYNC_USERS"),
        description="Who may start a roster sync with `/paperbot sync`: comma-separated user ids, or `*` for "
                    "everyone the allow-lists admit; empty (the default): nobody, syncs stay the operator's.",
    )
    slack_workers: int = Field(default=4, ge=1, le=64, validation_alias=_env("PAPERBOT_SLACK_WORKERS"))
    slack_user_queue_limit: int = Field(default=5, ge=1, validation_alias=_env("PAPERBOT_SLACK_USER_QUEUE_LIMIT"))
    sync_interval_hours: float | None = Field(
        default=None, gt=0, validation_alias=_env("PAPERBOT_SYNC_INTERVAL_HOURS"),
        description="When set, `paperbot serve` runs a sync on this schedule and posts follow alerts.",
    )
    alert_poll_seconds: float = Field(
        default=60.0, gt=0, le=3600, validation_alias=_env("PAPERBOT_ALERT_POLL_SECONDS"),
        description="How often `paperbot serve` looks for new papers to post as follow alerts.",
    )
    replica_id: str | None = Field(
        default=None, min_length=1, max_length=200, validation_alias=_env("PAPERBOT_REPLICA_ID"),
        description="This `paperbot serve` process's name among the replicas sharing a database "
                    "(log lines, delivery claims); unset: the host name and the process id.",
    )
    cluster_heartbeat_seconds: float = Field(
        default=5.0, gt=0, le=300, validation_alias=_env("PAPERBOT_CLUSTER_HEARTBEAT_SECONDS"),
        description="How often a serving replica marks itself alive and looks for events a stopped replica "
                    "left unanswered; a replica silent for three times this long counts as stopped.",
    )
    cluster_stall_seconds: float = Field(
        default=600.0, gt=0, validation_alias=_env("PAPERBOT_CLUSTER_STALL_SECONDS"),
        description="How long a serving replica may have questions open without finishing any before it counts "
                    "as hung: it stops heart-beating (the other replicas take its questions over) and /readyz "
                    "answers 503 until one finishes. Keep it above the longest answer (the model's timeouts "
                    "and retries).",
    )

    @field_validator("slack_allowed_teams", "slack_allowed_channels", "slack_allowed_users", "slack_sync_users",
                     mode="before")
    @classmethod
    def _split_commas(cls, value: object) -> object:
        if isinstance(value, str):
            return [part.strip() for part in value.split(",") if part.strip()]
        return value

    @field_validator("chroma_url", "openai_base_url", "slack_api_url", mode="before")
    @classmethod
    def _blank_is_unset(cls, value: object) -> object:
        if isinstance(value, str) and not value.strip():
            return None
        return value

    @field_validator("openai_api_key", "database_url", mode="before")
    @classmethod
    def _blank_key_is_unset(cls, value: object) -> object:
        if isinstance(value, str) and not value.strip():
            return None
        return value

    @field_validator("chroma_url", "arxiv_url", "openalex_url", "crossref_url", "openai_base_url", "slack_api_url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("http://", "https://")):
            raise ValueError("must start with http:// or https://")
        return value.rstrip("/") if value else value

    # --- derived paths ---------------------------------------------------------------------
    @property
    def llm_configured(self) -> bool:
        """True when an LLM endpoint is set: a key, or a base URL (local servers need no key)."""
        return self.openai_api_key is not None or self.openai_base_url is not None

    @property
    def demo_dir(self) -> Path:
        """The sample corpus's own installation (``paperbot demo``): ``demo_data_dir``, else
        ``<data_dir>-demo`` beside the data dir."""
        return self.demo_data_dir or self.data_dir.with_name(self.data_dir.name + "-demo")

    def for_demo(self) -> Settings:
        """These settings pointed at ``demo_dir`` with an embedded vector store: the demo never
        writes into the group's data dir, a shared Chroma server or a shared database."""
        return self.model_copy(update={"data_dir": self.demo_dir, "chroma_url": None, "database_url": None})

    @property
    def database_path(self) -> Path:
        """The SQLite file of the default database (used when ``database_url`` is unset): the record
        store's file, which the database grew out of (``storage.legacy_records``)."""
        return self.records_path

    @property
    def chroma_dir(self) -> Path:
        return self.data_dir / "chroma"

    @property
    def records_path(self) -> Path:
        return self.data_dir / "records.sqlite3"

    @property
    def lexical_dir(self) -> Path:
        return self.data_dir / "lexical"

    @property
    def cache_dir(self) -> Path:
        return self.data_dir / "cache"

    @property
    def writer_lock_path(self) -> Path:
        """The OS lock one writer at a time holds (``retrieval.storage.locks``)."""
        return self.data_dir / "writer.lock"

    @property
    def writer_holder_path(self) -> Path:
        """Who holds the writer lock (pid, activity, since), for the waiter's messages."""
        return self.data_dir / "writer.json"


_VARIABLE_BY_FIELD = {
    name: (field.validation_alias.choices[0] if isinstance(field.validation_alias, AliasChoices) else name.upper())
    for name, field in Settings.model_fields.items()
}


def load_settings(**overrides: object) -> Settings:
    """Build the settings, turning validation failures into one line naming the variable."""
    try:
        return Settings(**overrides)  # type: ignore[arg-type]
    except ValidationError as exc:
        first = exc.errors()[0]
        field = str(first["loc"][0]) if first["loc"] else "?"
        variable = _VARIABLE_BY_FIELD.get(field, field)
        raise ConfigError(
            f"Invalid setting {variable}: {first['msg']}.",
            hint=f"Fix {variable} in your environment or .env file (see .env.example).",
        ) from None


# --- the data dir is private to its owner ------------------------------------------------------

PRIVATE_UMASK = 0o077  # what paperbot creates in the data dir: files 0600, directories 0700
_user_umask: int | None = None  # the process's umask before ``open_data_dir`` changed it


def unwritable_reason(path: Path) -> str | None:
    """Why this process cannot write to ``path``, or None when it can.

    ``path`` is a file or a directory; when it does not exist, the nearest existing parent is
    asked (what would have to be created there). The reason is "a read-only file system" (a
    read-only mount: a snapshot on a shared volume, a backup) or "no write permission for
    <user>". Root writes through permissions, so for root only a read-only mount counts. Asks
    the OS (``access``, ``statvfs``) and never writes; where that cannot be told (Windows
    directories), None.
    """
    target = next((candidate for candidate in (path, *path.parents) if os.path.lexists(candidate)), None)
    if target is None or os.access(target, os.W_OK):
        return None
    try:
        read_only_mount = bool(os.statvfs(target).f_flag & os.ST_RDONLY)
    except (AttributeError, OSError):  # no statvfs (Windows), or it cannot be asked
        read_only_mount = False
    if read_only_mount:
        return "a read-only file system"
    return f"no write permission for {_user_name()}"


def _user_name() -> str:
    try:
        import pwd

        return pwd.getpwuid(os.getuid()).pw_name
    except (ImportError, KeyError, AttributeError):  # no pwd (Windows), or a uid without a name
        return f"user {getattr(os, 'getuid', lambda: '?')()}"


def open_data_dir(settings: Settings, notice: Callable[[str], None] | None = None) -> Path:
    """Make the data dir private to its owner before anything is written in it (idempotent).

    Sets the process umask to 0o077, so every file paperbot, SQLite (with its -wal/-shm),
    Chroma and bm25s create from then on is 0600 and every directory 0700: the index, the
    Slack state and the logs of an installation are not readable by the other users of a shared
    machine. Creates the data dir 0700 (missing parents with the user's own umask: they are not
    ours) and tightens an existing data dir that others can enter, saying so through
    ``notice``; a mode is never loosened. Files written outside the data dir on request (the
    ``--plot DIR`` pictures) get the user's permissions back through ``with_user_permissions``.
    A data dir this process cannot write (``unwritable_reason``: a read-only snapshot) is left
    exactly as it is, silently: reads work there, and what must write names the cause.
    Never raises: a data dir that cannot be created is reported by the first write that needs it.
    """
    global _user_umask
    say = notice or logging.getLogger(__name__).warning
    data_dir = settings.data_dir
    previous = os.umask(PRIVATE_UMASK)
    if _user_umask is None:
        _user_umask = previous
    if data_dir.is_dir() and unwritable_reason(data_dir) is not None:
        return data_dir
    try:
        if not data_dir.parent.exists():
            os.umask(_user_umask)
            try:
                data_dir.parent.mkdir(parents=True, exist_ok=True)
            finally:
                os.umask(PRIVATE_UMASK)
        data_dir.mkdir(mode=0o700, exist_ok=True)
        mode = stat.S_IMODE(data_dir.stat().st_mode)
    except OSError:
        return data_dir
    if os.name == "posix" and mode & 0o077:
        try:
            os.chmod(data_dir, mode & 0o700)
        except OSError as exc:
            say(f"The data dir {data_dir} is open to other users (mode {mode:04o}) and could not be made "
                f"private: {exc.strerror or exc}.")
        else:
            say(f"Made the data dir {data_dir} private (mode {mode:04o} -> {mode & 0o700:04o}): "
                "other users could read its index, logs and Slack state.")
    return data_dir


def with_user_permissions(paths: Iterable[Path]) -> None:
    """Give files and directories paperbot made outside the data dir the modes the user's own
    umask gives (``open_data_dir`` narrowed the process umask for the data dir's sake)."""
    if _user_umask is None or os.name != "posix":
        return
    for path in paths:
        try:
            os.chmod(path, (0o777 if path.is_dir() else 0o666) & ~_user_umask)
        except OSError:
            continue
