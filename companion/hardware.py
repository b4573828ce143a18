"""Accelerator figures in one place, each with its unit, its basis and its source.

Used by the planner's cluster presets (notebook 09), by ``companion.why_distribute``
(the opening arithmetic of notebook 00, section 0) and by the roofline rules of notebook 10.

Every :class:`Figure` says what kind of number it is, because the sources mix them:

* **peak vs measured**: a datasheet's peak FLOP/s or link rate, or a measured one.
* **per direction vs bidirectional** for links. NVIDIA quotes NVLink as the sum of both
  directions: the H100's "900 GB/s" (also the figure CS336 L8 gives) is 2 x 450 GB/s,
  and a ring collective can use 450 GB/s out of each GPU. Google quotes ICI
  bidirectionally too. This module stores **per direction**; ``bidirectional()`` gives
  the quoted figure back so a student can match the datasheet.
* **dense vs sparse** FLOP/s: NVIDIA's headline tensor-core figures assume 2:4
  sparsity; training uses the dense half, which is what is stored.
* A NIC's "400 Gb/s" is gigabits per second per direction: 50 GB/s.

Bytes are decimal (``companion.units``): GB = 10^9 B. GPU memory capacities are stored
as the datasheet states them; where the vendor means GiB the note says so.
"""
from __future__ import annotations

import dataclasses

__all__ = ["Figure", "Accelerator", "ACCELERATORS", "H800", "OLDER_GPUS", "accelerator",
           "peak_flops_by_year"]


@dataclasses.dataclass(frozen=True)
class Figure:
    """One number: ``value`` in ``unit`` (FLOP/s, B, B/s), what kind it is, and where
    it comes from. ``basis`` says peak or measured, dense or sparse, per direction or
    bidirectional."""

    value: float
    unit: str
    basis: str
    source: str
    note: str = ""

    def __post_init__(self):
        if not isinstance(self.value, (int, float)) or not self.value > 0:
            raise ValueError(f"value must be a positive number, got {self.value!r}.")
        if not self.source.startswith("https://"):
            raise ValueError(f"source must be a URL, got {self.source!r}.")

    def bidirectional(self) -> float:
        """The link figure as vendors quote it (both directions added)."""
        if "per direction" not in self.basis:
            raise ValueError(f"this figure is not a per-direction link rate ({self.basis}).")
        return 2 * self.value


@dataclasses.dataclass(frozen=True)
class Accelerator:
    """One chip and the links a training cluster gives it.

    ``scale_up`` is the fast domain (NVLink inside a node, ICI inside a TPU pod), per chip
    and per direction; ``scale_out`` is the network between domains (an InfiniBand NIC
    per GPU, the data-centre network per TPU chip), per chip and per direction.
    ``per_node`` is how many chips share one fast domain in the reference system (8 GPUs
    per DGX/HGX node; for a TPU the whole pod is the ICI domain).
    """

    name: str
    vendor: str
    year: int
    peak_bf16: Figure
    hbm: Figure
    hbm_bandwidth: Figure
    scale_up: Figure
    scale_out: Figure
    scale_up_name: str
    scale_out_name: str
    per_node: int
    system: str

    @property
    def flops(self) -> float:
        return self.peak_bf16.value

    def table_row(self) -> dict:
        """The figures as plain numbers, for printing."""
        return {"chip": self.name, "year": self.year,
                "bf16 TFLOP/s (dense, peak)": self.peak_bf16.value / 1e12,
                "HBM GB": self.hbm.value / 1e9,
                "HBM TB/s": self.hbm_bandwidth.value / 1e12,
                "scale-up GB/s per direction": self.scale_up.value / 1e9,
                "scale-out GB/s per direction": self.scale_out.value / 1e9}


_H100 = "https://www.nvidia.com/en-us/data-center/h100/"
_DGX_H100 = "https://docs.nvidia.com/dgx/dgxh100-user-guide/introduction-to-dgxh100.html"
_A100 = "https://www.nvidia.com/en-us/data-center/a100/"
_DGX_A100 = "https://docs.nvidia.com/dgx/dgxa100-user-guide/introduction-to-dgxa100.html"
_B200 = "https://www.nvidia.com/en-us/data-center/dgx-b200/"
_V5P = "https://cloud.google.com/tpu/docs/v5p"
_BOOK = "https://jax-ml.github.io/scaling-book/gpus/"
_DSV3 = "https://arxiv.org/abs/2412.19437"
_DSV3_ISCA = "https://arxiv.org/abs/2505.09343"

PEAK_DENSE = "peak, dense (the datasheet's sparse figure halved)"
PER_DIR = "peak, per direction"

ACCELERATORS = {a.name: a for a in [
    Accelerator(
        "A100", "NVIDIA", 2020,
        peak_bf16=Figure(312e12, "FLOP/s", "peak, dense", _A100,
                         "A100 SXM; 624 TFLOP/s is the 2:4-sparse figure"),
        hbm=Figure(80e9, "B", "capacity", _A100, "A100 80GB SXM (HBM2e)"),
        hbm_bandwidth=Figure(2.039e12, "B/s", "peak", _A100),
        scale_up=Figure(300e9, "B/s", PER_DIR, _A100,
                        "NVLink 3: the datasheet's 600 GB/s is both directions added"),
        scale_out=Figure(25e9, "B/s", PER_DIR, _DGX_A100,
                         "DGX A100: one 200 Gb/s HDR InfiniBand adapter per GPU"),
        scale_up_name="NVLink 3", scale_out_name="InfiniBand HDR", per_node=8,
        system="DGX A100"),
    Accelerator(
        "H100", "NVIDIA", 2022,
        peak_bf16=Figure(989e12, "FLOP/s", PEAK_DENSE, _H100,
                         "H100 SXM: the datasheet's 1,979 TFLOP/s bf16 is with sparsity"),
        hbm=Figure(80e9, "B", "capacity", _H100,
                   "H100 SXM 80GB (HBM3); NVIDIA's GB are GiB here: 80 GiB = 85.9 GB"),
        hbm_bandwidth=Figure(3.35e12, "B/s", "peak", _H100),
        scale_up=Figure(450e9, "B/s", PER_DIR, _H100,
                        "NVLink 4: the datasheet's (and CS336 L8's) 900 GB/s is 2 x 450"),
        scale_out=Figure(50e9, "B/s", PER_DIR, _DGX_H100,
                         "DGX H100: eight 400 Gb/s ConnectX-7 NICs, one per GPU "
                         "(400 GB/s per node, the scaling book's node egress)"),
        scale_up_name="NVLink 4", scale_out_name="InfiniBand NDR", per_node=8,
        system="DGX H100"),
    Accelerator(
        "B200", "NVIDIA", 2024,
        peak_bf16=Figure(2.25e15, "FLOP/s", PEAK_DENSE, _B200,
                         "DGX B200 lists 72 PFLOP/s fp8 (sparse) for 8 GPUs; bf16 dense "
                         "is a quarter of fp8 sparse: 2.25 PFLOP/s per GPU"),
        hbm=Figure(180e9, "B", "capacity", _B200, "DGX B200: 1,440 GB for 8 GPUs"),
        hbm_bandwidth=Figure(8e12, "B/s", "peak", _B200, "DGX B200: 64 TB/s for 8 GPUs"),
        scale_up=Figure(900e9, "B/s", PER_DIR, _B200,
                        "NVLink 5: 1.8 TB/s per GPU is both directions added"),
        scale_out=Figure(50e9, "B/s", PER_DIR, _B200,
                         "DGX B200: eight 400 Gb/s ConnectX-7 ports, one per GPU"),
        scale_up_name="NVLink 5", scale_out_name="InfiniBand NDR", per_node=8,
        system="DGX B200"),
    Accelerator(
        "TPU v5p", "Google", 2023,
        peak_bf16=Figure(459e12, "FLOP/s", "peak, dense", _V5P),
        hbm=Figure(95 * 2**30, "B", "capacity", _V5P, "95 GiB of HBM2e per chip"),
        hbm_bandwidth=Figure(2.765e12, "B/s", "peak", _V5P),
        scale_up=Figure(600e9, "B/s", PER_DIR, _V5P,
                        "ICI: Google lists 1,200 GB/s bidirectional per chip, over six "
                        "links of a 3D torus (each neighbour pair, not a switch)"),
        scale_out=Figure(50e9 / 8, "B/s", PER_DIR, _V5P,
                         "data-centre network: 50 Gb/s per chip"),
        scale_up_name="ICI (3D torus)", scale_out_name="DCN", per_node=8960,
        system="TPU v5p pod (8,960 chips)"),
]}

# The H100's export variant that DeepSeek-V3 trained on (notebook 12's planner). Kept out
# of ACCELERATORS: it is no generation of its own in the compute-growth tables.
H800 = Accelerator(
        "H800", "NVIDIA", 2023,
        peak_bf16=Figure(989e12, "FLOP/s", PEAK_DENSE, _DSV3_ISCA,
                         "the H100 SXM's compute; DeepSeek-V3 ran its GEMMs in FP8 "
                         "(1,979 TFLOP/s dense), which the planner does not model"),
        hbm=Figure(80e9, "B", "capacity", _DSV3_ISCA, "80 GB HBM3, as the H100 SXM"),
        hbm_bandwidth=Figure(3.35e12, "B/s", "peak", _DSV3_ISCA),
        scale_up=Figure(200e9, "B/s", PER_DIR, _DSV3_ISCA,
                        "NVLink cut to 400 GB/s both directions (H100: 900); DeepSeek "
                        "measured about 160 GB/s achievable (arXiv 2412.19437 §3.2.2)"),
        scale_out=Figure(50e9, "B/s", PER_DIR, _DSV3,
                         "one 400 Gb/s InfiniBand NIC per GPU (the paper's 'IB (50 GB/s)')"),
        scale_up_name="NVLink (H800)", scale_out_name="InfiniBand NDR", per_node=8,
        system="DeepSeek's H800 nodes")

# Measured, not peak: what a collective really gets (the planner uses peaks and says so).
NVLINK_H100_MEASURED = Figure(370e9, "B/s", "measured all-reduce bus bandwidth, per direction",
                              _BOOK, "8 x H100 node, ~10 GB messages, SHARP off; the "
                              "scaling book's measurement of the 450 GB/s link")

# One GPU's peak in the precision large models trained in at the time, for the plot of
# compute growth (notebook 00, section 0). Before tensor cores that precision was fp32.
OLDER_GPUS = [
    ("K80", 2014, Figure(8.73e12, "FLOP/s", "peak fp32 with boost, both GK210 chips",
                         "https://www.nvidia.com/en-gb/data-center/tesla-k80/")),
    ("P100", 2016, Figure(21.2e12, "FLOP/s", "peak fp16 (SXM2)",
                          "https://images.nvidia.com/content/tesla/pdf/nvidia-tesla-p100-datasheet.pdf")),
    ("V100", 2017, Figure(125e12, "FLOP/s", "peak fp16 tensor core (SXM2)",
                          "https://images.nvidia.com/content/technologies/volta/pdf/tesla-volta-v100-datasheet-letter-fnl-web.pdf")),
]


def accelerator(name: str) -> Accelerator:
    """``ACCELERATORS[name]`` with a clear error for an unknown chip."""
    if name not in ACCELERATORS:
        raise ValueError(f"name={name!r} is not a known accelerator; choose one of "
                         f"{sorted(ACCELERATORS)}.")
    return ACCELERATORS[name]


def peak_flops_by_year() -> list[tuple[str, int, float, str]]:
    """``(gpu, year, peak FLOP/s, source)`` for one NVIDIA GPU per generation, oldest
    first: the older GPUs above, then A100, H100, B200 (dense bf16)."""
    rows = [(n, y, f.value, f.source) for n, y, f in OLDER_GPUS]
    rows += [(a.name, a.year, a.flops, a.peak_bf16.source)
             for a in ACCELERATORS.values() if a.vendor == "NVIDIA"]
    return sorted(rows, key=lambda r: r[1])
