"""Bad-input sweep of the public API (issue #14): every case raises before any rank starts.

``CASES`` lists each case: an id, the entry point, its arguments, the exception type
(TypeError for a wrong type, ValueError for a value that cannot work) and a regex the
message must match (the argument's name). ``pytest -v`` lists them one by one. Starting
a process is patched to fail the test, and no child process may be alive afterwards.
"""
from __future__ import annotations

import importlib
import math
import multiprocessing
import multiprocessing.process
import subprocess
from typing import Any, Callable, NamedTuple

import pytest
import torch
from torch import nn

import companion
from companion import (backends, basics, costmodel, data, dga, exercises, experiments, fsdp,
                       hybrid, latency, memory, models, moe, param_server, runtime, schedules,
                       sequence_parallel, zero, zero_runs)
from companion import collectives as C
from companion import compression as Z
from companion import pipeline as P
from companion import planner as PL
from companion import tensor_parallel as TP
from companion.__main__ import main as cli
from companion.collectives import demos
from companion.pipeline import torch_reference
from companion.widgets import _base as wbase

# companion.widgets re-exports each module's functions, so `planner` there is the widget;
# the modules themselves come from importlib.
wcoll, wcomp, wdga, wpipe, wplan, wtp, wzero = (
    importlib.import_module(f"companion.widgets.{m}") for m in
    ("collectives", "compression", "dga", "pipeline", "planner", "tensor_parallel", "zero"))

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


LINEAR = nn.Linear(8, 6)  # 6 output features: not divisible by 4 ranks
TENSOR = torch.ones(4)
LLAMA = PL.MODELS["Llama-3 70B"]
CLUSTER = next(iter(PL.CLUSTERS.values()))

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
    Case("check/student-not-callable", exercises.check, (42, rank_fn), {}, TypeError, "student_fn"),
    Case("check/reference-not-callable", exercises.check, (rank_fn, "ref"), {}, TypeError, "reference_fn"),
    Case("check/world_size-zero", exercises.check, (rank_fn, rank_fn), {"world_size": 0}, ValueError, "world_size"),
    Case("check/timeout-nan", exercises.check, (rank_fn, rank_fn), {"timeout": NAN}, ValueError, "timeout"),
    Case("check/rtol-negative", exercises.check, (rank_fn, rank_fn), {"rtol": -1.0}, ValueError, "rtol"),
    Case("compare_results/atol-nan", exercises.compare_results, (1.0, 1.0), {"atol": NAN}, ValueError, "atol"),
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
    Case("replay/nothing", C.replay, ([],), {}, ValueError, "replay"),
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
    Case("ring_bytes_sent/op", memory.ring_bytes_sent, ("scatter", 1000, 4), {}, ValueError, "scatter"),
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
    Case("zero_runs.train/strategy", zero_runs.train, (), {"strategy": "zero4"}, ValueError, "strategy"),
    Case("zero_runs.train/steps-zero", zero_runs.train, (), {"steps": 0}, ValueError, "steps"),
    Case("zero_runs.train/optimizer", zero_runs.train, (), {"optimizer": "lion"}, ValueError, "optimizer"),
    # --- pipeline (notebook 04) ---------------------------------------------------------
    Case("make_schedule/unknown", P.make_schedule, ("2f2b", 4, 8), {}, ValueError, "2f2b"),
    Case("make_schedule/stages-zero", P.make_schedule, ("gpipe", 0, 8), {}, ValueError, "stages"),
    Case("make_schedule/microbatches-fraction", P.make_schedule, ("gpipe", 4, 2.5), {}, ValueError, "microbatches"),
    Case("make_schedule/stages-bool", P.make_schedule, ("gpipe", True, 4), {}, TypeError, "stages"),
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
    Case("check_schedule/fn-not-callable", P.check_schedule, ("1f1b",), {}, TypeError, r"\bfn\b"),
    Case("check_schedule/target", P.check_schedule, (P.gpipe,), {"target": "2f2b"}, ValueError, "2f2b"),
    Case("run_torch_pipelining/schedule", torch_reference.run_torch_pipelining, (), {"schedule": "zb"}, ValueError, "schedule"),
    # --- tensor and sequence parallelism, MoE (notebooks 05-06) ------------------------
    Case("ColumnParallelLinear/chunks-zero", TP.ColumnParallelLinear, (LINEAR,), {"chunks": 0}, ValueError, "chunks"),
    Case("ColumnParallelLinear/not-linear", TP.ColumnParallelLinear, ("fc",), {}, TypeError, "full"),
    Case("RowParallelLinear/not-linear", TP.RowParallelLinear, (nn.Conv1d(2, 2, 1),), {}, TypeError, "full"),
    Case("ParallelMLP/mistake", TP.ParallelMLP, (models.MLP(8, 16),), {"mistake": "typo"}, ValueError, "mistake"),
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
    Case("TinyTransformer/heads-not-dividing", models.TinyTransformer, (), {"d_model": 10, "n_heads": 4}, ValueError, "n_heads"),
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
    Case("link_delay/alpha-negative", latency.link_delay, (100, -1.0), {}, ValueError, "alpha"),
    Case("link_delay/beta-zero", latency.link_delay, (100, 0.0, 0.0), {}, ValueError, "beta"),
    Case("DelayedComm/alpha-nan", latency.DelayedComm, (NAN,), {}, ValueError, "alpha"),
    Case("modeled_step_times/algorithm", latency.modeled_step_times, ("async", 3, 1.0, 1.0), {}, ValueError, "algorithm"),
    Case("modeled_step_times/steps-zero", latency.modeled_step_times, ("dga", 0, 1.0, 1.0), {}, ValueError, "steps"),
    Case("lr_at/schedule", schedules.lr_at, (0.1, 0, 10, "step"), {}, ValueError, "schedule"),
    # --- hybrid parallelism and the planner (notebook 09) ------------------------------
    Case("ModelSpec/heads-not-dividing", PL.ModelSpec, ("m", 2, 100, 3, 128, 1000), {}, ValueError, "heads"),
    Case("ClusterSpec/nodes-zero", PL.ClusterSpec, ("c", 8, 0, 80.0, 989.0, 450.0, 50.0), {}, ValueError, "nodes"),
    Case("ClusterSpec/memory-nan", PL.ClusterSpec, ("c", 8, 1, NAN, 989.0, 450.0, 50.0), {}, ValueError, "gpu_memory_gb"),
    Case("plan/global_batch-zero", PL.plan, (LLAMA, CLUSTER, 0), {}, ValueError, "global_batch"),
    Case("collective_time/kind", PL.collective_time, ("broadcast", 1e6, 8, 1e-5, 1e9), {}, ValueError, "broadcast"),
    Case("comm_bytes_per_step/tp-zero", PL.comm_bytes_per_step, (LLAMA, 1, 0, 1, 1, 1), {}, ValueError, r"\btp\b"),
    # --- data loaders --------------------------------------------------------------------
    Case("global_batch_indices/batch-zero", data.global_batch_indices, (100, 0, 0), {}, ValueError, "batch_size"),
    Case("shard/world_size-zero", data.shard, (torch.zeros(8), 0, 0), {}, ValueError, "world_size"),
    Case("shard/not-divisible", data.shard, (torch.zeros(8), 0, 3), {}, ValueError, "split evenly|multiple"),
    Case("digits_batch/rank-outside", data.digits_batch, (0, 8), {"rank": 2, "world_size": 2}, ValueError, r"\brank\b"),
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
    Case("activation_memory/tp", wzero.activation_memory, (), {"tp": 3}, ValueError, r"\btp\b"),
    Case("activation_memory/recompute", wzero.activation_memory, (), {"recompute": "half"}, ValueError, "recompute"),
    Case("activation_memory/layers-zero", wzero.activation_memory, (), {"layers": 0}, ValueError, "layers"),
    Case("compression_explorer/world_size-zero", wcomp.compression_explorer, (), {"world_size": 0}, ValueError, "world_size"),
    Case("compression_explorer/steps-fraction", wcomp.compression_explorer, (), {"steps": 2.5}, ValueError, "steps"),
    Case("compression_explorer/lr-nan", wcomp.compression_explorer, (), {"lr": NAN}, ValueError, r"\blr\b"),
    Case("dga_explorer/compute_ms-zero", wdga.dga_explorer, (), {"compute_ms": 0}, ValueError, "compute_ms"),
    Case("dga_explorer/world_size-zero", wdga.dga_explorer, (), {"world_size": 0}, ValueError, "world_size"),
    Case("draw_fg_dataflow/tp", wtp.draw_fg_dataflow, (), {"tp": 5}, ValueError, r"\btp\b"),
    Case("draw_split/kind", wtp.draw_split, ("diagonal", 2), {}, ValueError, "kind"),
    Case("draw_split/tp-zero", wtp.draw_split, ("column", 0), {}, ValueError, r"\btp\b"),
    Case("activation_memory_explorer/heads", wtp.activation_memory_explorer, (), {"hidden": 100, "heads": 3}, ValueError, "heads"),
    Case("grid_player/empty", wtp.grid_player, ([], 2), {}, ValueError, "frame"),
    Case("ulysses_frames/heads-zero", wtp.ulysses_frames, ([], 0, 8), {}, ValueError, "heads"),
    Case("plot_rank_tensors/empty", wcoll.plot_rank_tensors, ([],), {}, ValueError, "tensors"),
    Case("collective_replay/nothing", wcoll.collective_replay, ([],), {}, ValueError, "replay"),
    Case("frame_player/n_frames-zero", wbase.frame_player, (0, print), {}, ValueError, "frame"),
    # --- the command line: python -m companion ------------------------------------------
    Case("cli/unknown-experiment", cli, (["run", "no_such_experiment"],), {}, SystemExit, "no_such_experiment"),
    Case("cli/world-size-zero", cli, (["run", "whoami", "--world-size", "0"],), {}, SystemExit, "--world-size"),
    Case("cli/world-size-fraction", cli, (["run", "whoami", "--world-size", "2.5"],), {}, SystemExit, "--world-size"),
    Case("cli/timeout-nan", cli, (["run", "whoami", "--timeout", "nan"],), {}, SystemExit, "--timeout"),
    Case("cli/backend-unknown", cli, (["run", "whoami", "--backend", "mpi"],), {}, SystemExit, "--backend"),
    Case("cli/set-malformed", cli, (["run", "whoami", "--set", "steps"],), {}, SystemExit, "--set"),
    Case("cli/set-unknown-key", cli, (["run", "whoami", "--set", "steps=3"],), {}, SystemExit, "steps"),
    Case("cli/unknown-command", cli, (["train"],), {}, SystemExit, "train|command"),
]

# Public names that take no size, name or callable (or only objects built by the
# package itself), so there is no bad value of that kind to feed them.
NOT_APPLICABLE = {
    "LaunchError": "an exception class",
    "LaunchTimeout": "an exception class",
    "teardown_process_group": "takes no arguments",
    "rank": "takes no arguments",
    "world_size": "takes no arguments",
    "device": "takes no arguments",
    "guarded": "takes an Output widget and decorates a callback",
    "showing": "takes an Output widget",
    "tp_split_explorer": "takes no arguments",
    "draw_replay_frame": "takes a Replay the package built; frame is checked (collective_replay case)",
    "ring_frames": "takes traces recorded by ring_attention",
    "draw_grid": "takes frames built by ulysses_frames/ring_frames",
    "plan_breakdown_figure": "takes plans from planner.plan",
    "ranking_html": "takes plans from planner.plan",
}


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


def _public_callables():
    names = set(companion.__all__)
    import companion.widgets as widgets

    names |= {n for n in widgets.__all__ if callable(getattr(widgets, n))}
    return names


def test_every_public_entry_point_has_a_case_or_a_reason():
    covered = {getattr(c.fn, "__name__", "") for c in CASES}
    covered |= {c.id.split("/")[0] for c in CASES}
    missing = sorted(n for n in _public_callables() if n not in covered and n not in NOT_APPLICABLE)
    assert not missing, f"no bad-input case and no NOT_APPLICABLE reason for {missing}"
