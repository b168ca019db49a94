"""Whether this process can answer now: what a load balancer's readiness probe reads (``/readyz``)."""

from __future__ import annotations

from pydantic import BaseModel


class Readiness(BaseModel):
    """``ready`` when every check passed; ``checks`` names each one and what it found, in one line
    ("ok: SQLite /data/records.sqlite3, schema 0003_records", or the error a user would see)."""

    ready: bool
    checks: dict[str, str]
