"""The cheat-sheet's rules of thumb (the planner's, notebook 09; the roofline's, notebook
10), the recorded run its traffic formulas are held against on real ranks, and its
Markdown tables.

Used by ``notebooks/cheatsheet.ipynb``.
"""
from __future__ import annotations

import math

import torch

from ..collectives import costmodel
from ..validation import positive_int, positive_number, preflight

__all__ = ["PLANNER_RULES", "recorded_run", "ROOFLINE_RULES", "roofline_closed_forms",
           "markdown_table"]


PLANNER_RULES = [  # (rule, why, where the planner encodes it)
    ("DP x TP x PP = number of GPUs", "every GPU has exactly one coordinate",
     "evaluate: reason"),
    ("TP inside a node (TP <= 8 on GPUs), dividing the heads",
     "4 full activation all-reduces per layer and sequence, on the critical path; their "
     "traffic per step doubles with TP, and measured runs lose more once TP leaves NVLink",
     "evaluate: tp_inter_node, TP time (planner.links)"),
    ("DP groups across nodes: one NIC per member per node",
     "a hierarchical reduction drives 8 NICs per node when TP x PP = 1, one when TP x PP >= 8",
     "planner.links.group_collective_time"),
    ("PP across nodes", "only one activation per micro-batch crosses a stage boundary",
     "comm_bytes_per_step: pp_boundary"),
    ("micro-batches per replica m >= PP, and many of them",
     "bubble (p-1)/(m+p-1); with m < p the pipeline never fills", "evaluate: reason, bubble"),
    ("no ZeRO-2/3 together with PP", "gradients or weights would move once per micro-batch",
     "evaluate: reason"),
    ("minimise model parallelism, give the rest to DP (ZeRO/FSDP when memory is short)",
     "DP scales compute with the least communication per FLOP", "plan: ranking by step time"),
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
ROOFLINE_RULES = [  # (strategy, compute-bound when, what cancels)
    ("matmul on one chip", "B > C / W_hbm (bf16)", "D, F (B << D, F)"),
    ("DP / FSDP", "tokens per device B / X > C / (W M_X)", "D, F"),
    ("TP (Megatron MLP)", "Y < M_Y F W / C", "B, D"),
    ("FSDP x TP, best split, one kind of link (in a node, a TPU torus)",
     "X = sqrt(B N M_X / (F M_Y)); B / N > (C / W)^2 / (M_X M_Y F)", "D"),
    ("FSDP x TP across GPU nodes (an FSDP group: per_node / Y NICs per node)",
     "FSDP's time is the same for every Y; X <= B / seq_len sets Y", "Y"),
    ("PP hop", "bytes D C / (2 P L W) < 1 (P params per layer, L layers per stage)", "B"),
]


def roofline_closed_forms(peak_flops: float, bandwidth: float, d_ff: int,
                          batch_tokens: float, devices: int) -> dict:
    """The rules of ``ROOFLINE_RULES`` written out (one mesh axis each), for the test that
    holds them against ``companion.roofline``."""
    for name, v in (("peak_flops", peak_flops), ("bandwidth", bandwidth),
                    ("batch_tokens", batch_tokens)):
        positive_number(name, v, f"pass {name} as a positive number.")
    positive_int("d_ff", d_ff, "pass the MLP width F.")
    positive_int("devices", devices, "pass the number of devices N.")
    alpha = peak_flops / bandwidth
    return {"dp_critical_tokens": alpha, "tp_max_degree": d_ff / alpha,
            "fsdp_tp_split": min(max(math.sqrt(batch_tokens * devices / d_ff), 1), devices),
            "fsdp_tp_min_tokens": alpha ** 2 / d_ff}


def _(message: str) -> str:
    """Marks a message for the catalog (so the translation tests see it) and returns it
    unchanged: :func:`markdown_table` translates it when it shows it."""
    return message


# The cheat-sheet notebook's headers and row labels. Its code is the same in every
# edition, so the table translates them when it is drawn; a cell outside this list (an
# algorithm's name, a formula, a number) is shown as it is, being an option value or code.
TABLE_TEXTS = frozenset((
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
    _("DP8 TP8 PP4 (256 GPUs on 128)")))


def _shown(cell) -> str:
    from ..i18n import gettext as tr
    from ..planner.feasibility import shown_reason
    text = str(cell)
    if text in TABLE_TEXTS:
        return tr(text)
    # a configuration the planner rejects shows its reason in the MFU column
    return shown_reason(text) if isinstance(cell, str) else text


def markdown_table(headers, rows) -> str:
    """A Markdown table (display it with ``IPython.display.Markdown``); the cheat-sheet's
    headers and row labels (``TABLE_TEXTS``) and planner reasons in the reader's language."""
    if not headers or any(len(row) != len(headers) for row in rows):
        raise ValueError("rows: every row needs one cell per header (and headers must not "
                         "be empty)")
    lines = ["| " + " | ".join(map(_shown, headers)) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(map(_shown, row)) + " |" for row in rows]
    return "\n".join(lines)
