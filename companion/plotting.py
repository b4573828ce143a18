"""One plot style for every notebook: readable on a projector, safe for colour-blind eyes.

Call :func:`use_style` once at the top of a notebook. The palette is Okabe and Ito's
eight colours, distinguishable under the common forms of colour blindness.
"""
from __future__ import annotations

__all__ = ["OKABE_ITO", "use_style", "rank_colors"]

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


def rank_colors(n: int) -> list[str]:
    """``n`` distinguishable colours, one per rank (cycles past eight)."""
    return [OKABE_ITO[i % len(OKABE_ITO)] for i in range(n)]
