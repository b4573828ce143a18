"""Notebook 09's exercises (``notebooks/09_hybrid_parallelism.ipynb``): hybrid parallelism.

* ``09.mesh-groups`` (warm-up): the DP and TP process groups of a 2 x 2 mesh, made with
  ``dist.new_group``; checked by what each group all-reduces.
* ``09.dp-tp-step`` (core): one DP x TP training step of a Megatron MLP on 2 x 2 ranks,
  equal to a single process; TP partial sums added in the TP group, gradients averaged
  in the DP group.
* ``09.configuration`` (stretch): a DP x TP x PP x ZeRO configuration for Llama-3 70B on
  64 H100s, judged by the planner's cost model (a failure is explained from its own
  breakdown, never by naming the answer), then run in miniature on 4 ranks.

The mesh is row-major with TP innermost, as Megatron and ``init_device_mesh`` place it:
rank = dp_index * tp + tp_index, so ranks (0, 1) are one replica's TP pair.
"""
from __future__ import annotations

import dataclasses

import torch
import torch.distributed as dist

from .. import hybrid, planner
from .exercise import Exercise, register
from .feedback import defined_at as _defined_at
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
    id="09.mesh-groups", level="warm-up", title="the DP and TP groups of a 2 x 2 mesh",
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
           "Rows are `range(d*tp, (d+1)*tp)` for each d; columns are `range(t, dp*tp, tp)` "
           "for each t. Pick yours with `rank // tp` and `rank % tp`."),
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
D, FFN, BATCH, LR = 3, 8, 10, 0.1   # odd sizes, so no shape can be transposed unnoticed


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


def single_process_step(x, y, w1, w2, lr):
    """One SGD step of the whole MLP on the whole batch in one process, cut to this
    rank's shards: what the DP x TP step must equal."""
    X, Y, W1, W2 = _full_problem()
    W1.requires_grad_(), W2.requires_grad_()
    loss = ((torch.relu(X @ W1.T) @ W2.T - Y) ** 2).mean()
    loss.backward()
    t = dist.get_rank() % TP
    cols = slice(t * FFN // TP, (t + 1) * FFN // TP)
    with torch.no_grad():
        return (W1 - lr * W1.grad)[cols], (W2 - lr * W2.grad)[:, cols]


def _step_inputs(rank, world_size):
    return (*_shards(rank), LR)


def _run_step(candidate, x, y, w1, w2, lr):
    dp_group, tp_group = mesh_groups_reference(DP, TP)
    return candidate(x, y, w1, w2, dp_group, tp_group, lr)


def _step_pattern(calls_per_rank, world_size):
    out_bytes = BATCH // DP * D * 4
    grad_bytes = 2 * FFN // TP * D * 4
    for rank, calls in enumerate(calls_per_rank):
        wide = [c for c in calls if c.group_size != 2]
        if wide:
            return (f"rank {rank} all-reduced over {wide[0].group_size} ranks; every "
                    "collective of this step belongs to a pair: the TP pair adds partial "
                    "sums, the DP pair averages gradients")
        n_out = sum(1 for c in calls if c.bytes == out_bytes)
        if n_out != 1:
            return (f"rank {rank} all-reduced the [{BATCH // DP}, {D}] output {n_out} times; "
                    "the row-parallel layer needs one all-reduce forward (g) and none backward")
        other = sum(c.bytes for c in calls if c.bytes != out_bytes)
        if other != grad_bytes:
            return (f"rank {rank} all-reduced {other} bytes of gradients; averaging the two "
                    f"gradient shards once moves {grad_bytes} bytes")
    return None


DP_TP_STEP = register(Exercise(
    id="09.dp-tp-step", level="core", title="one DP x TP training step on 2 x 2 ranks",
    student_name="my_hybrid_step",
    task=f"The MLP `relu(x @ W1.T) @ W2.T` (W1: [{FFN}, {D}], W2: [{D}, {FFN}]) is trained "
         f"on a batch of {BATCH} with the mean squared error and one SGD step. On the 2 x 2 "
         "mesh, rank (d, t) holds replica d's half of the batch `x, y` and TP slot t's shards: "
         "W1's rows (column-parallel) and W2's columns (row-parallel), as in Megatron. "
         "Write `my_hybrid_step(x, y, w1, w2, dp_group, tp_group, lr)` returning the "
         "updated `(w1, w2)` shards, equal to the same step in one process on the full batch.",
    hints=("Two different things must be added up across ranks: the row-parallel layer's "
           "partial outputs (the ranks holding other slices of the weights) and the "
           "gradients (the ranks that saw other data). Which group holds which ranks?",
           "Forward: this rank's hidden slice is relu(x @ w1.T); its part of the output is "
           "that times w2.T, and the TP pair's parts add up to the output. Notebook 05's "
           "`g` (`companion.tensor_parallel.g(t, group)`) adds them in forward and passes "
           "the gradient through unchanged in backward.",
           "After loss.backward() each replica has the gradient of its own half of the "
           "batch; the full-batch mean is the average over the DP pair: all-reduce each "
           "gradient in dp_group, divide by its size, then step."),
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
            "from companion.tensor_parallel import g",
))


# ---- 09.configuration -------------------------------------------------------------------
MODEL = planner.MODELS["Llama-3 70B"]
EIGHT_NODES = dataclasses.replace(planner.CLUSTERS["16 nodes, 128x H100"],
                                  name="8 nodes, 64x H100", nodes=8)
GLOBAL_BATCH = 256
_KEYS, _OPTIONAL = ("dp", "tp", "pp", "zero", "micro_batch"), ("recompute", "chunks")


def fastest_configuration(model, cluster, global_batch):
    """The planner's answer: its fastest feasible plan."""
    return planner.plan(model, cluster, global_batch)[0][0]


class _PlannerExercise(Exercise):
    def _judge(self, candidate):
        # The search runs here, before the student's code is watched (a precheck runs
        # inside the watch, where calling the planner's search counts as the student's).
        self.fastest = fastest_configuration(MODEL, EIGHT_NODES, GLOBAL_BATCH)
        self.passed_cost_model = None
        verdict = super()._judge(candidate)
        if verdict and self.passed_cost_model:
            print(self.passed_cost_model)
        return verdict


def _config_problem(config) -> str | None:
    if not isinstance(config, dict):
        return (f"my_configuration returned {type(config).__name__} {config!r:.60}; return a "
                "dict such as dict(dp=..., tp=..., pp=..., zero=..., micro_batch=...)")
    missing = [k for k in _KEYS if k not in config]
    extra = [k for k in config if k not in _KEYS + _OPTIONAL]
    if missing or extra:
        return (f"the configuration's keys: missing {missing}, not understood {extra}; use "
                f"{', '.join(_KEYS)} (and optionally {', '.join(_OPTIONAL)})")
    return None


def _precheck_configuration(candidate) -> str | None:
    config = candidate(MODEL, EIGHT_NODES, GLOBAL_BATCH)
    where = _defined_at(candidate)
    problem = _config_problem(config)
    if problem is None:
        try:
            mine = planner.evaluate(MODEL, EIGHT_NODES, GLOBAL_BATCH, **config)
        except (TypeError, ValueError) as err:
            problem = f"the planner cannot evaluate {config}: {err}"
    if problem:
        return problem + where
    passed, text = planner.critique(mine, CONFIGURATION.fastest, EIGHT_NODES)
    if not passed:
        return f"the cost model rejects it{where}:\n  {text}"
    CONFIGURATION.passed_cost_model = (
        f"cost model: {text}\nin miniature on 4 ranks: "
        f"{hybrid.miniature_name(config['tp'], config['pp'])} with the tiny transformer "
        "trained like one process and moved the bytes the planner predicts.")
    return None


def _miniature(candidate, global_batch):
    config = candidate(MODEL, EIGHT_NODES, global_batch)
    r = hybrid.run_in_miniature(tp=config["tp"], pp=config["pp"])
    return {"trains like one process": r["max_param_diff"] < 1e-4,   # float32 sum order
            "moves the bytes the planner predicts": r["measured"] == r["predicted"]}


def _batch_input(rank, world_size):
    return (GLOBAL_BATCH,)


def _miniature_expected(global_batch):
    return {"trains like one process": True, "moves the bytes the planner predicts": True}


CONFIGURATION = register(_PlannerExercise(
    id="09.configuration", level="stretch", title="a configuration justified by its breakdown",
    student_name="my_configuration",
    task=f"Train {MODEL.name} on {EIGHT_NODES.gpus} H100s ({EIGHT_NODES.nodes} nodes of "
         f"{EIGHT_NODES.gpus_per_node}) with a global batch of {GLOBAL_BATCH} sequences. "
         "Write `my_configuration(model, cluster, global_batch)` returning `dict(dp=, tp=, "
         "pp=, zero=, micro_batch=)` (optionally `recompute=`, `chunks=`). Reason from "
         "breakdowns: `planner.evaluate(model, cluster, global_batch, **config)` gives a "
         "plan's `.memory` and `.times` by part, and `.reason` when it cannot run. It "
         "passes when the planner's cost model puts it within 10% of the fastest step; "
         "then it runs in miniature (its axes at degree 2) on 4 ranks.",
    hints=("Start from the lecture's rule (CS336 L8 §7.2): split the model only until it "
           "fits, keep tensor parallelism on NVLink, use the remaining GPUs for data "
           "parallelism. Then read the breakdown of what you chose.",
           "Evaluate one candidate and read `p.memory`: if the activations are the largest "
           "part, ZeRO cannot help and only TP or PP divide them; if the model states are, "
           "a higher ZeRO stage shards them over the replicas.",
           "A pipeline costs a bubble and TP costs all-reduces that grow with its degree: "
           "compare the `times` of the few feasible candidates that split the model least."),
    inputs=_batch_input, expected=_miniature_expected,
    adapter=_miniature, precheck=_precheck_configuration,
    forbidden={"companion.planner.search.plan":
               "it is the search itself: choose by reading breakdowns from planner.evaluate",
               "companion.planner.grading.grade": "it is the checker; it runs the search",
               "companion.learning.nb09.fastest_configuration":
               "it is the package's answer to this exercise"},
    timeout=60.0,
    context="import companion\nfrom companion import planner",
))
