"""Exercise 12.cp-ep-degrees (notebook 12, section 6): context- and expert-parallel
degrees chosen with the 5D planner's breakdowns."""
from __future__ import annotations

from ..exercise import Exercise, register

# ---- 12.cp-ep-degrees -------------------------------------------------------------------
# CS336 L8 §7.2: split the model only as far as it must go, and give the rest to data
# parallelism. With TP and PP fixed, the smallest CP that fits leaves the most DP; then
# the EP degree is a free choice of the MoE layers, judged by step time.
CP_DEGREES = (1, 2, 4, 8, 16, 32)
TOLERANCE = 0.10


def _cp_ep_problems():
    import dataclasses
    from ...planner import CLUSTERS, MODELS
    llama_128k = dataclasses.replace(MODELS["Llama-3 405B"], name="Llama-3 405B, 128K",
                                     seq_len=131072)
    llama70_32k = dataclasses.replace(MODELS["Llama-3 70B"], name="Llama-3 70B, 32K",
                                      seq_len=32768)
    h128 = CLUSTERS["16 nodes, 128x H100"]
    return {
        "Llama-3 405B, 131,072-token sequences, 16,384 H100s, TP 8, PP 16":
            (llama_128k, CLUSTERS["Llama-3 scale: 16,384x H100"], 128, 8, 16),
        "Llama-3 70B, 32,768-token sequences, 128 H100s, TP 8, PP 2": (llama70_32k, h128, 64, 8, 2),
        "DeepSeek-V3, 2,048 H800s, TP 1, PP 16": (MODELS["DeepSeek-V3 671B"],
                                                  CLUSTERS["DeepSeek-V3: 2,048x H800"], 15360, 1, 16),
        "Mixtral 8x7B, 128 H100s, TP 1, PP 2": (MODELS["Mixtral 8x7B"], h128, 512, 1, 2),
    }


def ep_options(model) -> list[int]:
    """EP degrees to consider: powers of two dividing the experts, up to 64 (8 nodes)."""
    if not model.is_moe:
        return [1]
    return [e for e in (1, 2, 4, 8, 16, 32, 64) if model.experts % e == 0]


def evaluate_axes(model, cluster, global_batch, tp, pp, cp, ep):
    """``planner.evaluate`` of DP = GPUs / (TP x PP x CP) with ZeRO-1, micro-batch 1,
    Llama 3's balanced stages and 1F1B, the better of selective and full recomputation
    and of 1 or 4 interleaved chunks; experts unsplit (ETP 1)."""
    from ...planner import evaluate
    dp = cluster.gpus // (tp * pp * cp)
    if dp < 1 or dp * tp * pp * cp != cluster.gpus:
        return evaluate(model, cluster, global_batch, max(dp, 1), tp, pp, cp=cp, ep=ep)
    tries = [evaluate(model, cluster, global_batch, dp, tp, pp, 1, 1, recompute, chunks,
                      cp=cp, ep=ep, etp=1 if model.is_moe else None, stage_split="llama3")
             for recompute in ("selective", "full") for chunks in ((1, 4) if pp > 1 else (1,))]
    fits = [p for p in tries if p.feasible]
    return min(fits, key=lambda p: p.step_time) if fits else tries[0]


def cp_ep_reference(model, cluster, global_batch, tp, pp):
    """The smallest CP with any feasible EP, then the fastest EP at that CP."""
    for cp in CP_DEGREES:
        if cluster.gpus % (tp * pp * cp):
            continue
        fits = [(p.step_time, ep) for ep in ep_options(model)
                if (p := evaluate_axes(model, cluster, global_batch, tp, pp, cp, ep)).feasible]
        if fits:
            return cp, min(fits)[1]
    return None


def _cp_ep_inputs(rank, world_size):
    # The package's answers are found here, before the student's code is watched (the
    # adapter runs inside the watch, where calling the reference would count as theirs).
    problems = _cp_ep_problems()
    return problems, {name: cp_ep_reference(*args) for name, args in problems.items()}


def _judge_cp_ep(candidate, problems, answers):
    out = {}
    for name, (model, cluster, batch, tp, pp) in problems.items():
        got = candidate(model, cluster, batch, tp, pp)
        if not (isinstance(got, tuple) and len(got) == 2 and all(isinstance(v, int) for v in got)):
            return got   # the feedback shows what came back instead of (cp, ep)
        cp, ep = got
        p = evaluate_axes(model, cluster, batch, tp, pp, cp, ep)
        best_cp, best_ep = answers[name]
        best = evaluate_axes(model, cluster, batch, tp, pp, best_cp, best_ep)
        out[name] = {"fits": True if p.feasible else p.reason,
                     "CP is the smallest that fits": cp <= best_cp or
                     f"CP {cp}, but CP {best_cp} fits and leaves {cp // best_cp}x the DP",
                     f"step within {TOLERANCE:.0%} of the best EP at that CP":
                     (p.feasible and p.step_time <= (1 + TOLERANCE) * best.step_time) or
                     (f"{p.step_time:.2f} s against {best.step_time:.2f} s (EP {best_ep}); "
                      f"exposed all-to-all {p.times.get('ep_comm_exposed', 0):.2f} s"
                      if p.feasible else "it does not fit")}
    return out


def _cp_ep_expected(problems, answers):
    return {name: {"fits": True, "CP is the smallest that fits": True,
                   f"step within {TOLERANCE:.0%} of the best EP at that CP": True}
            for name in problems}


CP_EP = register(Exercise(
    id="12.cp-ep-degrees", level="stretch", title="context- and expert-parallel degrees",
    student_name="my_cp_ep",
    task="TP and PP are fixed (the runs' published values or close to them). Write "
         "`my_cp_ep(model, cluster, global_batch, tp, pp)` returning `(cp, ep)`: the "
         "context-parallel degree and, for a MoE model, the expert-parallel degree "
         "(1 for a dense model); DP is what remains, GPUs / (TP x PP x CP). Follow CS336's "
         "rule: split a sequence only as far as memory forces (the smallest CP that fits, "
         "which keeps DP largest), then choose the EP with the fastest step at that CP. "
         "Inside your function you may call `evaluate_axes(model, cluster, global_batch, "
         "tp, pp, cp, ep)` (from `companion.learning.nb12`) and read `p.feasible`, "
         "`p.reason`, `p.step_time`, `p.times`; the planner's search is not allowed. The "
         "checker runs four problems: Llama-3 405B's long-context stage, Llama-3 70B at "
         "32K tokens, DeepSeek-V3 and Mixtral 8x7B.",
    hints=("Two questions, in order: the smallest CP for which some configuration fits, "
           "then the EP that is fastest at that CP. A dense model has one EP: 1.",
           "Try CP = 1, 2, 4, ... and, for each, every EP from `ep_options(model)`; stop at "
           "the first CP where `evaluate_axes(...).feasible` holds for some EP.",
           "At that CP keep the EP with the smallest `step_time`. Compare what you get for "
           "DeepSeek-V3 with its published EP 64: `p.times['ep_comm_exposed']` says why "
           "DeepSeek needed DualPipeV to hide it."),
    inputs=_cp_ep_inputs, expected=_cp_ep_expected, adapter=_judge_cp_ep,
    forbidden={"companion.learning.nb12.cp_ep_reference":
               "it is the package's solution to this exercise",
               "companion.planner.search.plan": "the search would choose for you",
               "companion.widgets.autoparallel.search_5d": "the search would choose for you"},
    world_size=1, timeout=60.0,
    context="from companion.learning.nb12 import evaluate_axes, ep_options, CP_DEGREES",
))
