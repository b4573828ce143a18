"""The notebook-07 widget draws on creation and reacts to its controls."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402

from companion.widgets import compression_explorer  # noqa: E402


def test_explorer_redraws_when_controls_change():
    w = compression_explorer(world_size=2, steps=20)
    first = w.summary.value
    assert "gradient dropping" in first and "x smaller than dense" in first
    w.method.value = "1-bit SGD"
    assert "1-bit SGD" in w.summary.value and w.summary.value != first


def test_explorer_rejects_bad_sizes():
    with pytest.raises(ValueError, match="steps=150"):
        compression_explorer(steps=0)
