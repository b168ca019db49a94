"""The test session's encoder cache: one temp dir, exported into once, used by every test and subprocess.

The product keeps the ONNX exports and ``auto``'s measured choice in one cache per machine
(``settings.encoder_cache_dir``; default ``<user cache dir>/paperbot/encoders``, see
``retrieval.index.encoders.cache``). The suite must never write to the user's real one, and should
export (tens of seconds, 143 MB) and probe once per session, not once per test:

* ``use_session_encoder_cache()``, called by ``tests/conftest.py`` before anything is collected,
  points ``PAPERBOT_ENCODER_CACHE_DIR`` at ``<tmp>/paperbot/encoders`` *and* ``XDG_CACHE_HOME`` at
  ``<tmp>``, so that the default resolves to the same dir in processes whose environment drops the
  ``PAPERBOT_*`` variables (the reliability suite's clean environment, the Slack serve test).
* ``shared_model_cache()`` makes the export and the probe there on first call (in this process,
  so no ``paperbot`` subprocess has to); ``link_model_cache`` makes a data dir after that.

Tests of the export itself (``tests/index/encoders``) use their own cache dirs where they damage or
re-make exports.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

from retrieval.config import Settings

_session: list[Path] = []
_made: list[Path] = []


def use_session_encoder_cache() -> Path:
    """Point the encoder cache setting (and the user cache dir it defaults to) at this session's temp dir."""
    inherited = os.environ.get("PAPERBOT_ENCODER_CACHE_DIR") if os.environ.get("PYTEST_XDIST_WORKER") else None
    if not _session and inherited:  # a pytest-xdist worker: the controller's dir, so workers export once
        _session.append(Path(inherited))
    if not _session:
        holder = Path(tempfile.mkdtemp(prefix="paperbot-test-encoder-cache-"))
        atexit.register(shutil.rmtree, holder, True)
        root = holder / "paperbot" / "encoders"
        os.environ["XDG_CACHE_HOME"] = str(holder)
        os.environ["PAPERBOT_ENCODER_CACHE_DIR"] = str(root)
        default = Settings.model_fields["encoder_cache_dir"].default_factory()  # type: ignore[call-arg,misc]
        if Path(default) != root:  # e.g. a platform whose user cache dir ignores XDG_CACHE_HOME
            raise RuntimeError(f"the default encoder cache would be {default}, outside the test session's {root}")
        _session.append(root)
    return _session[0]


# ``PAPERBOT_TESTS_AUTO_CHOOSES=onnx`` (or another probed variant) runs the suite as on a host whose
# ``auto`` probe chose that variant: the session's choice file says so after the probe. ``auto``
# picks the fastest accurate variant, so another CPU may pick float32 where this one picks int8
# (docs/evidence.md, "Host numerics"); every test must pass under each.
AUTO_CHOOSES = "PAPERBOT_TESTS_AUTO_CHOOSES"


def shared_model_cache() -> Path:
    """The session's encoder cache dir, holding what the default (``auto``) encoder needs; made on first call."""
    if not _made:
        from retrieval.index.encoders.loading import load_encoder

        root = use_session_encoder_cache()
        scratch = Path(tempfile.mkdtemp(prefix="paperbot-test-encoder-data-"))
        atexit.register(shutil.rmtree, scratch, True)
        settings = Settings(_env_file=None, data_dir=scratch, encoder="auto", chroma_url=None,
                            encoder_cache_dir=root)
        load_encoder(settings)  # exports (and probes) into root
        pinned = os.environ.get(AUTO_CHOOSES)
        if pinned:  # every process that made or read the probe, before any test loads ``auto``
            pin_auto_choice(root, pinned)
        _made.append(root)
    return _made[0]


def pin_auto_choice(root: Path, variant: str) -> None:
    """Make the remembered ``auto`` choice in the encoder cache ``root`` say ``variant`` (one of the
    probed ones; a note in the file says it was pinned)."""
    from dataclasses import replace

    from retrieval.index.encoders.choice import read_choice, write_choice
    from retrieval.index.encoders.loading import auto_signature

    made = read_choice(root, auto_signature())
    probed = [result.variant for result in made.results] if made else []
    if made is None or variant not in probed:
        raise RuntimeError(f"{AUTO_CHOOSES}={variant}: the probe in {root} measured {probed or 'nothing'}")
    if made.variant != variant:  # idempotent: each xdist worker pins the one file
        write_choice(root, replace(made, variant=variant, notes=[*made.notes, f"pinned to {variant} by {AUTO_CHOOSES}"]))


def link_model_cache(data_dir: Path, cache: Path | None = None) -> Path:
    """Create ``data_dir`` for commands that load the encoder, once the session's encoder cache is made.

    Nothing is linked any more (every data dir uses the machine's encoder cache); ``cache``, when
    given, must be that cache (the ``model_cache`` fixture).
    """
    shared = shared_model_cache()
    if cache is not None and Path(cache) != shared:
        raise ValueError(f"{cache} is not the session's encoder cache {shared}")
    (data_dir / "cache").mkdir(parents=True, exist_ok=True)
    return data_dir
