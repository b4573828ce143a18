"""Published training runs, and what the planner predicts for each: a data table.

Taught in notebook 12 (``notebooks/12_auto_parallelism.ipynb``, "The planner against
published runs"). Every row is a layout a paper reports running, with what it measured;
:func:`predict` times the same layout with the planner (``planner.cost.evaluate``) and
ONE set of constants for every row (kernel efficiency 0.6 of the dense bf16 peak,
the links of ``companion.hardware``): nothing is fitted per row.

Where a paper states the micro-batch size or the interleaving, the row uses it; where
it does not, the planner picks its fastest among the options the row lists, preferring
options its memory model says fit. The layout is timed even where that model says it
does not fit (the paper ran it): the row's ``fits`` says what the model predicts.

Measured seconds per step, from each source:

* Megatron-LM 2021 (Narayanan et al., arXiv 2104.04473, Table 1): TFLOP/s per GPU,
  turned into seconds with the paper's own FLOP count, its Eq. 3,
  ``96 B s l h^2 (1 + s / 6h + V / 16 l h)``, which counts full recomputation's extra
  forward pass (§5.1). GPT models, vocabulary 51,200, sequences of 2,048, A100 80 GB.
* Korthikanti et al. 2022 (arXiv 2205.05198, Table 5): seconds per iteration with full
  recomputation and with sequence parallelism plus selective recomputation; the layouts
  (TP, PP, GPUs, batch, micro-batch, interleaving) are those of Calculon's validation
  files for that table (github.com/calculon-ai/calculon, ``validation/seqsel/tab5``).
* Llama 3 (arXiv 2407.21783, Table 4): TFLOP/s per GPU, turned into seconds with the
  planner's FLOP count (``ModelSpec.flops_per_token``, attention included), so the
  comparison is of time under one FLOP convention. §3.3.2: 8K pre-training ran without
  activation checkpointing, interleaved, one block fewer on the first and last stages.
* DeepSeek-V3 (arXiv 2412.19437, §3-4): 180K H800 GPU hours per trillion tokens. It
  trained with DualPipe; the planner times DualPipeV, the V-shaped cut of it (the same
  bubble and overlap, one copy of the parameters where DualPipe keeps two).
"""
from __future__ import annotations

import dataclasses

from ..validation import positive_int
from .cluster_spec import ClusterSpec
from .cost import Plan, evaluate
from .presets import CLUSTERS, MODELS
from .specs import ModelSpec

__all__ = ["Run", "RUNS", "predict", "table", "megatron_flops", "KERNEL_EFFICIENCY"]

KERNEL_EFFICIENCY = 0.6   # the planner's default: one constant for every row


@dataclasses.dataclass(frozen=True)
class Run:
    """One published layout and what it measured (seconds per optimizer step)."""

    source: str
    label: str
    model: ModelSpec
    cluster: ClusterSpec
    global_batch: int            # sequences per step
    dp: int
    tp: int
    pp: int
    recompute: tuple             # one value: published; several: the planner picks
    measured_s: float
    cp: int = 1
    ep: int = 1
    zero: int = 1
    schedule: str = "1f1b"
    stage_split: str | None = None
    micro_batches: tuple = (1,)  # one value: published; several: the planner picks
    chunks: tuple = (1,)
    attention: str = "fused"     # "materialized" before FlashAttention (2022)


def megatron_flops(model: ModelSpec, batch: int) -> float:
    """Megatron-LM 2021's Eq. 3: FLOPs of one step of ``batch`` sequences with full
    recomputation (its matrix multiplications only, as the paper counts them)."""
    positive_int("batch", batch, "pass the global batch in sequences, e.g. 512.")
    s, l, h, v = model.seq_len, model.layers, model.hidden, model.vocab
    return 96.0 * batch * s * l * h * h * (1 + s / (6 * h) + v / (16 * l * h))


def _gpt(params_b: float, heads: int, hidden: int, layers: int) -> ModelSpec:
    return ModelSpec(f"GPT {params_b:g}B", layers=layers, hidden=hidden, heads=heads,
                     seq_len=2048, vocab=51200, tied_embeddings=True, biases=True,
                     layernorm=True, learned_positions=True, published_params=params_b * 1e9)


def _selene(gpus: int) -> ClusterSpec:
    return ClusterSpec.of(f"Selene, {gpus} A100", "A100", -(-gpus // 8))


# Table 1: params (B), heads, hidden, layers, TP, PP, GPUs, batch, TFLOP/s per GPU.
_MEGATRON_TABLE_1 = [
    (1.7, 24, 2304, 24, 1, 1, 32, 512, 137), (3.6, 32, 3072, 30, 2, 1, 64, 512, 138),
    (7.5, 32, 4096, 36, 4, 1, 128, 512, 142), (18.4, 48, 6144, 40, 8, 1, 256, 1024, 135),
    (39.1, 64, 8192, 48, 8, 2, 512, 1536, 138), (76.1, 80, 10240, 60, 8, 4, 1024, 1792, 140),
    (145.6, 96, 12288, 80, 8, 8, 1536, 2304, 148),
    (310.1, 128, 16384, 96, 8, 16, 1920, 2160, 155),
    (529.6, 128, 20480, 105, 8, 35, 2520, 2520, 163),
    (1008.0, 160, 25600, 128, 8, 64, 3072, 3072, 163),
]

# Table 5 (layouts: Calculon's tab5 files): model, TP, PP, GPUs, batch, micro-batch, interleaving,
# seconds with full recomputation, seconds with sequence parallelism + selective.
_KORTHIKANTI_TABLE_5 = [
    (_gpt(22, 64, 6144, 48), 8, 1, 8, 4, 4, 1, 1.42, 1.10),
    (_gpt(175, 96, 12288, 96), 8, 8, 64, 64, 1, 3, 18.13, 13.75),
    (_gpt(530, 128, 20480, 105), 8, 35, 280, 280, 1, 3, 49.05, 37.83),
    (_gpt(1000, 160, 25600, 128), 8, 64, 512, 512, 1, 1, 94.42, 71.49),
]


def _runs() -> list[Run]:
    runs = []
    for p, a, h, l, t, pp, n, b, tflops in _MEGATRON_TABLE_1:
        m = _gpt(p, a, h, l)
        runs.append(Run("Megatron-LM 2021, Table 1", f"GPT {p:g}B, {n} A100", m, _selene(n),
                        b, n // (t * pp), t, pp, ("full",),
                        megatron_flops(m, b) / (n * tflops * 1e12),
                        micro_batches=(1, 2, 4, 8), chunks=(2, 3, 4) if pp > 1 else (1,),
                        attention="materialized"))
    for m, t, pp, n, b, mb, v, full, selective in _KORTHIKANTI_TABLE_5:
        for recompute, seconds in (("full", full), ("selective", selective)):
            runs.append(Run("Korthikanti et al. 2022, Table 5",
                            f"{m.name}, {recompute} recomputation", m, _selene(n), b,
                            n // (t * pp), t, pp, (recompute,), seconds,
                            micro_batches=(mb,), chunks=(v,), attention="materialized"))
    llama, llama_cluster = MODELS["Llama-3 405B"], CLUSTERS["Llama-3 scale: 16,384x H100"]
    long = dataclasses.replace(llama, name="Llama-3 405B, 128K", seq_len=131072)
    # §3.3.2: 8K without activation checkpointing; 128K's recomputation is not stated;
    # interleaved, V not stated. FSDP shards the optimizer states and gradients, which
    # the planner (like DeepSpeed) allows with PP only as ZeRO-1: gradients accumulate
    # whole over the micro-batches.
    for gpus, cp, dp, model, tflops, recompute in (
            (8192, 1, 64, llama, 430, ("none",)), (16384, 1, 128, llama, 400, ("none",)),
            (16384, 16, 8, long, 380, ("none", "selective", "full"))):
        cluster = dataclasses.replace(llama_cluster, nodes=gpus // 8)
        batch = 2 ** 24 // model.seq_len
        seconds = batch * model.seq_len * model.flops_per_token() / (gpus * tflops * 1e12)
        runs.append(Run("Llama 3, Table 4", f"{model.name}, {gpus} H100", model, cluster,
                        batch, dp, 8, 16, recompute, seconds, cp=cp,
                        stage_split="llama3", chunks=(2, 4, 7)))
    ds = MODELS["DeepSeek-V3 671B"]
    ds_tokens = 15360 * ds.seq_len
    runs.append(Run("DeepSeek-V3, §3-4", "DeepSeek-V3, 2,048 H800", ds,
                    CLUSTERS["DeepSeek-V3: 2,048x H800"], 15360, 128, 1, 16,
                    ("none", "selective", "full"),
                    ds_tokens / (2048 * 1e12 / (180e3 * 3600)), ep=64,
                    schedule="dualpipev"))
    return runs


RUNS = _runs()


def predict(run: Run) -> tuple[Plan, bool]:
    """The planner's fastest plan for ``run``'s layout among its options (those its
    memory model says fit first), and whether that plan fits."""
    if not isinstance(run, Run):
        raise TypeError(f"run: pass a planner.published.Run, got {type(run).__name__}.")
    budget = run.cluster.gpu_memory_gb * 1e9
    plans = [evaluate(run.model, run.cluster, run.global_batch, run.dp, run.tp, run.pp,
                      run.zero, mb, rc, v, KERNEL_EFFICIENCY, cp=run.cp,
                      ep=run.ep, schedule=run.schedule, stage_split=run.stage_split,
                      enforce_memory=False, attention=run.attention)
             for mb in run.micro_batches for v in run.chunks for rc in run.recompute]
    plans = [p for p in plans if p.feasible]
    if not plans:
        raise ValueError(f"{run.label}: no option of this layout is valid for the planner")
    best = min(plans, key=lambda p: (p.memory["total"] > budget, p.step_time))
    return best, best.memory["total"] <= budget


def table() -> list[dict]:
    """One row per run: source, layout, measured and predicted seconds, their ratio."""
    rows = []
    for run in RUNS:
        plan, fits = predict(run)
        rows.append({"source": run.source, "run": run.label, "layout": plan.label(),
                     "measured_s": run.measured_s, "predicted_s": plan.step_time,
                     "ratio": plan.step_time / run.measured_s,
                     "memory_gb": plan.memory["total"] / 1e9, "fits": fits})
    return rows
