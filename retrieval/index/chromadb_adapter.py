"""What the dense index needs of chromadb that its public API does not offer, in one module.

chromadb 1.5.9 has neither a request timeout for its HTTP client nor a way to drop the
in-process system of a ``PersistentClient`` whose start failed. Both workarounds below reach
into chromadb's private names; they are kept here alone, so that a chromadb upgrade is reviewed
in this module, and ``tests/index/test_chromadb_adapter.py`` fails on a release that no longer
fits them. Should a release move what they rely on, each logs a warning and paperbot goes on
without it (requests unbounded; a failed start sticking until the process restarts).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import httpx

log = logging.getLogger(__name__)


def _version() -> str:
    import chromadb

    return str(chromadb.__version__)


def bound_requests(client: Any, timeout: float) -> bool:
    """Give every later request of a ``chromadb.HttpClient`` a timeout (connect, read, write, pool);
    False (after a warning) when this chromadb keeps its session elsewhere.

    chromadb 1.5.9's client sends everything through the ``httpx.Client`` it keeps at
    ``client._server._session``, made with ``timeout=None``.
    """
    session = getattr(getattr(client, "_server", None), "_session", None)
    if not isinstance(session, httpx.Client):
        log.warning("chromadb %s keeps no httpx session where paperbot expects it: requests to the Chroma "
                    "server have no timeout (PAPERBOT_CHROMA_TIMEOUT is ignored).", _version())
        return False
    session.timeout = httpx.Timeout(timeout)
    return True


def forget_system(path: Path) -> None:
    """Drop chromadb's cached in-process system of ``path`` (stopping it), if there is one.

    chromadb 1.5.9 caches one system per directory (``SharedSystemClient._identifier_to_system``
    and its reference counts) and keeps it even when starting it failed: every later
    ``PersistentClient`` of that path would reuse the broken one ("'RustBindingsAPI' object has
    no attribute 'bindings'"), also after the directory was moved aside and a new one created.
    Its public ``clear_system_cache`` drops every path's system, the live ones too.
    """
    try:
        from chromadb.api.shared_system_client import SharedSystemClient
    except ImportError:
        systems = counts = None
    else:
        systems = getattr(SharedSystemClient, "_identifier_to_system", None)
        counts = getattr(SharedSystemClient, "_identifier_to_refcount", None)
    if not isinstance(systems, dict) or not isinstance(counts, dict):
        log.warning("chromadb %s keeps its systems elsewhere than paperbot expects: a failed Chroma start "
                    "may stick until the process restarts.", _version())
        return
    system = systems.pop(str(path), None)
    counts.pop(str(path), None)
    if system is not None:
        try:
            system.stop()
        except Exception:
            log.debug("stopping a failed Chroma system raised", exc_info=True)
