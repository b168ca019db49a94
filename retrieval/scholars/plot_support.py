"""Whether the scholar pictures can be drawn: matplotlib is the optional extra ``plots``.

``paperbot summarize --plot`` and the Slack summary's pictures need it; everything else works
without it. ``plots_missing`` gives the error the doors show; ``plotting_installed`` lets a
door leave the pictures out quietly (the Slack app says so once, at start-up).
"""

from __future__ import annotations

import importlib.util

from retrieval.errors import NotInstalledError

#: What to install for the pictures.
PLOTS_INSTALL = "pip install 'paperbot[plots]'"


def plotting_installed() -> bool:
    """True when matplotlib can be imported (found on the path; not imported here)."""
    try:
        return importlib.util.find_spec("matplotlib") is not None
    except (ImportError, ValueError):  # a broken or half-removed installation
        return False


def plots_missing() -> NotInstalledError | None:
    """The error the doors show (with what to install) when the pictures cannot be drawn, else None."""
    if plotting_installed():
        return None
    return NotInstalledError("The scholar pictures need matplotlib, which is not installed.",
                             hint=f"Install it with: {PLOTS_INSTALL}")
