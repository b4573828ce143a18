"""A planner configuration run in miniature: its axes at degree 2 on 4 real ranks.

Taught in notebook 09 (``notebooks/09_hybrid_parallelism.ipynb``, exercise
``09.configuration``).
"""
from __future__ import annotations

from .. import runtime
from ..validation import positive_int, preflight
from .transformer import check_reference, transformer_spec
from .mesh2d import train_dp_tp, train_pp_dp

__all__ = ["miniature_name", "run_in_miniature"]


def miniature_name(tp: int, pp: int, world_size: int = 4) -> str:
    """Which run stands for a configuration on ``world_size`` ranks: its pipeline axis
    if it has one (with DP), else its TP axis (with DP), else DP alone."""
    _check_miniature(tp, pp, world_size)
    if pp > 1:
        return f"PP2 x DP{world_size // 2}"
    if tp > 1:
        return f"DP{world_size // 2} x TP2"
    return f"DP{world_size}"


def _check_miniature(tp, pp, world_size=4, steps=1, batch=8) -> None:
    positive_int("tp", tp, "pass the configuration's tensor-parallel degree, e.g. tp=4.")
    positive_int("pp", pp, "pass the configuration's pipeline degree, e.g. pp=1.")
    check_reference(steps, batch, 0.5)
    if world_size < 4 or world_size % 2:
        raise ValueError(f"a miniature needs an even world_size of at least 4 (two axes of "
                         f"degree 2), got {world_size}; launch with world_size=4.")
    if batch % world_size:
        raise ValueError(f"batch={batch} must split over the {world_size} ranks' data shards "
                         f"and micro-batches; use a multiple of {world_size}.")


@preflight(_check_miniature)
def run_in_miniature(*, tp: int, pp: int, steps: int = 1, batch: int = 8) -> dict:
    """Run a configuration's axes at degree 2 (see :func:`miniature_name`) with the tiny
    transformer; return the run's name, its largest parameter difference from one
    process, and the bytes its collectives moved next to the planner's prediction."""
    from ..planner import comm_bytes_per_step

    world = runtime.world_size()
    _check_miniature(tp, pp, world, steps, batch)
    name = miniature_name(tp, pp, world)
    if pp > 1:
        dp = world // 2
        r = train_pp_dp(pp=2, dp=dp, steps=steps, batch=batch, microbatches=2)
        pred = comm_bytes_per_step(transformer_spec(False), dp=dp, tp=1, pp=2,
                                   micro_batch=batch // (2 * dp), microbatches=2,
                                   bytes_per_element=4, stage=r["coords"][0])
        # pp_boundary counts both directions; each end of the boundary sends one of them.
        measured, predicted = ({"dp": r["dp_bytes"], "pp": r["pp_bytes"]},
                               {"dp": pred["dp"], "pp": pred["pp_boundary"] / 2})
    else:
        dp, t = (world // 2, 2) if tp > 1 else (world, 1)
        r = train_dp_tp(dp=dp, tp=t, steps=steps, batch=batch)
        pred = comm_bytes_per_step(transformer_spec(True), dp=dp, tp=t, pp=1,
                                   micro_batch=batch // dp, microbatches=1,
                                   bytes_per_element=4, vocab_parallel=False)
        # With tp=1 the blocks' all-reduces run on a group of one: no bytes move.
        measured = {"dp": r["dp_bytes"], "tp": r["tp_bytes"] if t > 1 else 0}
        predicted = {"dp": pred["dp"], "tp": pred["tp"]}
    diff = max((r["params"][n] - r["expected"][n]).abs().max().item() for n in r["params"])
    return {"run": name, "max_param_diff": diff, "measured": measured, "predicted": predicted}
