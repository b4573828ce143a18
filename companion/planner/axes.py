"""The two axes notebook 09's planner lacked: context (CP) and expert (EP) parallelism.

Taught in notebook 12 (``notebooks/12_auto_parallelism.ipynb``, the 5D planner).

**Where groups sit.** Ranks are numbered by a mixed radix, innermost axis first:

* dense models ``[TP, CP, PP, DP]``: Llama 3's order (arXiv 2407.21783 §3.3.2), and
  notebook 09's with CP = 1;
* MoE models ``[TP, CP, DP, PP]`` for attention and ``[ETP, EP, EDP, PP]`` for the
  experts on the same ranks: Megatron-Core's default order ``tp-cp-ep-dp-pp``, which puts
  DeepSeek-V3's 64-way EP on 8 whole nodes (arXiv 2412.19437 §3.2) and every pipeline
  boundary across nodes. ``ETP x EP x EDP = TP x CP x DP``: experts are data-parallel
  over ``EDP = TP x CP x DP / (ETP x EP)`` replicas (the DP-EP coupling).

:func:`axis_layout` says how many members of a group share a node; the collective's
time then follows ``planner.links`` (NVLink inside, one NIC per member across).

**Context parallelism** (ring attention, notebook 06): per layer and micro-batch a CP
rank passes its K and V block to the next rank ``ring_hops`` times,
``sequence_parallel.ring.attention_bytes("ring", ...)`` in all, with the K/V width (GQA's
kv heads, MLA's latent): forward ``CP - 1`` hops, backward ``CP - 1`` more and ``CP`` hops
of dK and dV. Each hop is one point-to-point send that travels while a block of
attention is computed (:meth:`Mesh.cp_traffic`), so only what exceeds one ring step's
attention-core compute is exposed, plus the last dK/dV hop. Megatron-Core's default
(``cp_comm_type="p2p"``, TransformerEngine) runs this ring. Llama 3 all-gathers K and V
instead (arXiv 2407.21783 §3.3.2), accepting that the gather is exposed because GQA keeps
K and V small: the same forward bytes, and backward the gather again and a reduce-scatter
of dK and dV, one block fewer than the ring. The planner does not model that variant.
Activations divide by CP.

**Expert parallelism**: per MoE layer and micro-batch, two all-to-alls forward
(dispatch, combine) and two backward (two more with full recomputation). A rank
dispatches ``tokens x top_k x hidden x capacity_factor`` 16-bit values; with uniform
routing ``(k-1)/EP`` of them stay on NVLink in the node and ``(EP-k)/EP`` cross nodes on
its own NIC. DeepSeek-V3's node-limited routing sends a token over InfiniBand at most
once per node, to at most ``max_route_nodes`` nodes, and forwards it inside the node
over NVLink (§2.1.2, §3.2.2). All peers are sent to at once: one latency per level.

**What an MoE block sends under TP** (Megatron-Core's all-to-all dispatcher,
``megatron/core/transformer/moe/token_dispatcher.py``: permute, all-to-all in EP,
all-gather in ETP, experts, reduce-scatter in ETP, all-to-all in EP). Megatron requires
sequence parallelism with MoE and TP > 1, so a rank routes its own ``seq / (tp * cp)``
tokens. The attention's all-gather and reduce-scatter in the TP group stay; the MLP's
pair is gone, except for shared experts, split like the attention
(``moe/shared_experts.py``); the routed experts' traffic is the EP all-to-all and,
with ETP > 1, the gather of the routed tokens in the ETP group
(:meth:`Mesh.moe_layer_bytes`). The router's per-expert token counts and the routing
probabilities (one number per routed token) are left out: under 0.1 % of the bytes.
"""
from __future__ import annotations

from ..sequence_parallel.ring import attention_bytes, ring_hops
from ..validation import positive_int, positive_number
from .comm import _tp_calls
from .links import layout_collective_time

__all__ = ["axis_layout", "all_to_all_time", "Mesh"]


def axis_layout(gpus_per_node: int, sizes, members) -> tuple[int, int]:
    """``(members per node, nodes spanned)`` of the group made of the axes flagged in
    ``members``, for ranks laid out with axis sizes ``sizes`` (innermost first, powers of
    two). A single axis of ``size`` after inner axes of product ``stride`` gives
    ``planner.group_layout(gpus_per_node, size, stride)``."""
    positive_int("gpus_per_node", gpus_per_node, "pass the GPUs in one node, e.g. 8.")
    inner, per_node, size = 1, 1, 1
    for s, member in zip(sizes, members):
        positive_int("sizes", s, "axis sizes are whole numbers >= 1.")
        if member:
            per_node *= min(s, max(1, gpus_per_node // inner))
            size *= s
        inner *= s
    return per_node, size // per_node


def all_to_all_time(nbytes: float, cluster, per_node: int, nodes: int,
                    inter_bytes: float | None = None) -> float:
    """Seconds for one rank's all-to-all of ``nbytes`` spread evenly over a group of
    ``per_node x nodes`` ranks: the node's share on NVLink, the rest on the rank's own
    NIC, both at once. ``inter_bytes`` overrides what crosses nodes (node-limited
    routing)."""
    positive_number("nbytes", nbytes, "pass the bytes one rank sends.", zero=True)
    positive_int("per_node", per_node, "pass the group's members in one node.")
    positive_int("nodes", nodes, "pass the nodes the group spans.")
    size = per_node * nodes
    a_nv, b_nv = cluster.link(False)
    inside = nbytes * (per_node - 1) / size / b_nv
    if nodes == 1:
        return (a_nv if size > 1 else 0.0) + inside
    a_ib, b_nic = cluster.link(True)
    across = (nbytes * (size - per_node) / size if inter_bytes is None else inter_bytes) / b_nic
    return a_nv + a_ib + max(inside, across)


class Mesh:
    """Group layouts of one configuration (see the module docstring for the order)."""

    def __init__(self, model, cluster, dp: int, tp: int, pp: int, cp: int, ep: int, etp: int):
        self.model, self.cluster = model, cluster
        self.dp, self.tp, self.pp, self.cp, self.ep, self.etp = dp, tp, pp, cp, ep, etp
        g = cluster.gpus_per_node
        if model.is_moe:
            self.sizes = [tp, cp, dp, pp]
            self.pp_stride = tp * cp * dp
            self.edp = tp * cp * dp // (ep * etp)
            self.ep_layout = axis_layout(g, [etp, ep, self.edp], [False, True, False])
            self.etp_layout = axis_layout(g, [etp], [True])
            self.edp_layout = axis_layout(g, [etp, ep, self.edp], [False, False, True])
        else:
            self.sizes = [tp, cp, pp, dp]
            self.pp_stride = tp * cp
            self.edp = 1
        flags = {"tp": [True, False, False, False], "cp": [False, True, False, False]}
        self.cp_layout = axis_layout(g, self.sizes, flags["cp"])
        dp_axis = 2 if model.is_moe else 3
        self.dp_cp_layout = axis_layout(g, self.sizes, [i in (1, dp_axis) for i in range(4)])

    def cp_traffic(self, micro_batch: int, microbatches: int, layers: int, recompute: str,
                   attn_core_forward: float) -> tuple[float, float, float]:
        """``(bytes sent per step, seconds of CP traffic, seconds exposed)`` for ``layers``
        blocks, ring attention with notebook 06's messages (the module docstring) and the
        overlap of TransformerEngine's p2p ring, which sends dK/dV while the next block
        computes (notebook 06's ``RingAttention`` waits for each dK/dV hop instead).
        ``attn_core_forward`` is one layer's attention-core forward time for one
        micro-batch; a ring step computes one CP-th of it (backward twice that)."""
        if self.cp == 1:
            return 0.0, 0.0, 0.0
        m, p = self.model, self.cp
        kv_width = max(1, m.kv_dim // self.tp) if not m.mla else m.kv_dim
        fwd_bytes = attention_bytes("ring", micro_batch, m.seq_len, kv_width, p)
        bwd_bytes = attention_bytes("ring", micro_batch, m.seq_len, kv_width, p,
                                    phase="backward")
        hop = self._ring_hop_time(fwd_bytes / ring_hops(p))
        step = attn_core_forward / p
        forwards = 2 if recompute == "full" else 1
        # Forward: while block j is computed the next K/V block travels, so each of the
        # p - 1 hops hides behind one step. Backward: a step's K/V hop and the previous
        # step's dK/dV hop share the link during that step's (twice as long) compute; the
        # last dK/dV hop brings the gradients home after the last step, with nothing left
        # to hide behind.
        fwd_exposed = ring_hops(p) * max(0.0, hop - step)
        bwd_exposed = (p - 1) * max(0.0, 2 * hop - 2 * step) + hop
        per_layer_bytes = forwards * fwd_bytes + bwd_bytes
        total_t = (forwards * ring_hops(p) + ring_hops(p, "backward")) * hop
        n = layers * microbatches
        return per_layer_bytes * n, total_t * n, (forwards * fwd_exposed + bwd_exposed) * n

    def _ring_hop_time(self, block_bytes: float) -> float:
        """One ring step's point-to-point send of a K and a V block to the next CP rank.
        All ranks send at once and the step lasts as long as its slowest hop: NVLink when
        the CP group sits in one node, otherwise each rank's own NIC (the group's members
        in a node send to different peers, one NIC each, as ``planner.links`` assumes)."""
        alpha, beta = self.cluster.link(self.cp_layout[1] > 1)
        return alpha + block_bytes / beta

    def moe_layer_bytes(self, micro_batch: int, recompute: str = "selective") -> dict:
        """Payload bytes one rank hands to collectives per MoE block and micro-batch,
        forward and backward, as Megatron-Core's all-to-all dispatcher sends them:
        ``"tp"``, the attention's all-gather and reduce-scatter in the TP group (and the
        shared experts', split like the attention), each pair counted as one all-reduce
        of the block's activation, as ``planner.comm`` counts TP; ``"ep"``, the four
        all-to-alls in the EP group (dispatch and combine, forward and backward) of the
        rank's ``seq / (tp * cp)`` tokens, each sent to ``top_k`` experts; ``"etp"``, with
        ETP > 1, the all-gather of the routed tokens in the ETP group and the
        reduce-scatter of the experts' output, counted like TP. Full recomputation
        repeats the forward ones. 16-bit activations."""
        m = self.model
        if not m.is_moe:
            return {"tp": 0, "ep": 0, "etp": 0}
        activation = micro_batch * m.seq_len // self.cp * m.hidden * 2
        routed, passes = self._routed_bytes(micro_batch), _passes(recompute)
        return {"tp": _tp_calls(m, True, recompute) * activation if self.tp > 1 else 0,
                "ep": 2 * passes * routed if self.ep > 1 else 0,
                "etp": passes * routed * self.etp if self.etp > 1 else 0}

    def _routed_bytes(self, micro_batch: int) -> float:
        """One dispatch's bytes: this rank's ``seq / (tp * cp)`` tokens, each sent to
        ``top_k`` experts (padded to the capacity factor), 16-bit."""
        m = self.model
        return micro_batch * m.seq_len / (self.cp * self.tp) * m.top_k * m.hidden * 2 \
            * m.capacity_factor

    def ep_traffic(self, micro_batch: int, microbatches: int, moe_layers: int,
                   recompute: str) -> tuple[float, float]:
        """``(bytes dispatched per step, seconds of all-to-all)`` for ``moe_layers``
        MoE blocks on this rank's stage."""
        m = self.model
        if not m.is_moe or self.ep == 1 or not moe_layers:
            return 0.0, 0.0
        tokens = micro_batch * m.seq_len / (self.cp * self.tp)
        nbytes = self._routed_bytes(micro_batch)
        per_node, nodes = self.ep_layout
        inter = None
        if m.max_route_nodes and nodes > 1:
            distinct = nodes * (1 - (1 - 1 / nodes) ** m.top_k)  # nodes a token's experts hit
            inter = (tokens * m.hidden * 2 * m.capacity_factor
                     * min(m.max_route_nodes, distinct) * (nodes - 1) / nodes)
        one = all_to_all_time(nbytes, self.cluster, per_node, nodes, inter)
        calls = 2 * _passes(recompute) * moe_layers * microbatches  # dispatch and combine
        return nbytes * calls, one * calls

    def etp_traffic(self, micro_batch: int, microbatches: int, moe_layers: int,
                    recompute: str) -> float:
        """Seconds of expert-TP collectives: the routed tokens all-gathered into the ETP
        group and reduce-scattered out, forward and backward (0 when ETP = 1)."""
        m = self.model
        if not m.is_moe or self.etp == 1 or not moe_layers:
            return 0.0
        nbytes = self._routed_bytes(micro_batch) * self.etp
        per = sum(layout_collective_time(k, nbytes, self.cluster, *self.etp_layout)
                  for k in ("all_gather", "reduce_scatter"))
        return per * _passes(recompute) * moe_layers * microbatches

    def __repr__(self) -> str:
        return (f"Mesh(dp={self.dp}, tp={self.tp}, pp={self.pp}, cp={self.cp}, ep={self.ep}, "
                f"etp={self.etp}, edp={self.edp})")


def _passes(recompute: str) -> int:
    """An MoE layer's dispatches per micro-batch, each way: forward and backward, and the
    forward again under full recomputation."""
    return 3 if recompute == "full" else 2


def in_flight(pp: int, m: int, chunks: int, schedule: str) -> float:
    """Micro-batches of activations the first stage holds: 1F1B ``p``, interleaved
    ``p (1 + (p-1)/(p v))`` (Narayanan et al. 2021), DualPipeV ``p + 1/2``
    (``pipeline.peak_activations``)."""
    if pp == 1:
        return 1
    if schedule == "dualpipev":
        return pp + 0.5
    return min(pp, m) * (1 + (pp - 1) / (pp * chunks) if chunks > 1 else 1)
