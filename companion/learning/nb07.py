"""Notebook 07's exercises (``notebooks/07_gradient_compression.ipynb``), MIT 6.5940 L20
p.26-54: a ladder from sparse exchange to DGC to PowerSGD.

* ``07.topk-feedback`` (warm-up, implement): top-k sparsification with error feedback,
  exchanged as (index, value) pairs by all-gather.
* ``07.momentum-correction`` (core, implement): DGC's accumulation for Nesterov momentum
  (local clipping, then the momentum correction that Nesterov SGD needs, which the
  notebook does not print), checked by training DGC on 4 ranks.
* ``07.powersgd-step`` (stretch, diagnose): a colleague's PowerSGD step drops the error
  feedback and gets the power iteration wrong; the fix makes two all-reduces of thin
  factors.

Exercise ids are "07.<name>"; :func:`companion.learning.exercise` fetches them.
"""
from __future__ import annotations

import torch
import torch.distributed as dist

from ..compression.train import train
from .exercise import Exercise, register
from .patterns import all_of, counts, only, per_rank

STEPS = 3                   # exchanges per check: the residual / error / Q carry over
TOPK_SHAPE, TOPK_K = (16, 32), 8          # 512 entries, 8 sent per rank per step
PSGD_N, PSGD_M, PSGD_R = 24, 16, 2        # gradient n x m, factors of rank r
DGC_STEPS, DGC_DENSITY, DGC_CLIP = 6, 0.01, 1.0   # _dgc_data: why this clip_norm
_SOLUTION = "it is the package's solution to this exercise"


def _grads(rank: int, shape: tuple, steps: int = STEPS) -> list[torch.Tensor]:
    gen = torch.Generator().manual_seed(700 + rank)   # each rank its own gradients
    return [torch.randn(shape, generator=gen) for _ in range(steps)]


# ---- 07.topk-feedback (warm-up) -------------------------------------------------------
def topk_exchange_reference(grad, residual, k):
    """v = grad + residual; send v's k largest |entries| as (index, value) pairs by
    all-gather; every rank adds all pairs and divides by N; the rest stays local."""
    v = (grad + residual).reshape(-1)
    idx = v.abs().topk(k).indices
    values = v[idx]
    new_residual = v.clone()
    new_residual[idx] = 0
    world = dist.get_world_size()
    all_idx = [torch.empty_like(idx) for _ in range(world)]
    all_values = [torch.empty_like(values) for _ in range(world)]
    dist.all_gather(all_idx, idx)
    dist.all_gather(all_values, values)
    update = torch.zeros_like(v)
    for i, x in zip(all_idx, all_values):
        update.index_add_(0, i, x)
    return (update / world).view_as(grad), new_residual.view_as(grad)


def _topk_inputs(rank, world_size):
    return (_grads(rank, TOPK_SHAPE), TOPK_K)


def _topk_steps(fn, grads, k):
    """The exercise's training loop: the residual each step returns feeds the next."""
    residual, updates = torch.zeros_like(grads[0]), []
    for g in grads:
        update, residual = fn(g, residual, k)
        updates.append(update)
    return {"updates": updates, "residual": residual}


def _sparse_bytes(rank, world_size, calls):
    sent = sum(c.bytes for c in calls)
    most, dense = STEPS * TOPK_K * 16, STEPS * 4 * TOPK_SHAPE[0] * TOPK_SHAPE[1]
    if len(calls) < STEPS:
        return (f"{len(calls)} all-gather(s) recorded for {STEPS} steps: each step exchanges "
                "its own pairs with dist.all_gather or dist.all_gather_into_tensor")
    if sent > most:
        return (f"it handed {sent} bytes to its all-gathers over {STEPS} steps; k values and "
                f"k indices are at most {most} (8 B + 8 B per kept entry), the dense "
                f"gradient {dense}. Send only the k kept entries.")
    return None


TOPK_FEEDBACK = register(Exercise(
    id="07.topk-feedback", level="warm-up", kind="implement",
    title="top-k with error feedback, exchanged as (index, value) pairs",
    student_name="my_topk_exchange",
    task="Write `my_topk_exchange(grad, residual, k)`. Add the residual kept from earlier "
         "steps to this step's gradient, send only the `k` entries of largest magnitude "
         "as (index, value) pairs to every rank, and keep the rest locally. Return "
         "`(update, new_residual)`: `update` is the mean over ranks of what every rank "
         "sent (shaped like `grad`, zero where nobody sent), `new_residual` what this rank "
         "did not send. The checker runs 3 steps on 4 ranks, feeding each step's residual "
         "into the next.",
    hints=("Nothing is thrown away: what a rank does not send this step must still be "
           "there next step, added to the next gradient. Each rank picks its own "
           "positions, so the ranks' sparse tensors cannot simply be summed in flight.",
           "Work on v = grad + residual, flattened. Its k entries of largest magnitude "
           "are sent; the new residual is v with those entries set to zero.",
           "Exchange with two `dist.all_gather` calls (each fills a list of world_size "
           "tensors): one for the k indices, one for the k values. Then add every rank's "
           "values at its indices into a zero tensor and divide by the world size.",
           "Check two things by hand on a tiny case: a position that two ranks both sent "
           "must add up in the update (so write values in with an addition, not an "
           "assignment), and the new residual must be zero exactly where this rank sent "
           "and unchanged elsewhere."),
    inputs=_topk_inputs, reference=topk_exchange_reference, adapter=_topk_steps,
    forbidden={
        "companion.learning.nb07.topk_exchange_reference": _SOLUTION,
        "companion.compression.sparse.encode_topk":
            "it is the package's top-k encoder: select with topk yourself",
        "companion.compression.sparse.decode_topk":
            "it is the package's decoder: add the pairs with index_add_ yourself",
        "companion.compression.sparse.topk_indices": "it is the package's top-k selection",
        "companion.compression.wire.all_gather_payloads":
            "it is the package's exchange: call dist.all_gather yourself",
        # DGC.encode and QuantizedExchange(TopKNoFeedback) go through encode_topk: caught.
    },
    # An all-reduce of the sparsified dense tensor gives the right values; the pattern
    # refuses it (torch.distributed's own calls are watched as communication, not as
    # forbidden calls).
    pattern=all_of(only("all_gather", "all_gather_into_tensor",
                        why="an all-reduce adds dense tensors, zeros included; every rank "
                            "keeps different positions, so the k (index, value) pairs are "
                            "all-gathered"),
                   per_rank(_sparse_bytes)),
    pure=True, rtol=1e-5, atol=1e-6,   # summing 4 ranks in another order rounds differently
    context="import torch\nimport torch.distributed as dist\nimport companion",
))


# ---- 07.momentum-correction (core) ----------------------------------------------------
def accumulate_reference(u, v, grads, momentum, clip_norm, world_size):
    """Clip this rank's gradients to norm clip_norm / sqrt(N) (no communication), then
    u = m u + g and v = v + g + m u for every tensor: v gathers what Nesterov SGD would
    have applied, so with nothing dropped (and no masking) DGC is Nesterov SGD."""
    if clip_norm is not None:
        limit = clip_norm / world_size ** 0.5
        norm = torch.sqrt(sum((g.float() ** 2).sum() for g in grads))
        scale = min(1.0, limit / (float(norm) + 1e-12))
        grads = [g * scale for g in grads]
    new_u = [momentum * ui + g for ui, g in zip(u, grads)]
    return new_u, [vi + g + momentum * ui for vi, g, ui in zip(v, grads, new_u)]


def _dgc_data(rank, world_size):
    """Synthetic 8x8 'digits' (no scikit-learn import in the ranks: seconds saved).
    On 4 ranks each rank's gradient norm is 0.38-0.64 during the clipped run (measured),
    so DGC_CLIP = 1.0 (limit 0.5) clips some steps and leaves others: both branches of
    "scale down only above the limit" are checked."""
    gen = torch.Generator().manual_seed(7)
    x = torch.rand(256, 64, generator=gen)
    y = torch.randint(0, 10, (256,), generator=gen)
    return (((x, y), (x[:64], y[:64])),)


def _dgc_runs(fn, data):
    """Train DGC twice with ``fn`` as its accumulation: without and with clipping."""
    out = {}
    for name, clip in (("no clipping", None), ("clipped", DGC_CLIP)):
        run = train(method="dgc", density=DGC_DENSITY, steps=DGC_STEPS, hidden=32,
                    global_batch=64, lr=0.1, momentum=0.9, clip_norm=clip,
                    eval_every=DGC_STEPS, accumulate=fn, data=data)
        out[name] = {"losses": torch.tensor(run["losses"]), "params": run["params"]}
    return out


MOMENTUM_CORRECTION = register(Exercise(
    id="07.momentum-correction", level="core", kind="implement",
    title="DGC's accumulation for Nesterov momentum",
    student_name="my_dgc_accumulate",
    task="Section 2's momentum correction makes DGC, with nothing dropped, exactly momentum "
         "SGD. Your cluster trains with **Nesterov** momentum: `torch.optim.SGD(..., "
         "nesterov=True)` keeps u = m u + g and applies g + m u. Write "
         "`my_dgc_accumulate(u, v, grads, momentum, clip_norm, world_size)`, one rank's "
         "accumulation before its top-k, such that DGC with nothing dropped (and no factor "
         "masking) is exactly Nesterov SGD. `u`, `v` and `grads` are lists (one tensor per "
         "layer). First clip *locally*: if the L2 norm of all of this rank's gradients "
         "together exceeds `clip_norm / sqrt(world_size)`, scale them all down to it "
         "(`clip_norm=None`: no clipping). Return the new lists `(u, v)`. The checker trains "
         "DGC on 4 ranks for 6 steps with your function, with and without clipping, and "
         "compares every rank's losses and the final weights with the package's.",
    hints=("Momentum correction's rule, read backwards: v must gather, step by step, exactly "
           "what the dense optimizer would have applied to the weights that step. What does "
           "Nesterov SGD apply?",
           "The velocity u is the same as for plain momentum; only what v gathers changes. "
           "Write one dense Nesterov step in terms of the new u and the gradient, then make "
           "v add that.",
           "Clip before anything else: the norm is one number for the whole rank, over all "
           "its tensors together, compared with clip_norm / sqrt(world_size), and every "
           "tensor is scaled by the same factor, only when over the limit. The clipped "
           "gradient is what enters both u and v."),
    inputs=_dgc_data, reference=accumulate_reference, adapter=_dgc_runs,
    forbidden={
        "companion.learning.nb07.accumulate_reference": _SOLUTION,
        "companion.compression.sparse.momentum_correction":
            "it is the package's momentum correction: write u and v yourself",
        "companion.compression.sparse.dgc_accumulate": _SOLUTION,
        "companion.compression.sparse.clip_locally": "it is the package's local clipping",
        "torch.nn.utils.clip_grad_norm_":
            "torch's clipping: compute this rank's norm and the factor yourself",
        "torch.nn.utils.get_total_norm": "compute this rank's norm yourself",
        "torch.nn.utils.clip_grads_with_norm_": "scale the gradients yourself",
    },
    pattern=all_of(only("all_gather", why="local clipping needs no communication: DGC's "
                                          "one all-gather per step is all"),
                   counts({"all_gather": 2 * DGC_STEPS},
                          why=f"one per step, {DGC_STEPS} steps, two runs")),
    rtol=1e-5, atol=1e-6,   # a norm summed in another order rounds differently
    timeout=60.0,
    context="import math\nimport torch\nimport torch.distributed as dist\nimport companion",
))


# ---- 07.powersgd-step (stretch) -------------------------------------------------------
def powersgd_reference(grad, error, q):
    """M = grad + error; P = M q, all-reduce, orthonormalise; Q = M^T P, all-reduce,
    mean; update P Q^T; new error M - P Q^T; Q is the next step's warm start."""
    world = dist.get_world_size()
    m = grad + error
    p = m @ q
    dist.all_reduce(p)
    p = torch.linalg.qr(p / world).Q
    new_q = m.T @ p
    dist.all_reduce(new_q)
    new_q = new_q / world
    update = p @ new_q.T
    return update, m - update, new_q


def _psgd_inputs(rank, world_size):
    q0 = torch.randn(PSGD_M, PSGD_R, generator=torch.Generator().manual_seed(5))  # shared
    return (_grads(rank, (PSGD_N, PSGD_M)), q0)


def _psgd_steps(fn, grads, q0):
    """Three steps, the error and Q carried over. Q itself is not compared: any
    orthonormal basis of the same column space (QR's or Gram-Schmidt's, signs flipped)
    gives the same P Q^T, so the updates and the error are what is checked."""
    error, q, updates = torch.zeros_like(grads[0]), q0, []
    for g in grads:
        update, error, q = fn(g, error, q)
        updates.append(update)
    return {"updates": updates, "error": error}


def _factor_sizes(rank, world_size, calls):
    want = [4 * PSGD_N * PSGD_R, 4 * PSGD_M * PSGD_R] * STEPS
    got = [c.bytes for c in calls]
    if got != want:
        return (f"its all-reduces carried {got} bytes; one step is two all-reduces, of P "
                f"(n x r = {PSGD_N} x {PSGD_R}: {want[0]} B) and then of Q (m x r = {PSGD_M} "
                f"x {PSGD_R}: {want[1]} B), never the {PSGD_N} x {PSGD_M} gradient "
                f"({4 * PSGD_N * PSGD_M} B)")
    return None


POWERSGD_STEP = register(Exercise(
    id="07.powersgd-step", level="stretch", kind="diagnose",
    title="fix a colleague's PowerSGD step", student_name="my_powersgd_step",
    task="A colleague's `broken_powersgd_step(grad, error, q)` (in the notebook) is meant to "
         "be one rank-r PowerSGD step for one gradient matrix (`n x m`), its error-feedback "
         "residual and the shared `q` (`m x r`, last step's Q, the warm start), averaging "
         "over ranks with two all-reduces of the thin factors. It sends the right bytes, "
         "but its updates are wrong from the first step on. Find its mistakes and write "
         "the fixed `my_powersgd_step(grad, error, q)` returning `(update, new_error, "
         "new_q)`: the mean gradient's rank-r approximation `P Q^T`, what it missed of "
         "this rank's matrix, and Q. The checker runs 3 steps on 4 ranks (error and Q "
         "carried over) and checks the updates, the final error and the sizes of both "
         "all-reduces.",
    hints=("Run the check on the colleague's function. The first step is already wrong, "
           "before any error has been carried over: look for the mistakes inside one step "
           "first.",
           "An all-reduce sums the ranks' P's. Is the sum of orthonormal bases of different "
           "column spaces orthonormal? Which P must have orthonormal columns for P Q^T to be "
           "a projection of the mean gradient, and which factor's sum must be divided by "
           "the number of ranks for P Q^T to be a mean, not a sum?",
           "From the second step on, what this rank's compression missed last step must "
           "reach this step's matrix: follow `error` through the function. Where does it "
           "enter, and what is the new error measured against?"),
    inputs=_psgd_inputs, reference=powersgd_reference, adapter=_psgd_steps,
    forbidden={
        "companion.learning.nb07.powersgd_reference": _SOLUTION,
        "companion.compression.powersgd.PowerSGD.exchange":
            "it is the package's PowerSGD (PowerSGD.exchange)",
        "companion.compression.powersgd.orthonormalize":
            "the package's orthonormalisation: call torch.linalg.qr yourself",
        "companion.compression.powersgd._mean_all_reduce": "the package's averaging",
        "torch.distributed.algorithms.ddp_comm_hooks.powerSGD_hook.powerSGD_hook":
            "torch's PowerSGD hook does the whole step",
        "torch.distributed.algorithms.ddp_comm_hooks.powerSGD_hook.batched_powerSGD_hook":
            "torch's PowerSGD hook does the whole step",
        "torch.distributed.algorithms.ddp_comm_hooks.powerSGD_hook._orthogonalize":
            "it is torch's PowerSGD orthogonalisation: use torch.linalg.qr",
    },
    pattern=all_of(only("all_reduce", why="P and Q have the same shape on every rank"),
                   per_rank(_factor_sizes)),
    pure=True, rtol=1e-4, atol=1e-5,   # QR vs Gram-Schmidt round differently
    context="import torch\nimport torch.distributed as dist\nimport companion",
))
