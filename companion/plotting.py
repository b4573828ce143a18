"""One plot style for every notebook: readable on a projector, safe for colour-blind eyes.

Call :func:`use_style` once at the top of a notebook. The palette is Okabe and Ito's
eight colours, distinguishable under the common forms of colour blindness.

The Chinese edition draws Chinese labels with the package's own CJK font
(:func:`use_cjk_font`, called whenever the language turns Chinese, through
``companion.i18n.on_language_change``), so no system font is needed and no glyph is missing.
Ranks never import this module, so they never import matplotlib.
"""
from __future__ import annotations

import functools
from pathlib import Path

from .i18n import get_language, on_language_change

__all__ = ["OKABE_ITO", "use_style", "rank_colors", "use_cjk_font", "CJK_FONT"]

CJK_FONT = Path(__file__).with_name("fonts") / "NotoSansCJKsc-Regular-subset.otf"

OKABE_ITO = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9",
             "#F0E442", "#000000"]


def use_style() -> None:
    """Large fonts, the Okabe-Ito colour cycle, light grid, tight layout."""
    import matplotlib as mpl
    from cycler import cycler

    mpl.rcParams.update({
        "axes.prop_cycle": cycler(color=OKABE_ITO),
        "font.size": 13, "axes.titlesize": 15, "axes.labelsize": 13,
        "xtick.labelsize": 12, "ytick.labelsize": 12, "legend.fontsize": 12,
        "axes.grid": True, "grid.alpha": 0.3, "figure.dpi": 100,
        "figure.autolayout": True,
    })
    if get_language() != "en":
        use_cjk_font()


@functools.lru_cache(maxsize=1)
def _register_cjk_font() -> str:
    from matplotlib import font_manager
    font_manager.fontManager.addfont(str(CJK_FONT))
    return font_manager.FontProperties(fname=str(CJK_FONT)).get_name()


def use_cjk_font() -> str:
    """Register the package's CJK font and put it after each default family, so matplotlib
    falls back to it glyph by glyph (Latin text keeps DejaVu Sans); returns its name."""
    import matplotlib as mpl

    name = _register_cjk_font()
    for key in ("font.sans-serif", "font.serif", "font.monospace"):
        if name not in mpl.rcParams[key]:
            mpl.rcParams[key] = [*mpl.rcParams[key], name]
    family = list(mpl.rcParams["font.family"])
    if name not in family:   # fallback after the generic family, for figures that name one
        mpl.rcParams["font.family"] = [*family, name]
    return name


def rank_colors(n: int) -> list[str]:
    """``n`` distinguishable colours, one per rank (cycles past eight)."""
    return [OKABE_ITO[i % len(OKABE_ITO)] for i in range(n)]


def _follow_language(language: str) -> None:
    if language != "en":
        use_cjk_font()


on_language_change(_follow_language)
