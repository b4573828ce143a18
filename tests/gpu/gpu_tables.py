"""Which rank functions compute on ``companion.device()`` and which stay on the CPU.

Read by the GPU check (``test_gpu_rank_functions.py``) and by ``tests/test_gpu_tables.py``,
which ``make test`` runs on every machine, so a new ``@experiment`` left out of both tables
fails on a laptop, not first on a GPU machine.
"""
from __future__ import annotations

DEVICE_AWARE = ("whoami", "all_reduce", "zero_train")

_LOOPBACK = "it times gloo on loopback, with an emulated link where it says so; on a GPU it " \
            "would time NVLink instead, which is another lesson"
_REFERENCE = "it compares with a float64 single-process reference on the CPU, bit for bit " \
             "where no reduction is involved"
_DIGITS = "a small MLP on the digits, built on the CPU; the lesson is the bytes and the " \
          "accuracy, not the speed"
_MESH = "it builds a CPU device mesh (init_device_mesh('cpu')) and " + _REFERENCE

# name -> (world size, keyword arguments that keep it short, why it computes on the CPU)
CPU_ONLY = {
    "collectives_all_reduce": (2, {}, "hand-written collectives over send/recv on CPU tensors"),
    "collectives_primitives": (2, {}, "hand-written collectives over send/recv on CPU tensors"),
    "collectives_traffic_sweep": (2, {"numel": 64}, "counts the bytes of hand-written "
                                  "collectives on CPU tensors"),
    "collectives_ping_pong": (2, {"sizes": (1024,), "repeats": 1}, _LOOPBACK),
    "collectives_timing": (2, {"algorithms": ("ring",), "sizes": (1024,), "repeats": 1},
                           _LOOPBACK),
    "collectives_all_reduce_training": (2, {"steps": 3}, _DIGITS),
    "collectives_parameter_server": (2, {"steps": 3}, _DIGITS),
    "hierarchical_all_reduce": (4, {"ranks_per_node": 2}, "emulates nodes on one machine "
                                "with gloo sub-groups"),
    "topology_timing": (4, {"nbytes": 10_000, "repeats": 1}, _LOOPBACK),
    "latency_link": (2, {"alphas_ms": (0.0, 1.0), "repeats": 1}, _LOOPBACK),
    "overlap_steps": (2, {"hidden": 64, "depth": 2, "steps": 1}, _LOOPBACK),
    "overlap_crossover": (2, {"hidden": 64, "depth": 2, "steps": 1}, _LOOPBACK),
    "compression_train": (2, {"method": "dgc", "steps": 5, "eval_every": 5}, _DIGITS),
    "compression_densification": (2, {"steps": 15}, _DIGITS),
    "compression_torch_powersgd": (2, {"steps": 5, "eval_every": 5}, _DIGITS),
    "compression_ablation": (2, {"seeds": (0,), "rows": ["dense"], "steps": 5,
                                 "eval_every": 5}, _DIGITS),
    "dga_toy": (2, {}, "a toy quadratic in float64, compared with its closed form"),
    "dga_train": (2, {"steps": 5}, _DIGITS),
    "pipeline_run": (2, {}, "stages hand CPU tensors over; device time is emulated"),
    "tp_compare": (2, {}, _MESH),
    "tp_dtensor_compare": (2, {}, _MESH),
    "tp_activation_memory": (2, {}, "measures saved activations by counting CPU tensors"),
    "sp_attention": (2, {}, _REFERENCE),
    "sp_benchmark_layer": (2, {"steps": 1, "seq": 32, "d_model": 32, "heads": 4}, _REFERENCE),
    "moe_expert_parallel": (2, {}, _REFERENCE),
    "moe_load_balance": (4, {"steps": 2, "d_ff": 8, "factors": (1.0,)}, _REFERENCE),
    "moe_node_traffic": (4, {"tokens": 24, "d_model": 8}, "counts the bytes a CPU "
                         "dispatch sends between emulated nodes, bit-exact against its "
                         "expected arrivals"),
    "hybrid_dp_tp": (4, {"steps": 1}, _MESH),
    "hybrid_pp_dp": (4, {"steps": 1}, _MESH),
    "hybrid_dp_tp_pp": (8, {"steps": 1}, _MESH),
    "hybrid_ep_dp": (4, {"steps": 1}, "a CPU device mesh for the expert-parallel MoE; "
                     "it compares with a single-process reference"),
}
