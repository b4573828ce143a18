"""The cheat-sheet's rules of thumb (the planner's, notebook 09; the roofline's, notebook
10), the recorded run its traffic formulas are held against on real ranks, and its
Markdown tables (``markdown_table``, from :mod:`.tables`).

Used by ``notebooks/cheatsheet.ipynb``.
"""
from __future__ import annotations

import math

import torch

from ..collectives import costmodel
from ..validation import positive_int, positive_number, preflight
from .tables import _, markdown_table

__all__ = ["PLANNER_RULES", "recorded_run", "ROOFLINE_RULES", "roofline_closed_forms",
           "markdown_table"]

# (rule, why, where the planner encodes it, where the course teaches it)
PLANNER_RULES = [
    (_("DP x TP x PP = number of GPUs"), _("every GPU has exactly one coordinate"),
     "evaluate: reason", "09 §3 · L20 p.5-8"),
    (_("TP as small as memory allows, inside a node where it can be (TP <= 8 on GPUs), "
       "dividing the heads"),
     _("4 full activation all-reduces per layer and sequence, on the critical path; on a "
       "fixed number of GPUs their traffic per step doubles with TP, and CS336 reports a big "
       "drop in performance once TP leaves the node"),
     _("TP time on the group's own links (planner.links); a tie goes to TP inside a node"),
     "05 §3, 09 §4, 10 §3 · CS336 L8 §4.3, §7.2"),
    (_("DP groups across nodes: one NIC per member per node"),
     _("a hierarchical reduction drives 8 NICs per node when TP x PP = 1, one when TP x PP >= 8"),
     "planner.links.group_collective_time", "09 §3, 11 §6 · CS336 L8 §1, §7.2"),
    (_("PP across nodes"), _("only one activation per micro-batch crosses a stage boundary"),
     "comm_bytes_per_step: pp_boundary", "04 §8, 09 §2 · CS336 L8 §4.2, §7.2"),
    (_("micro-batches per replica m >= PP, and many of them"),
     _("bubble (p-1)/(m+p-1); with m < p the pipeline never fills"), "evaluate: reason, bubble",
     "04 §2, §4 · L19 p.79-80"),
    (_("no ZeRO-2/3 together with PP"), _("gradients or weights would move once per micro-batch"),
     "evaluate: reason", "12 §6 · CS336 L8 §3.3-3.5"),
    (_("minimise model parallelism, give the rest to DP (ZeRO/FSDP when memory is short)"),
     _("DP scales compute with the least communication per FLOP"),
     _("plan: ranking by step time"), "09 §6 · CS336 L8 §7.2"),
]


def _check_recorded(numel=840, seq=16, heads=4, head_dim=8, world_size=1) -> None:
    for name, value in (("numel", numel), ("seq", seq), ("heads", heads),
                        ("head_dim", head_dim)):
        positive_int(name, value, "a whole number >= 1")


@preflight(_check_recorded)
def recorded_run(numel: int = 840, seq: int = 16, heads: int = 4, head_dim: int = 8) -> dict:
    """Rank function for ``companion.launch``: the recorded traffic of every all-reduce
    the package has, and the collectives logged by Ulysses and ring attention (float32,
    batch 1) and by one TP and one TP+SP block (``compare_with_reference``'s float64
    shapes: b=2, s=8, h=16), so the closed forms above can be held against real ranks.
    Keys: the all-reduce names, "ulysses_attention", "ring_attention", "tp", "tp+sp"."""
    _check_recorded(numel, seq, heads, head_dim)
    from .. import collectives, sequence_parallel, tensor_parallel
    x, out = torch.ones(numel), {}
    for name in costmodel.ALGORITHMS:
        with collectives.traffic() as t:
            collectives.ALL_REDUCE_ALGORITHMS[name](x)
        out[name] = t
    keep = ("forward", "backward", "forward_bytes", "backward_bytes", "out")
    for method in ("ulysses", "ring"):
        r = sequence_parallel.compare_attention(method=method, seq=seq, heads=heads,
                                                head_dim=head_dim, batch=1, dtype="float32")
        out[f"{method}_attention"] = {k: r[k] for k in keep}
    for mode, sp in (("tp", False), ("tp+sp", True)):
        r = tensor_parallel.compare_with_reference(kind="block", sequence_parallel=sp)
        out[mode] = {k: r[k] for k in keep}
    return out


# --- 9. When parallelism pays (notebook 10): T_comm < T_math solved for one quantity -----
# (strategy, compute-bound when, what cancels, where the course teaches it)
ROOFLINE_RULES = [
    (_("matmul on one chip"), "B > C / W_hbm (bf16)", "D, F (B << D, F)",
     "10 §1 · CS336 L8 §7.3"),
    ("DP / FSDP", _("tokens per device B / X > C / (W M_X)"), "D, F",
     "10 §2 · CS336 L8 §3.5, §3.6"),
    ("TP (Megatron MLP)", "Y < M_Y F W / C", "B, D", "10 §3 · CS336 L8 §4.3, §7.2"),
    (_("FSDP x TP, best split, one kind of link (in a node, a TPU torus)"),
     "X = sqrt(B N M_X / (F M_Y)); B / N > (C / W)^2 / (M_X M_Y F)", "D",
     "10 §4 · CS336 L8 §7.3"),
    (_("FSDP x TP across GPU nodes (an FSDP group: per_node / Y NICs per node)"),
     _("FSDP's time is the same for every Y; X <= B / seq_len sets Y"), "Y",
     "10 §4 · CS336 L8 §7.3"),
    (_("PP hop"), _("e D C / (2 P L W) < 1 (e bytes per element, P params per layer, L layers per stage)"), "B",
     "10 §5 · CS336 L8 §4.2"),
    (_("EP all-to-all (k experts per token, Z devices, domains of g sharing W)"),
     _("expert width F > (C / W) g min(k, Z / g) (Z - g) / (Z k)"), "B, D",
     "10 §5 · CS336 L8 §5.2"),
]


def roofline_closed_forms(peak_flops: float, bandwidth: float, d_ff: int,
                          batch_tokens: float, devices: int, experts_per_token: int = 8,
                          ep_degree: int = 64, domain: int = 8) -> dict:
    """The rules of ``ROOFLINE_RULES`` written out (one mesh axis each), for the test that
    holds them against ``companion.roofline``; the EP rule for ``experts_per_token`` of
    the experts spread over ``ep_degree`` devices in domains of ``domain``."""
    for name, v in (("peak_flops", peak_flops), ("bandwidth", bandwidth),
                    ("batch_tokens", batch_tokens)):
        positive_number(name, v, f"pass {name} as a positive number.")
    positive_int("d_ff", d_ff, "pass the MLP width F.")
    positive_int("devices", devices, "pass the number of devices N.")
    k = positive_int("experts_per_token", experts_per_token, "pass k, e.g. 8.")
    z = positive_int("ep_degree", ep_degree, "pass Z, the devices holding the experts.")
    g = positive_int("domain", domain, "pass the devices sharing the bandwidth, e.g. 8.")
    if z % g or z <= g:
        raise ValueError(f"ep_degree={z} must be a multiple of domain={g} and larger.")
    alpha = peak_flops / bandwidth
    return {"dp_critical_tokens": alpha, "tp_max_degree": d_ff / alpha,
            "fsdp_tp_split": min(max(math.sqrt(batch_tokens * devices / d_ff), 1), devices),
            "fsdp_tp_min_tokens": alpha ** 2 / d_ff,
            "ep_min_d_ff": alpha * g * min(k, z / g) * (z - g) / (z * k)}


# The cheat-sheet notebook's headers and row labels. Its code is the same in every
# edition, so the table translates them when it is drawn; a cell outside this list (an
# algorithm's name, a formula, a number, a code name) is shown as it is.
_LABELS = (
    _("algorithm"), _("formula (a; b)"), _("stage"), _("memory per GPU"),
    _("sent per rank per step"), _("x parameter bytes"), _("large-N multiple"),
    _("schedule"), _("formula"), _("closed form"), _("simulated"), _("peak activations"),
    _("layout"), _("activations per layer"), _("no parallelism"),
    _("TP + SP + selective recomputation"), _("full recomputation"), _("Ulysses forward"),
    _("ring forward"), _("ring / Ulysses"), _("method"), _("bytes for fc6"), _("ratio"),
    _("time per step"), _("speed-up over sync"), _("synchronous SGD"), _("configuration"),
    _("step time"), _("TP comm"), _("bubble"), _("MFU (or why not)"),
    _("DP4 TP8 PP4 ZeRO-1 (TP inside a node)"), _("DP4 TP16 PP2 ZeRO-1 (TP across 2 nodes)"),
    _("DP4 TP8 PP4 ZeRO-3 (ZeRO-3 with PP)"), _("DP4 TP8 PP4, micro-batch 64"),
    _("DP8 TP8 PP4 (256 GPUs on 128)"),
    _("peak (closed form)"), _("rule"), _("why"), _("where the planner encodes it"),
    _("taught in"), _("strategy"), _("compute-bound when"), _("cancels"), _("setting"),
    _("steps to the target"), _("samples B S"), _("cluster"), _("NVLink bytes (all ranks)"),
    _("NIC bytes (all ranks)"), _("per busy NIC"), _("time (model)"), _("ranks"),
    _("switch (model)"), _("torus"), _("torus (model)"), _("torus / switch"),
    _("EDP (planner.Mesh)"), _("CPU ranks behind notebook 10's emulated link (fp32)"),
    _("H100s across 16 nodes, their NICs (bf16)"), _("2 x 2 emulated, 1 MB"),
    _("4 x 8 H100, 1 GB"), _("the same layout with EP32"))
