"""Building a cloud platform pauses garbage collection and gives it back as it found it."""

from __future__ import annotations

import gc

import pytest

from vertex_training.platform._gc import frozen_once_loaded


@pytest.mark.parametrize("enabled", [True, False])
def test_collection_is_paused_then_left_as_the_program_had_it(enabled: bool) -> None:
    (gc.enable if enabled else gc.disable)()
    try:
        with frozen_once_loaded():
            assert not gc.isenabled()
        assert gc.isenabled() is enabled
        assert gc.get_freeze_count() > 0
        with pytest.raises(ValueError), frozen_once_loaded():
            raise ValueError("building the platform failed")
        assert gc.isenabled() is enabled
    finally:
        gc.enable()
