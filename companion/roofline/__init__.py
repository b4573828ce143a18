"""When parallelism pays: rooflines of one matmul and of each parallel strategy.

Taught in notebook 10 (``notebooks/10_when_parallelism_pays.ipynb``). Hardware figures
come from :mod:`companion.hardware`; the rules follow CS336 L8 §3.5-3.6, §7.2-7.3 and
the scaling book's training and GPU chapters (each function's docstring derives it).
"""
from .matmul import (collective_bandwidth, fsdp_tp_bandwidths, hbm_critical_batch,
                     matmul_bytes, matmul_flops, matmul_intensity, matmul_time)
from .rules import (STRATEGIES, dp_critical_tokens, ep_comm_time, ep_min_d_ff,
                    fsdp_tp_best_degrees, fsdp_tp_best_on, fsdp_tp_min_tokens, fsdp_tp_split,
                    layer_times, pp_comm_ratio, pp_comm_time, tp_max_degree)

__all__ = ["matmul_flops", "matmul_bytes", "matmul_intensity", "matmul_time",
           "hbm_critical_batch", "collective_bandwidth", "fsdp_tp_bandwidths",
           "dp_critical_tokens", "tp_max_degree", "fsdp_tp_split", "fsdp_tp_best_degrees",
           "fsdp_tp_best_on", "fsdp_tp_min_tokens", "layer_times", "STRATEGIES",
           "pp_comm_time", "pp_comm_ratio", "ep_comm_time", "ep_min_d_ff"]
