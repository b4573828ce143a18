"""Every rank function the notebooks launch, and where each computes.

Read by the GPU check (``test_gpu_placement.py``, ``test_gpu_rank_functions.py``) and by
``tests/test_gpu_tables.py``, which ``make test`` runs on every machine: a new
``@experiment``, or a notebook cell that launches a new function, fails on a laptop until
it is classified here, not first on a GPU machine.

* ``DEVICE_AWARE``: registered experiments that compute on ``companion.runtime.device()``;
  the audit (``companion.learning.placement``) runs each and finds nothing misplaced.
* ``CPU_ONLY``: registered experiments marked ``@runtime.cpu_by_design``: their lesson is a
  time on this machine's loopback or an emulated node or link, so they run on gloo on
  every machine, and the launcher's banner says so.
* ``NOTEBOOK_LAUNCHES``: each ``launch(X, ...)`` written in a notebook, by notebook and
  text, and the function it runs (``"module:function"``), or ``None`` for a function the
  cell itself defines: a few lines that show an API or a bug to find, on CPU tensors,
  which gloo serves beside NCCL in the same group.
* ``UNREGISTERED``: those functions that are not experiments, with a short run for the audit.
"""
from __future__ import annotations

# name -> (world size, keyword arguments that keep it short)
DEVICE_AWARE = {
    "whoami": (2, {}),
    "all_reduce": (2, {}),
    "zero_train": (2, {"strategy": "fsdp", "steps": 2}),
    "tp_compare": (2, {}),
    "tp_dtensor_compare": (2, {}),
    "tp_activation_memory": (2, {}),
    "sp_attention": (2, {}),
    "sp_benchmark_layer": (2, {"steps": 1, "seq": 32, "d_model": 32, "heads": 4}),
    "moe_expert_parallel": (2, {}),
    "moe_load_balance": (4, {"steps": 2, "d_ff": 8, "factors": (1.0,)}),
    "moe_node_traffic": (4, {"tokens": 24, "d_model": 8}),
    "collectives_all_reduce": (2, {}),
    "collectives_primitives": (2, {}),
    "collectives_traffic_sweep": (2, {"numel": 64}),
    "collectives_all_reduce_training": (2, {"steps": 3}),
    "collectives_parameter_server": (2, {"steps": 3}),
    "compression_train": (2, {"method": "dgc", "steps": 5, "eval_every": 5}),
    "compression_densification": (2, {"steps": 15}),
    "compression_torch_powersgd": (2, {"steps": 5, "eval_every": 5}),
    "compression_ablation": (2, {"seeds": (0,), "rows": ["dense"], "steps": 5,
                                 "eval_every": 5}),
    "pipeline_run": (2, {}),
    "hybrid_dp_tp": (4, {"steps": 1}),
    "hybrid_pp_dp": (4, {"steps": 1}),
    "hybrid_dp_tp_pp": (8, {"steps": 1}),
    "hybrid_ep_dp": (4, {"steps": 1}),
}

# name -> (world size, keyword arguments that keep it short); the reason is the function's
# own ``cpu_by_design`` mark, which the launcher prints.
CPU_ONLY = {
    "collectives_ping_pong": (2, {"sizes": (1024,), "repeats": 1}),
    "collectives_timing": (2, {"algorithms": ("ring",), "sizes": (1024,), "repeats": 1}),
    "hierarchical_all_reduce": (4, {"ranks_per_node": 2}),
    "topology_timing": (4, {"nbytes": 10_000, "repeats": 1}),
    "latency_link": (2, {"alphas_ms": (0.0, 1.0), "repeats": 1}),
    "overlap_steps": (2, {"hidden": 64, "depth": 2, "steps": 1}),
    "overlap_crossover": (2, {"hidden": 64, "depth": 2, "steps": 1}),
    "dga_toy": (2, {}),
    "dga_train": (2, {"steps": 5}),
}

_CELL = None  # a function the notebook cell defines itself
NOTEBOOK_LAUNCHES = {
    ("00", "basics.first_all_reduce"): "companion.basics:first_all_reduce",
    ("00", "basics.whoami"): "companion.basics:whoami",
    ("00", "forgetful"): _CELL, ("00", "greet"): _CELL,
    ("00", "run_broken_average"): _CELL, ("00", "unlucky"): _CELL,
    ("01", "all_gather_alone"): _CELL, ("01", "identity_check"): _CELL,
    ("01", "ping"): _CELL, ("01", "run_broken"): _CELL, ("01", "torch_versions"): _CELL,
    ("01", "demos.all_reduce_demo"): "companion.collectives.demos:all_reduce_demo",
    ("01", "demos.primitives_demo"): "companion.collectives.demos:primitives_demo",
    ("01", "demos.record"): "companion.collectives.demos:record",
    ("02", "M.ping_pong"): "companion.collectives.costmodel:ping_pong",
    ("02", "M.time_all_reduce"): "companion.collectives.costmodel:time_all_reduce",
    ("02", "P.all_reduce_train"): "companion.data_parallel.param_server:all_reduce_train",
    ("02", "P.parameter_server_train"):
        "companion.data_parallel.param_server:parameter_server_train",
    ("02", "demos.traffic_sweep"): "companion.collectives.demos:traffic_sweep",
    ("03", "train"): "companion.data_parallel.runs:train",
    ("03", "train_many"): "companion.data_parallel.runs:train_many",
    ("04", "pp_vs_tp_bytes"): "companion.tensor_parallel.boundary_bytes:pp_vs_tp_bytes",
    ("04", "run_pipeline"): "companion.pipeline:run_pipeline",
    ("04", "run_torch_pipelining"): "companion.pipeline.torch_reference:run_torch_pipelining",
    ("05", "call_many"): "companion.experiments:call_many",
    ("05", "tp.compare_with_reference"): "companion.tensor_parallel:compare_with_reference",
    ("06", "broken_on_ranks"): _CELL,
    ("06", "call_many"): "companion.experiments:call_many",
    ("06", "moe_balance.moe_load_balance"):
        "companion.sequence_parallel.moe_balance:moe_load_balance",
    ("06", "moe_nodes.moe_node_traffic"): "companion.sequence_parallel.moe_nodes:moe_node_traffic",
    ("06", "sp.compare_attention"): "companion.sequence_parallel:compare_attention",
    ("06", "sp.volume_sweep"): "companion.sequence_parallel:volume_sweep",
    ("07", "ablation"): "companion.compression:ablation",
    ("07", "densification"): "companion.compression:densification",
    ("07", "train"): "companion.compression:train",
    ("07", "train_many"): "companion.compression:train_many",
    ("07", "train_torch_powersgd"): "companion.compression:train_torch_powersgd",
    ("08", "delayed.measure_link"): "companion.network.delayed:measure_link",
    ("08", "dga.sweep"): "companion.dga:sweep",
    ("08", "dga.train"): "companion.dga:train",
    ("09", "hybrid.train_dp_tp"): "companion.hybrid:train_dp_tp",
    ("09", "hybrid.train_pp_dp"): "companion.hybrid:train_pp_dp",
    ("10", "measure_crossover"): "companion.overlap:measure_crossover",
    ("10", "measure_overlap"): "companion.overlap:measure_overlap",
    ("10", "torch_ddp_buckets"): "companion.overlap:torch_ddp_buckets",
    ("11", "C.hierarchical.hierarchical_demo"):
        "companion.collectives.hierarchical:hierarchical_demo",
    ("11", "topology.time_collectives"): "companion.topology:time_collectives",
    ("12", "hybrid.train_dp_tp_pp"): "companion.hybrid:train_dp_tp_pp",
    ("12", "hybrid.train_ep_dp"): "companion.hybrid:train_ep_dp",
}

# "module:function" -> (world size, keyword arguments that keep it short[, positional
# arguments]), for the functions above that are not registered experiments and not
# ``cpu_by_design``.
UNREGISTERED = {
    "companion.collectives.demos:record": (4, {"numel": 8}, ("ring", "recursive_doubling")),
    "companion.data_parallel.runs:train_many": (
        2, {"configs": [dict(strategy=s, steps=1, d_model=64, freeze=False)
                        for s in ("ddp", "zero1", "zero2", "fsdp")]}),
    "companion.experiments:call_many": (
        2, {"calls": [("companion.basics:first_all_reduce", {}),
                      ("companion.collectives.demos:all_reduce_demo", {})]}),
    "companion.compression:train_many": (
        2, {"runs": [{"method": "dense"}, {"method": "dgc", "density": 0.1}], "steps": 3}),
    "companion.pipeline.torch_reference:run_torch_pipelining": (
        2, {"schedule": "1f1b", "microbatches": 4}),
    "companion.overlap:torch_ddp_buckets": (2, {"hidden": 64, "depth": 2, "steps": 2}),
    "companion.sequence_parallel:volume_sweep": (2, {"seqs": (16,)}),
    "companion.tensor_parallel.boundary_bytes:pp_vs_tp_bytes": (2, {"layers": 2}),
}
