"""Exercise ``09.configuration`` of notebook 09 (``notebooks/09_hybrid_parallelism.ipynb``):
a DP x TP x PP x ZeRO configuration chosen by the student's function from its arguments.

The planner's cost model judges it on the problem the card shows and on two it does
not (other models and cluster sizes, each needing another TP degree, so no constant
answer passes), within a budget of configurations priced by ``planner.evaluate`` that a
search over the space exceeds by far; the first problem's answer then runs in miniature
on 4 ranks. Registered here; :mod:`.nb09` re-exports it with the notebook's other two.
"""
from __future__ import annotations

import dataclasses
import inspect
import sys

from .. import hybrid, planner
from .exercise import Exercise, register
from .feedback import defined_at as _defined_at
from .feedback import reworded, say


MODEL = planner.MODELS["Llama-3 70B"]


def _nodes(n: int):
    return dataclasses.replace(planner.CLUSTERS["16 nodes, 128x H100"],
                               name=f"{n} nodes, {8 * n}x H100", nodes=n)


EIGHT_NODES, GLOBAL_BATCH = _nodes(8), 256
# name -> (model, cluster, global batch in sequences). The card shows the first; the
# others need other TP degrees, so no constant answer passes all three.
PROBLEMS = {
    f"{MODEL.name} on 64 H100s, {GLOBAL_BATCH} sequences": (MODEL, EIGHT_NODES, GLOBAL_BATCH),
    "Llama-3 8B on 16 H100s, 64 sequences": (planner.MODELS["Llama-3 8B"], _nodes(2), 64),
    f"{MODEL.name} on 32 H100s, 128 sequences": (MODEL, _nodes(4), 128),
}
EVALUATIONS = 6   # configurations the cost model may price per problem: a few trial runs
_KEYS, _OPTIONAL = ("dp", "tp", "pp", "zero", "micro_batch"), ("recompute", "chunks")
_EVALUATE = inspect.unwrap(planner.evaluate).__code__


def fastest_configuration(model, cluster, global_batch):
    """The planner's answer: its fastest feasible plan."""
    return planner.plan(model, cluster, global_batch)[0][0]


class _Priced(planner.ModelSpec):
    """The model the student's function is given: it counts the configurations that
    ``planner.evaluate`` prices on it (once each, when it works out memory and time),
    however the student reached the function."""

    priced = 0

    def stage_layers(self, pp: int, split: str | None = None) -> list[int]:
        if sys._getframe(1).f_code is _EVALUATE:
            object.__setattr__(self, "priced", self.priced + 1)   # a frozen dataclass
        return super().stage_layers(pp, split)


class _PlannerExercise(Exercise):
    """Its precheck is a method, so that in the rank it reads the fastest plans ``_judge``
    found before the launch (there, the planner's search would count as the student's)."""

    @property
    def precheck(self):
        return self._check_configurations

    @precheck.setter
    def precheck(self, _value):
        pass   # the field's default, None: the method above is the precheck

    def _judge(self, candidate):
        self.fastest = {name: fastest_configuration(*p) for name, p in PROBLEMS.items()}
        self.passed_cost_model = None
        verdict = super()._judge(candidate)
        if verdict and self.passed_cost_model:
            print(reworded(self.passed_cost_model))
        return verdict

    def _check_configurations(self, candidate) -> str | None:
        where, shown = _defined_at(candidate), None
        for name, (model, cluster, batch) in PROBLEMS.items():
            priced = _Priced(**{f.name: getattr(model, f.name)
                                for f in dataclasses.fields(model)})
            config = candidate(priced, cluster, batch)
            problem = _config_problem(config)
            if problem is None and priced.priced > EVALUATIONS:
                problem = (f"my_configuration had the cost model price {priced.priced} "
                           f"configurations; the budget is {EVALUATIONS} per problem. Reason "
                           "from the breakdowns of a few instead of searching them all")
            if problem is None:
                try:
                    mine = planner.evaluate(model, cluster, batch, **config)
                except (TypeError, ValueError) as err:
                    problem = f"the planner cannot evaluate {config}: {err}"
            if problem:
                return say("on {name}: {problem}{where}", name=reworded(name),
                           problem=reworded(problem), where=where)
            passed, text = planner.critique(mine, self.fastest[name], cluster)
            if not passed:
                return f"on {name}, the cost model rejects it{where}:\n  {text}"
            shown = shown or (config, text)
        config, text = shown
        self.passed_cost_model = (
            f"cost model, on {next(iter(PROBLEMS))}: {text}\nin miniature on 4 ranks: "
            f"{hybrid.miniature_name(config['tp'], config['pp'])} with the tiny transformer "
            "trained like one process and moved the bytes the planner predicts.")
        return None


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
    id="09.configuration", level="stretch", kind="decide",
    title="a configuration chosen from breakdowns, under a budget",
    student_name="my_configuration",
    task="Write `my_configuration(model, cluster, global_batch)` returning `dict(dp=, tp=, "
         "pp=, zero=, micro_batch=)` (optionally `recompute=`, `chunks=`) for the model, "
         "cluster and global batch (in sequences) it is given. It must decide from its "
         f"arguments: the checker runs it on {next(iter(PROBLEMS))} ({EIGHT_NODES.nodes} "
         f"nodes of {EIGHT_NODES.gpus_per_node}) and on {len(PROBLEMS) - 1} more problems "
         "it does not show you (other models and cluster sizes). Reason from breakdowns: "
         "`planner.evaluate(model, cluster, global_batch, **config)` gives a plan's "
         "`.memory` and `.times` by part, and `.reason` when it cannot run; your function "
         f"may have it price at most {EVALUATIONS} configurations per problem, as a few "
         "trial runs would. `planner.plan` and `planner.grade` are not allowed. It passes "
         "when, on "
         "every problem, the cost model puts it within 10% of the fastest step; then the "
         "first problem's answer runs in miniature (its axes at degree 2) on 4 ranks.",
    hints=("Start from the lecture's rule (CS336 L8 §7.2): split the model only until it "
           "fits, keep tensor parallelism on NVLink, use the remaining GPUs for data "
           "parallelism. Your function has to apply it to any model and cluster.",
           "Evaluate one candidate and read `p.memory`: if the model states are the largest "
           "part, a higher ZeRO stage shards them over the replicas at no cost in bubble; "
           "if the activations are, ZeRO cannot help and only TP or PP divide them.",
           f"{EVALUATIONS} evaluations are enough if each answers a question: order the "
           "candidates from the least split to the most and stop at the first that fits. "
           "Which costs less to add first, a pipeline (a bubble) or TP (all-reduces "
           "inside a node)?"),
    inputs=_batch_input, expected=_miniature_expected, adapter=_miniature,
    forbidden={"companion.planner.search.plan":
               "it is the search itself: choose by reading breakdowns from planner.evaluate",
               "companion.planner.grading.grade": "it is the checker; it runs the search",
               "companion.learning.nb09_planner.fastest_configuration":
               "it is the package's answer to this exercise"},
    timeout=60.0,
    context="import companion\nfrom companion import planner",
))
