"""One plot style for every notebook: readable on a projector, safe for colour-blind eyes.

Call :func:`use_style` once at the top of a notebook. The palette is Okabe and Ito's
eight colours, distinguishable under the common forms of colour blindness.

The Chinese edition draws Chinese labels with the package's own CJK fonts
(:func:`use_cjk_font`, called whenever the language turns Chinese, through
``companion.i18n.on_language_change``), so no system font is needed and no glyph is missing:
Noto Sans CJK SC for zh-CN, and TC for zh-TW, so that Traditional text is drawn with
Taiwan's glyph forms.
Ranks never import this module, so they never import matplotlib.
"""
from __future__ import annotations

import functools
from pathlib import Path

from .i18n import get_language, on_language_change

__all__ = ["OKABE_ITO", "use_style", "rank_colors", "use_cjk_font", "CJK_FONT", "CJK_FONTS"]

CJK_FONTS = {"zh-CN": Path(__file__).with_name("fonts") / "NotoSansCJKsc-Regular-subset.otf",
             "zh-TW": Path(__file__).with_name("fonts") / "NotoSansCJKtc-Regular-subset.otf"}
CJK_FONT = CJK_FONTS["zh-CN"]

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
        use_cjk_font(get_language())


def _regular_cjk_is_intended(record) -> bool:
    # The subsets ship one weight: bold hanzi are drawn Regular on purpose, and
    # matplotlib's warning about it would land under every Chinese figure with a bold
    # label.
    args = record.args if isinstance(record.args, tuple) else ()
    return not (record.msg.startswith("findfont: Failed to find font weight") and
                len(args) > 1 and str(args[1]).startswith("Noto Sans CJK"))


@functools.lru_cache(maxsize=None)
def _register_cjk_font(path: Path) -> str:
    import logging

    from matplotlib import font_manager
    font_manager.fontManager.addfont(str(path))
    logger = logging.getLogger("matplotlib.font_manager")
    if _regular_cjk_is_intended not in logger.filters:
        logger.addFilter(_regular_cjk_is_intended)
    return font_manager.FontProperties(fname=str(path)).get_name()


def use_cjk_font(language: str = "zh-CN") -> str:
    """Register the CJK font of ``language`` ("zh-CN" or "zh-TW") and put it after each
    default family, so matplotlib falls back to it glyph by glyph (Latin text keeps DejaVu
    Sans), in place of the other edition's font; returns its name."""
    import matplotlib as mpl

    if language not in CJK_FONTS:
        raise ValueError(f"language={language!r}: use one of {sorted(CJK_FONTS)}")
    name = _register_cjk_font(CJK_FONTS[language])
    others = {_register_cjk_font(p) for k, p in CJK_FONTS.items() if k != language}
    for key in ("font.sans-serif", "font.serif", "font.monospace", "font.family"):
        kept = [f for f in mpl.rcParams[key] if f not in others]
        if name not in kept:   # in font.family: a fallback for figures that name a family
            kept.append(name)
        mpl.rcParams[key] = kept
    return name


def rank_colors(n: int) -> list[str]:
    """``n`` distinguishable colours, one per rank (cycles past eight)."""
    return [OKABE_ITO[i % len(OKABE_ITO)] for i in range(n)]


def _follow_language(language: str) -> None:
    if language != "en":
        use_cjk_font(language)


on_language_change(_follow_language)
