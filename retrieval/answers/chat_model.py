"""Which chat model writes answers: a given model, explicitly none, or the one the settings describe.

``None`` always means "no model" (extractive answers). "Build the model the settings describe"
is said with ``FROM_SETTINGS``, resolved by ``resolve_chat_model``; with no LLM configured
(``Settings.llm_configured``) that is no model either, and the LLM stack (langchain, openai) is
then not even imported.
"""

from __future__ import annotations

from enum import Enum
from typing import TYPE_CHECKING, Literal, TypeAlias

from retrieval.config import Settings

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel


class FromSettings(Enum):
    """The one value of ``FROM_SETTINGS``: build the chat model from the settings."""

    FROM_SETTINGS = "from settings"


FROM_SETTINGS = FromSettings.FROM_SETTINGS

ChatModelChoice: TypeAlias = "BaseChatModel | Literal[FromSettings.FROM_SETTINGS] | None"
"""A chat model, ``None`` for none (extractive answers), or ``FROM_SETTINGS``."""


def configured_chat_model(settings: Settings) -> BaseChatModel | None:
    """``retrieval.answers.llm.build_chat_model``, which is not even imported when no model is configured."""
    if not settings.llm_configured:
        return None
    from retrieval.answers.llm import build_chat_model

    return build_chat_model(settings)


def resolve_chat_model(choice: ChatModelChoice, settings: Settings) -> BaseChatModel | None:
    """The model ``choice`` names: itself, none, or (``FROM_SETTINGS``) ``configured_chat_model``."""
    if isinstance(choice, FromSettings):
        return configured_chat_model(settings)
    return choice
