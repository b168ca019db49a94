"""How many tokens a prompt is: what the time a model needs to read it depends on.

``approximate_tokens`` is the count when no tokenizer of the model is at hand: characters / 4,
the usual figure for English prose under the byte-pair tokenizers of today's chat models.
"""

from __future__ import annotations

import math

#: Characters per token of English prose under a chat model's byte-pair tokenizer.
CHARS_PER_TOKEN = 4.0


def approximate_tokens(text: str) -> int:
    """``text``'s tokens, approximated as characters / ``CHARS_PER_TOKEN`` (rounded up)."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)
