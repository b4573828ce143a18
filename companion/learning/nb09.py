"""Notebook 09's exercises (``notebooks/09_hybrid_parallelism.ipynb``): hybrid parallelism.

* ``09.mesh-groups`` (warm-up, implement): the DP and TP process groups of a 2 x 2 mesh,
  made with ``dist.new_group``; checked by what each group all-reduces.
* ``09.dp-tp-step`` (core, diagnose): a given DP x TP step with gradient accumulation
  that runs but is wrong (the TP sum done with ``f`` instead of ``g``, the micro-batch
  losses not scaled, the DP average after every micro-batch); the student returns the
  fixed step, checked against one process on the full batch and by its pattern: one
  TP all-reduce per micro-batch forward, and each gradient shard averaged once.
* ``09.configuration`` (stretch, decide): a DP x TP x PP x ZeRO configuration chosen by
  a function from its arguments, judged by the planner's cost model on the problem the
  card shows and two it does not, with a budget of evaluations that a search exceeds;
  then run in miniature on 4 ranks.

The mesh is row-major with TP innermost, as Megatron and ``init_device_mesh`` place it:
rank = dp_index * tp + tp_index, so ranks (0, 1) are one replica's TP pair.
"""
from __future__ import annotations

import torch
import torch.distributed as dist

from .exercise import Exercise, register
# 09.configuration lives in its own module; the notebook imports its problem from here.
from .nb09_planner import CONFIGURATION, EIGHT_NODES, GLOBAL_BATCH, MODEL, PROBLEMS  # noqa: F401
from .patterns import all_of, only

DP, TP = 2, 2


# ---- 09.mesh-groups ---------------------------------------------------------------------
def mesh_groups_reference(dp: int, tp: int):
    """(this rank's DP group, its TP group). Every rank creates every group, in the same
    order: ``new_group`` is itself a collective over the whole world."""
    rank = dist.get_rank()
    tp_groups = [dist.new_group(list(range(d * tp, (d + 1) * tp))) for d in range(dp)]
    dp_groups = [dist.new_group(list(range(t, dp * tp, tp))) for t in range(tp)]
    return dp_groups[rank % tp], tp_groups[rank // tp]


def _mesh_inputs(rank, world_size):
    return (DP, TP)


def _members(group) -> list[int]:
    """The ranks of ``group``, found by all-reducing a one-hot vector in it."""
    flag = torch.zeros(dist.get_world_size())
    flag[dist.get_rank()] = 1.0
    dist.all_reduce(flag, group=group)
    return [r for r, v in enumerate(flag.tolist()) if v]


def _probe_groups(candidate, dp, tp):
    got = candidate(dp, tp)
    if not (isinstance(got, tuple) and len(got) == 2):
        return got   # the feedback says what came back instead of a pair
    return {"dp_group": _members(got[0]), "tp_group": _members(got[1])}


MESH_GROUPS = register(Exercise(
    id="09.mesh-groups", level="warm-up", kind="implement",
    title="the DP and TP groups of a 2 x 2 mesh",
    student_name="my_mesh_groups",
    task="Four ranks form a mesh of DP=2 replicas x TP=2 tensor-parallel ranks, TP "
         "innermost: rank = dp_index x 2 + tp_index. Write `my_mesh_groups(dp, tp)` that "
         "returns `(dp_group, tp_group)`: the process groups this rank belongs to, made "
         "with `dist.new_group`. The checker all-reduces a one-hot vector in each group "
         "and compares the members.",
    hints=("Draw the 2 x 2 grid of ranks. A TP group is a row (one replica's ranks); a DP "
           "group is a column (the same shard in every replica).",
           "Creating a group is itself collective: every rank must create every group, in "
           "the same order, even the groups it is not in (otherwise the ranks wait for "
           "each other until the timeout).",
           "Write one row's ranks and one column's as arithmetic in d, t and tp: a row's "
           "ranks are consecutive, a column's are spaced by the length of a row. Which row "
           "and which column hold this rank follows from dividing its rank by tp."),
    inputs=_mesh_inputs, reference=mesh_groups_reference,
    adapter=_probe_groups,
    forbidden={"companion.learning.nb09.mesh_groups_reference":
               "it is the package's solution to this exercise",
               "torch.distributed.device_mesh.init_device_mesh":
               "it builds the mesh's groups for you; here you build them",
               "torch.distributed.device_mesh.DeviceMesh":
               "it builds the mesh's groups for you; here you build them",
               "torch.distributed.new_subgroups_by_enumeration":
               "it creates the groups from a list for you; use dist.new_group"},
    pattern=only("all_reduce", why="making groups needs no message of yours; the two "
                 "all-reduces are the checker's probe"),
    timeout=20.0,
    context="import torch\nimport torch.distributed as dist",
))


# ---- 09.dp-tp-step ----------------------------------------------------------------------
# Odd sizes, so no shape can be transposed unnoticed; each replica's 10 rows are trained in
# 2 micro-batches of 5, accumulated.
D, FFN, BATCH, LR, MICRO = 3, 8, 20, 0.1, 2


def _full_problem():
    gen = torch.Generator().manual_seed(9)
    x, y = torch.randn(BATCH, D, generator=gen), torch.randn(BATCH, D, generator=gen)
    w1, w2 = torch.randn(FFN, D, generator=gen), torch.randn(D, FFN, generator=gen)
    return x, y, w1, w2


def _shards(rank):
    """Rank ``rank``'s data shard (its replica's) and weight shards (its TP slot)."""
    x, y, w1, w2 = _full_problem()
    d, t = divmod(rank, TP)
    rows, cols = slice(d * BATCH // DP, (d + 1) * BATCH // DP), slice(t * FFN // TP,
                                                                     (t + 1) * FFN // TP)
    return x[rows], y[rows], w1[cols], w2[:, cols]


def single_process_step(x, y, w1, w2, lr, micro_batches):
    """One SGD step of the whole MLP on the whole batch in one process, cut to this
    rank's shards: what the DP x TP step must equal, however it is accumulated."""
    X, Y, W1, W2 = _full_problem()
    W1.requires_grad_(), W2.requires_grad_()
    loss = ((torch.relu(X @ W1.T) @ W2.T - Y) ** 2).mean()
    loss.backward()
    t = dist.get_rank() % TP
    cols = slice(t * FFN // TP, (t + 1) * FFN // TP)
    with torch.no_grad():
        return (W1 - lr * W1.grad)[cols], (W2 - lr * W2.grad)[:, cols]


def _step_inputs(rank, world_size):
    return (*_shards(rank), LR, MICRO)


def _run_step(candidate, x, y, w1, w2, lr, micro_batches):
    dp_group, tp_group = mesh_groups_reference(DP, TP)
    return candidate(x, y, w1, w2, dp_group, tp_group, lr, micro_batches)


def _step_pattern(calls_per_rank, world_size):
    rows = BATCH // DP // MICRO
    out_bytes, grad_bytes = rows * D * 4, 2 * FFN // TP * D * 4
    for rank, calls in enumerate(calls_per_rank):
        wide = [c for c in calls if c.group_size != 2]
        if wide:
            return (f"rank {rank} all-reduced over {wide[0].group_size} ranks; every "
                    "collective of this step belongs to a pair: the TP pair adds partial "
                    "sums, the DP pair averages gradients")
        outs = [c for c in calls if c.bytes == out_bytes]
        back = sum(c.phase == "backward" for c in outs)
        if len(outs) != MICRO or back:
            return (f"rank {rank} all-reduced a [{rows}, {D}] micro-batch output {len(outs)} "
                    f"times ({back} in backward); the row-parallel layer needs one all-reduce "
                    f"per micro-batch in forward ({MICRO} here) and none in backward")
        other = sum(c.bytes for c in calls if c.bytes != out_bytes)
        if other != grad_bytes:
            return (f"rank {rank} all-reduced {other} bytes of gradients in the step; "
                    f"averaging the two gradient shards once, after the last micro-batch "
                    f"(what DDP's no_sync is for), moves {grad_bytes} bytes")
    return None


DP_TP_STEP = register(Exercise(
    id="09.dp-tp-step", level="core", kind="diagnose",
    title="repair a DP x TP step with gradient accumulation",
    student_name="my_hybrid_step",
    task=f"The MLP `relu(x @ W1.T) @ W2.T` (W1: [{FFN}, {D}], W2: [{D}, {FFN}]) is trained "
         f"with the mean squared error on a batch of {BATCH}, one SGD step. On the 2 x 2 "
         "mesh, rank (d, t) holds replica d's half of the batch `x, y` and TP slot t's "
         "shards: W1's rows (column-parallel) and W2's columns (row-parallel). A replica's "
         f"half does not fit in memory at once, so it is run in `micro_batches` = {MICRO} "
         "micro-batches whose gradients accumulate. The notebook's `broken_hybrid_step` "
         "runs without an error, yet its step is not the single-process step. Check it, "
         "find what is wrong, and write `my_hybrid_step(x, y, w1, w2, dp_group, tp_group, "
         "lr, micro_batches)`, returning the updated `(w1, w2)` shards. The checker "
         "compares them with the same step in one process on the full batch, and checks "
         "the communication: the TP pair adds each micro-batch's partial outputs in "
         "forward, and each gradient shard is averaged over the DP pair once per step.",
    hints=("Check the broken step as it is, `dp_tp_step.check(broken_hybrid_step)`, then "
           "fix one thing at a time: the verdict names the first difference, in the values "
           "or in the communication.",
           "Notebook 05's pair: one of f and g adds the partial sums in forward and passes "
           "the gradient through in backward, the other does the reverse. Which one does a "
           "row-parallel layer's output need?",
           "The full-batch loss is a mean over all rows. What does summing the gradients of "
           f"{MICRO} per-micro-batch means give instead?",
           "Averaging over the replicas is linear: averaging the accumulated gradient once "
           "gives the same numbers as averaging after every micro-batch, for half the "
           "traffic. Where does the average belong?"),
    inputs=_step_inputs, expected=single_process_step, adapter=_run_step,
    forbidden={"companion.learning.nb09.single_process_step":
               "it computes the answer in one process from the full tensors",
               "companion.hybrid.train_dp_tp": "it is the package's DP x TP training loop",
               "companion.data_parallel.ddp.DDP": "the DP gradient average is yours to write here",
               "torch.nn.parallel.DistributedDataParallel":
               "the DP gradient average is yours to write here"},
    pattern=all_of(only("all_reduce", why="partial sums and gradient averages are both "
                        "all-reduces"), _step_pattern),
    pure=True, rtol=1e-5, atol=1e-6,
    context="import torch\nimport torch.distributed as dist\nimport companion\n"
            "from companion.tensor_parallel import f, g",
))
