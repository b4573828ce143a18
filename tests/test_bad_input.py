"""Bad-input sweep of the public API: every case raises before any rank starts.

``CASES`` lists each case: an id, the entry point, its arguments, the exception type
(TypeError for a wrong type, ValueError for a value that cannot work) and a regex the
message must match (the argument's name). ``pytest -v`` lists them one by one. Starting
a process is patched to fail the test, and no child process may be alive afterwards.

The ``launch/...`` and ``cli/...`` cases pass a bad value to a rank function through
``launch`` or ``python -m companion run``: its ``@preflight`` check must refuse it in this
process. The meta-tests below require a case or a ``NOT_APPLICABLE`` reason for every
callable in every public module's ``__all__``, and a preflight check on every registered
experiment that takes parameters.
"""
from __future__ import annotations

import importlib
import inspect
import math
import multiprocessing
import multiprocessing.process
import pkgutil
import subprocess
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Callable, NamedTuple

import pytest
import torch
from torch import nn

import companion
from companion import (backends, basics, data, dga, experiments, hardware, hybrid, models,
                       runtime, sequence_parallel)
from companion.learning import placement
from companion.collectives import costmodel
from companion.collectives import log as comm_log
from companion.data_parallel import memory, param_server, zero
from companion.data_parallel import runs as zero_runs
from companion.compression import lr as schedules
from companion.dga import model as step_model
from companion.network import delayed as latency
from companion.sequence_parallel import moe
from companion.sequence_parallel import moe_balance as MB, moe_nodes as MN
from companion import why_distribute
from companion.topology import trends
from companion import collectives as C
from companion import compression as Z
from companion import pipeline as P
from companion import planner as PL
from companion.planner import decoder as PDEC, fit as PFIT, memory_model as PMM, published as PPUB
from companion.planner import case_studies as PCASE
from companion.planner import torch_memory as PTM
from companion.sequence_parallel import ring as SPRING
from companion import tensor_parallel as TP
from companion.__main__ import main as cli
from companion.collectives import demos, hierarchical as CH, primitives
from companion import topology as TOP
from companion.pipeline import torch_ops, torch_reference
from companion.pipeline.plot import draw_placement
from companion.tensor_parallel import boundary_bytes
from companion.widgets import _base as wbase
from companion import learning, units, cheatsheet as CS
from companion import overlap as OV
from companion.data_parallel import comm as DPC
from companion import roofline as RL
from companion.compression import arithmetic as ZA
from companion.learning import feedback as lfeedback, patterns as lpatterns
from companion.learning import watch as lwatch
from companion.tools import release as lrelease
from companion.learning import grade as lgrade
from companion.widgets.prediction import prediction as wprediction
from companion import batch_size as BS
from companion.batch_size import recompute as RC
import companion.tools.present as PRES
from companion import i18n
from companion.autoparallel import intra_op as AIO
from companion.autoparallel import layers as ALY
from companion.autoparallel import stages as AST
from companion import autoparallel as AUTO
from companion.tools import bootstrap as BOOT
from companion.tools import zh_tw as ZHTW
from companion.tools import english_runs as ENGRUNS
import companion.plotting as PLOT
from companion import resilience as RES
# the modules themselves come from importlib.
wcoll, wcomp, wdga, wpipe, wplan, wtp, wzero, wtopo, wroof = (
    importlib.import_module(f"companion.widgets.{m}") for m in
    ("collectives", "compression", "dga", "pipeline", "planner", "tensor_parallel", "zero",
     "topology", "roofline"))
wauto = importlib.import_module("companion.widgets.autoparallel")
wact = importlib.import_module("companion.widgets.activations")

NAN, INF = math.nan, math.inf


class Case(NamedTuple):
    id: str
    fn: Callable
    args: tuple = ()
    kwargs: dict = {}
    exc: type = ValueError
    match: str = ""


def rank_fn(steps: int = 1):
    return steps


def enter_process_group(**kwargs):
    with runtime.process_group(**kwargs):
        pass


def cli_under_torchrun(argv):
    """``python -m companion run ...`` as torchrun starts it: refused before the ranks meet."""
    env = {"RANK": "0", "WORLD_SIZE": "2", "LOCAL_WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1",
           "MASTER_PORT": "1", "TORCHELASTIC_RUN_ID": "bad-input"}
    with pytest.MonkeyPatch.context() as mp:
        for key, value in env.items():
            mp.setenv(key, value)
        return cli(argv)


def enter_emulate(cluster):
    with TOP.emulate(cluster):
        pass


def launch(fn, *args, **kwargs):
    return companion.launch(fn, *args, **kwargs)


def grade_an_unknown_notebook():
    """``make grade`` on a student folder holding a notebook the course does not have."""
    import tempfile
    with tempfile.TemporaryDirectory() as root:
        (Path(root) / "ana").mkdir()
        (Path(root) / "ana" / "homework1.ipynb").write_text("{}")
        lgrade.grade(root, Path(root) / "grades.csv")


def enter_recomputation(model, policy):
    with RC.recomputation(model, policy):
        pass


LINEAR = nn.Linear(8, 6)  # 6 output features: not divisible by 4 ranks
TENSOR = torch.ones(4)
LLAMA = PL.MODELS["Llama-3 70B"]
CLUSTER = next(iter(PL.CLUSTERS.values()))
CL22 = TOP.Cluster(2, 2)
NOTEBOOKS_DIR = Path(companion.__file__).resolve().parents[1] / "notebooks"
H100x8 = PL.ClusterSpec.of("1x H100", "H100", 1)
SIX_PER_NODE = PL.ClusterSpec("6 per node", 6, 2, 80.0, 989.0, 450.0, 50.0)
TOY_LAYERS = [ALY.Layer("a", 1e12, 1e6, 1e6), ALY.Layer("b", 1e12, 1e6, 1e6)]
AP_MLP = AUTO.mlp(batch=2, seq=4, hidden=8, ffn=16)
AP_HW = AUTO.Hardware(peak_flops=1e12)
AP_PLAN = AUTO.megatron_plan(AP_MLP, (4,))

CASES = [
    # --- launch: the one place ranks start --------------------------------------------
    Case("launch/fn-not-callable", companion.launch, ("train",), {}, TypeError, r"\bfn\b"),
    Case("launch/fn-none", companion.launch, (None,), {}, TypeError, r"\bfn\b"),
    Case("launch/misspelt-keyword", companion.launch, (rank_fn,), {"stpes": 3}, TypeError, "stpes"),
    Case("launch/too-many-args", companion.launch, (rank_fn, 1, 2), {}, TypeError, r"\bfn\b"),
    Case("launch/world_size-zero", companion.launch, (rank_fn,), {"world_size": 0}, ValueError, "world_size"),
    Case("launch/world_size-negative", companion.launch, (rank_fn,), {"world_size": -1}, ValueError, "world_size"),
    Case("launch/world_size-fraction", companion.launch, (rank_fn,), {"world_size": 2.5}, ValueError, "world_size.*whole"),
    Case("launch/world_size-nan", companion.launch, (rank_fn,), {"world_size": NAN}, ValueError, "world_size"),
    Case("launch/world_size-bool", companion.launch, (rank_fn,), {"world_size": True}, TypeError, "world_size"),
    Case("launch/world_size-str", companion.launch, (rank_fn,), {"world_size": "4"}, TypeError, "world_size"),
    Case("launch/world_size-too-many", companion.launch, (rank_fn,), {"world_size": 100_000}, ValueError, "world_size"),
    Case("launch/timeout-nan", companion.launch, (rank_fn,), {"timeout": NAN}, ValueError, "timeout"),
    Case("launch/timeout-inf", companion.launch, (rank_fn,), {"timeout": INF}, ValueError, "timeout"),
    Case("launch/timeout-negative", companion.launch, (rank_fn,), {"timeout": -1}, ValueError, "timeout"),
    Case("launch/timeout-str", companion.launch, (rank_fn,), {"timeout": "60"}, TypeError, "timeout"),
    Case("launch/backend-unknown", companion.launch, (rank_fn,), {"backend": "mpi"}, ValueError, "backend"),
    Case("choose_backend/unknown", backends.choose_backend, ("tcp", 2), {}, ValueError, "backend"),
    Case("validate_launch/world_size", backends.validate_launch, (0, 60, "auto"), {}, ValueError, "world_size"),
    Case("setup_process_group/world_size-zero", runtime.setup_process_group, (0, 0), {}, ValueError, "world_size"),
    Case("setup_process_group/rank-outside", runtime.setup_process_group, (3, 2), {}, ValueError, r"\brank\b"),
    Case("setup_process_group/backend", runtime.setup_process_group, (0, 1), {"backend": "mpi"}, ValueError, "backend"),
    Case("setup_process_group/timeout-nan", runtime.setup_process_group, (0, 1), {"timeout": NAN}, ValueError, "timeout"),
    Case("process_group/world_size", enter_process_group, (), {"rank": 0, "world_size": -2}, ValueError, "world_size"),
    # --- exercises and experiments ---------------------------------------------------
    # --- the learning loop ----------------------------------------------------
    Case("audit/not-callable", placement.audit, ("train",), {}, TypeError, r"\bfn\b"),
    Case("audit/kwargs-not-dict", placement.audit, (print, [1]), {}, TypeError, "kwargs"),
    Case("audit/unknown-kwarg", placement.audit, (print, {"colour": 1}), {}, TypeError, "colour"),
    Case("exercise/no-dot", learning.exercise, ("average",), {}, ValueError, "exercise_id"),
    Case("exercise/unknown", learning.exercise, ("00.no-such",), {}, ValueError, "exercise_id"),
    Case("exercise/not-str", learning.exercise, (7,), {}, ValueError, "exercise_id"),
    Case("Exercise/level", learning.Exercise, ("00.x", "t", "easy", "", "f", ("a", "b")), {}, ValueError, "level"),
    Case("Exercise/one-hint", learning.Exercise, ("00.x", "t", "core", "", "f", ("a",)), {}, ValueError, "hints"),
    Case("Exercise/id", learning.Exercise, ("ring", "t", "core", "", "f", ("a", "b")), {}, ValueError, "id="),
    Case("Exercise/world_size", learning.Exercise, ("00.x", "t", "core", "", "f", ("a", "b")), {"world_size": 0}, ValueError, "world_size"),
    Case("Exercise/rtol", learning.Exercise, ("00.x", "t", "core", "", "f", ("a", "b")), {"rtol": -1.0}, ValueError, "rtol"),
    Case("register/not-exercise", learning.register, ("00.x",), {}, TypeError, "ex"),
    Case("predict/empty-question", learning.predict, ("",), {}, ValueError, "question"),
    Case("predict/one-choice", learning.predict, ("q",), {"choices": ["a"]}, ValueError, "choices"),
    Case("Prediction.lock/not-a-number", learning.predict("q").lock, ("abc",), {}, ValueError, "value"),
    Case("Prediction.reveal/rel_tol", learning.predict("q").reveal, (1.0,), {"rel_tol": -0.1}, ValueError, "rel_tol"),
    Case("prediction/empty-question", wprediction, ("  ",), {}, ValueError, "question"),
    Case("difference/rtol", lfeedback.difference, (1.0, 1.0), {"rtol": NAN}, ValueError, "rtol"),
    Case("only/unknown-call", lpatterns.only, ("isend", "sendd"), {}, ValueError, "allowed"),
    Case("counts/unknown-call", lpatterns.counts, ({"allreduce": 1},), {}, ValueError, "expected"),
    Case("counts/not-dict", lpatterns.counts, (3,), {}, ValueError, "expected"),
    Case("per_rank/not-callable", lpatterns.per_rank, ("x",), {}, TypeError, "check"),
    Case("all_of/not-callable", lpatterns.all_of, ("x",), {}, TypeError, "patterns"),
    Case("resolve/no-dot", lwatch.resolve, ("all_reduce",), {}, ValueError, "dotted"),
    Case("resolve/unknown", lwatch.resolve, ("torch.distributed.all_reduse",), {}, ValueError, "dotted"),
    Case("watching/not-dict", lwatch.Watcher, (["torch.distributed.all_reduce"],), {}, ValueError, "forbidden"),
    Case("link_class/ranks_per_node", lpatterns.link_class, (lwatch.Call("all_reduce", "forward", 4, None, 2, (0, 1)), 0, 0), {}, ValueError, "ranks_per_node"),
    Case("clear_solution/unclosed", lrelease.clear_solution, ("### BEGIN SOLUTION\nx = 1",), {}, ValueError, "END SOLUTION"),
    Case("release/no-notebooks", lrelease.release, ("/nonexistent-folder", "/tmp/out"), {}, ValueError, "source_dir"),
    Case("release.main/no-notebooks", lrelease.main, (["/nonexistent-folder", "/tmp/out"],), {}, ValueError, "source_dir"),
    Case("student_notebook/grade_id", lrelease.student_notebook, ({"cells": [{"cell_type": "code", "source": "x", "metadata": {"nbgrader": {"solution": True, "grade_id": "a b"}}, "outputs": [], "execution_count": None}], "metadata": {}, "nbformat": 4, "nbformat_minor": 5},), {}, ValueError, "grade_id"),
    # --- the grader (make grade): every case before a kernel or process starts --------
    Case("grade/missing-folder", lgrade.grade, ("/nonexistent-folder",), {}, ValueError, "submissions="),
    Case("grade/no-notebooks", lgrade.grade, (Path(__file__).parent / "exercise_cases",), {}, ValueError, "submissions=.*no student folder"),
    Case("grade/loose-notebooks", lgrade.grade, (NOTEBOOKS_DIR,), {}, ValueError, "submissions=.*directly"),
    Case("grade/unknown-notebook", grade_an_unknown_notebook, (), {}, ValueError, r"homework1\.ipynb is no course notebook"),
    Case("grade/timeout", lgrade.grade, (NOTEBOOKS_DIR,), {"timeout": 0}, ValueError, "timeout"),
    Case("grade/out-not-csv", lgrade.grade, (NOTEBOOKS_DIR,), {"out": "grades.txt"}, ValueError, "out="),
    Case("grade/course", lgrade.grade, (NOTEBOOKS_DIR,), {"course": "/nonexistent-folder"}, ValueError, "course="),
    Case("grade/progress", lgrade.grade, (NOTEBOOKS_DIR,), {"progress": "loud"}, ValueError, "progress="),
    Case("cli/grade-missing-folder", cli, (["grade", "/nonexistent-folder"],), {}, SystemExit, "submissions="),
    # --- the zh-TW conversion and its figure font -----------------------------------
    Case("english_runs/not-str", ENGRUNS.english_runs, (b"text",), {}, TypeError, "text"),
    Case("measure/not-notebook", ENGRUNS.measure, ("notebooks",), {}, ValueError, "path"),
    Case("swap_columns_and_rows/not-str", ZHTW.swap_columns_and_rows, (["列"],), {}, TypeError, "text"),
    Case("use_cjk_font/language", PLOT.use_cjk_font, ("zh-HK",), {}, ValueError, "language"),
    Case("translate_message/not-str", i18n.errors.translate_message, (3,), {}, TypeError, "message"),
    # --- the Colab/Binder bootstrap cell (companion.tools.bootstrap) -----------------
    Case("bootstrap_source/not-str", BOOT.bootstrap_source, (Path("/x"),), {}, TypeError, "source"),
    Case("bootstrap_source/quote", BOOT.bootstrap_source, ('a" && rm -rf ~',), {}, ValueError, "source"),
    Case("bootstrap_cell/empty", BOOT.bootstrap_cell, ("  ",), {}, ValueError, "source"),
    Case("find_bootstrap/not-notebook", BOOT.find_bootstrap, ("notebooks/00.ipynb",), {}, TypeError, r"\bnb\b"),
    Case("apply/not-notebook", BOOT.apply, ({"cells": None},), {}, TypeError, r"\bnb\b"),
    Case("notebook_paths/missing", BOOT.notebook_paths, (["/nonexistent/00.ipynb"],), {}, ValueError, "paths"),
    Case("notebook_paths/not-notebook", BOOT.notebook_paths, ([__file__],), {}, ValueError, "paths"),
    Case("apply_to_paths/source", BOOT.apply_to_paths, (["/nonexistent"],), {"source": "x\ny"}, ValueError, "source"),
    Case("colab_url/absolute", BOOT.colab_url, ("/home/me/notebooks/00_launching_ranks.ipynb",), {}, ValueError, "relative"),
    Case("binder_url/not-notebook", BOOT.binder_url, ("notebooks/sanitize.cfg",), {}, ValueError, r"\.ipynb"),
    Case("links_table/outside-root", BOOT.links_table, ([Path(__file__).parent.parent / "notebooks"],), {"root": "/nonexistent"}, ValueError, "root"),
    Case("bootstrap.main/missing", BOOT.main, (["/nonexistent-folder"],), {}, SystemExit, "paths"),
    Case("fmt_bytes/str", units.fmt_bytes, ("1 GB",), {}, ValueError, "n="),
    Case("fmt_bytes/digits", units.fmt_bytes, (10,), {"digits": 0}, ValueError, "digits"),
    Case("fmt_seconds/negative", units.fmt_seconds, (-1.0,), {}, ValueError, "t="),
    # --- the cheat-sheet and notebook 07's index bookkeeping ------------------------------
    Case("all_reduce_closed_form/algorithm", CS.all_reduce_closed_form, ("bogus", 4), {}, ValueError, "algorithm"),
    Case("all_reduce_table/world_size", CS.all_reduce_table, (0, 1e6, 1e-5, 1e9), {}, ValueError, "world_size"),
    Case("zero_closed_form/n", CS.zero_closed_form, (1e9, 0, 1), {}, ValueError, r"\bn\b"),
    Case("zero_traffic_closed_form/stage", CS.zero_traffic_closed_form, (1e9, 4, 5), {}, ValueError, "stage"),
    Case("bubble_table/stages", CS.bubble_table, (0, 8), {}, ValueError, "stages"),
    Case("tp_bytes_per_layer/t", CS.tp_bytes_per_layer, (1, 1, 1, 0), {}, ValueError, r"\bt\b"),
    Case("activation_closed_form/mode", CS.activation_closed_form, (1, 1, 1, 1, 1, "bogus"), {}, ValueError, "mode"),
    Case("attention_bytes/method", CS.attention_bytes, ("bogus", 1, 1, 1, 1), {}, ValueError, "method"),
    Case("ring_hops/p", SPRING.ring_hops, (0,), {}, ValueError, r"\bp\b"),
    Case("shown_reason/reason", PL.shown_reason, (None,), {}, TypeError, "reason"),
    Case("compressed_bytes/density", CS.compressed_bytes, ("dgc", 4, 4), {"density": 2.0}, ValueError, "density"),
    Case("measured_bytes/method", CS.measured_bytes, ("bogus", 4, 4), {}, ValueError, "method"),
    Case("dga_step_time/algorithm", CS.dga_step_time, ("bogus", 1.0, 1.0), {}, ValueError, "algorithm"),
    Case("modeled_step_time/algorithm", CS.modeled_step_time, ("bogus", 1.0, 1.0), {}, ValueError, "algorithm"),
    Case("mfu/gpus", CS.mfu, (1e9, 1e6, 1.0, 0, 1e15), {}, ValueError, "gpus"),
    Case("recorded_run/numel", companion.launch, (CS.recorded_run,), {"numel": 0}, ValueError, "numel"),
    Case("markdown_table/rows", CS.markdown_table, (["a", "b"], [[1]]), {}, ValueError, "rows"),
    Case("bubble_table/chunks", CS.bubble_table, (4, 8, 1), {}, ValueError, "chunks"),
    Case("recompute_factor/forward", CS.recompute_factor, (0,), {}, ValueError, "forward"),
    Case("link_bytes/algorithm", CS.link_bytes, ("tree", 1000, TOP.Cluster(2, 2)), {}, ValueError, "algorithm"),
    Case("link_bytes_closed_form/cluster", CS.link_bytes_closed_form, ("ring", 1e6, "2x2"), {}, ValueError, "cluster"),
    Case("hierarchical_seconds/nbytes", CS.hierarchical_seconds, (-1.0, TOP.Cluster(2, 2)), {}, ValueError, "nbytes"),
    Case("torus_seconds/layout", CS.torus_seconds, (1e6, TOP.Cluster(3, 3)), {}, ValueError, "cluster"),
    Case("switch_all_to_all_seconds/two-links", CS.switch_all_to_all_seconds, (1e5, TOP.Cluster(2, 2)), {}, ValueError, "cluster"),
    Case("cp_bytes_per_layer/cp", CS.cp_bytes_per_layer, (1, 1024, 128, 1), {}, ValueError, r"\bcp\b"),
    Case("ep_bytes_per_layer/recompute", CS.ep_bytes_per_layer, (16, 2, 16, 1.25, 2, "bogus"), {}, ValueError, "recompute"),
    Case("sections/cells", CS.sections, (42,), {}, ValueError, "cells"),
    Case("index_markdown/language", CS.index_markdown, (["## 1 · x\n"], "fr"), {}, ValueError, "language"),
    Case("roofline_closed_forms/ep_degree", CS.roofline_closed_forms, (1e15, 4e11, 1024, 1e6, 8, 8, 60, 8), {}, ValueError, "ep_degree"),
    Case("index_block_bytes/index_bits", ZA.index_block_bytes, ([(10, 10)],), {"index_bits": 0}, ValueError, "index_bits"),
    Case("experiment/name-not-str", experiments.experiment, (3,), {}, TypeError, "name"),
    Case("experiment/summarize-not-callable", experiments.experiment, ("x",), {"summarize": "table"}, TypeError, "summarize"),
    Case("experiments.get/unknown", experiments.get, ("no_such_experiment",), {}, ValueError, "no_such_experiment"),
    Case("launch_overhead/world_sizes-zero", basics.launch_overhead, ((0,),), {}, ValueError, "world_size"),
    Case("launch_overhead/repeats-zero", basics.launch_overhead, (), {"repeats": 0}, ValueError, "repeats"),
    Case("local_values/n-fraction", basics.local_values, (2.5,), {}, ValueError, r"\bn\b"),
    # --- collectives (notebook 01) -----------------------------------------------------
    Case("ring_all_reduce/op-unknown", C.ring_all_reduce, (TENSOR,), {"op": "max"}, ValueError, r"\bop\b"),
    Case("tree_all_reduce/op-unknown", C.tree_all_reduce, (TENSOR,), {"op": "prod"}, ValueError, r"\bop\b"),
    Case("reduce/op-unknown", C.reduce, (TENSOR,), {"op": "min"}, ValueError, r"\bop\b"),
    Case("chunk_sizes/parts-zero", C.chunk_sizes, (10, 0), {}, ValueError, "parts"),
    Case("chunk_sizes/parts-fraction", C.chunk_sizes, (10, 2.5), {}, ValueError, "parts"),
    Case("chunk_offsets/numel-negative", C.chunk_offsets, (-1, 2), {}, ValueError, "numel"),
    Case("record/unknown-name", demos.record, ("ringg",), {}, ValueError, "ringg"),
    Case("rank_values/numel-zero", demos.rank_values, (0,), {}, ValueError, "numel"),
    Case("traffic_sweep/numel-nan", demos.traffic_sweep, (NAN,), {}, ValueError, "numel"),
    Case("broadcast/src-outside", C.broadcast, (TENSOR,), {"src": 5}, ValueError, r"\bsrc\b"),
    Case("broadcast/src-str", C.broadcast, (TENSOR,), {"src": "0"}, TypeError, r"\bsrc\b"),
    Case("broadcast/not-tensor", C.broadcast, ([1.0, 2.0],), {}, TypeError, "tensor"),
    Case("scatter/src-negative", C.scatter, (TENSOR,), {"src": -1}, ValueError, r"\bsrc\b"),
    Case("gather/dst-fraction", C.gather, (TENSOR,), {"dst": 0.5}, ValueError, r"\bdst\b"),
    Case("reduce/dst-outside", C.reduce, (TENSOR,), {"dst": 1}, ValueError, r"\bdst\b"),
    Case("reduce/not-tensor", C.reduce, (3.0,), {}, TypeError, "tensor"),
    Case("reduce_scatter/not-tensor", C.reduce_scatter, ([1.0],), {}, TypeError, "tensor"),
    Case("all_gather/not-tensor", C.all_gather, ([1.0],), {}, TypeError, "tensor"),
    Case("all_to_all/not-tensor", C.all_to_all, ([1.0, 2.0],), {}, TypeError, r"inputs\[0\]"),
    Case("recursive_doubling_all_reduce/op-unknown", C.recursive_doubling_all_reduce, (TENSOR,), {"op": "max"}, ValueError, r"\bop\b"),
    Case("rd_rhd_crossover_bytes/world_size", costmodel.rd_rhd_crossover_bytes, (0, 1e-5, 1e9), {}, ValueError, "world_size"),
    Case("rd_rhd_crossover_bytes/beta", costmodel.rd_rhd_crossover_bytes, (4, 1e-5, 0.0), {}, ValueError, "beta"),
    Case("ring_all_reduce/not-tensor", C.ring_all_reduce, ([1.0],), {}, TypeError, "tensor"),
    Case("naive_all_reduce/not-tensor", C.naive_all_reduce, ([1.0],), {}, TypeError, "tensor"),
    Case("parameter_server_all_reduce/op", C.parameter_server_all_reduce, (TENSOR,), {"op": "max"}, ValueError, r"\bop\b"),
    Case("recursive_halving_doubling_all_reduce/not-tensor", C.recursive_halving_doubling_all_reduce, ((1.0,),), {}, TypeError, "tensor"),
    Case("reduce_scatter_all_gather_all_reduce/op", C.reduce_scatter_all_gather_all_reduce, (TENSOR,), {"op": "prod"}, ValueError, r"\bop\b"),
    Case("check_op/op", primitives.check_op, ("max", TENSOR), {}, ValueError, r"\bop\b"),
    Case("replay/nothing", C.replay, ([],), {}, ValueError, "replay"),
    Case("ring_bytes/kind", C.ring_bytes, ("scatter", 1000, 4), {}, ValueError, "kind"),
    Case("ring_bytes/world_size", C.ring_bytes, ("all_gather", 1000, 0), {}, ValueError, "world_size"),
    Case("ring_bytes/nbytes-nan", C.ring_bytes, ("all_reduce", NAN, 4), {}, ValueError, "nbytes"),
    Case("CommLog/group_size-zero", comm_log.CommLog, (0,), {}, ValueError, "group_size"),
    Case("CommLog.record/no-group_size", comm_log.CommLog().record, ("all_reduce", 8), {}, ValueError, "group_size"),
    # --- parameter server vs all-reduce (notebook 02), cost model ---------------------
    Case("parameter_server_train/steps-zero", param_server.parameter_server_train, (), {"steps": 0}, ValueError, "steps"),
    Case("parameter_server_train/lr-nan", param_server.parameter_server_train, (), {"lr": NAN}, ValueError, r"\blr\b"),
    Case("all_reduce_train/algorithm-unknown", param_server.all_reduce_train, (), {"algorithm": "bus"}, ValueError, "algorithm"),
    Case("all_reduce_train/batch_size-fraction", param_server.all_reduce_train, (), {"batch_size": 4.5}, ValueError, "batch_size"),
    Case("single_process_train/hidden-zero", param_server.single_process_train, (), {"hidden": 0}, ValueError, "hidden"),
    Case("coefficients/world_size-zero", costmodel.coefficients, ("ring", 0), {}, ValueError, "world_size"),
    Case("coefficients/algorithm-unknown", costmodel.coefficients, ("bus", 4), {}, ValueError, "algorithm"),
    Case("predict_time/beta-zero", costmodel.predict_time, ("ring", 1e6, 4, 1e-5, 0.0), {}, ValueError, "beta"),
    Case("predict_time/nbytes-nan", costmodel.predict_time, ("ring", NAN, 4, 1e-5, 1e9), {}, ValueError, "nbytes"),
    Case("crossover_bytes/unknown", costmodel.crossover_bytes, ("ring", "bus", 4, 1e-5, 1e9), {}, ValueError, "bus"),
    Case("fit_alpha_beta/one-size", costmodel.fit_alpha_beta, ([1024], [1e-3]), {}, ValueError, "sizes"),
    Case("ping_pong/repeats-zero", costmodel.ping_pong, (), {"repeats": 0}, ValueError, "repeats"),
    Case("time_all_reduce/algorithm-unknown", costmodel.time_all_reduce, (("bus",),), {}, ValueError, "bus"),
    # --- memory, ZeRO, DDP, FSDP (notebook 03) -----------------------------------------
    Case("bytes_per_param/precision", memory.bytes_per_param, ("fp8",), {}, ValueError, "precision"),
    Case("bytes_per_param/optimizer", memory.bytes_per_param, ("mixed", "lion"), {}, ValueError, "optimizer"),
    Case("zero_memory_per_gpu/world_size-zero", memory.zero_memory_per_gpu, (1e9, 0, 1), {}, ValueError, "world_size"),
    Case("zero_memory_per_gpu/num_params-nan", memory.zero_memory_per_gpu, (NAN, 8, 1), {}, ValueError, "num_params"),
    Case("zero_memory_per_gpu/stage", memory.zero_memory_per_gpu, (1e9, 8, 4), {}, ValueError, "stage"),
    Case("max_params_that_fit/memory-inf", memory.max_params_that_fit, (INF, 8, 3), {}, ValueError, "gpu_memory_bytes"),
    Case("activation_memory_per_layer/heads", memory.activation_memory_per_layer, (2048, 1, 4096, 30), {}, ValueError, "heads"),
    Case("activation_memory_per_layer/recompute", memory.activation_memory_per_layer, (2048, 1, 4096, 32), {"recompute": "half"}, ValueError, "recompute"),
    Case("communication_volume/stage", memory.communication_volume, (1e9, 8, 5), {}, ValueError, "stage"),
    Case("transformer_params/heads-zero", memory.transformer_params, (2, 64, 256, 100, 0), {}, ValueError, "heads"),
    Case("chunk_size/world_size-zero", zero.chunk_size, (10, 0), {}, ValueError, "world_size"),
    Case("chunk_bounds/rank-outside", zero.chunk_bounds, (10, 2, 2), {}, ValueError, r"\brank\b"),
    Case("ShardedOptimizer/stage-3", zero.ShardedOptimizer, (LINEAR.parameters(), torch.optim.SGD), {"stage": 3, "lr": 0.1}, ValueError, "stage"),
    Case("ShardedOptimizer/optimizer_cls", zero.ShardedOptimizer, (LINEAR.parameters(), "adam"), {"lr": 0.1}, TypeError, "optimizer_cls"),
    Case("DDP/bucket-negative", companion.DDP, (LINEAR,), {"bucket_size_mb": -1}, ValueError, "bucket_size_mb"),
    Case("DDP/bucket-nan", companion.DDP, (LINEAR,), {"bucket_size_mb": NAN}, ValueError, "bucket_size_mb"),
    Case("DDP/module-not-module", companion.DDP, ("model",), {}, TypeError, "module"),
    Case("FSDP/module-not-module", companion.FSDP, (42,), {}, TypeError, "module"),
    Case("FSDP/compute_dtype", companion.FSDP, (LINEAR,), {"compute_dtype": "half"}, TypeError, "compute_dtype"),
    Case("FSDP/prefetch-not-bool", companion.FSDP, (LINEAR,), {"prefetch": "yes"}, TypeError, "prefetch"),
    Case("DDP/link-not-a-link", companion.DDP, (LINEAR,), {"link": "wan"}, TypeError, "link"),
    # --- overlap (notebook 10) -------------------------------------------------------------
    Case("Collectives/link", DPC.Collectives, (), {"link": 42}, TypeError, "link"),
    Case("step_timeline/end-before-start", OV.step_timeline, ([], 2.0, 1.0), {}, ValueError, "end"),
    Case("predicted_crossover/world_size-one", OV.predicted_crossover, (1e10, 1e8, 1), {}, ValueError, "world_size"),
    Case("predicted_crossover/bandwidth-zero", OV.predicted_crossover, (1e10, 0.0, 4), {}, ValueError, "bandwidth_bytes_s"),
    Case("crossover_batch/empty", OV.crossover_batch, ([],), {}, ValueError, "rows"),
    Case("crossover_batch/two-points", OV.crossover_batch, ([{"batch": 8, "exposed_s": 1.0}, {"batch": 16, "exposed_s": 0.5}],), {}, ValueError, "rows"),
    Case("slowest_rank_exposed/empty", OV.slowest_rank_exposed, ([],), {}, ValueError, "timelines"),
    Case("draw_overlap/not-timelines", OV.draw_overlap, (None, [{"rank": 0}]), {}, ValueError, "timelines"),
    Case("mlp_flops/batch-zero", OV.mlp_flops, (0, 64, 2), {}, ValueError, "batch"),
    Case("measure_overlap/strategy", OV.measure_overlap, (), {"configs": [{"strategy": "tp"}]}, ValueError, "strategy"),
    Case("measure_overlap/config-key", OV.measure_overlap, (), {"configs": [{"batch_size": 8}]}, ValueError, "configs"),
    Case("measure_overlap/bandwidth-zero", OV.measure_overlap, (), {"bandwidth_bytes_s": 0}, ValueError, "bandwidth_bytes_s"),
    Case("measure_crossover/batches-empty", OV.measure_crossover, (), {"batches": ()}, ValueError, "batches"),
    Case("measure_crossover/warmup-negative", OV.measure_crossover, (), {"warmup": -1}, ValueError, "warmup"),
    Case("zero_runs.train/strategy", zero_runs.train, (), {"strategy": "zero4"}, ValueError, "strategy"),
    Case("zero_runs.train/steps-zero", zero_runs.train, (), {"steps": 0}, ValueError, "steps"),
    Case("zero_runs.train/optimizer", zero_runs.train, (), {"optimizer": "lion"}, ValueError, "optimizer"),
    # --- pipeline (notebook 04) ---------------------------------------------------------
    Case("draw_placement/not-a-schedule", draw_placement, (None, "zb-v"), {}, ValueError, "schedule"),
    Case("make_schedule/unknown", P.make_schedule, ("2f2b", 4, 8), {}, ValueError, "2f2b"),
    Case("make_schedule/stages-zero", P.make_schedule, ("gpipe", 0, 8), {}, ValueError, "stages"),
    Case("make_schedule/microbatches-fraction", P.make_schedule, ("gpipe", 4, 2.5), {}, ValueError, "microbatches"),
    Case("make_schedule/stages-bool", P.make_schedule, ("gpipe", True, 4), {}, TypeError, "stages"),
    Case("check_sizes/chunks-zero", P.ops.check_sizes, (4, 8, 0), {}, ValueError, "chunks"),
    Case("naive/stages-zero", P.naive, (0, 4), {}, ValueError, "stages"),
    Case("gpipe/microbatches-zero", P.gpipe, (4, 0), {}, ValueError, "microbatches"),
    Case("one_f_one_b/stages-fraction", P.one_f_one_b, (2.5, 4), {}, ValueError, "stages"),
    Case("zb_h1/stages-zero", P.zb_h1, (0, 4), {}, ValueError, "stages"),
    Case("OpCosts/F-negative", P.OpCosts, (), {"F": -1.0}, ValueError, r"\bF\b"),
    Case("interleaved_1f1b/not-divisible", P.interleaved_1f1b, (4, 6), {"chunks": 2}, ValueError, "microbatches"),
    Case("simulate/cost-negative", P.simulate, ("gpipe", 4, 8), {"F": -1.0}, ValueError, r"\bF\b"),
    Case("simulate/cost-nan", P.simulate, ("gpipe", 4, 8), {"B": NAN}, ValueError, r"\bB\b"),
    Case("bubble_fraction/schedule", P.bubble_fraction, (4, 8), {"schedule": "2f2b"}, ValueError, "2f2b"),
    Case("bubble_fraction/stages-nan", P.bubble_fraction, (NAN, 8), {}, ValueError, "stages"),
    Case("peak_activations/microbatches-zero", P.peak_activations, (4, 0), {}, ValueError, "microbatches"),
    Case("formula_text/schedule", P.formula_text, ("2f2b",), {}, ValueError, "2f2b"),
    Case("split_stages/parts-too-many", P.split_stages, (nn.Sequential(nn.Linear(2, 2)), 3), {}, ValueError, "parts|layers"),
    Case("microbatches_of/not-divisible", P.microbatches_of, (32, 5), {}, ValueError, "batch_size"),
    Case("run_pipeline/schedule", P.run_pipeline, (), {"schedule": "2f2b"}, ValueError, "2f2b"),
    Case("run_pipeline/microbatches-zero", P.run_pipeline, (), {"microbatches": 0}, ValueError, "microbatches"),
    Case("reference_step/stages-zero", P.reference_step, (), {"stages": 0}, ValueError, "stages"),
    Case("timeline_from_results/unit", P.timeline_from_results, ([],), {"unit": "hours"}, ValueError, "unit"),
    Case("run_torch_pipelining/schedule", torch_reference.run_torch_pipelining, (), {"schedule": "zb"}, ValueError, "schedule"),
    Case("looped_bfs/chunks-zero", P.looped_bfs, (4, 8), {"chunks": 0}, ValueError, "chunks"),
    Case("interleaved_zb/not-divisible", P.interleaved_zb, (4, 6), {}, ValueError, "microbatches"),
    Case("zb_v/stages-zero", P.zb_v, (0, 8), {}, ValueError, "stages"),
    Case("dualpipev/too-few-microbatches", P.dualpipev, (4, 6), {}, ValueError, "microbatches"),
    Case("make_schedule/zb-v-chunks", P.make_schedule, ("zb-v", 4, 8), {"chunks": 3}, ValueError, "chunks=2"),
    Case("schedule_key/unknown", P.registry.schedule_key, ("2f2b",), {}, ValueError, "2f2b"),
    Case("execute/pieces", P.executor.execute, (P.make_schedule("zb-v", 2, 4), 0, {0: None}, []), {"shapes": [], "loss": None}, ValueError, "pieces"),
    Case("execute/stage", P.executor.execute, (P.make_schedule("gpipe", 2, 4), 2, {0: None}, []), {"shapes": [], "loss": None}, ValueError, r"\bstage=2"),
    Case("check_device_time/keys", P.executor.check_device_time, ({"F": 0.01},), {}, ValueError, "device_time"),
    Case("run_pipeline/device_time", P.run_pipeline, (), {"device_time": {"F": 0.01, "X": 1}}, ValueError, "device_time"),
    Case("torch_schedule_ops/not-in-torch", torch_ops.torch_schedule_ops, ("zb-h1", 4, 8), {}, ValueError, "zb-h1"),
    Case("torch_executed_ops/multi-stage", torch_ops.torch_executed_ops, ("zb-v", 4, 8), {}, ValueError, "1f1b"),
    Case("pp_vs_tp_bytes/layers-zero", boundary_bytes.pp_vs_tp_bytes, (), {"layers": 0}, ValueError, "layers"),
    Case("op_differences/rank-count", torch_ops.op_differences, ([[]], [[], []]), {}, ValueError, "ranks"),
    # --- tensor and sequence parallelism, MoE (notebooks 05-06) ------------------------
    Case("ColumnParallelLinear/chunks-zero", TP.ColumnParallelLinear, (LINEAR,), {"chunks": 0}, ValueError, "chunks"),
    Case("ColumnParallelLinear/not-linear", TP.ColumnParallelLinear, ("fc",), {}, TypeError, "full"),
    Case("RowParallelLinear/not-linear", TP.RowParallelLinear, (nn.Conv1d(2, 2, 1),), {}, TypeError, "full"),
    Case("ParallelMLP/mistake", TP.ParallelMLP, (models.MLP(8, 16),), {"mistake": "typo"}, ValueError, "mistake"),
    Case("call_many/bare-non-callable", experiments.call_many, ([3],), {}, TypeError, r"calls\[0\]"),
    Case("call_many/fn-not-callable", experiments.call_many, ([("run_mlp", {})],), {}, TypeError, "calls"),
    Case("call_many/kwargs-not-dict", experiments.call_many, ([(TP.run_mlp, 64)],), {}, TypeError, "kwargs"),
    Case("call_many/row-bad-value", experiments.call_many, ([(TP.compare_with_reference, {"kind": "conv"})],), {}, ValueError, "kind"),
    Case("compare_with_reference/kind", TP.compare_with_reference, (), {"kind": "conv"}, ValueError, "kind"),
    Case("compare_with_reference/dtype", TP.compare_with_reference, (), {"dtype": "float8"}, ValueError, "dtype"),
    Case("compare_with_reference/seq-zero", TP.compare_with_reference, (), {"seq": 0}, ValueError, "seq"),
    Case("activation_bytes/mode", TP.activation_bytes, (), {"mode": "pp"}, ValueError, "mode"),
    Case("dtensor_mlp_compare/d_ff-zero", TP.dtensor_mlp_compare, (), {"d_ff": 0}, ValueError, "d_ff"),
    Case("SequenceParallelBlock/method", sequence_parallel.SequenceParallelBlock, (None,), {"method": "striped"}, ValueError, "method"),
    Case("benchmark_layer/method", sequence_parallel.benchmark_layer, (), {"method": "striped"}, ValueError, "method"),
    Case("benchmark_layer/seq-zero", sequence_parallel.benchmark_layer, (), {"seq": 0}, ValueError, "seq"),
    Case("hybrid_groups/ulysses_size-zero", sequence_parallel.hybrid_groups, (0,), {}, ValueError, "ulysses_size"),
    Case("route/top_k-too-big", moe.route, (torch.zeros(4, 2), 3, 4), {}, ValueError, "top_k"),
    Case("route/capacity-zero", moe.route, (torch.zeros(4, 2), 1, 0), {}, ValueError, "capacity"),
    Case("MoE/capacity_factor-nan", moe.MoE, (), {"capacity_factor": NAN}, ValueError, "capacity_factor"),
    Case("MoE/n_experts-zero", moe.MoE, (), {"n_experts": 0}, ValueError, "n_experts"),
    Case("compare_moe/top_k-zero", moe.compare_moe, (), {"top_k": 0}, ValueError, "top_k"),
    Case("compare_moe/dtype", moe.compare_moe, (), {"dtype": "float8"}, ValueError, "dtype"),
    Case("route/bias-shape", moe.route, (torch.zeros(4, 3), 1, 4, torch.zeros(2)), {}, ValueError, "bias"),
    Case("load_ratio/all-zero", MB.load_ratio, ([0, 0],), {}, ValueError, "load"),
    Case("switch_aux_loss/logits", MB.switch_aux_loss, (torch.zeros(8),), {}, ValueError, "logits"),
    Case("switch_aux_loss/alpha", MB.switch_aux_loss, (torch.zeros(4, 8),), {"alpha": -1.0}, ValueError, "alpha"),
    Case("update_bias/gamma-zero", MB.update_bias, (torch.zeros(2), [1, 1], 0.0), {}, ValueError, "gamma"),
    Case("update_bias/load-shape", MB.update_bias, (torch.zeros(2), [1, 1, 1], 0.1), {}, ValueError, "load"),
    Case("zipf_offset/skew-negative", MB.zipf_offset, (8, -1.0), {}, ValueError, "skew"),
    Case("dropless_forward/experts", MB.dropless_forward, (torch.zeros(2, 4), (torch.zeros(2, dtype=torch.long),) * 4, [], 8), {}, ValueError, "n_experts=8"),
    Case("balance_reference/top_k", MB.balance_reference, (), {"top_k": 9}, ValueError, "top_k"),
    Case("balance_reference/factor", MB.balance_reference, (), {"factors": (0.0,)}, ValueError, "capacity_factor"),
    Case("moe_load_balance/dtype", MB.moe_load_balance, (), {"dtype": "float8"}, ValueError, "dtype"),
    Case("node_limited_topk/max_nodes-zero", MN.node_limited_topk, (torch.zeros(1, 4), 1, 2, 0), {}, ValueError, "max_nodes"),
    Case("node_limited_topk/n_nodes", MN.node_limited_topk, (torch.zeros(1, 4), 1, 3, 1), {}, ValueError, "n_nodes=3"),
    Case("cross_node_rows/experts_per_node", MN.cross_node_rows, (torch.zeros(1, 2, dtype=torch.long), 0, 0, True), {}, ValueError, "experts_per_node"),
    Case("two_hop_dispatch/ranks_per_node", MN.two_hop_dispatch, (torch.zeros(2, 4), torch.zeros(2, 1, dtype=torch.long), 8, 0), {}, ValueError, "ranks_per_node"),
    Case("expected_arrivals/world_size", MN.expected_arrivals, ([torch.zeros(1, 2)], [torch.zeros(1, 1)], 0, 8, 2), {}, ValueError, "world_size=2"),
    Case("moe_node_traffic/top_k", MN.moe_node_traffic, (), {"top_k": 9}, ValueError, "top_k"),
    Case("all_to_all_rows/counts", comm_log.all_to_all_rows, (torch.zeros(3, 2), [2], [3]), {}, ValueError, "send_counts"),
    Case("TinyTransformer/heads-not-dividing", models.TinyTransformer, (), {"d_model": 10, "n_heads": 4}, ValueError, "n_heads"),
    Case("Block/heads-not-dividing", models.Block, (8, 3, 16), {}, ValueError, "n_heads"),
    Case("CausalSelfAttention/heads-not-dividing", models.CausalSelfAttention, (10, 4), {}, ValueError, "n_heads"),
    Case("MLP/d_ff-zero", models.MLP, (8, 0), {}, ValueError, "d_ff"),
    Case("BiasFreeMLP/hidden-zero", Z.BiasFreeMLP, (), {"hidden": 0}, ValueError, "hidden"),
    Case("TinyMLP/depth-zero", models.TinyMLP, (), {"depth": 0}, ValueError, "depth"),
    Case("TinyMLP/hidden-fraction", models.TinyMLP, (), {"hidden": 2.5}, ValueError, "hidden"),
    # --- gradient compression (notebook 07) -------------------------------------------
    Case("sparse_bytes/density-zero", Z.sparse_bytes, ([(10, 10)], 0.0), {}, ValueError, "density"),
    Case("sparse_bytes/density-above-one", Z.sparse_bytes, ([(10, 10)], 1.5), {}, ValueError, "density"),
    Case("DGCConfig/density-nan", Z.DGCConfig, (), {"density": NAN}, ValueError, "density"),
    Case("DGCConfig/momentum-one", Z.DGCConfig, (), {"momentum": 1.0}, ValueError, "momentum"),
    Case("density_schedule/final-zero", Z.density_schedule, (0, 0.0, 10), {}, ValueError, "final_density"),
    Case("topk_indices/k-zero", Z.topk_indices, (TENSOR, 0), {}, ValueError, r"\bk\b"),
    Case("make_compressor/method", Z.make_compressor, ("zip", [TENSOR]), {}, ValueError, "method"),
    Case("train/method", Z.train, (), {"method": "zip"}, ValueError, "method"),
    Case("train/steps-zero", Z.train, (), {"steps": 0}, ValueError, "steps"),
    Case("train/density-zero", Z.train, (), {"method": "dgc", "density": 0.0}, ValueError, "density"),
    Case("train/schedule", Z.train, (), {"schedule": "linear"}, ValueError, "schedule"),
    Case("train_many/steps-zero", Z.train_many, ([{"method": "dense"}],), {"steps": 0}, ValueError, "steps"),
    Case("train_stacked/method", Z.train_stacked, ([{"method": "powersgd"}],), {}, ValueError, "dense.*dgc|method"),
    Case("ablation/density", Z.ablation, (), {"density": 2.0}, ValueError, "density"),
    Case("ablation_settings/row", Z.ablation_settings, ("bogus",), {"clip_norm": 0.5, "warmup_steps": 4, "density": 0.01}, ValueError, "bogus"),
    Case("densification/density", Z.densification, (), {"density": -0.1}, ValueError, "density"),
    Case("PowerSGD/rank-zero", Z.PowerSGD, ([torch.ones(4, 4)],), {"rank": 0}, ValueError, r"\brank\b"),
    Case("Threshold/tau-nan", Z.Threshold, (NAN,), {}, ValueError, "tau"),
    Case("TopKNoFeedback/density", Z.TopKNoFeedback, (0.0,), {}, ValueError, "density"),
    Case("pack_bits/bits", Z.pack_bits, (torch.zeros(8, dtype=torch.uint8), 3), {}, ValueError, "bits"),
    Case("torch_powersgd_bytes/rank-zero", Z.torch_powersgd_bytes, ([(10, 10)], 0), {}, ValueError, r"\brank\b"),
    Case("train_torch_powersgd/rank-zero", Z.train_torch_powersgd, (), {"powersgd_rank": 0}, ValueError, "powersgd_rank"),
    # --- delayed gradient averaging, latency (notebook 08) ----------------------------
    Case("dga.simulate/algorithm", dga.simulate, ([], torch.zeros(2)), {"algorithm": "async", "steps": 3, "lr": 0.1}, ValueError, "algorithm"),
    Case("dga.simulate/steps-zero", dga.simulate, ([], torch.zeros(2)), {"algorithm": "dga", "steps": 0, "lr": 0.1}, ValueError, "steps"),
    Case("dga.simulate/lr-nan", dga.simulate, ([], torch.zeros(2)), {"algorithm": "dga", "steps": 3, "lr": NAN}, ValueError, r"\blr\b"),
    Case("dga.train/alpha_ms-nan", dga.train, (), {"alpha_ms": NAN}, ValueError, "alpha"),
    Case("run_worker/steps-zero", dga.run_worker, (None, torch.zeros(2), None), {"algorithm": "dga", "steps": 0, "lr": 0.1}, ValueError, "steps"),
    Case("mlp_problem/batch_size-zero", dga.mlp_problem, (0, 1), {"batch_size": 0}, ValueError, "batch_size"),
    Case("fit_from_collectives/too-few", costmodel.fit_from_collectives, ({},), {"world_size": 4}, ValueError, "two timings"),
    Case("link_delay/alpha-negative", latency.link_delay, (100, -1.0), {}, ValueError, "alpha"),
    Case("link_delay/beta-zero", latency.link_delay, (100, 0.0, 0.0), {}, ValueError, "beta"),
    Case("DelayedComm/alpha-nan", latency.DelayedComm, (NAN,), {}, ValueError, "alpha"),
    Case("DelayedComm/absorb_real-not-bool", latency.DelayedComm, (0.0, 1e6), {"absorb_real": "yes"}, TypeError, "absorb_real"),
    Case("modeled_step_times/algorithm", step_model.modeled_step_times, ("async", 3, 1.0, 1.0), {}, ValueError, "algorithm"),
    Case("modeled_step_times/steps-zero", step_model.modeled_step_times, ("dga", 0, 1.0, 1.0), {}, ValueError, "steps"),
    Case("lr_at/schedule", schedules.lr_at, (0.1, 0, 10, "step"), {}, ValueError, "schedule"),
    Case("lr_at/steps-zero", schedules.lr_at, (0.1, 0, 0), {}, ValueError, "steps"),
    Case("dga.train/delay-negative", dga.train, (), {"delay": -1}, ValueError, "delay"),
    Case("dga.train/delay-fraction", dga.train, (), {"delay": 1.5}, ValueError, "delay"),
    Case("dga.train/schedule", dga.train, (), {"schedule": "linear"}, ValueError, "schedule"),
    Case("dga.train/batch_size-fraction", dga.train, (), {"batch_size": 2.5}, ValueError, "batch_size"),
    Case("dga.train/batch_size-too-big", dga.train, (), {"batch_size": 5000}, ValueError, "batch_size"),
    Case("dga.train/update_rule", dga.train, (), {"update_rule": "dga"}, TypeError, "update_rule"),
    Case("dga.train/bandwidth-zero", dga.train, (), {"bandwidth_mbps": 0}, ValueError, "bandwidth_mbps"),
    Case("dga.train/seeds-empty", dga.train, (), {"seeds": []}, ValueError, "seeds"),
    Case("toy_train/steps-zero", dga.toy_train, (), {"steps": 0}, ValueError, "steps"),
    Case("toy_train/dim-zero", dga.toy_train, (), {"dim": 0}, ValueError, "dim"),
    Case("toy_train/local_steps-zero", dga.toy_train, (), {"algorithm": "fedavg", "local_steps": 0}, ValueError, "local_steps"),
    Case("sweep/runs-empty", dga.sweep, (), {"runs": []}, ValueError, "runs"),
    Case("sweep/run-delay-negative", dga.sweep, (), {"runs": [{"delay": -1}]}, ValueError, "delay"),
    Case("sweep/run-misspelt", dga.sweep, (), {"runs": [{"dealy": 2}]}, TypeError, "dealy"),
    Case("dga.simulate/update_rule", dga.simulate, ([], torch.zeros(2)), {"algorithm": "dga", "steps": 3, "lr": 0.1, "update_rule": 3}, TypeError, "update_rule"),
    Case("dga.simulate/grad_fn", dga.simulate, ([None], torch.zeros(2)), {"algorithm": "sync", "steps": 3, "lr": 0.1}, TypeError, r"grad_fns\[0\]"),
    Case("quadratic_grad_fn/dim-zero", dga.quadratic_grad_fn, (0,), {"dim": 0}, ValueError, "dim"),
    Case("quadratic_grad_fn/rank-negative", dga.quadratic_grad_fn, (-1,), {}, ValueError, "rank_"),
    Case("measure_link/repeats-zero", latency.measure_link, (), {"repeats": 0}, ValueError, "repeats"),
    Case("measure_link/nbytes-too-small", latency.measure_link, (), {"nbytes": 2}, ValueError, "nbytes"),
    Case("measure_link/alpha-negative", latency.measure_link, (), {"alphas_ms": (1.0, -1.0)}, ValueError, "alphas_ms"),
    Case("great_circle_km/latitude", step_model.great_circle_km, (91.0, 0.0, 0.0, 0.0), {}, ValueError, "lat1"),
    Case("great_circle_km/longitude", step_model.great_circle_km, (0.0, 0.0, 0.0, 200.0), {}, ValueError, "lon2"),
    Case("great_circle_km/nan", step_model.great_circle_km, (0.0, NAN, 0.0, 0.0), {}, ValueError, "lon1"),
    Case("great_circle_km/str", step_model.great_circle_km, ("51N", 0.0, 0.0, 0.0), {}, TypeError, "lat1"),
    # --- hybrid parallelism and the planner (notebook 09) ------------------------------
    Case("ModelSpec/heads-not-dividing", PL.ModelSpec, ("m", 2, 100, 3, 128, 1000), {}, ValueError, "heads"),
    Case("ClusterSpec/nodes-zero", PL.ClusterSpec, ("c", 8, 0, 80.0, 989.0, 450.0, 50.0), {}, ValueError, "nodes"),
    Case("ClusterSpec/memory-nan", PL.ClusterSpec, ("c", 8, 1, NAN, 989.0, 450.0, 50.0), {}, ValueError, "gpu_memory_gb"),
    Case("plan/global_batch-zero", PL.plan, (LLAMA, CLUSTER, 0), {}, ValueError, "global_batch"),
    Case("collective_time/kind", PL.collective_time, ("broadcast", 1e6, 8, 1e-5, 1e9), {}, ValueError, "broadcast"),
    Case("group_layout/stride-zero", PL.group_layout, (8, 4, 0), {}, ValueError, "stride"),
    Case("group_layout/uneven", PL.group_layout, (8, 12, 1), {}, ValueError, "size"),
    Case("group_collective_time/kind", PL.group_collective_time, ("p2p", 1e6, CLUSTER, 8), {}, ValueError, "kind"),
    Case("group_collective_time/nbytes-negative", PL.group_collective_time, ("all_reduce", -1.0, CLUSTER, 8), {}, ValueError, "nbytes"),
    Case("pp_link/tp-zero", PL.pp_link, (CLUSTER, 0, 2), {}, ValueError, r"\btp\b"),
    Case("ClusterSpec.of/chip", PL.ClusterSpec.of, ("c", "GTX 580", 2), {}, ValueError, "GTX 580"),
    # --- the 5D planner: CP and EP (notebook 12) -----------------------------------------
    Case("MLA/rank-zero", PL.MLA, (0, 512, 128, 64, 128), {}, ValueError, "q_lora_rank"),
    Case("ModelSpec/top_k-too-big", PL.ModelSpec, ("m", 2, 64, 4, 128, 1000), {"experts": 4, "top_k": 8}, ValueError, "top_k"),
    Case("evaluate/cp-zero", PL.evaluate, (LLAMA, CLUSTER, 64, 8, 1, 1), {"cp": 0}, ValueError, r"\bcp\b"),
    Case("evaluate/schedule", PL.evaluate, (LLAMA, CLUSTER, 64, 8, 1, 1), {"schedule": "dualpipe"}, ValueError, "schedule"),
    Case("evaluate/stage_split", PL.evaluate, (LLAMA, CLUSTER, 64, 8, 1, 1), {"stage_split": "even"}, ValueError, "stage_split"),
    Case("evaluate/attention", PL.evaluate, (LLAMA, CLUSTER, 64, 8, 1, 1), {"attention": "flash"}, ValueError, "attention"),
    Case("torch_ddp_buckets/steps", companion.launch, (OV.torch_ddp_buckets,), {"steps": 0, "world_size": 2}, ValueError, r"\bsteps\b"),
    Case("predict/not-a-run", PPUB.predict, ("Llama 3",), {}, TypeError, r"\brun\b"),
    Case("megatron_flops/batch", PPUB.megatron_flops, (LLAMA, 0), {}, ValueError, r"\bbatch\b"),
    Case("block_activation_bytes/keeps", PMM.block_activation_bytes, (LLAMA, 2048, 1), {"keeps": "deepspeed"}, ValueError, "keeps"),
    Case("plan/cp_options-empty", PL.plan, (LLAMA, CLUSTER, 64), {"cp_options": ()}, ValueError, "cp_options"),
    Case("axis_layout/gpus_per_node", PL.axis_layout, (0, [2, 4], [True, False]), {}, ValueError, "gpus_per_node"),
    Case("all_to_all_time/nbytes", PL.all_to_all_time, (-1.0, CLUSTER, 8, 1), {}, ValueError, "nbytes"),
    Case("layout_collective_time/kind", PL.layout_collective_time, ("all_to_all", 1e6, CLUSTER, 8, 1), {}, ValueError, "kind"),
    # --- the experts' own TP degree and the lecture's case studies (notebook 09) ----------
    Case("ModelSpec/head_dim-zero", PL.ModelSpec, ("m", 2, 64, 4, 128, 1000), {"head_dim": 0}, ValueError, "head_dim"),
    Case("evaluate/etp-dense", PL.evaluate, (LLAMA, CLUSTER, 64, 8, 1, 1), {"etp": 2}, ValueError, r"\betp=2"),
    Case("plan/etp_options-dense", PL.plan, (LLAMA, CLUSTER, 64), {"etp_options": (1,)}, ValueError, "etp_options"),
    Case("plan/gpus-not-power-of-two", PL.plan, (LLAMA, PL.ClusterSpec("c", 8, 3, 80.0, 989.0, 450.0, 50.0), 64), {}, ValueError, "powers of two"),
    Case("stage_param_parts/ep-uneven", PL.MODELS["Mixtral 8x7B"].stage_param_parts, (0, 1, 1, True, 3, 1), {}, ValueError, r"\bep=3"),
    Case("stage_param_parts/etp-uneven", PL.MODELS["Mixtral 8x7B"].stage_param_parts, (0, 1, 1, True, 8, 3), {}, ValueError, r"\betp=3"),
    Case("stage_param_parts/etp-zero", LLAMA.stage_param_parts, (0, 1, 1, True, 1, 0), {}, ValueError, r"\betp\b"),
    Case("CaseStudy/model", PCASE.CaseStudy, ("x", "l", "GPT-5", "s", "128 nodes, 1,024x A100", 8), {}, ValueError, "model"),
    Case("CaseStudy/cluster", PCASE.CaseStudy, ("x", "l", "Yi 34B", "s", "my laptop", 8), {}, ValueError, "cluster"),
    Case("CaseStudy/global_batch", PCASE.CaseStudy, ("x", "l", "Yi 34B", "s", "128 nodes, 1,024x A100", 0), {}, ValueError, "global_batch"),
    Case("CaseStudy/published", PCASE.CaseStudy, ("x", "l", "Yi 34B", "s", "128 nodes, 1,024x A100", 8, {"pipeline": 4}), {}, ValueError, "published"),
    Case("evaluate_case/not-a-case", PCASE.evaluate_case, ("Qwen 3",), {}, TypeError, r"\bcase\b"),
    Case("layout_label/not-a-plan", PCASE.layout_label, ("DP8 TP1",), {}, TypeError, r"\bplan\b"),
    Case("accelerator/name", hardware.accelerator, ("H200",), {}, ValueError, "H200"),
    Case("Figure/value-negative", hardware.Figure, (-1.0, "B", "peak", "https://x"), {}, ValueError, "value"),
    Case("Figure/source-not-url", hardware.Figure, (1.0, "B", "peak", "datasheet"), {}, ValueError, "source"),
    # --- when parallelism pays: the roofline rules (notebook 10) -------------------------
    Case("matmul_flops/b-zero", RL.matmul_flops, (0, 8, 8), {}, ValueError, r"\bb\b"),
    Case("matmul_bytes/bytes-zero", RL.matmul_bytes, (8, 8, 8, 0), {}, ValueError, "bytes_per_element"),
    Case("matmul_intensity/f-float", RL.matmul_intensity, (8, 8, 2.5), {}, ValueError, r"\bf\b"),
    Case("matmul_time/hbm-nan", RL.matmul_time, (8, 8, 8, 1e15, NAN), {}, ValueError, "hbm_bandwidth"),
    Case("hbm_critical_batch/flops-zero", RL.hbm_critical_batch, (0, 3e12), {}, ValueError, "peak_flops"),
    Case("collective_bandwidth/chip", RL.collective_bandwidth, ("H200", False), {}, ValueError, "H200"),
    Case("collective_bandwidth/across-str", RL.collective_bandwidth, ("H100", "yes"), {}, TypeError, "across_nodes"),
    Case("fsdp_tp_bandwidths/tp-not-nodes", RL.fsdp_tp_bandwidths, ("H100", 1536, 12), {}, ValueError, "tp=12"),
    Case("fsdp_tp_bandwidths/devices", RL.fsdp_tp_bandwidths, ("H100", 0, 1), {}, ValueError, "devices"),
    Case("fsdp_tp_best_on/devices", RL.fsdp_tp_best_on, ("H100", 2 ** 20, 8192, 28672, 100), {}, ValueError, "devices"),
    Case("dp_critical_tokens/bandwidth-zero", RL.dp_critical_tokens, (1e15, 0), {}, ValueError, "bandwidth"),
    Case("dp_critical_tokens/ring-one", RL.dp_critical_tokens, (1e15, 4e11), {"ring_size": 1}, ValueError, "ring_size"),
    Case("tp_max_degree/d_ff-zero", RL.tp_max_degree, (0, 1e15, 4e11), {}, ValueError, "d_ff"),
    Case("fsdp_tp_split/devices-zero", RL.fsdp_tp_split, (1e6, 28672, 0), {}, ValueError, "devices"),
    Case("fsdp_tp_best_degrees/not-power", RL.fsdp_tp_best_degrees, (1e6, 28672, 24), {}, ValueError, "devices"),
    Case("fsdp_tp_min_tokens/mx-zero", RL.fsdp_tp_min_tokens, (1e15, 4e11, 28672), {"mx": 0}, ValueError, "mx"),
    Case("layer_times/strategy", RL.layer_times, ("pp", 1e6, 8192, 28672, 1e15, 4e11), {}, ValueError, "strategy"),
    Case("layer_times/tp-with-x", RL.layer_times, ("tp", 1e6, 8192, 28672, 1e15, 4e11), {"x": 2}, ValueError, "fsdp_tp"),
    Case("pp_comm_time/one-stage", RL.pp_comm_time, (1e6, 8192, 5e10, 4, 1), {}, ValueError, "stages"),
    Case("pp_comm_ratio/layers-zero", RL.pp_comm_ratio, (8192, 1e9, 0, 1e15, 5e10), {}, ValueError, "layers_per_stage"),
    Case("ep_comm_time/inside-domain", RL.ep_comm_time, (1e6, 7168, 8, 8, 4e11), {"domain": 8}, ValueError, "ep_degree"),
    Case("ep_min_d_ff/k-zero", RL.ep_min_d_ff, (0, 16, 1e15, 4e11), {}, ValueError, "experts_per_token"),
    Case("roofline_closed_forms/d_ff-zero", CS.roofline_closed_forms, (1e15, 4e11, 0, 1e6, 8), {}, ValueError, "d_ff"),
    Case("roofline_explorer/devices", wroof.roofline_explorer, (), {"devices": 100}, ValueError, "devices"),
    Case("roofline_explorer/model", wroof.roofline_explorer, ("GPT-4",), {}, ValueError, "GPT-4"),
    Case("autoparallel_planner/model", wauto.autoparallel_planner, ("GPT-4",), {}, ValueError, "GPT-4"),
    Case("autoparallel_planner/batch-zero", wauto.autoparallel_planner, (), {"global_batch": 0}, ValueError, "global_batch"),
    Case("autoparallel_planner/seq_len", wauto.autoparallel_planner, (), {"seq_len": 1000}, ValueError, "seq_len"),
    Case("autoparallel_planner/allow_cp", wauto.autoparallel_planner, (), {"allow_cp": "yes"}, TypeError, "allow_cp"),
    Case("search_5d/model-name", wauto.search_5d, ("Llama-3 405B", CLUSTER, 64), {}, TypeError, "model"),
    Case("search_5d/batch-zero", wauto.search_5d, (LLAMA, CLUSTER, 0), {}, ValueError, "global_batch"),
    Case("search_5d/dualpipe", wauto.search_5d, (LLAMA, CLUSTER, 64), {"dualpipe": 1}, TypeError, "dualpipe"),
    Case("rack_tradeoff/unknown", trends.rack_tradeoff, ("DGX H100",), {}, ValueError, "base"),
    Case("rack_tradeoff/pflops", trends.rack_tradeoff, (), {"other_pflops": -1.0}, ValueError, "other_pflops"),
    Case("bisection_per_chip/one-chip", trends.bisection_per_chip, (1, 47e15), {}, ValueError, "chips"),
    Case("bisection_per_chip/zero-bandwidth", trends.bisection_per_chip, (4, 0.0), {}, ValueError, "bisection_bits_per_s"),
    Case("training_flops/params-zero", why_distribute.training_flops, (0, 1e9), {}, ValueError, "params"),
    Case("gpu_time/utilization", why_distribute.gpu_time, (1e20,), {"utilization": 1.5}, ValueError, "utilization"),
    Case("ideal_time/gpus-zero", why_distribute.ideal_time, (1.0, 0), {}, ValueError, "gpus"),
    Case("scaling/t_large-zero", why_distribute.scaling, (1.0, 0.0, 1, 2), {}, ValueError, "t_large"),
    Case("lecture_numbers/utilization", why_distribute.lecture_numbers, (0.0,), {}, ValueError, "utilization"),
    Case("disagreements/utilization", why_distribute.disagreements, (2.0,), {}, ValueError, "utilization"),
    Case("doubling_time_years/short", why_distribute.doubling_time_years, ([1.0], [1.0]), {}, ValueError, "years"),
    Case("train_dp_tp/dp-zero", hybrid.train_dp_tp, (), {"dp": 0}, ValueError, r"\bdp\b"),
    Case("train_dp_tp/batch-fraction", hybrid.train_dp_tp, (), {"dp": 1, "tp": 1, "batch": 2.5}, ValueError, "batch"),
    Case("train_dp_tp/mesh", hybrid.train_dp_tp, (), {}, ValueError, "world_size=4"),
    Case("train_pp_dp/schedule", hybrid.train_pp_dp, (), {"pp": 1, "dp": 1, "schedule": "2f2b"}, ValueError, "2f2b"),
    Case("train_pp_dp/microbatches-zero", hybrid.train_pp_dp, (), {"microbatches": 0}, ValueError, "microbatches"),
    Case("train_pp_dp/not-dividing", hybrid.train_pp_dp, (), {"pp": 1, "dp": 1, "batch": 9}, ValueError, "batch"),
    Case("transformer_reference/steps-zero", hybrid.transformer_reference, (), {"steps": 0, "batch": 8, "lr": 0.5}, ValueError, "steps"),
    Case("transformer_reference/lr-nan", hybrid.transformer_reference, (), {"steps": 1, "batch": 8, "lr": NAN}, ValueError, r"\blr\b"),
    Case("evaluate/dp-zero", PL.evaluate, (LLAMA, CLUSTER, 64, 0, 1, 1), {}, ValueError, r"\bdp\b"),
    Case("evaluate/tp-fraction", PL.evaluate, (LLAMA, CLUSTER, 64, 1, 2.5, 1), {}, ValueError, r"\btp\b"),
    Case("evaluate/global_batch-zero", PL.evaluate, (LLAMA, CLUSTER, 0, 8, 1, 1), {}, ValueError, "global_batch"),
    Case("evaluate/recompute", PL.evaluate, (LLAMA, CLUSTER, 64, 8, 1, 1), {"recompute": "half"}, ValueError, "recompute"),
    Case("evaluate/zero-4", PL.evaluate, (LLAMA, CLUSTER, 64, 8, 1, 1), {"zero": 4}, ValueError, "zero"),
    Case("evaluate/kernel_efficiency", PL.evaluate, (LLAMA, CLUSTER, 64, 8, 1, 1), {"kernel_efficiency": 60}, ValueError, "kernel_efficiency"),
    # --- the 3D run and the EP x DP run (notebook 12) -----------------------------------
    Case("train_dp_tp_pp/mesh", hybrid.train_dp_tp_pp, (), {}, ValueError, "world_size=8"),
    Case("train_dp_tp_pp/tp-heads", hybrid.train_dp_tp_pp, (), {"tp": 3}, ValueError, r"\btp=3"),
    Case("train_dp_tp_pp/pp-too-many", hybrid.train_dp_tp_pp, (), {"pp": 4}, ValueError, r"\bpp=4"),
    Case("train_dp_tp_pp/batch", hybrid.train_dp_tp_pp, (), {"batch": 6}, ValueError, r"\bbatch=6"),
    Case("train_dp_tp_pp/schedule", hybrid.train_dp_tp_pp, (), {"schedule": "zb-h1"}, ValueError, r"\bschedule="),
    Case("train_dp_tp_pp/order", hybrid.train_dp_tp_pp, (), {"order": ("dp", "tp")}, ValueError, r"\border="),
    Case("train_dp_tp_pp/steps-zero", hybrid.train_dp_tp_pp, (), {"steps": 0}, ValueError, r"\bsteps\b"),
    Case("predicted_bytes/stage", hybrid.predicted_bytes, (), {"dp": 2, "tp": 2, "pp": 2, "batch": 8, "microbatches": 2, "stage": 2}, ValueError, r"\bstage=2"),
    Case("predicted_bytes/microbatches-zero", hybrid.predicted_bytes, (), {"dp": 2, "tp": 2, "pp": 2, "batch": 8, "microbatches": 0, "stage": 0}, ValueError, "microbatches"),
    Case("train_ep_dp/mesh", hybrid.train_ep_dp, (), {}, ValueError, "world_size=4"),
    Case("train_ep_dp/n_experts", hybrid.train_ep_dp, (), {"n_experts": 3}, ValueError, r"\bn_experts=3"),
    Case("train_ep_dp/capacity_factor-nan", hybrid.train_ep_dp, (), {"capacity_factor": NAN}, ValueError, "capacity_factor"),
    Case("train_ep_dp/top_k", hybrid.train_ep_dp, (), {"top_k": 5}, ValueError, r"\btop_k=5"),
    Case("ep_all_to_all_bytes/ep", hybrid.ep_all_to_all_bytes, (), {"tokens": 16, "d_model": 16, "n_experts": 4, "top_k": 2, "capacity_factor": 1.25, "ep": 3}, ValueError, r"\bep=3"),
    Case("ep_all_to_all_bytes/tokens-zero", hybrid.ep_all_to_all_bytes, (), {"tokens": 0, "d_model": 16, "n_experts": 4, "top_k": 2, "capacity_factor": 1.25, "ep": 2}, ValueError, r"\btokens\b"),
    Case("ep_all_to_all_bytes/bytes_per_element", hybrid.ep_all_to_all_bytes, (), {"tokens": 16, "d_model": 16, "n_experts": 4, "top_k": 2, "capacity_factor": 1.25, "ep": 2, "bytes_per_element": 0}, ValueError, "bytes_per_element"),
    Case("transformer_spec/tied", hybrid.transformer_spec, ("yes",), {}, TypeError, "tied"),
    Case("miniature_name/tp", hybrid.miniature_name, (0, 1), {}, ValueError, r"\btp\b"),
    Case("miniature_name/world_size", hybrid.miniature_name, (2, 1), {"world_size": 3}, ValueError, "world_size"),
    Case("run_in_miniature/pp", companion.launch, (hybrid.run_in_miniature,), {"tp": 2, "pp": 0, "world_size": 4}, ValueError, r"\bpp\b"),
    Case("critique/tolerance", PL.critique, (None, None, CLUSTER), {"tolerance": NAN}, ValueError, "tolerance"),
    Case("grade/zero-4", PL.grade, (LLAMA, CLUSTER, 64), {"dp": 8, "tp": 1, "pp": 1, "zero": 4}, ValueError, "zero"),
    Case("grade/tolerance-nan", PL.grade, (LLAMA, CLUSTER, 64), {"dp": 8, "tp": 1, "pp": 1, "tolerance": NAN}, ValueError, "tolerance"),
    Case("powers_of_two_dividing/zero", PL.powers_of_two_dividing, (0,), {}, ValueError, r"\bn\b"),
    Case("powers_of_two_dividing/fraction", PL.powers_of_two_dividing, (2.5,), {}, ValueError, r"\bn\b"),
    Case("comm_bytes_per_step/tp-zero", PL.comm_bytes_per_step, (LLAMA, 1, 0, 1, 1, 1), {}, ValueError, r"\btp\b"),
    # --- data loaders --------------------------------------------------------------------
    Case("global_batch_indices/batch-zero", data.global_batch_indices, (100, 0, 0), {}, ValueError, "batch_size"),
    Case("shard/world_size-zero", data.shard, (torch.zeros(8), 0, 0), {}, ValueError, "world_size"),
    Case("shard/not-divisible", data.shard, (torch.zeros(8), 0, 3), {}, ValueError, "split evenly|multiple"),
    Case("digits_batch/rank-outside", data.digits_batch, (0, 8), {"rank": 2, "world_size": 2}, ValueError, r"\brank\b"),
    Case("global_batch_indices/step-negative", data.global_batch_indices, (100, 10, -1), {}, ValueError, "step"),
    Case("global_batch_indices/batch-fraction", data.global_batch_indices, (100, 2.5, 0), {}, ValueError, "batch_size"),
    Case("digits_batch/batch_size-fraction", data.digits_batch, (0, 2.5), {}, ValueError, "batch_size"),
    Case("CharCorpus.batch/batch_size-zero", data.CharCorpus("abcdefgh").batch, (0, 0, 4), {}, ValueError, "batch_size"),
    Case("CharCorpus.batch/step-negative", data.CharCorpus("abcdefgh").batch, (-1, 2, 4), {}, ValueError, "step"),
    Case("CharCorpus.batch/seq_len-zero", data.CharCorpus("abcdefgh").batch, (0, 2, 0), {}, ValueError, "seq_len"),
    # --- widget factories ----------------------------------------------------------------
    Case("schedule_explorer/schedule", wpipe.schedule_explorer, (), {"schedule": "2f2b"}, ValueError, "schedule"),
    Case("schedule_explorer/stages-zero", wpipe.schedule_explorer, (), {"stages": 0}, ValueError, "stages"),
    Case("schedule_explorer/cost-nan", wpipe.schedule_explorer, (), {"F": NAN}, ValueError, r"\bF\b"),
    Case("timeline_player/empty", wpipe.timeline_player, ([],), {}, ValueError, "timeline"),
    Case("planner/model", wplan.planner, (), {"model": "GPT-5"}, ValueError, "model"),
    Case("planner/cluster", wplan.planner, (), {"cluster": "my laptop"}, ValueError, "cluster"),
    Case("planner/global_batch-zero", wplan.planner, (), {"global_batch": 0}, ValueError, "global_batch"),
    Case("zero_memory/gpus-zero", wzero.zero_memory, (), {"gpus": 0}, ValueError, "gpus"),
    Case("zero_memory/stage", wzero.zero_memory, (), {"stage": 4}, ValueError, "stage"),
    Case("zero_memory/precision", wzero.zero_memory, (), {"precision": "fp8"}, ValueError, "precision"),
    Case("zero_memory/params_b-nan", wzero.zero_memory, (), {"params_b": NAN}, ValueError, "params_b"),
    Case("activation_memory/tp", wact.activation_memory, (), {"tp": 3}, ValueError, r"\btp\b"),
    Case("activation_memory/tp-not-offered", wact.activation_memory, (), {"tp_degrees": (1, 2, 4)}, ValueError, r"\btp\b"),
    Case("activation_memory/tp_degrees-empty", wact.activation_memory, (), {"tp_degrees": ()}, ValueError, "tp_degrees"),
    Case("activation_memory/recompute", wact.activation_memory, (), {"recompute": "half"}, ValueError, "recompute"),
    Case("activation_memory/layers-zero", wact.activation_memory, (), {"layers": 0}, ValueError, "layers"),
    Case("activation_memory/heads", wact.activation_memory, (), {"hidden": 100, "heads": 3}, ValueError, "heads"),
    Case("activation_memory/controls", wact.activation_memory, (), {"controls": ("seq_len", "TP")}, ValueError, "controls"),
    Case("compression_explorer/world_size-zero", wcomp.compression_explorer, (), {"world_size": 0}, ValueError, "world_size"),
    Case("compression_explorer/steps-fraction", wcomp.compression_explorer, (), {"steps": 2.5}, ValueError, "steps"),
    Case("compression_explorer/lr-nan", wcomp.compression_explorer, (), {"lr": NAN}, ValueError, r"\blr\b"),
    Case("dga_explorer/compute_ms-zero", wdga.dga_explorer, (), {"compute_ms": 0}, ValueError, "compute_ms"),
    Case("dga_explorer/world_size-zero", wdga.dga_explorer, (), {"world_size": 0}, ValueError, "world_size"),
    Case("draw_fg_dataflow/tp", wtp.draw_fg_dataflow, (), {"tp": 5}, ValueError, r"\btp\b"),
    Case("draw_split/kind", wtp.draw_split, ("diagonal", 2), {}, ValueError, "kind"),
    Case("draw_split/tp-zero", wtp.draw_split, ("column", 0), {}, ValueError, r"\btp\b"),
    Case("grid_player/empty", wtp.grid_player, ([], 2), {}, ValueError, "frame"),
    Case("ulysses_frames/heads-zero", wtp.ulysses_frames, ([], 0, 8), {}, ValueError, "heads"),
    Case("plot_rank_tensors/empty", wcoll.plot_rank_tensors, ([],), {}, ValueError, "tensors"),
    Case("collective_replay/nothing", wcoll.collective_replay, ([],), {}, ValueError, "replay"),
    Case("topology_player/no-messages", wtopo.topology_player,
         (SimpleNamespace(nodes=2, ranks_per_node=2, layout="nodes"), []), {}, ValueError,
         "messages"),
    Case("draw_topology/not-a-cluster", wtopo.draw_topology, (None,), {}, ValueError, "cluster"),
    # --- presenting: the landing page and the static site ---------------------
    Case("read_entry/not-a-notebook", PRES.read_entry, ("no/such/notebook.txt",), {}, ValueError, "path="),
    Case("course_entries/missing-folder", PRES.course_entries, ("no/such/folder",), {}, ValueError, "notebooks_dir"),
    Case("landing_notebook/no-entries", PRES.landing_notebook, ([],), {}, ValueError, "entries"),
    Case("site_index_html/no-pages", PRES.site_index_html, ([], {}), {}, ValueError, "pages"),
    Case("prepare_course/missing-workdir", PRES.prepare_course, ("no/such/folder", NOTEBOOKS_DIR), {}, ValueError, "workdir"),
    Case("prepare_course/unknown-preheat", PRES.prepare_course, (".", NOTEBOOKS_DIR), {"preheat": "42"}, ValueError, "preheat"),
    Case("voila_command/port-zero", PRES.voila_command, (".",), {"port": 0}, ValueError, "port"),
    Case("serve_course/port-zero", PRES.serve_course, (NOTEBOOKS_DIR,), {"port": 0}, ValueError, "port"),
    Case("execute_notebook/missing", PRES.execute_notebook, ("no/such.ipynb", "."), {}, ValueError, "path"),
    Case("export_html/missing", PRES.export_html, ("no/such.ipynb", "."), {}, ValueError, "executed"),
    Case("fetch_widget_renderer/file", PRES.fetch_widget_renderer, (str(NOTEBOOKS_DIR / "sanitize.cfg"),), {}, ValueError, "static_dir"),
    Case("build_site/unknown-notebook", PRES.build_site, ("build/never", NOTEBOOKS_DIR), {"only": ["42"]}, ValueError, "only"),
    Case("set_language/unknown", i18n.set_language, ("fr",), {}, ValueError, "language="),
    Case("frame_player/n_frames-zero", wbase.frame_player, (0, print), {}, ValueError, "frame"),
    # --- launch(rank_fn, bad value): the rank function's @preflight check, in the parent -
    Case("launch/local_values-n", launch, (basics.local_values, 0), {}, ValueError, r"\bn\b"),
    Case("launch/primitives_demo-numel", launch, (demos.primitives_demo,), {"numel": 0}, ValueError, "numel"),
    Case("launch/all_reduce_demo-numel", launch, (demos.all_reduce_demo,), {"numel": 2.5}, ValueError, "numel"),
    Case("launch/traffic_sweep-numel", launch, (demos.traffic_sweep,), {"numel": 0}, ValueError, "numel"),
    Case("launch/record-name", launch, (demos.record, "ringg"), {}, ValueError, "ringg"),
    Case("launch/parameter_server-one-rank", launch, (param_server.parameter_server_train,), {"world_size": 1}, ValueError, "world_size >= 2"),
    Case("launch/parameter_server-workers", launch, (param_server.parameter_server_train,), {"world_size": 3, "batch_size": 47}, ValueError, "batch_size"),
    Case("launch/all_reduce_train-split", launch, (param_server.all_reduce_train,), {"world_size": 5}, ValueError, "batch_size"),
    Case("launch/ping_pong-repeats", launch, (costmodel.ping_pong,), {"repeats": 0}, ValueError, "repeats"),
    Case("launch/time_all_reduce-algorithm", launch, (costmodel.time_all_reduce, ("bus",)), {}, ValueError, "bus"),
    Case("launch/zero_runs.train-split", launch, (zero_runs.train,), {"world_size": 3}, ValueError, "batch_size"),
    Case("launch/zero_runs.train_many", launch, (zero_runs.train_many, [{"strategy": "zero4"}]), {}, ValueError, "strategy"),
    Case("launch/compression.train-split", launch, (Z.train,), {"world_size": 4, "global_batch": 30}, ValueError, "multiple of the world size"),
    Case("launch/compression.train-density", launch, (Z.train,), {"method": "dgc", "density": 0.0}, ValueError, "density"),
    Case("launch/compression.train-option", launch, (Z.train,), {"method": "dgc", "densty": 0.1}, TypeError, "densty"),
    Case("launch/compression.train_many", launch, (Z.train_many, [{"method": "powersgd"}]), {}, ValueError, r"train\(\)"),
    Case("launch/train_stacked", launch, (Z.train_stacked, [{"method": "dense"}]), {"world_size": 4, "global_batch": 30}, ValueError, "multiple of the world size"),
    Case("launch/ablation-density", launch, (Z.ablation,), {"density": 2.0}, ValueError, "density"),
    Case("launch/ablation-train_kwargs", launch, (Z.ablation,), {"stpes": 10}, TypeError, "stpes"),
    Case("launch/densification-steps", launch, (Z.densification,), {"steps": 3}, ValueError, "steps"),
    Case("launch/train_torch_powersgd-rank", launch, (Z.train_torch_powersgd,), {"powersgd_rank": 0}, ValueError, "powersgd_rank"),
    Case("launch/dga.train-delay", launch, (dga.train,), {"delay": -1}, ValueError, "delay"),
    Case("launch/dga.train-split", launch, (dga.train,), {"world_size": 3}, ValueError, "batch_size"),
    Case("launch/toy_train-dim", launch, (dga.toy_train,), {"dim": 0}, ValueError, "dim"),
    Case("launch/dga.sweep-run", launch, (dga.sweep,), {"runs": [{"steps": 0}]}, ValueError, "steps"),
    Case("launch/measure_link-repeats", launch, (latency.measure_link,), {"repeats": 0}, ValueError, "repeats"),
    Case("launch/measure_crossover-bandwidth", launch, (OV.measure_crossover,), {"bandwidth_bytes_s": -1.0}, ValueError, "bandwidth_bytes_s"),
    Case("launch/measure_overlap-batch", launch, (OV.measure_overlap,), {"configs": [{"batch": 0}]}, ValueError, "batch"),
    Case("launch/train_dp_tp-mesh", launch, (hybrid.train_dp_tp,), {"world_size": 4, "dp": 3, "tp": 2}, ValueError, "world_size=6"),
    Case("launch/train_dp_tp-heads", launch, (hybrid.train_dp_tp,), {"world_size": 3, "dp": 1, "tp": 3}, ValueError, r"\btp\b"),
    Case("launch/train_pp_dp-schedule", launch, (hybrid.train_pp_dp,), {"world_size": 4, "schedule": "2f2b"}, ValueError, "2f2b"),
    Case("launch/train_dp_tp_pp-mesh", launch, (hybrid.train_dp_tp_pp,), {"world_size": 4}, ValueError, "world_size=8"),
    Case("launch/train_dp_tp_pp-order", launch, (hybrid.train_dp_tp_pp,), {"world_size": 8, "order": ("tp", "tp", "dp")}, ValueError, r"\border="),
    Case("launch/train_ep_dp-mesh", launch, (hybrid.train_ep_dp,), {"world_size": 2}, ValueError, "world_size=4"),
    Case("launch/train_ep_dp-experts", launch, (hybrid.train_ep_dp,), {"world_size": 8, "ep": 8, "dp": 1}, ValueError, r"\bn_experts=4"),
    Case("launch/compare_with_reference-heads", launch, (TP.compare_with_reference,), {"world_size": 3, "kind": "attention"}, ValueError, "n_heads=.*not divisible"),
    Case("launch/compare_with_reference-seq", launch, (TP.compare_with_reference,), {"world_size": 4, "seq": 9, "sequence_parallel": True}, ValueError, "seq=.*not divisible"),
    Case("launch/dtensor_mlp_compare-d_ff", launch, (TP.dtensor_mlp_compare,), {"world_size": 3}, ValueError, "d_ff"),
    Case("launch/activation_bytes-heads", launch, (TP.activation_bytes,), {"world_size": 3}, ValueError, "n_heads"),
    Case("launch/call_many-row", launch, (experiments.call_many, [(TP.compare_with_reference, {"kind": "mlp", "d_ff": 66})]), {"world_size": 4}, ValueError, "d_ff=.*not divisible"),
    Case("launch/compare_attention-seq", launch, (sequence_parallel.compare_attention,), {"world_size": 3}, ValueError, "seq"),
    Case("launch/benchmark_layer-seq", launch, (sequence_parallel.benchmark_layer,), {"world_size": 3}, ValueError, "seq"),
    Case("launch/volume_sweep-seq", launch, (sequence_parallel.volume_sweep,), {"world_size": 4, "seqs": (16, 30)}, ValueError, "seq=30"),
    Case("launch/volume_sweep-method", launch, (sequence_parallel.volume_sweep,), {"methods": ("ring", "star")}, ValueError, "star"),
    Case("launch/layout_probe-fn", launch, (sequence_parallel.layout_probe, "seq_to_heads"), {}, TypeError, r"\bfn\b"),
    Case("launch/layout_probe-heads", launch, (sequence_parallel.layout_probe, abs), {"heads": 0}, ValueError, "heads"),
    Case("launch/compare_moe-experts", launch, (moe.compare_moe,), {"world_size": 3}, ValueError, "n_experts"),
    Case("launch/moe_load_balance-experts", launch, (MB.moe_load_balance,), {"world_size": 3}, ValueError, "n_experts"),
    Case("launch/moe_node_traffic-nodes", launch, (MN.moe_node_traffic,), {"world_size": 4, "ranks_per_node": 3}, ValueError, "ranks_per_node=3"),
    Case("launch/run_pipeline-schedule", launch, (P.run_pipeline,), {"schedule": "2f2b"}, ValueError, "2f2b"),
    Case("launch/run_pipeline-depth", launch, (P.run_pipeline,), {"world_size": 4, "depth": 1}, ValueError, "depth"),
    Case("launch/run_pipeline-microbatches", launch, (P.run_pipeline,), {"batch_size": 30}, ValueError, "batch_size"),
    Case("launch/run_torch_pipelining-schedule", launch, (torch_reference.run_torch_pipelining,), {"schedule": "zb"}, ValueError, "schedule"),
    # --- the command line: python -m companion ------------------------------------------
    Case("cli/unknown-experiment", cli, (["run", "no_such_experiment"],), {}, SystemExit, "no_such_experiment"),
    Case("cli/world-size-zero", cli, (["run", "whoami", "--world-size", "0"],), {}, SystemExit, "--world-size"),
    Case("cli/world-size-fraction", cli, (["run", "whoami", "--world-size", "2.5"],), {}, SystemExit, "--world-size"),
    Case("cli/timeout-nan", cli, (["run", "whoami", "--timeout", "nan"],), {}, SystemExit, "--timeout"),
    Case("cli/backend-unknown", cli, (["run", "whoami", "--backend", "mpi"],), {}, SystemExit, "--backend"),
    Case("cli/set-malformed", cli, (["run", "whoami", "--set", "steps"],), {}, SystemExit, "--set"),
    Case("cli/set-unknown-key", cli, (["run", "whoami", "--set", "steps=3"],), {}, SystemExit, "steps"),
    Case("cli/set-numel-zero", cli, (["run", "collectives_traffic_sweep", "--set", "numel=0"],), {}, SystemExit, "numel"),
    Case("cli/set-steps-zero", cli, (["run", "dga_train", "--set", "steps=0"],), {}, SystemExit, "steps"),
    Case("cli/set-batch-not-splitting", cli, (["run", "compression_train", "--world-size", "4", "--set", "global_batch=30"],), {}, SystemExit, "global_batch"),
    Case("cli/mesh-needs-4-ranks", cli, (["run", "hybrid_dp_tp", "--world-size", "2"],), {}, SystemExit, "world_size=4"),
    Case("cli/torchrun-set-numel-zero", cli_under_torchrun, (["run", "collectives_traffic_sweep", "--set", "numel=0"],), {}, SystemExit, "numel"),
    Case("cli/torchrun-mesh", cli_under_torchrun, (["run", "hybrid_pp_dp"],), {}, SystemExit, "world_size=4"),
    Case("cli/unknown-command", cli, (["train"],), {}, SystemExit, "train|command"),
    # --- networks and topology (notebook 11) -----------------------------------------
    Case("Cluster/nodes-zero", TOP.Cluster, (0, 2), {}, ValueError, "nodes"),
    Case("Cluster/ranks_per_node-fraction", TOP.Cluster, (2, 1.5), {}, ValueError, "ranks_per_node"),
    Case("Cluster/intra-not-a-pair", TOP.Cluster, (2, 2), {"intra": 1e9}, TypeError, "intra"),
    Case("Cluster/inter-beta-zero", TOP.Cluster, (2, 2), {"inter": (1e-3, 0)}, ValueError, "inter beta"),
    Case("Cluster/intra-alpha-nan", TOP.Cluster, (2, 2), {"intra": (NAN, 1e9)}, ValueError, "intra alpha"),
    Case("Cluster/layout-unknown", TOP.Cluster, (2, 2), {"layout": "mesh"}, ValueError, "layout"),
    Case("Cluster.node_of/outside", CL22.node_of, (4,), {}, ValueError, r"\brank\b"),
    Case("Cluster.link/not-neighbours", TOP.Cluster(3, 2, layout="ring").link, (0, 3), {}, ValueError, "route"),
    Case("Cluster.params/unknown-link", CL22.params, ("nvlink",), {}, ValueError, "link"),
    Case("emulate/not-a-cluster", enter_emulate, ("2x2",), {}, TypeError, "cluster"),
    Case("emulate/wrong-size", enter_emulate, (CL22,), {}, ValueError, "world_size"),
    Case("node_shape/zero", TOP.node_shape, (0,), {}, ValueError, "ranks_per_node"),
    Case("hierarchical_all_reduce/op", C.hierarchical_all_reduce, (TENSOR,), {"op": "max"}, ValueError, r"\bop\b"),
    Case("hierarchical_all_reduce/ranks_per_node-zero", C.hierarchical_all_reduce, (TENSOR,), {"ranks_per_node": 0}, ValueError, "ranks_per_node"),
    Case("torus_all_reduce/rows-zero", C.torus_all_reduce, (TENSOR,), {"rows": 0}, ValueError, r"\brows\b"),
    Case("torus_all_reduce/not-tensor", C.torus_all_reduce, ([1.0],), {}, TypeError, "tensor"),
    Case("torus_all_to_all/not-tensor", C.torus_all_to_all, ([1.0],), {}, TypeError, r"inputs\[0\]"),
    Case("node_groups/zero", C.node_groups, (0,), {}, ValueError, "ranks_per_node"),
    Case("grid_shape/rows-str", CH.grid_shape, ("2",), {}, TypeError, r"\brows\b"),
    Case("hierarchical_demo/numel-zero", CH.hierarchical_demo, (), {"numel": 0, "ranks_per_node": 1}, ValueError, "numel"),
    Case("train_pp_dp/split-backward-schedule", launch, (hybrid.train_pp_dp,), {"schedule": "zb-h1", "world_size": 4}, ValueError, "1f1b"),
    Case("launch/hierarchical_demo-no-shape", launch, (CH.hierarchical_demo,), {}, ValueError, "ranks_per_node"),
    Case("launch/hierarchical_demo-not-dividing", launch, (CH.hierarchical_demo,), {"ranks_per_node": 3, "world_size": 4}, ValueError, "ranks_per_node"),
    Case("cli/set-ranks_per_node-zero", cli, (["run", "hierarchical_all_reduce", "--set", "ranks_per_node=0"],), {}, SystemExit, "ranks_per_node"),
    Case("schedule/algorithm", TOP.schedule, ("bus", 4, CL22), {}, ValueError, "algorithm"),
    Case("schedule/nbytes-not-whole", TOP.schedule, ("ring", 6, CL22), {}, ValueError, "nbytes"),
    Case("predict/nbytes-zero", TOP.predict, ("ring", 0, CL22), {}, ValueError, "nbytes"),
    Case("schedule_time/not-a-cluster", TOP.schedule_time, ([], "2x2"), {}, TypeError, "cluster"),
    Case("simulate/wrong-count", TOP.simulate, ([], CL22), {}, ValueError, "traffic records"),
    Case("timeline/not-emulated", TOP.timeline, ([C.Traffic(log=[C.Message(0, "recv", 1, 4)])],), {}, ValueError, "emulate"),
    Case("bytes_per_link/op", C.Traffic().bytes_per_link, ("sent",), {}, ValueError, r"\bop\b"),
    Case("time_collectives/algorithm-unknown", TOP.time_collectives, (), {"algorithms": ("bus",)}, ValueError, "bus"),
    Case("time_collectives/nbytes-not-whole", TOP.time_collectives, (), {"nbytes": 6}, ValueError, "nbytes"),
    Case("launch/time_collectives-world-size", launch, (TOP.time_collectives,), {"world_size": 3}, ValueError, "world_size=3"),
    Case("launch/time_collectives-layout", launch, (TOP.time_collectives,), {"layout": "mesh", "world_size": 4}, ValueError, "layout"),
    Case("cli/set-topology-nbytes", cli, (["run", "topology_timing", "--world-size", "4", "--set", "nbytes=0"],), {}, SystemExit, "nbytes"),
    # --- batch size as a resource and recomputation (notebook 10) -------------------------
    Case("max_dp_ranks/zero", BS.max_dp_ranks, (0,), {}, ValueError, "global_batch"),
    Case("split_batch/dp-exceeds-batch", BS.split_batch, (8, 16), {}, ValueError, "at most 8 data-parallel"),
    Case("split_batch/micro_batch", BS.split_batch, (64, 8, 3), {}, ValueError, "micro_batch"),
    Case("sequences_per_step/tokens-nan", BS.sequences_per_step, (NAN, 2048), {}, ValueError, "tokens_per_step"),
    Case("dp_limit_table/unknown-model", BS.dp_limit_table, (["GPT-5"],), {}, ValueError, "models"),
    Case("large_batch_reference/dtype", BS.large_batch_reference, (), {"dtype": "float16"}, ValueError, "dtype"),
    Case("gradient_accumulation_demo/k-not-dividing", BS.gradient_accumulation_demo, (), {"global_batch": 64, "accumulation_steps": 5}, ValueError, "accumulation_steps"),
    Case("gradient_accumulation_demo/more-ranks-than-batch", BS.gradient_accumulation_demo, (), {"world_size": 4, "global_batch": 2}, ValueError, "at most 2"),
    Case("accumulation_run/steps-zero", companion.launch, (BS.accumulation_run,), {"steps": 0}, ValueError, "steps"),
    Case("steps_to_target/batch-too-big", BS.steps_to_target, (4096, 0.01), {}, ValueError, "batch_size"),
    Case("critical_batch_sweep/unsorted", BS.critical_batch_sweep, ((64, 8, 16),), {}, ValueError, "batch_sizes"),
    Case("critical_batch_sweep/lr-negative", BS.critical_batch_sweep, (), {"lrs": (-1.0, 0.1)}, ValueError, "lrs"),
    Case("fit_critical_batch/one-row", BS.fit_critical_batch, ([{"batch": 8, "steps": 10}],), {}, ValueError, "rows"),
    Case("gradient_noise_scale/not-model", BS.gradient_noise_scale, ("mlp", TENSOR, TENSOR), {}, TypeError, "model"),
    Case("recomputation/policy", enter_recomputation, (models.TinyTransformer(), "half"), {}, ValueError, "policy"),
    Case("recomputation/not-transformer", enter_recomputation, (LINEAR, "full"), {}, TypeError, "model"),
    Case("expected_bytes_per_layer/bytes", RC.expected_bytes_per_layer, (64, 1, 64, 4), {"bytes_per_element": 0}, ValueError, "bytes_per_element"),
    Case("expected_bytes_per_layer/policy", RC.expected_bytes_per_layer, (64, 1, 64, 4, "half"), {}, ValueError, "recompute"),
    Case("recompute_run/heads", companion.launch, (RC.recompute_run,), {"n_heads": 3}, ValueError, "n_heads"),
    Case("recompute_run/policy", RC.recompute_run, (), {"policies": ("none", "most")}, ValueError, "policies"),
    Case("recompute_table/micro_batches-empty", RC.recompute_table, (), {"micro_batches": ()}, ValueError, "micro_batches"),
    Case("recompute_table/world_size", RC.recompute_table, (0,), {}, ValueError, "world_size"),
    Case("fit_in_budget/budget", RC.fit_in_budget, ([{"policy": "none", "micro_batch": 1, "stored_total": 1}], -1), {}, ValueError, "budget_bytes"),
    # --- Alpa's stage slicing (notebook 12) ---------------------------------------------
    Case("Layer/flops-negative", ALY.Layer, ("x", -1.0, 0.0, 0.0), {}, ValueError, "flops"),
    Case("Layer/batch-zero", ALY.Layer, ("x", 1.0, 0.0, 0.0), {"batch": 0}, ValueError, "batch"),
    Case("IntraOpChoice/time-nan", AIO.IntraOpChoice, (NAN, 0.0, "DP1"), {}, ValueError, "time"),
    Case("model_layers/blocks-not-dividing", ALY.model_layers, (LLAMA,), {"blocks_per_layer": 3}, ValueError, "blocks_per_layer"),
    Case("model_layers/micro_batch-zero", ALY.model_layers, (LLAMA,), {"micro_batch": 0}, ValueError, "micro_batch"),
    Case("submesh_shapes/not-power-of-two", AIO.submesh_shapes, (SIX_PER_NODE,), {}, ValueError, "cluster"),
    Case("pipeline_time/microbatches-zero", AST.pipeline_time, ([1.0], 0), {}, ValueError, "microbatches"),
    Case("pipeline_time/empty", AST.pipeline_time, ([], 4), {}, ValueError, "stage_times"),
    Case("alpha_beta_intra_op/efficiency", AIO.alpha_beta_intra_op, (H100x8, 8), {"kernel_efficiency": 1.5}, ValueError, "kernel_efficiency"),
    Case("plan_stages/no-layers", AST.plan_stages, ([], H100x8, 8), {}, ValueError, "layers"),
    Case("plan_stages/microbatches-zero", AST.plan_stages, (TOY_LAYERS, H100x8, 0), {}, ValueError, "microbatches"),
    Case("plan_stages/intra_op-not-callable", AST.plan_stages, (TOY_LAYERS, H100x8, 4), {"intra_op": "ilp"}, TypeError, "intra_op"),
    Case("brute_force_stages/too-many-layers", AST.brute_force_stages, (TOY_LAYERS * 5, H100x8, 4), {}, ValueError, "layers"),
    Case("equal_layers_plan/stages-not-dividing", AST.equal_layers_plan, (TOY_LAYERS, H100x8, 4), {"stages": 3}, ValueError, "stages"),
    Case("compare_with_equal_split/cluster", AST.compare_with_equal_split, (TOY_LAYERS, SIX_PER_NODE, 4), {}, ValueError, "cluster"),
    # --- auto-sharding (notebook 12) ----------------------------------------------------
    Case("mlp/ffn-zero", AUTO.mlp, (), {"ffn": 0}, ValueError, "ffn"),
    Case("mlp/input-layout", AUTO.mlp, (), {"input": "S1"}, ValueError, "input"),
    Case("attention_block/heads-not-dividing", AUTO.attention_block, (), {"hidden": 10, "heads": 4}, ValueError, "heads"),
    Case("transformer/output-layout", AUTO.transformer, (), {"output": "P"}, ValueError, "output"),
    Case("Hardware/peak-zero", AUTO.Hardware, (0,), {}, ValueError, "peak_flops"),
    Case("Hardware/beta-per-axis-negative", AUTO.Hardware, (1e12,), {"beta": (1e9, -1.0)}, ValueError, "beta"),
    Case("strategies/foreign-node", AUTO.strategies, (AP_MLP, AUTO.Node("y", "gelu"), (4,)), {}, ValueError, "node"),
    Case("reshard_steps/placement", AUTO.reshard_steps, ((8, 4), ("S2",), ("R",), (4,)), {}, ValueError, "src"),
    Case("build/mesh-3d", AUTO.build, (AP_MLP, (2, 2, 2), AP_HW), {}, ValueError, "mesh"),
    Case("build/mesh-fraction", AUTO.build, (AP_MLP, (2.5,), AP_HW), {}, ValueError, "mesh"),
    Case("build/formulation", AUTO.build, (AP_MLP, (2,), AP_HW), {"formulation": "gspmd"}, ValueError, "formulation"),
    Case("axis_bytes/plan", AUTO.axis_bytes, (AUTO.build(AP_MLP, (2,), AP_HW), {"x": "S9"}), {}, ValueError, "plan"),
    Case("solve/hw-missing", AUTO.solve, (AP_MLP, (4,), None), {}, TypeError, r"\bhw\b"),
    Case("solve/fixed-unknown-strategy", AUTO.solve, (AP_MLP, (4,), AP_HW), {"fixed": {"fc1": "diag"}}, ValueError, "fixed"),
    Case("brute_force/not-a-problem", AUTO.brute_force, (AP_MLP,), {}, TypeError, "problem"),
    Case("brute_force/too-big", AUTO.brute_force, (AUTO.build(AP_MLP, (4,), AP_HW),), {"limit": 10}, ValueError, "limit"),
    Case("plan_cost/missing-node", AUTO.plan_cost, (AUTO.build(AP_MLP, (4,), AP_HW), {"fc1": "col"}), {}, ValueError, "plan"),
    Case("predicted_comm/bad-strategy", AUTO.predicted_comm, (AUTO.build(AP_MLP, (4,), AP_HW), dict(AP_PLAN, fc2="diag")), {}, ValueError, "plan"),
    Case("megatron_plan/mesh", AUTO.megatron_plan, (AP_MLP, (0,)), {}, ValueError, "mesh"),
    Case("compare_with_megatron/graph", AUTO.compare_with_megatron, ("mlp", (4,), AP_HW), {}, TypeError, "graph"),
    Case("sweep/no-values", AUTO.sweep, (AUTO.mlp, (), (4,), AP_HW), {}, ValueError, "values"),
    Case("reference/seed", AUTO.reference, (AP_MLP,), {"seed": -1}, ValueError, "seed"),
    Case("check_plan/mesh-vs-plan", AUTO.check_plan, (AP_MLP, AP_PLAN, (2, 2)), {}, ValueError, "plan"),
    Case("check_plans/mixed-device-counts", AUTO.check_plans, ([(AP_MLP, AP_PLAN, (4,)), (AP_MLP, AUTO.megatron_plan(AP_MLP, (2,)), (2,))],), {}, ValueError, "cases"),
    Case("launch/run_plan-world-size", launch, (AUTO.run_plan, AP_MLP, AP_PLAN, (4,)), {"world_size": 2}, ValueError, "world_size"),
    Case("launch/run_plans-empty", launch, (AUTO.run_plans, []), {"world_size": 2}, ValueError, "cases"),
    # ---- will it fit (notebook 09): the memory model, torch's measurement, the command
    Case("fit/unknown-model", PFIT.fit, ("Llama-9 1T", 8), {}, ValueError, "model="),
    Case("fit/unknown-gpu", PFIT.fit, ("Llama-3 8B", 8), {"gpu": "H1000"}, ValueError, "gpu="),
    Case("fit/degrees-not-multiplying", PFIT.fit, ("Llama-3 8B", 12), {"tp": 8}, ValueError, "tp x pp x cp"),
    Case("fit/tp-not-dividing-heads", PFIT.fit, ("Llama-3 8B", 12), {"tp": 3}, ValueError, "tp=3"),
    Case("format_report/not-a-report", PFIT.format_report, ("report",), {}, TypeError, "report"),
    Case("predict_memory/zero-2", PMM.predict_memory, (LLAMA, PMM.Layout(8, zero=2)), {}, ValueError, "zero="),
    Case("predict_memory/not-a-spec", PMM.predict_memory, ("Llama", PMM.Layout(8)), {}, TypeError, "spec"),
    Case("Layout/seq-not-dividing", PMM.predict_memory, (LLAMA, PMM.Layout(8, tp=8, seq=100)), {}, ValueError, "seq="),
    Case("block_activation_bytes/recompute", PMM.block_activation_bytes, (LLAMA, 2048, 1), {"recompute": "some"}, ValueError, "recompute"),
    Case("loss_bytes/tp-zero", PMM.loss_bytes, (2048, 32000), {"tp": 0}, ValueError, r"\btp\b"),
    Case("loss_bytes/keeps", PMM.loss_bytes, (2048, 32000), {"keeps": "deepspeed"}, ValueError, "keeps"),
    Case("padded_vocab/tp-zero", PMM.padded_vocab, (LLAMA, 0), {}, ValueError, r"\btp\b"),
    Case("measure_memory/not-a-layout", PTM.measure_memory, (LLAMA, {"gpus": 8}), {}, TypeError, "layout"),
    Case("measure_memory/moe", PTM.measure_memory, (PL.MODELS["Mixtral 8x7B"], PMM.Layout(8)), {}, ValueError, "dense"),
    Case("Decoder/recompute", PDEC.Decoder, (LLAMA,), {"recompute": "some"}, ValueError, "recompute"),
    Case("Decoder/moe", PDEC.Decoder, (PL.MODELS["Mixtral 8x7B"],), {}, ValueError, "dense"),
    Case("RMSNorm/dim-zero", PDEC.RMSNorm, (0,), {}, ValueError, r"\bdim\b"),
    # ---- failures at scale: checkpoint, restart, the interval (notebook 10 §9) ----------
    Case("scale_mtbi/gpus-zero", RES.scale_mtbi, (3600.0, 0, 16), {}, ValueError, "gpus"),
    Case("checkpoint_overhead/interval-zero", RES.checkpoint_overhead, (30.0, 0.0), {}, ValueError, "interval_s"),
    Case("wasted_per_failure/restart-negative", RES.wasted_per_failure, (600.0, -1.0), {}, ValueError, "restart_s"),
    Case("young_interval/save-nan", RES.young_interval, (NAN, 3600.0), {}, ValueError, "save_s"),
    Case("daly_interval/mtbi-zero", RES.daly_interval, (30.0, 0.0), {}, ValueError, "mtbi_s"),
    Case("goodput/model", RES.goodput, (600.0, 30.0, 3600.0), {"model": "weibull"}, ValueError, "model"),
    Case("interruption_summary/record-missing", RES.interruption_summary, ({"days": 54},), {}, ValueError, "record"),
    Case("latest_checkpoint/not-a-path", RES.latest_checkpoint, (4,), {}, TypeError, "directory"),
    Case("reference_run/world_size-zero", RES.reference_run, (), {"world_size": 0}, ValueError, "world_size"),
    Case("kill_and_resume/kill_step-past-end", RES.kill_and_resume, (), {"steps": 8, "kill_step": 8}, ValueError, "kill_step"),
    Case("launch/train_with_checkpoints-kill_rank", launch, (RES.train_with_checkpoints, "/tmp/x"), {"kill_rank": 5, "kill_step": 1, "world_size": 2}, ValueError, "kill_rank"),
]

# Public names that take no size, name or callable (or only objects built by the
# package itself), so there is no bad value of that kind to feed them.
NOT_APPLICABLE = {
    "Audit": "the record placement.audit builds after checking its arguments",
    "CaseResult": "a record that planner.case_studies.evaluate_case builds from a checked row",
    "FitReport": "a record that planner.fit.fit builds after checking its arguments",
    "apply_tensor_parallel": "called by measure_memory after Layout.check has refused a "
                             "bad layout",
    "Entry": "a record that read_entry builds from a notebook it has checked",
    "LaunchError": "an exception class",
    "LaunchTimeout": "an exception class",
    "teardown_process_group": "takes no arguments",
    "visible_texts": "takes a notebook that nbclient executed",
    "rank": "takes no arguments",
    "world_size": "takes no arguments",
    "device": "takes no arguments",
    "warm_up": "takes one flag (background); any value is a valid choice",
    "seeded": "a context manager over torch's CPU generator, which checks the seed itself",
    "guarded": "takes an Output widget and decorates a callback",
    "showing": "takes an Output widget",
    "tp_split_explorer": "takes no arguments",
    "draw_replay_frame": "takes a Replay the package built; frame is checked (collective_replay case)",
    "ring_frames": "takes traces recorded by ring_attention",
    "draw_grid": "takes frames built by ulysses_frames/ring_frames",
    "plan_breakdown_figure": "takes plans from planner.plan",
    "ranking_html": "takes plans from planner.plan",
    "Mesh": "built by planner.evaluate from a configuration it has already checked",
    "compute_time": "called by planner.evaluate with a plan it has checked",
    "score_traffic_time": "called by planner.evaluate with a plan it has checked",
    "stage_flops": "called by planner.evaluate with stage counts it has built",
    "Run": "a published run's record: planner.published states every one, predict checks it",
    "settled": "the checker's own re-read of a value it measured; takes two functions the "
               "exercises pass",
}


def _reason(reason, *names):
    NOT_APPLICABLE.update(dict.fromkeys(names, reason))


_reason("the argument checks themselves: every case above runs them",
        "positive_int", "nonnegative_int", "positive_number", "fraction", "in_range", "one_of",
        "divides", "callable_arg", "accepts", "preflight", "run_preflight")
_reason("a record the package builds and fills (dataclass or result object), not an entry point",
        "Message", "Traffic", "Record", "Replay", "Experiment", "LaunchInfo", "Plan", "Op", "Accelerator",
        "Schedule", "Event", "Timeline", "StepResult", "DelayedWork",
        "Graph", "Node", "Strategy", "Problem", "Solution")
_reason("the emulated cluster's records and state, built from a Cluster whose constructor "
        "checked it (Cluster cases)", "Hop", "Emulation", "Ports")
_reason("launch()'s own machinery; launch checks its arguments first (launch cases)",
        "Forwarder", "collect", "drain", "stop", "process_group")
_reason("a tensor operation inside a rank: it takes tensors and a process group, no size or name",
        "f", "g", "sp_all_gather", "sp_reduce_scatter", "CopyToTensorParallelRegion",
        "ReduceFromTensorParallelRegion", "GatherFromSequenceParallelRegion",
        "ReduceScatterToSequenceParallelRegion", "GatherLinearRegather", "AllToAll",
        "seq_to_heads", "heads_to_seq", "ulysses_attention", "RingAttention", "ring_attention",
        "hybrid_attention", "all_reduce", "all_gather", "reduce_scatter", "all_to_all",
        "exchange", "finish", "all_reduce_mean", "all_gather_payloads", "shard_like",
        "allreduce_sequence_parallel_grads", "group_rank_size", "pack_chunks", "unpack_chunks",
        "dispatch", "orthonormalize", "encode_topk", "decode_topk", "momentum_correction",
        "clip_locally", "dgc_accumulate")
_reason("wraps a module or model the caller built, whose own constructor checked its sizes",
        "ParallelAttention", "ParallelBlock", "ExpertParallelMoE", "TransformerStage",
        "MicrobatchGrads", "AccumulatingStage", "boundary_shapes",
        "parallelize_dp_tp", "count_parameters", "held_bytes", "optimizer_state_tensors",
        "default_units", "MomentumSGD")
_reason("a compressor make_compressor builds from settings it checked (make_compressor cases)",
        "QuantizedExchange", "TernGrad", "DGC", "DenseAllReduce")
_reason("arithmetic on values the package computed (payload sizes, counts, timings); "
        "not called with user sizes in the notebooks",
        "split_counts", "payload_bytes", "unpack_bits", "index_dtype", "lr_warmup",
        "measured_crossover", "predict_from_traffic", "overlap_fraction",
        "merge_spans", "span_length", "overlap_length")
_reason("takes results or data the package returned (load_digits(), run results, timelines)",
        "plot_compute_growth", "digits_split", "side_by_side", "draw_timeline", "legend_handles", "microbatch_color",
        "rank_colors")
_reason("the DGA update rules: three tensors in, one out, no size or name",
        "dga_update", "stale_update")
_reason("a record the learning loop builds (a verdict, a call, a prediction), not an entry point",
        "Verdict", "Call", "Prediction")
_reason("takes what the package found or built (a notebook cell, a frame, a tensor, calls)",
        "is_solution_cell", "location", "student_frame", "show_tensor", "summary",
        "crash", "defined_at", "forbidden", "short_name")
_reason("the grader's record of one (student, exercise), built by grade() from a verdict",
        "GradeRow")
_reason("a rank function taking functions the exercises pass (checked by launch's accepts)",
        "run_mlp")
_reason("the error-message catalogue's authoring tool: it reads the package's own source "
        "and catalogue, no student passes it a value", "templates", "needs_translation",
        "catalogue_problems")
_reason("the exercise checker's own machinery: it takes the Exercise, the records, the "
        "functions or the launch error the checker itself holds (Exercise cases)",
        "RecordingGroup", "calls_from", "Opaque", "expected_rank", "attempt_rank",
        "well_formed", "answer_rules", "tampered", "launch_failure")
_reason("takes any object and answers about it: there is no bad value (what is not a "
        "function has no code, what is not plain data comes back as an Opaque)",
        "plain", "codes_of", "function_of", "delegates", "reach")


class RankStarted(BaseException):
    """Raised (past ``pytest.raises(Exception)``) when a case tries to start a process."""


@pytest.fixture(autouse=True)
def no_rank_may_start(monkeypatch):
    def refuse(*args, **kwargs):
        raise RankStarted("a bad-input case tried to start a process")

    try:
        import psutil
    except ImportError:  # not a dependency; the /proc walk in conftest.py still runs
        psutil = None

    def children():
        # An earlier test file's forkserver and resource tracker may live on; only
        # processes a case started count.
        return {p.pid for p in psutil.Process().children(recursive=True)} if psutil else set()

    before = children()
    monkeypatch.setattr("companion.launcher._get_context", refuse)
    monkeypatch.setattr(multiprocessing.process.BaseProcess, "start", refuse)
    monkeypatch.setattr(subprocess.Popen, "__init__", refuse)
    yield
    # A rank of an earlier test that is still exiting on a loaded machine is not this
    # case's: give it the conftest's grace before calling it left behind.
    deadline = time.monotonic() + 5.0
    while (multiprocessing.active_children() or children() - before) and \
            time.monotonic() < deadline:
        time.sleep(0.05)
    assert multiprocessing.active_children() == []
    assert children() - before == set(), "a bad-input case left a process behind"


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input_is_refused_up_front(case, capsys):
    with pytest.raises(case.exc) as info:
        case.fn(*case.args, **case.kwargs)
    message = str(info.value)
    if case.exc is SystemExit:  # argparse prints its message; the exit code is 2
        assert info.value.code == 2, f"exit code {info.value.code!r}, want 2"
        message += capsys.readouterr().err
    assert type(info.value) is case.exc or case.exc is SystemExit, type(info.value)
    assert __import__("re").search(case.match, message), f"{message!r} does not name {case.match!r}"


def test_case_ids_are_unique():
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids))


def _takes_parameters(obj) -> bool:
    try:
        return bool(inspect.signature(obj).parameters)
    except (TypeError, ValueError):  # no inspectable signature: count it as taking some
        return True


def _public_callables():
    """``(qualified name, object)`` for every callable in the ``__all__`` of every public
    module of the package, subpackages included."""
    for info in pkgutil.walk_packages(companion.__path__, "companion."):
        if any(part.startswith("_") for part in info.name.split(".")[1:]):
            continue
        module = importlib.import_module(info.name)
        for name in getattr(module, "__all__", ()):
            obj = getattr(module, name)
            if callable(obj) and _takes_parameters(obj):
                yield f"{info.name}.{name}", name, obj


def _covered_objects():
    covered = set()
    for case in CASES:
        fn = getattr(case.fn, "__func__", case.fn)
        covered.add(fn)
        if hasattr(case.fn, "__self__"):  # a bound method's case covers its class too
            covered.add(type(case.fn.__self__))
        if case.fn in (launch, companion.launch) and case.args:
            covered.add(case.args[0])  # the rank function whose preflight refused
    return covered


def test_every_public_entry_point_has_a_case_or_a_reason():
    covered = _covered_objects()
    covered_names = {c.id.split("/")[0] for c in CASES}
    missing = sorted(qual for qual, name, obj in _public_callables()
                     if obj not in covered and name not in covered_names
                     and name not in NOT_APPLICABLE and qual not in NOT_APPLICABLE)
    assert not missing, f"no bad-input case and no NOT_APPLICABLE reason for {missing}"


def test_not_applicable_lists_only_real_public_names():
    import companion.widgets as widgets

    public = {name for _, name, _ in _public_callables()}
    public |= set(companion.__all__) | set(widgets.__all__)
    stale = sorted(set(NOT_APPLICABLE) - public)
    assert not stale, f"NOT_APPLICABLE names no public callable: {stale}"


def test_every_registered_experiment_with_parameters_is_checked_before_launch():
    """The CLI runs these by name: each with parameters carries a @preflight check, so
    `python -m companion run NAME --set key=bad` fails before any rank starts."""
    unchecked = sorted(name for name in experiments.names()
                       if _takes_parameters(experiments.get(name).fn)
                       and not hasattr(experiments.get(name).fn, "__companion_preflight__"))
    assert not unchecked, f"experiments without a preflight check: {unchecked}"
