"""The limit on data parallelism: a global batch of B sequences allows at most B ranks.

Taught in notebook 10 (``notebooks/10_when_parallelism_pays.ipynb``), CS336 L8 section 3.6
("if the batch size is 8, you can never use more than eight accelerators"). Data
parallelism (DDP, ZeRO, FSDP) gives each rank different sequences of the same step; a
sequence is not split between data-parallel ranks (splitting it is sequence or context
parallelism, notebook 06). So ``dp <= B``, and in practice ``B = dp x micro_batch x
accumulation_steps``. Models with a fixed global batch in tokens therefore cap the
data-parallel degree at ``tokens_per_step / seq_len``; every GPU beyond that must come
from tensor, pipeline or context parallelism.
"""
from __future__ import annotations

import math

from ..validation import positive_int

__all__ = ["max_dp_ranks", "split_batch", "sequences_per_step", "dp_limit_table",
           "PUBLISHED_BATCHES"]

# name -> (tokens per optimizer step, sequence length, data-parallel degree used or None,
#          source). Both numbers are the papers' own; "3.2M" is GPT-3's rounded figure.
PUBLISHED_BATCHES = {
    "GPT-3 175B": (3.2e6, 2048, None,
                   "Brown et al. 2020, arXiv:2005.14165, Table 2.1 (batch 3.2M tokens, n_ctx 2048)"),
    "Llama-3 405B": (16 * 2**20, 8192, 128,
                     "Llama 3 Herd, arXiv:2407.21783, Section 3.3.2 Table 4 (16M tokens/batch, "
                     "seq 8192, TP 8, CP 1, PP 16, DP 128 on 16,384 GPUs)"),
}


def max_dp_ranks(global_batch: int) -> int:
    """The most data-parallel ranks a global batch of ``global_batch`` sequences allows:
    the batch itself (one sequence per rank, no accumulation)."""
    return positive_int("global_batch", global_batch,
                        "pass the number of sequences per optimizer step, e.g. global_batch=64.")


def split_batch(global_batch: int, dp: int, micro_batch: int = 1) -> dict:
    """How ``global_batch`` sequences split over ``dp`` ranks in micro-batches.

    Returns ``{"per_rank", "micro_batch", "accumulation_steps"}`` with
    ``global_batch == dp * micro_batch * accumulation_steps``. Raises ``ValueError`` when
    ``dp > global_batch`` (a rank would get no sequence: the limit of data parallelism)
    or when the numbers do not divide.
    """
    positive_int("global_batch", global_batch, "pass the sequences per optimizer step, e.g. 64.")
    positive_int("dp", dp, "pass the number of data-parallel ranks, e.g. dp=8.")
    positive_int("micro_batch", micro_batch, "pass the sequences per forward pass, e.g. 1.")
    if dp > global_batch:
        raise ValueError(
            f"dp={dp} exceeds global_batch={global_batch}: a global batch of {global_batch} "
            f"sequences allows at most {global_batch} data-parallel ranks (each rank needs at "
            f"least one whole sequence). Use dp <= {global_batch}, a larger global batch, or "
            "spend the other devices on tensor, pipeline or context parallelism.")
    if global_batch % dp:
        raise ValueError(f"global_batch={global_batch} does not split evenly over dp={dp}; "
                         f"use a dp that divides {global_batch}.")
    per_rank = global_batch // dp
    if micro_batch > per_rank or per_rank % micro_batch:
        raise ValueError(f"micro_batch={micro_batch} must divide the {per_rank} sequences per "
                         f"rank (global_batch / dp); pick a divisor of {per_rank}.")
    return {"per_rank": per_rank, "micro_batch": micro_batch,
            "accumulation_steps": per_rank // micro_batch}


def sequences_per_step(tokens_per_step: float, seq_len: int) -> float:
    """The global batch in sequences: tokens per optimizer step / sequence length.

    Not rounded: a published token count is often itself rounded (GPT-3's "3.2M"), and
    the caller should see that 3.2e6 / 2048 = 1562.5 is not a whole number.
    """
    positive_int("seq_len", seq_len, "pass the training sequence length, e.g. seq_len=2048.")
    if isinstance(tokens_per_step, bool) or not isinstance(tokens_per_step, (int, float)) \
            or not math.isfinite(tokens_per_step) or tokens_per_step < seq_len:
        raise ValueError(f"tokens_per_step must be a finite number >= seq_len={seq_len}, got "
                         f"{tokens_per_step!r}; pass the tokens per optimizer step, e.g. 4e6.")
    return tokens_per_step / seq_len


def dp_limit_table(models=None, gpus_per_replica=None) -> list[dict]:
    """The data-parallel ceiling of published training runs.

    For each model in ``models`` (names of :data:`PUBLISHED_BATCHES`, default all):
    sequences per step, the largest DP degree (``floor`` of it), the DP degree the run
    used, sequences per replica at that degree, and, given ``gpus_per_replica`` (a dict
    name -> TP x PP x CP), the most GPUs data parallelism could then feed.
    """
    names = list(PUBLISHED_BATCHES) if models is None else list(models)
    rows = []
    for name in names:
        if name not in PUBLISHED_BATCHES:
            raise ValueError(f"models: unknown model {name!r}; use names from "
                             f"{sorted(PUBLISHED_BATCHES)}.")
        tokens, seq_len, used_dp, source = PUBLISHED_BATCHES[name]
        sequences = sequences_per_step(tokens, seq_len)
        row = {"model": name, "tokens_per_step": tokens, "seq_len": seq_len,
               "sequences": sequences, "max_dp": math.floor(sequences), "used_dp": used_dp,
               "sequences_per_replica": sequences / used_dp if used_dp else None,
               "source": source}
        per_replica = (gpus_per_replica or {}).get(name)
        if per_replica is not None:
            positive_int("gpus_per_replica", per_replica, "pass TP x PP x CP, e.g. 128.")
            row["max_gpus"] = row["max_dp"] * per_replica
        rows.append(row)
    return rows
