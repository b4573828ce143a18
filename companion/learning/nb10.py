"""Notebook 10's exercises (``notebooks/10_when_parallelism_pays.ipynb``): when it pays.

Three worked problems in the style of CS336's written problems, on real model shapes
(``companion.planner.MODELS``) and real clusters (``companion.hardware``), each answered
by a function the checker runs on every problem of its set; then one on real ranks.

* ``10.fsdp-bound`` (warm-up): tokens per GPU for pure DP/FSDP, and is FSDP on N GPUs
  compute-bound at batch B?
* ``10.tp-limit`` (warm-up): the largest useful tensor-parallel degree.
* ``10.fsdp-tp-split`` (core): the best FSDP x TP split of N devices.
* ``10.prefetch-order`` (stretch): the order of an FSDP forward pass that prefetches
  unit k+1's all-gather while unit k computes, run with real asynchronous all-gathers on
  4 ranks; checked for values, for the overlap it allows and for the memory it holds.

:func:`worked_answer` prints a problem set's worked solutions, computed, when asked.
The prefetch exercise's rank-side code (the model, the order's rules, the forward pass
with real all-gathers) is :mod:`.nb10_prefetch`.
"""
from __future__ import annotations

from .. import hardware, planner, roofline
from .exercise import Exercise, register
from .feedback import defined_at as _defined_at
from .nb10_prefetch import UNITS, order_problem, run_order, single_process_forward
from .patterns import all_of, counts, only, per_rank, summary

_H100, _A100 = hardware.accelerator("H100"), hardware.accelerator("A100")
_NV, _IB = roofline.collective_bandwidth("H100", False), roofline.collective_bandwidth("H100", True)
_A_IB = roofline.collective_bandwidth("A100", True)
_M = planner.MODELS
_SEQ = 8192

# ---- 10.fsdp-bound ----------------------------------------------------------------------
# name -> (batch_tokens, devices, peak_flops, bandwidth)
FSDP_PROBLEMS = {
    "Llama-3 70B, 16M tokens, 1,024 H100s (128 nodes)": (2048 * _SEQ, 1024, _H100.flops, _IB),
    "Llama-3 405B, 16M tokens, 16,384 H100s": (2048 * _SEQ, 16384, _H100.flops, _IB),
    "GPT-3 175B, 3.1M tokens, 1,024 A100s": (1536 * 2048, 1024, _A100.flops, _A_IB),
    "7B, 64 sequences of 4,096, one node of 8 H100s": (64 * 4096, 8, _H100.flops, _NV),
}


def fsdp_verdict_reference(batch_tokens, devices, peak_flops, bandwidth):
    per_device = batch_tokens / devices
    critical = roofline.dp_critical_tokens(peak_flops, bandwidth)
    return per_device, critical, per_device > critical


def _problems(problems):
    return lambda rank, world_size: (problems,)


def _answer_fsdp(candidate, problems):
    out = {}
    for name, args in problems.items():
        got = candidate(*args)
        if not (isinstance(got, tuple) and len(got) == 3):
            return got   # the feedback shows what came back instead of a triple
        out[name] = {"tokens per device": float(got[0]), "critical tokens": float(got[1]),
                     "compute-bound": bool(got[2])}
    return out


_NO_RULES = {f"companion.roofline.rules.{n}": "it is the package's rule; derive it here"
             for n in ("dp_critical_tokens", "tp_max_degree", "fsdp_tp_split",
                       "fsdp_tp_best_degrees", "fsdp_tp_min_tokens", "layer_times")}
# The worked problems are arithmetic: any collective at all (the old pattern allowed an
# all-reduce) means the answer was fetched rather than computed.
_NO_MESSAGES = per_rank(lambda rank, world_size, calls: (
    f"called {summary(calls)}; this is arithmetic: no message is needed") if calls else None)

FSDP_BOUND = register(Exercise(
    id="10.fsdp-bound", level="warm-up",
    title="tokens per GPU for DP, and is FSDP compute-bound?",
    student_name="my_fsdp_verdict",
    task="Pure FSDP (or DP) on `devices` GPUs with a global batch of `batch_tokens` tokens; "
         "each GPU does `peak_flops` FLOP/s and its collectives move `bandwidth` bytes/s "
         "(per direction: NVLink inside a node, the node's NICs across nodes). Write "
         "`my_fsdp_verdict(batch_tokens, devices, peak_flops, bandwidth)` returning "
         "`(tokens_per_device, critical_tokens, compute_bound)`: the tokens each GPU "
         "gets, the tokens per GPU above which the weight traffic (bf16) hides under the "
         "layer's compute, and whether this run is above it. The checker runs it on four "
         "problems: Llama-3 70B and 405B, GPT-3 175B and a 7B model on real clusters.",
    hints=("Write both times for one MLP layer [D, F] and [F, D] in the backward pass: the "
           "FLOPs of its matmuls on this GPU's tokens, and the bytes of the gradients it "
           "all-reduces. Only one of them depends on the batch.",
           "An all-reduce of V bytes moves about 2 V per GPU; the backward pass does four "
           "matmuls of 2 x tokens x D x F FLOPs each. D and F cancel.",
           "Compute-bound when tokens_per_device / peak_flops exceeds 1 / bandwidth."),
    inputs=_problems(FSDP_PROBLEMS), reference=fsdp_verdict_reference, adapter=_answer_fsdp,
    forbidden={"companion.learning.nb10.fsdp_verdict_reference":
               "it is the package's solution to this exercise", **_NO_RULES},
    pattern=_NO_MESSAGES,
    world_size=1, rtol=1e-9, timeout=20.0,
))


# ---- 10.tp-limit ------------------------------------------------------------------------
# name -> (d_ff, peak_flops, bandwidth)
TP_PROBLEMS = {
    "Llama-3 70B on H100 NVLink": (_M["Llama-3 70B"].ffn, _H100.flops, _NV),
    "Llama-3 70B across H100 nodes": (_M["Llama-3 70B"].ffn, _H100.flops, _IB),
    "Llama-3 405B on H100 NVLink": (_M["Llama-3 405B"].ffn, _H100.flops, _NV),
    "GPT-3 175B on A100 NVLink": (_M["GPT-3 175B"].ffn, _A100.flops,
                                  roofline.collective_bandwidth("A100", False)),
    "a 125M model (F = 3,072) on H100 NVLink": (3072, _H100.flops, _NV),
}


def largest_tp_reference(d_ff, peak_flops, bandwidth):
    bound, y = roofline.tp_max_degree(d_ff, peak_flops, bandwidth), 1
    while 2 * y < bound:
        y *= 2
    return y


def _answer_tp(candidate, problems):
    return {name: candidate(*args) for name, args in problems.items()}


TP_LIMIT = register(Exercise(
    id="10.tp-limit", level="warm-up", title="the largest useful tensor-parallel degree",
    student_name="my_largest_tp",
    task="A Megatron MLP (column- then row-parallel, notebook 05) of width `d_ff` is split "
         "over Y GPUs. Write `my_largest_tp(d_ff, peak_flops, bandwidth)` returning the "
         "largest power of two Y at which its activation all-gather and reduce-scatter "
         "(bf16) still hide under its compute, or 1 when no split does. It runs on five "
         "problems: Llama-3 70B inside and across H100 nodes, Llama-3 405B, GPT-3 175B on "
         "A100s, and a small model.",
    hints=("Write both times for the forward pass of one MLP on B tokens split Y ways: the "
           "FLOPs each GPU does, and the bytes of [B, D] activations gathered before the "
           "first matmul and reduce-scattered after the second.",
           "B and D cancel: the condition is on F, Y and the ratio peak_flops / bandwidth. "
           "That is why no batch size rescues a large TP degree.",
           "Compute-bound while Y < d_ff x bandwidth / peak_flops; then take the largest "
           "power of two strictly below that bound (1 if it is 2 or less)."),
    inputs=_problems(TP_PROBLEMS), reference=largest_tp_reference, adapter=_answer_tp,
    forbidden={"companion.learning.nb10.largest_tp_reference":
               "it is the package's solution to this exercise", **_NO_RULES},
    pattern=_NO_MESSAGES,
    world_size=1, timeout=20.0,
))


# ---- 10.fsdp-tp-split -------------------------------------------------------------------
# name -> (batch_tokens, d_ff, devices)
SPLIT_PROBLEMS = {
    "Llama-3 70B, 1M tokens, 1,024 GPUs": (128 * _SEQ, _M["Llama-3 70B"].ffn, 1024),
    "Llama-3 405B, 16M tokens, 16,384 GPUs": (2048 * _SEQ, _M["Llama-3 405B"].ffn, 16384),
    "GPT-3 175B, 3.1M tokens, 4,096 GPUs": (1536 * 2048, _M["GPT-3 175B"].ffn, 4096),
    "the scaling book's 4x4x4: 48,000 tokens, F = 32,768, 64 chips": (48_000, 32_768, 64),
}


def split_reference(batch_tokens, d_ff, devices):
    return roofline.fsdp_tp_best_degrees(batch_tokens, d_ff, devices)


def _answer_split(candidate, problems):
    out = {}
    for name, args in problems.items():
        got = candidate(*args)
        out[name] = tuple(int(v) for v in got) if isinstance(got, tuple) else got
    return out


FSDP_TP_SPLIT = register(Exercise(
    id="10.fsdp-tp-split", level="core", title="the best FSDP x TP split",
    student_name="my_fsdp_tp_degrees",
    task="N devices run FSDP over X of them and tensor parallelism over Y = N / X, on one "
         "mesh axis each. Per layer (forward), FSDP all-gathers weight shards of 4 D F / Y "
         "bytes and TP moves 4 B D / X bytes of activations; the two overlap, so the "
         "communication time is the larger. Write `my_fsdp_tp_degrees(batch_tokens, d_ff, "
         "devices)` returning `(X, Y)`, powers of two with X x Y = N, that make it "
         "smallest (prefer the larger X on a tie). Four problems, from Llama-3 70B to the "
         "scaling book's 4x4x4 TPU slice.",
    hints=("As X grows, which of the two transfers grows and which shrinks? Where is the "
           "larger of two such curves smallest?",
           "Put Y = N / X into both: one is proportional to F X / N, the other to B / X. "
           "Setting them equal gives the real-valued optimum, a square root.",
           "The optimum is rarely a power of two: compare the communication of the powers "
           "of two around it (or simply of every power of two up to N) and keep the best."),
    inputs=_problems(SPLIT_PROBLEMS), reference=split_reference, adapter=_answer_split,
    forbidden={"companion.learning.nb10.split_reference":
               "it is the package's solution to this exercise", **_NO_RULES},
    pattern=_NO_MESSAGES,
    world_size=1, timeout=20.0,
))


# ---- 10.prefetch-order ------------------------------------------------------------------
def _precheck_order(candidate):
    problem = order_problem(candidate(UNITS), UNITS)
    return problem + _defined_at(candidate) if problem else None


PREFETCH_ORDER = register(Exercise(
    id="10.prefetch-order", level="stretch", title="the FSDP prefetch order",
    student_name="my_prefetch_order",
    task=f"An FSDP model of `units` units ({UNITS} here) keeps each unit's weights sharded "
         "over the ranks. Write `my_prefetch_order(units)` returning the forward pass as a "
         "list of `(op, k)`: `('gather', k)` issues unit k's all-gather asynchronously, "
         "`('compute', k)` waits for it and runs unit k, `('free', k)` drops the full "
         "weights. Unit k+1's gather must be issued before unit k computes (so the "
         "network works while the GPU does), and no more than two units may be held at "
         "once. The checker runs your order with real asynchronous all-gathers on 4 ranks.",
    hints=("Draw two rows, network and compute, for the order gather 0, compute 0, gather "
           "1, compute 1, ...: the network idles while the GPU computes and the other way "
           "round. What has to move for the rows to overlap?",
           "The first gather has nothing to hide behind; every later one can start while "
           "the unit before it computes.",
           "Start with gather 0; then, for each k: gather k+1 (if there is one), compute k, "
           "free k."),
    inputs=lambda rank, world_size: (UNITS,), expected=single_process_forward,
    adapter=run_order, precheck=_precheck_order,
    forbidden={"companion.learning.nb10_prefetch.prefetch_order_reference":
               "it is the package's solution to this exercise"},
    pattern=all_of(only("all_gather_single", why="FSDP's forward pass only gathers"),
                   counts({"all_gather_single": UNITS})),
    timeout=30.0,
    context="import companion",
))


# ---- worked answers, shown when asked -------------------------------------------------
def worked_answer(exercise_id: str) -> None:
    """Print the worked solution of a numeric problem set, computed by the package."""
    if exercise_id == "10.fsdp-bound":
        for name, (b, n, c, w) in FSDP_PROBLEMS.items():
            per, crit, ok = fsdp_verdict_reference(b, n, c, w)
            print(f"{name}: B/N = {b:,.0f} / {n:,} = {per:,.0f} tokens; C/W = {c / 1e12:.0f}e12 "
                  f"/ {w / 1e9:.0f}e9 = {crit:,.0f} -> {'compute' if ok else 'communication'}-bound")
    elif exercise_id == "10.tp-limit":
        for name, (f, c, w) in TP_PROBLEMS.items():
            print(f"{name}: Y < F W / C = {f:,} x {w / 1e9:.0f}e9 / {c / 1e12:.0f}e12 = "
                  f"{roofline.tp_max_degree(f, c, w):.1f} -> Y = {largest_tp_reference(f, c, w)}")
    elif exercise_id == "10.fsdp-tp-split":
        for name, (b, f, n) in SPLIT_PROBLEMS.items():
            x, y = split_reference(b, f, n)
            print(f"{name}: X* = sqrt(B N / F) = sqrt({b:,.0f} x {n:,} / {f:,}) = "
                  f"{roofline.fsdp_tp_split(b, f, n):.1f} -> X = {x}, Y = {y}")
    else:
        raise ValueError(f"exercise_id={exercise_id!r}: worked answers exist for "
                         "'10.fsdp-bound', '10.tp-limit' and '10.fsdp-tp-split'.")
