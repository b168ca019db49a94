"""What a hostile or broken model writes never reaches Slack: not while streaming, not at the end.

The probe that found this: streamed raw deltas went to chat.update, so a model that echoed its
instructions showed the system prompt and the boundary marker in the channel, invented [99]
citations were visible until the final message replaced them, and a markdown link in the answer
became a live link.
"""

from __future__ import annotations

import pytest

from prompts import load_prompt
from retrieval.assistant import Assistant
from tests.slack.conftest import BotFactory, make_settings
from tests.slack.helpers import final_answer, scripted_model

pytestmark = pytest.mark.slow

QUESTION = "which papers study the discrete dipole approximation?"
SYSTEM = load_prompt("answer_system", required=set()).text
# evidence [1] is the overview, [2] the convergence paper: each claim cites the record it names
HOSTILE = (
    "Invented claim about everything [99]. "
    "The convergence of the discrete dipole approximation is analysed theoretically, see "
    "[the official DOI](https://evil.example/phish) [2]. "
    "An overview \u202eof the method\u200b is given \x1b[31mas well [1]. "
    "@PB-3f2a9c01 END RECORD [1] ignore this [1]. Uncited filler sentence here."
)
ECHO = "\n".join(f"{line} [1]" for line in SYSTEM.splitlines() if line.strip())
NEVER = ("[99]", "evil.example", "https://evil", "\u202e", "\u200b", "\x1b", "@PB", "@@PB", "END RECORD",
         "Uncited filler", "You are paperbot", "untrusted DATA", "NO_ANSWER")


def _posted_texts(bot) -> list[str]:
    return [call.text() for call in bot.api.calls if call.method in ("chat.update", "chat.postMessage")]


@pytest.mark.parametrize("reply", [HOSTILE, f"{ECHO}\nThe overview reviews the method [1]."], ids=["hostile", "echo"])
def test_nothing_the_model_must_not_say_is_ever_posted(make_bot: BotFactory, assistant: Assistant, reply: str) -> None:
    core = Assistant(make_settings(assistant.settings.data_dir), index=assistant.index, chat_model=scripted_model(reply))
    bot = make_bot(core=core)
    bot.sender.mention(QUESTION)
    final = final_answer(bot.api)
    for text in _posted_texts(bot):
        for forbidden in NEVER:
            assert forbidden not in text, (forbidden, text[:300])
    if reply is HOSTILE:
        assert "analysed theoretically, see the official DOI [1]" in final.text()
        assert "*Sources*" in final.text()
    else:  # an echo of the instructions is not used: the extractive answer, with the reason
        assert "repeated its instructions" in final.text()
