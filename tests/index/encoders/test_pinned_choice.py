"""``PAPERBOT_TESTS_AUTO_CHOOSES``: the suite run as on a host whose ``auto`` chose another variant
(``tests/support/model_cache.pin_auto_choice``), on a copy of the session's probe."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from retrieval.config import Settings
from retrieval.index.encoders.choice import choice_path, read_choice
from retrieval.index.encoders.loading import auto_signature, load_encoder
from tests.support.model_cache import AUTO_CHOOSES, pin_auto_choice

pytestmark = pytest.mark.slow  # loads the encoder


@pytest.fixture
def probed(model_cache: Path, tmp_path: Path) -> Path:
    """An encoder cache holding a copy of the session's probe, and its exports linked (never
    changed: other tests of the session read them)."""
    root = tmp_path / "encoders"
    root.mkdir()
    source = choice_path(model_cache, auto_signature())
    shutil.copy(source, root / source.name)
    for export in model_cache.iterdir():
        if export.is_dir():
            (root / export.name).symlink_to(export, target_is_directory=True)
    return root


def test_a_pinned_choice_is_what_auto_loads_and_says_so(probed: Path, tmp_path: Path) -> None:
    before = read_choice(probed, auto_signature())
    assert before is not None
    other = next(r.variant for r in before.results if r.variant != before.variant)
    pin_auto_choice(probed, other)
    after = read_choice(probed, auto_signature())
    assert after is not None and after.variant == other
    assert after.results == before.results and any(AUTO_CHOOSES in note for note in after.notes)
    pin_auto_choice(probed, other)  # again (each xdist worker pins): the same file
    assert read_choice(probed, auto_signature()) == after
    # what ``auto`` then loads
    encoder = load_encoder(Settings(_env_file=None, data_dir=tmp_path / "d", encoder="auto", chroma_url=None,
                                    encoder_cache_dir=probed))
    assert encoder.name == next(r.encoder_name for r in after.results if r.variant == other)


def test_a_variant_the_probe_did_not_measure_is_refused(probed: Path) -> None:
    with pytest.raises(RuntimeError, match=f"{AUTO_CHOOSES}=gpu: the probe .* measured"):
        pin_auto_choice(probed, "gpu")
    with pytest.raises(RuntimeError, match="measured nothing"):
        pin_auto_choice(probed.parent / "empty", "onnx")
