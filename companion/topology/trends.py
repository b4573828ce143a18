"""Where cluster hardware is going (CS336 L8 §1), priced from published figures.

Taught in notebook 11 section 5. The lecture closes its hardware tour with two trends:

* **power buys a larger all-to-all domain**: Huawei's CloudMatrix 384 joins 384 Ascend
  910C chips, each slower than a Blackwell GPU, over optical links, where NVIDIA's GB200
  NVL72 joins 72 GPUs over NVLink in one rack; the lecture says the former draws about four
  times the power;
* **TPUs add a switch**: Google's TPU 8t scales out on Virgo, a flat, two-layer
  non-blocking switched fabric, where earlier pods relied on the torus.

Every figure below names its source; :func:`rack_tradeoff` derives the ratios the lecture
quotes, so the notebook prints them instead of repeating them.
"""
from __future__ import annotations

from ..validation import positive_int, positive_number

__all__ = ["SCALE_UP_SYSTEMS", "CLOUDMATRIX_PAPER", "VIRGO", "rack_tradeoff", "bisection_per_chip"]

# SemiAnalysis, "Huawei AI CloudMatrix 384 - China's Answer to Nvidia GB200 NVL72"
# (April 2025): dense BF16 compute and whole-system power, both estimates of theirs.
SEMIANALYSIS = "https://semianalysis.com/2025/04/16/huawei-ai-cloudmatrix-384-chinas-answer-to-nvidia-gb200-nvl72/"
SCALE_UP_SYSTEMS = {
    "GB200 NVL72": {"chips": 72, "dense_bf16_pflops": 180.0, "power_kw": 145.0,
                    "source": SEMIANALYSIS},
    "CloudMatrix 384": {"chips": 384, "dense_bf16_pflops": 300.0, "power_kw": 559.0,
                        "source": SEMIANALYSIS},
}
# Huawei's own paper on the system: Zuo et al. 2025, "Serving Large Language Models on
# Huawei CloudMatrix384" (arXiv 2506.12708): 384 Ascend 910C, each two dies, 752 TFLOP/s
# of BF16 per chip. It puts the whole a few percent under SemiAnalysis's estimate above.
CLOUDMATRIX_PAPER = {"chips": 384, "bf16_tflops_per_chip": 752.0,
                     "source": "https://arxiv.org/abs/2506.12708"}
# Google Cloud blog, "Introducing Virgo Network, Google's scale-out AI data center fabric"
# (Siman-Tov and Singh, 22 April 2026): 134,000 TPU 8t chips in one non-blocking fabric
# with up to 47 Pb/s of bisection bandwidth.
VIRGO = {"chips": 134_000, "bisection_bits_per_s": 47e15,
         "source": "https://cloud.google.com/blog/products/networking/introducing-virgo-megascale-data-center-fabric"}


def rack_tradeoff(base: str = "GB200 NVL72", other: str = "CloudMatrix 384",
                  other_pflops: float | None = None) -> dict:
    """Per-chip compute, watts per dense TFLOP/s and the ratios of ``other`` to ``base``:
    how many more chips share one all-to-all domain, and what that costs in power.
    ``other_pflops`` replaces ``other``'s compute (e.g. Huawei's own figure,
    :data:`CLOUDMATRIX_PAPER`), its power staying the table's."""
    for name, value in (("base", base), ("other", other)):
        if value not in SCALE_UP_SYSTEMS:
            raise ValueError(f"{name}={value!r} is not a system here; use one of "
                             f"{sorted(SCALE_UP_SYSTEMS)}")
    if other_pflops is not None:
        positive_number("other_pflops", other_pflops, "pass the system's dense PFLOP/s, e.g. 289.")
    rows = {}
    for name in (base, other):
        s = dict(SCALE_UP_SYSTEMS[name])
        if name == other and other_pflops is not None:
            s["dense_bf16_pflops"] = other_pflops
        rows[name] = {**s, "tflops_per_chip": 1e3 * s["dense_bf16_pflops"] / s["chips"],
                      "watts_per_tflops": 1e3 * s["power_kw"] / (1e3 * s["dense_bf16_pflops"])}
    a, b = rows[base], rows[other]
    return {"systems": rows,
            "chips": b["chips"] / a["chips"],
            "compute": b["dense_bf16_pflops"] / a["dense_bf16_pflops"],
            "power": b["power_kw"] / a["power_kw"],
            "per_chip": b["tflops_per_chip"] / a["tflops_per_chip"],
            "watts_per_flop": b["watts_per_tflops"] / a["watts_per_tflops"]}


def bisection_per_chip(chips: int, bisection_bits_per_s: float) -> float:
    """Bytes per second each chip of one half can send to the other half at once, when a
    fabric's ``bisection_bits_per_s`` is shared by its ``chips / 2`` senders: an upper bound
    on an all-to-all's per-chip rate across the cut (if the figure counts both directions,
    half of it)."""
    positive_int("chips", chips, "pass the number of chips in the fabric, e.g. 134000.")
    positive_number("bisection_bits_per_s", bisection_bits_per_s,
                    "pass the bisection bandwidth in bits per second, e.g. 47e15.")
    if chips < 2:
        raise ValueError("chips: a bisection needs at least 2 chips; pass e.g. 134000.")
    return bisection_bits_per_s / 8 / (chips / 2)
