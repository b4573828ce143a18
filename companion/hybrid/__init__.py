"""Hybrid parallelism on real ranks: DP x TP and PP x DP on 2x2 meshes, DP x TP x PP on
a 3D mesh, and expert parallelism with DP for a mixture-of-experts layer.

Taught in notebooks 09 (``notebooks/09_hybrid_parallelism.ipynb``: the 2x2 runs and
the planner's miniature) and 12 (``notebooks/12_auto_parallelism.ipynb``: the 3D run
and the EP x DP run). Nothing here is new parallelism: each run composes the package's
pieces on the process sub-groups of torch's ``init_device_mesh`` and returns, per rank,
what it holds next to a single-process reference and the bytes it moved next to a
prediction.

* :mod:`.transformer`: the tiny transformer, its reference and its planner spec;
* :mod:`.pipeline_stage`: its pipeline stages, trained through ``companion.pipeline``'s
  executor; :mod:`.mesh`: the mesh check and DDP's byte count every run shares;
* :mod:`.mesh2d`: ``train_dp_tp`` and ``train_pp_dp`` (notebook 09);
* :mod:`.miniature`: a planner configuration run at degree 2 on 4 ranks (notebook 09);
* :mod:`.mesh3d`: ``train_dp_tp_pp`` on 8 ranks, bytes predicted by the planner;
* :mod:`.expert`: ``train_ep_dp``, notebook 06's MoE layer with EP x DP, and the
  closed form of its all-to-all bytes.
"""
from .pipeline_stage import TransformerStage
from .transformer import TRANSFORMER, transformer_reference, transformer_spec
from .expert import ep_all_to_all_bytes, train_ep_dp
from .mesh2d import parallelize_dp_tp, train_dp_tp, train_pp_dp
from .mesh3d import MEGATRON_ORDER, predicted_bytes, train_dp_tp_pp
from .miniature import miniature_name, run_in_miniature

__all__ = ["parallelize_dp_tp", "train_dp_tp", "train_pp_dp", "transformer_reference",
           "TransformerStage", "TRANSFORMER", "transformer_spec", "run_in_miniature",
           "miniature_name", "train_dp_tp_pp", "predicted_bytes", "MEGATRON_ORDER",
           "train_ep_dp", "ep_all_to_all_bytes"]
