"""Notebook 10's exercises (``notebooks/10_when_parallelism_pays.ipynb``): when it pays.

Three decisions on real model shapes (``planner.MODELS``) and chips (``hardware``), each
a function run on every problem of its set, none a printed formula; one on real ranks.

* ``10.fsdp-bound`` (warm-up, decide): the most GPUs (a power of two) a batch keeps
  compute-bound under pure FSDP, where the group's bandwidth drops once it leaves a node.
* ``10.tp-limit`` (warm-up, decide): the narrowest MLP whose Y-way split stays
  compute-bound, each GPU's slice a whole number of tiles.
* ``10.fsdp-tp-split`` (core, decide): the best FSDP x TP split of N GPUs, an FSDP group
  getting one NIC per member in each node.
* ``10.prefetch-order`` (stretch, implement): an FSDP forward pass with real
  asynchronous all-gathers that prefetches unit k+1 while unit k computes and holds at
  most two units; the ranks record the order (:mod:`.nb10_prefetch`).

:func:`worked_answer` prints a problem set's worked solutions, computed, when asked.
"""
from __future__ import annotations

import math

from .. import hardware, planner, roofline
from .exercise import Exercise, register
from .nb10_prefetch import (UNITS, WIDTH, observe_forward, prefetch_forward_reference,
                            prefetch_inputs)
from .patterns import all_of, counts, only, per_rank, summary

_H100, _A100, _B200 = (hardware.accelerator(c) for c in ("H100", "A100", "B200"))
_NV, _IB = (roofline.collective_bandwidth("H100", across) for across in (False, True))
_A_NV, _A_IB = (roofline.collective_bandwidth("A100", across) for across in (False, True))
_B_NV, _B_IB = (roofline.collective_bandwidth("B200", across) for across in (False, True))
_IB2 = roofline.collective_bandwidth("H100", True, 8, nodes=2)   # NVLink's phase is slower
_M = planner.MODELS
_SEQ = 8192
TILE = 128   # columns of one GPU's slice of an MLP come in tiles of this many


def _problems(problems):
    return lambda rank, world_size: (problems,)


def _answer_each(candidate, problems):
    out = {}
    for name, args in problems.items():
        got = candidate(*args)
        out[name] = tuple(int(v) for v in got) if isinstance(got, tuple) else got
    return out


_NO_RULES = {f"companion.roofline.rules.{n}": "it is the package's rule; derive it here"
             for n in ("dp_critical_tokens", "tp_max_degree", "fsdp_tp_split",
                       "fsdp_tp_best_degrees", "fsdp_tp_min_tokens", "layer_times")}
# The worked problems are arithmetic: any collective means the answer was fetched.
_NO_MESSAGES = per_rank(lambda rank, world_size, calls: (
    f"called {summary(calls)}; this is arithmetic: no message is needed") if calls else None)


# ---- 10.fsdp-bound ----------------------------------------------------------------------
# name -> (batch_tokens, max_gpus, gpus_per_node, peak_flops, nvlink_bw, node_bw)
FSDP_PROBLEMS = {
    "Llama-3 70B, 2M tokens, up to 1,024 H100s": (256 * _SEQ, 1024, 8, _H100.flops, _NV, _IB),
    "GPT-3 175B, 3.1M tokens, up to 4,096 A100s": (1536 * 2048, 4096, 8, _A100.flops,
                                                   _A_NV, _A_IB),
    "7B, 64 sequences of 4,096, up to 64 B200s": (64 * 4096, 64, 8, _B200.flops, _B_NV,
                                                  _B_IB),
    "Llama-3 405B, 16M tokens, up to 2,048 H100s": (2048 * _SEQ, 2048, 8, _H100.flops,
                                                    _NV, _IB),
    "a fine-tune, 18 sequences of 1,024, on one node of 8 H100s": (18 * 1024, 8, 8,
                                                                  _H100.flops, _NV, _IB),
    "2,048 tokens, up to 64 A100s": (2048, 64, 8, _A100.flops, _A_NV, _A_IB),
}


def _fsdp_rows(batch_tokens, max_gpus, gpus_per_node, peak_flops, nvlink_bw, node_bw):
    """(n, tokens per GPU, critical tokens, where) for n = 2, 4, ... up to max_gpus."""
    n, rows = 2, []
    while n <= max_gpus:
        inside = n <= gpus_per_node
        rows.append((n, batch_tokens / n, roofline.dp_critical_tokens(
            peak_flops, nvlink_bw if inside else node_bw), "in a node" if inside else
            "across nodes"))
        n *= 2
    return rows


def fsdp_gpus_reference(batch_tokens, max_gpus, gpus_per_node, peak_flops, nvlink_bw,
                        node_bw):
    rows = _fsdp_rows(batch_tokens, max_gpus, gpus_per_node, peak_flops, nvlink_bw, node_bw)
    return max([1] + [n for n, tokens, critical, _w in rows if tokens > critical])


FSDP_BOUND = register(Exercise(
    id="10.fsdp-bound", level="warm-up", kind="decide",
    title="how many GPUs can pure FSDP keep busy?",
    student_name="my_fsdp_gpus",
    task="A global batch of `batch_tokens` tokens trains with pure FSDP (or DP) on n "
         "GPUs, up to `max_gpus`; each GPU does `peak_flops` FLOP/s. A group that fits in "
         "one node (n <= `gpus_per_node`) runs its collectives over NVLink at "
         "`nvlink_bw` bytes/s per GPU and direction; a group that spans nodes gets the "
         "nodes' NICs, `node_bw`. Write `my_fsdp_gpus(batch_tokens, max_gpus, "
         "gpus_per_node, peak_flops, nvlink_bw, node_bw)` returning the largest power of "
         "two n <= max_gpus at which the weight traffic (bf16) still hides under the "
         f"compute, or 1 when even 2 GPUs would wait. {len(FSDP_PROBLEMS)} problems, from "
         "Llama-3 405B on H100s to a fine-tune on one node and a 7B model on B200s.",
    hints=("Section 2's rule says when FSDP on n GPUs hides its traffic. Here n is the "
           "unknown: which side of the rule changes with n, and which only jumps?",
           "W is not one number: a group inside one node talks over NVLink, one that "
           "spans nodes through the nodes' NICs. So the threshold depends on whether the "
           "n GPUs fit in a node.",
           "As n doubles the tokens per GPU halve and the threshold never falls, so once "
           "a degree fails, every larger one fails too; and the cluster may run out "
           "before the batch does."),
    inputs=_problems(FSDP_PROBLEMS), reference=fsdp_gpus_reference, adapter=_answer_each,
    forbidden=_NO_RULES, pattern=_NO_MESSAGES, world_size=1, timeout=20.0,
))


# ---- 10.tp-limit ------------------------------------------------------------------------
# name -> (tp, peak_flops, bandwidth)
TP_PROBLEMS = {
    "TP 8 on H100 NVLink": (8, _H100.flops, _NV),
    "TP 16 across two full H100 nodes": (16, _H100.flops, _IB2),
    "TP 8 on A100 NVLink": (8, _A100.flops, _A_NV),
    "TP 8 on B200 NVLink": (8, _B200.flops, _B_NV),
    "TP 4 over one TPU v5p torus axis": (4, hardware.accelerator("TPU v5p").flops,
                                         roofline.collective_bandwidth("TPU v5p", False)),
    # one member per node: each drives its own NIC, and only that one
    "TP 2 across two A100 nodes, one GPU in each": (
        2, _A100.flops, roofline.collective_bandwidth("A100", True, 1, nodes=2)),
}


def narrowest_mlp_reference(tp, peak_flops, bandwidth):
    tiles = 1
    while roofline.tp_max_degree(tp * tiles * TILE, peak_flops, bandwidth) <= tp:
        tiles += 1
    return tp * tiles * TILE


TP_LIMIT = register(Exercise(
    id="10.tp-limit", level="warm-up", kind="decide",
    title="the narrowest MLP that a TP degree can split",
    student_name="my_narrowest_mlp",
    task="Section 3 bounds the TP degree for a given MLP. Turn it round: a model designer "
         "wants a Megatron MLP (column- then row-parallel, notebook 05) split `tp` ways on "
         "a link of `bandwidth` bytes/s per GPU and direction, each GPU doing "
         f"`peak_flops` FLOP/s, and each GPU's slice of the MLP a whole number of {TILE}-"
         "column tiles (what tensor-core kernels want). Write `my_narrowest_mlp(tp, "
         "peak_flops, bandwidth)` returning the smallest MLP width F (an int) at which "
         "the activation all-gather and reduce-scatter (bf16) still hide under the "
         f"compute. {len(TP_PROBLEMS)} problems: H100, A100 and B200 NVLink, two across "
         "two nodes (the bandwidth each gives is section 3's for a group over two nodes: "
         "the slower of its NIC phase, one NIC per member, and its NVLink phase inside "
         "each node), a TPU.",
    hints=("Section 3's inequality relates Y, F and C / W. Solve it for F instead of Y.",
           "F / Y is the width of one GPU's slice of the MLP: the condition is on that "
           "slice alone, whatever Y is.",
           "Round the slice, not F, and mind the inequality: the slice must be strictly "
           "wider than the bound. Check your TP 8 answer on H100 NVLink against Llama-3 "
           f"70B's F = {_M['Llama-3 70B'].ffn:,}: is it narrower, as section 3's table says "
           "it must be?"),
    inputs=_problems(TP_PROBLEMS), reference=narrowest_mlp_reference, adapter=_answer_each,
    forbidden=_NO_RULES, pattern=_NO_MESSAGES, world_size=1, timeout=20.0, context="import math",
))


# ---- 10.fsdp-tp-split -------------------------------------------------------------------
_NIC, _A_NIC, _B_NIC = (roofline.collective_bandwidth(c, True, 1) for c in ("H100", "A100", "B200"))
# name -> (batch_tokens, seq_len, d_ff, devices, gpus_per_node, nvlink, nic): 8-GPU nodes
_split = lambda seqs, seq, model, n, nv, nic: (seqs * seq, seq, _M[model].ffn, n, 8, nv, nic)
SPLIT_PROBLEMS = {
    "Llama-3 70B, 64K tokens, one node of 8 H100s": _split(8, _SEQ, "Llama-3 70B", 8, _NV, _NIC),
    "Llama-3 8B, 4M tokens, 512 H100s": _split(512, _SEQ, "Llama-3 8B", 512, _NV, _NIC),
    "Llama-3 70B, 1M tokens, 1,024 H100s": _split(128, _SEQ, "Llama-3 70B", 1024, _NV, _NIC),
    "Llama-3 70B, 16M tokens, 2,048 H100s": _split(2048, _SEQ, "Llama-3 70B", 2048, _NV, _NIC),
    "GPT-3 175B, 3.1M tokens, 4,096 A100s": _split(1536, 2048, "GPT-3 175B", 4096, _A_NV,
                                                   _A_NIC),
    "Llama-3 70B, 2M tokens, 2,048 B200s": _split(256, _SEQ, "Llama-3 70B", 2048, _B_NV, _B_NIC),
    "Llama-3 405B, 1M tokens, 8,192 H100s": _split(128, _SEQ, "Llama-3 405B", 8192, _NV, _NIC),
}


def _split_times(batch_tokens, seq_len, d_ff, devices, gpus_per_node, nvlink, nic):
    """[(Y, X, seconds up to the common factor 4 D)] for every allowed split."""
    out, y = [], 1
    while y <= min(gpus_per_node, devices):
        x = devices // y
        if x <= batch_tokens // seq_len:   # each FSDP rank needs whole sequences
            # roofline.fsdp_tp_bandwidths' placement: inside one node everything rides
            # NVLink; across nodes an FSDP group has gpus_per_node / Y members per node,
            # one NIC each (tests/test_roofline.py holds the two together)
            w_fsdp = nvlink if devices <= gpus_per_node else gpus_per_node // y * nic
            out.append((y, x, max(d_ff / (y * w_fsdp), batch_tokens / (x * nvlink))))
        y *= 2
    return out


def split_reference(batch_tokens, seq_len, d_ff, devices, gpus_per_node, nvlink_bandwidth,
                    nic_bandwidth):
    times = _split_times(batch_tokens, seq_len, d_ff, devices, gpus_per_node,
                         nvlink_bandwidth, nic_bandwidth)
    if not times:
        return None
    y, x, _ = min(times, key=lambda r: (r[2], r[0]))   # a tie goes to the larger X
    return x, y


FSDP_TP_SPLIT = register(Exercise(
    id="10.fsdp-tp-split", level="core", kind="decide",
    title="the best FSDP x TP split on a real cluster",
    student_name="my_fsdp_tp_degrees",
    task="N GPUs run FSDP over X of them and tensor parallelism over Y = N / X, placed as "
         "Megatron places them: a TP group is Y adjacent GPUs of one node (Y <= "
         "gpus_per_node), talking over NVLink at `nvlink_bandwidth`; an FSDP group is one "
         "GPU of each TP group. Every GPU has one NIC of `nic_bandwidth` bytes/s. A group "
         "inside one node rides NVLink; a group that spans nodes gets, in each node, one "
         "NIC per member it has there. Per layer (forward) each GPU's FSDP all-gathers "
         "move 4 D F / Y bytes and its TP collectives 4 B D / X; they overlap, so the "
         "communication time is the larger of the two. Each FSDP rank needs whole "
         "sequences: X <= batch_tokens / seq_len. Write `my_fsdp_tp_degrees(batch_tokens, "
         "seq_len, d_ff, devices, gpus_per_node, nvlink_bandwidth, nic_bandwidth)` "
         "returning `(X, Y)`, powers of two, of least communication time (the larger X on "
         "a tie), or None when no split fits the batch. "
         f"{len(SPLIT_PROBLEMS)} problems on H100, A100 and B200 clusters.",
    hints=("Write both times with the bandwidth each group really gets. Count, for Y = 1, "
           "2, 4 and 8 on 8-GPU nodes, how many members one FSDP group has in each node.",
           "Across nodes, multiplying Y by 2 halves the bytes each GPU gathers for FSDP. "
           "What does it do to the NICs its FSDP group drives in one node, and so to "
           "FSDP's time? Inside one node, does the same hold?",
           "Where FSDP's time no longer depends on Y, only TP's time and the batch tell "
           "the splits apart. Which constraint then sets Y, and what does the one case "
           "with no answer need that FSDP x TP cannot give it?"),
    inputs=_problems(SPLIT_PROBLEMS), reference=split_reference, adapter=_answer_each,
    forbidden={**_NO_RULES, "companion.roofline.matmul.fsdp_tp_bandwidths":
               "it is the package's placement rule; derive it here"},
    pattern=_NO_MESSAGES, world_size=1, timeout=20.0,
))


# ---- 10.prefetch-order ------------------------------------------------------------------
_GATHERS = ("all_gather_single", "all_gather_into_tensor", "all_gather")

PREFETCH_ORDER = register(Exercise(
    id="10.prefetch-order", level="stretch", kind="implement",
    title="an FSDP forward pass that prefetches, on real ranks",
    student_name="my_fsdp_forward",
    task=f"An FSDP model of {UNITS} units keeps each unit's `[{WIDTH}, {WIDTH}]` weights sharded: "
         "`shards[k]` is this rank's piece of unit k's flattened weights (rank r holds "
         "the r-th of the world's equal pieces). Write `my_fsdp_forward(x, shards, layer)`: "
         "for each unit in order, all-gather its full weights with a real asynchronous "
         "all-gather (`dist.all_gather_single(full, shards[k], async_op=True)` returns a "
         f"handle to `wait()` on), then run it with `x = layer(k, x, full.view({WIDTH}, {WIDTH}))`, "
         "and return the final `x`. Unit k+1's all-gather must be on the wire (issued, not "
         "yet waited for) while unit k computes, each unit must wait for its own "
         "all-gather before it computes, and no more than two units' gathered weights may "
         "be alive at any compute. The ranks record the order they really issue, wait and "
         "compute in, and what is alive.",
    hints=("Draw two rows, network and compute, for gather 0, compute 0, gather 1, "
           "compute 1, ...: the network idles while the GPU computes and the other way "
           "round. Which call has to move for the rows to overlap?",
           "The first all-gather has nothing to hide behind. Every later one can start "
           "before the unit ahead of it computes, as long as nothing waits for it yet.",
           "Gathering every unit up front overlaps too, and holds the whole model: FSDP's "
           "saving is gone. Keep at most the unit computing and the next one, and make "
           "sure nothing (a variable, a list, a handle) still refers to a unit that has "
           "computed."),
    inputs=prefetch_inputs, reference=prefetch_forward_reference, adapter=observe_forward,
    forbidden={"companion.data_parallel.fsdp.wrapper.FSDP":
               "it is the package's FSDP, whose prefetch is what you write here",
               "torch.distributed.fsdp.fully_shard": "it is torch's FSDP",
               "torch.distributed.fsdp.FullyShardedDataParallel": "it is torch's FSDP"},
    pattern=all_of(only(*_GATHERS, why="FSDP's forward pass only gathers"),
                   counts({_GATHERS: UNITS}, why="one all-gather per unit")),
    rtol=1e-6, atol=1e-6, timeout=30.0,
    context="import torch\nimport torch.distributed as dist",
))


# ---- worked answers, shown when asked -------------------------------------------------
def worked_answer(exercise_id: str) -> None:
    """Print the worked solution of a numeric problem set, computed by the package."""
    if exercise_id == "10.fsdp-bound":
        for name, args in FSDP_PROBLEMS.items():
            rows = _fsdp_rows(*args)
            print(f"{name}: " + "; ".join(
                f"n={n}: {t:,.0f} {'>' if t > c else '<'} {c:,.0f} ({w})"
                for n, t, c, w in rows[-3:]) + f" -> {fsdp_gpus_reference(*args)}")
    elif exercise_id == "10.tp-limit":
        for name, (y, c, w) in TP_PROBLEMS.items():
            f = narrowest_mlp_reference(y, c, w)
            print(f"{name}: each slice F / Y > C / W = {c / w:,.0f} -> {f // y:,} columns "
                  f"({f // y // TILE} tiles) -> F = {y} x {f // y:,} = {f:,}")
    elif exercise_id == "10.fsdp-tp-split":
        for name, args in SPLIT_PROBLEMS.items():
            rows = "; ".join(f"Y={y}: {t * 1e9:.3g}" for y, _, t in _split_times(*args))
            print(f"{name}: T / 4D = max(F / (Y W_fsdp), B / (X W_nvlink)) in ns, for each Y "
                  f"the batch allows: {rows or 'none'} -> {split_reference(*args)}")
    else:
        raise ValueError(f"exercise_id={exercise_id!r}: worked answers exist for "
                         "'10.fsdp-bound', '10.tp-limit' and '10.fsdp-tp-split'.")
