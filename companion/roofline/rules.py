"""When each parallel strategy is compute-bound: compute and communication of one layer.

Taught in notebook 10 (``notebooks/10_when_parallelism_pays.ipynb``, sections 2-5),
after CS336 L8 §3.5-3.6 and §7.2-7.3, and following the scaling book's training and GPU
chapters (https://jax-ml.github.io/scaling-book/training/ ,
https://jax-ml.github.io/scaling-book/gpus/) and the Ultra-Scale Playbook's appendix A3
(https://huggingface.co/spaces/nanotron/ultrascale-playbook).

**The layer.** As in the scaling book, a transformer layer is approximated by its MLP:
``In[B, D] x W_in[D, F] x W_out[F, D]``, ``B`` tokens, weights and activations in bf16
(2 bytes). Forward: two matmuls of ``2 B D F`` FLOPs; backward: four. So one layer costs
``12 B D F`` FLOPs per step, shared by the devices that split the batch or the weights.

**The bandwidth.** ``bandwidth`` is ``W_collective``: the bytes per second one device's
collective moves, so that an all-gather or reduce-scatter of ``V`` total bytes takes
``V / W`` and an all-reduce ``2 V / W`` (a bandwidth-optimal ring, large ``X``). On GPUs
it is the per-direction egress of the GPU inside a node (NVLink) or of its node across
nodes (:func:`~companion.roofline.matmul.collective_bandwidth`). ``mx``/``my`` are the
number of mesh axes (or independent links) a strategy's collectives use at once: ``M``
axes give ``M`` times the bandwidth.

**The rule.** Communication that can run during compute hides when
``T_comm < T_math``; every rule below is that inequality solved for one quantity. The
ratio ``alpha = C / W`` (FLOPs per byte the network can feed) appears in all of them.
"""
from __future__ import annotations

import math

from .. import hardware
from ..validation import one_of, positive_int, positive_number
from .matmul import fsdp_tp_bandwidths

__all__ = ["dp_critical_tokens", "tp_max_degree", "fsdp_tp_split", "fsdp_tp_best_degrees",
           "fsdp_tp_best_on", "fsdp_tp_min_tokens", "layer_times", "STRATEGIES", "pp_comm_time",
           "pp_comm_ratio", "ep_comm_time", "ep_min_d_ff"]

STRATEGIES = ("dp", "fsdp", "tp", "fsdp_tp")


def _hw(peak_flops, bandwidth):
    positive_number("peak_flops", peak_flops, "pass one device's FLOP/s, e.g. 989e12 (H100, bf16).")
    positive_number("bandwidth", bandwidth,
                    "pass W_collective in bytes/s per direction, e.g. 450e9 (H100 NVLink).")
    return peak_flops / bandwidth


def _axes(name, m):
    return positive_number(name, m, f"{name} is how many mesh axes (links) the collectives "
                           "use at once, e.g. 1, 2 or 3.")


def dp_critical_tokens(peak_flops: float, bandwidth: float, mx: float = 1,
                       ring_size: int | None = None, moe_ratio: float = 1.0) -> float:
    """Tokens per device above which DP's or FSDP's weight traffic hides under compute.

    Derivation (backward pass of one layer, ``X`` devices splitting ``B`` tokens): the
    four backward matmuls take ``T_math = 8 B D F / (X C)``; the gradients of both
    matrices (``2 D F`` bf16 values each, ``4 D F`` bytes) are all-reduced, ``T_comm =
    2 * 4 D F / (W mx)``. ``T_math > T_comm`` gives ``B / X > C / (W mx)``. FSDP turns
    each all-reduce into a reduce-scatter plus an all-gather of the same total and adds
    an all-gather in the forward pass, in the same proportion to its FLOPs: same rule.

    ``ring_size``: a ring of ``X`` members moves ``(X - 1) / X`` of the buffer, which
    matters for small rings (2 nodes halve the threshold). ``moe_ratio`` = ``E / k``
    for a mixture of experts: all ``E`` experts' weights are synchronised while each
    token only computes with ``k`` of them.
    """
    alpha = _hw(peak_flops, bandwidth)
    _axes("mx", mx)
    positive_number("moe_ratio", moe_ratio, "pass E / k (experts / experts per token); 1 "
                    "for a dense model.")
    shrink = 1.0
    if ring_size is not None:
        shrink = (positive_int("ring_size", ring_size, "pass the members of the slowest "
                               "ring (nodes, across nodes), or None for a large ring.") - 1) / ring_size
        if shrink == 0:
            raise ValueError("ring_size=1: a single member communicates nothing; pass >= 2 "
                             "or None.")
    return alpha / mx * shrink * moe_ratio


def tp_max_degree(d_ff: int, peak_flops: float, bandwidth: float, my: float = 1) -> float:
    """The tensor-parallel degree ``Y`` below which a Megatron MLP stays compute-bound.

    Derivation (forward pass, ``B`` tokens, ``Y`` devices): each device does ``4 B D F /
    Y`` FLOPs, ``T_math = 4 B D F / (Y C)``. Before ``W_in`` the activations ``[B, D]``
    are all-gathered and after ``W_out`` reduce-scattered: ``2 * 2 B D`` bytes, ``T_comm
    = 4 B D / (W my)``. ``T_math > T_comm`` gives ``Y < my F W / C``: the batch cancels,
    so no batch size rescues a TP degree above this bound. The backward pass has the
    same ratio. Returned as a float: the largest useful degree is the largest power of
    two below it.
    """
    positive_int("d_ff", d_ff, "pass the MLP's hidden width F (e.g. 28672 for Llama-3 70B).")
    alpha = _hw(peak_flops, bandwidth)
    return _axes("my", my) * d_ff / alpha


def _split_args(batch_tokens, d_ff, devices, mx, my):
    positive_number("batch_tokens", batch_tokens, "pass the global batch in tokens "
                    "(sequences x sequence length).")
    positive_int("d_ff", d_ff, "pass the MLP's hidden width F.")
    positive_int("devices", devices, "pass the number of devices N = X * Y.")
    _axes("mx", mx), _axes("my", my)


def fsdp_tp_split(batch_tokens: float, d_ff: int, devices: int, mx: float = 1,
                  my: float = 1) -> float:
    """The FSDP degree ``X`` (``Y = N / X`` tensor-parallel) that minimises communication.

    Derivation (forward pass; the scaling book's "Combining FSDP and Tensor
    Parallelism"): FSDP all-gathers the weight shards ``[D/X, F/Y]`` over ``X``,
    ``T_fsdp = 4 D F / (Y W mx)``; TP all-gathers and reduce-scatters activations
    ``[B/X, D]`` over ``Y``, ``T_tp = 4 B D / (X W my)``. With ``Y = N / X`` the first
    grows with ``X`` and the second shrinks, so ``max(T_fsdp, T_tp)`` (the two use
    different axes and overlap) is smallest where they are equal:
    ``F X / (N mx) = B / (X my)``, ``X = sqrt(B N mx / (F my))``. Clipped to ``[1, N]``.
    """
    _split_args(batch_tokens, d_ff, devices, mx, my)
    x = math.sqrt(batch_tokens * devices * mx / (d_ff * my))
    return min(max(x, 1.0), float(devices))


def fsdp_tp_best_degrees(batch_tokens: float, d_ff: int, devices: int, mx: float = 1,
                         my: float = 1) -> tuple[int, int]:
    """``(X, Y)``, powers of two with ``X * Y = devices``, of least communication time."""
    _split_args(batch_tokens, d_ff, devices, mx, my)
    if devices & (devices - 1):
        raise ValueError(f"devices={devices}: pass a power of two, so X and Y can be too.")
    xs = [2 ** i for i in range(devices.bit_length())]
    x = min(xs, key=lambda x: (max(d_ff * x / (devices * mx), batch_tokens / (x * my)), -x))
    return x, devices // x


def fsdp_tp_best_on(chip: str, batch_tokens: float, d_model: int, d_ff: int,
                    devices: int) -> tuple[int, int]:
    """``(X, Y)`` of least communication on ``chip``'s real links, each transfer at the
    bandwidth its group gets (:func:`~companion.roofline.matmul.fsdp_tp_bandwidths`); the
    larger ``X`` on a tie. Inside one node, or on a TPU's torus, this is
    :func:`fsdp_tp_best_degrees`' balance. Across GPU nodes FSDP's time no longer depends
    on ``Y``, so only TP's growing time tells the splits apart: pure FSDP, unless the
    batch has too few sequences for ``N`` data-parallel ranks (which this rule, about
    bytes, does not see)."""
    positive_int("devices", devices, "pass the number of devices N = X * Y.")
    if devices & (devices - 1):
        raise ValueError(f"devices={devices}: pass a power of two, so X and Y can be too.")
    flops = hardware.accelerator(chip).flops

    def comm(x):
        w_fsdp, w_tp = fsdp_tp_bandwidths(chip, devices, devices // x)
        return layer_times("fsdp_tp", batch_tokens, d_model, d_ff, flops, w_tp, x=x,
                           y=devices // x, mx=w_fsdp / w_tp)["comm"]

    xs = [2 ** i for i in range(devices.bit_length())]
    x = min(reversed(xs), key=comm)
    return x, devices // x


def fsdp_tp_min_tokens(peak_flops: float, bandwidth: float, d_ff: int, mx: float = 1,
                       my: float = 1) -> float:
    """Tokens per device below which even the best FSDP x TP split is communication-bound.

    At the optimal ``X``, ``T_comm = T_fsdp = 4 D F X / (N W mx)`` against ``T_math = 4
    B D F / (N C)``: compute-bound when ``X < B mx / alpha``. Squaring and putting in
    ``X^2 = B N mx / (F my)`` gives ``B / N > alpha^2 / (mx my F)``.
    """
    alpha = _hw(peak_flops, bandwidth)
    positive_int("d_ff", d_ff, "pass the MLP's hidden width F.")
    return alpha ** 2 / (_axes("mx", mx) * _axes("my", my) * d_ff)


def layer_times(strategy: str, batch_tokens: float, d_model: int, d_ff: int,
                peak_flops: float, bandwidth: float, x: int = 1, y: int = 1,
                mx: float = 1, my: float = 1) -> dict:
    """Seconds per layer and step (forward + backward) of compute and communication.

    ``{"compute", "comm", "fsdp_comm", "tp_comm", "bound"}`` for ``strategy`` in
    :data:`STRATEGIES` with ``x`` data-parallel/FSDP and ``y`` tensor-parallel devices.
    Bytes per layer and step (the scaling book's table): DP all-reduces ``8 D F`` (in
    backward only), FSDP moves ``12 D F`` (4 forward, 8 backward), TP ``12 B D`` of
    activations, FSDP x TP ``12 D F / Y`` and ``12 B D / X`` on separate axes (the
    communication time is the larger, as they overlap; an axis of one device moves
    nothing). Compute is ``12 B D F / (X Y)``.
    DP's all-reduce can only hide under the backward pass (the gradients appear there),
    so its ``bound`` compares with the backward's two thirds of the compute.
    """
    one_of("strategy", strategy, STRATEGIES)
    positive_number("batch_tokens", batch_tokens, "pass the global batch in tokens.")
    for name, v in (("d_model", d_model), ("d_ff", d_ff), ("x", x), ("y", y)):
        positive_int(name, v, f"pass {name} as a whole number >= 1.")
    _hw(peak_flops, bandwidth), _axes("mx", mx), _axes("my", my)
    if strategy in ("dp", "fsdp") and y != 1 or strategy == "tp" and x != 1:
        raise ValueError(f"strategy={strategy!r} with x={x}, y={y}: use 'fsdp_tp' to combine "
                         "data and tensor parallelism.")
    compute = 12 * batch_tokens * d_model * d_ff / (x * y * peak_flops)
    # an axis of one device has no group and moves nothing
    weights = {"dp": 8, "fsdp": 12, "tp": 0, "fsdp_tp": 12}[strategy] * d_model * d_ff / y
    weights = weights if x > 1 or strategy == "tp" else 0.0
    acts = 12 * batch_tokens * d_model / x if strategy in ("tp", "fsdp_tp") and y > 1 else 0.0
    fsdp_comm, tp_comm = weights / (bandwidth * mx), acts / (bandwidth * my)
    comm = max(fsdp_comm, tp_comm)
    hides_under = compute * (2 / 3 if strategy == "dp" else 1)
    return {"compute": compute, "comm": comm, "fsdp_comm": fsdp_comm, "tp_comm": tp_comm,
            "bound": "compute" if hides_under >= comm else "communication"}


def pp_comm_time(batch_tokens: float, d_model: int, bandwidth: float, microbatches: int,
                 stages: int) -> float:
    """Seconds one pipeline spends sending boundary activations in a forward pass.

    Each micro-batch's hop moves ``[B / N_mb, D]`` in bf16, ``2 B D / N_mb`` bytes, and
    a forward pass has ``N_mb + N_stages - 2`` hops on its critical path (the scaling
    book's GPU chapter): ``2 B D / (W N_mb) * (N_mb + N_stages - 2)``.
    """
    positive_number("batch_tokens", batch_tokens, "pass the batch in tokens.")
    positive_int("d_model", d_model, "pass the hidden size D.")
    positive_number("bandwidth", bandwidth, "pass the boundary link's bytes/s per direction.")
    positive_int("microbatches", microbatches, "pass the number of micro-batches.")
    positive_int("stages", stages, "pass the number of pipeline stages (>= 2).", minimum=2)
    return 2 * batch_tokens * d_model / (bandwidth * microbatches) * (microbatches + stages - 2)


def pp_comm_ratio(d_model: int, params_per_layer: float, layers_per_stage: int,
                  peak_flops: float, bandwidth: float, bytes_per_element: int = 2) -> float:
    """``T_comm / T_compute`` of one pipeline hop against the next stage's forward pass.

    A micro-batch of ``b`` tokens sends ``bytes * b * D`` and the next stage computes
    ``2 b P L`` FLOPs (``P`` parameters per layer, ``L`` layers per stage): the ratio is
    ``bytes * D * C / (2 P L W)``, independent of the batch. Below 1 the hop hides. The
    Playbook's appendix A3 writes it with ``P = 16 h^2`` and one byte per element,
    ``C / (32 h L W)``; in bf16 the bytes are twice that.
    """
    positive_int("d_model", d_model, "pass the hidden size D.")
    positive_number("params_per_layer", params_per_layer, "pass P, e.g. 16 * D**2 (GLU MLP).")
    positive_int("layers_per_stage", layers_per_stage, "pass the layers each stage holds.")
    positive_int("bytes_per_element", bytes_per_element, "2 for bf16.")
    alpha = _hw(peak_flops, bandwidth)
    return bytes_per_element * d_model * alpha / (2 * params_per_layer * layers_per_stage)


def _ep_args(k, z, domain):
    positive_int("experts_per_token", k, "pass k, the experts each token is routed to.")
    positive_int("ep_degree", z, "pass Z, the devices the experts are spread over.")
    positive_int("domain", domain, "pass the devices sharing `bandwidth`: 1 for a GPU's "
                 "NVLink, 8 for a node's NICs.")
    if z % domain or z <= domain:
        raise ValueError(f"ep_degree={z} must be a multiple of domain={domain} and larger: "
                         "the all-to-all leaves the domain only then.")


def ep_comm_time(batch_tokens: float, d_model: int, experts_per_token: int, ep_degree: int,
                 bandwidth: float, domain: int = 1) -> float:
    """Seconds of the two all-to-alls (dispatch, combine) of one MoE layer's forward pass.

    A domain of ``g`` devices (one GPU on NVLink, a node of 8 behind its NICs) holds
    ``g B / Z`` tokens. Each token's ``k`` copies go to experts spread over ``Z / g``
    domains, at most one copy per domain and a fraction ``(Z - g) / Z`` elsewhere; each
    copy is ``2 D`` bytes and travels twice. So ``T = 4 D (g B / Z) min(k, Z / g)
    (Z - g) / Z / W``: the scaling book's ``4 B D (Z - 8) / (W Z) min(8 k / Z, 1)`` for
    ``g = 8``.
    """
    positive_number("batch_tokens", batch_tokens, "pass the batch in tokens.")
    positive_int("d_model", d_model, "pass the hidden size D.")
    positive_number("bandwidth", bandwidth, "pass the domain's bytes/s per direction.")
    _ep_args(experts_per_token, ep_degree, domain)
    g, z, k = domain, ep_degree, experts_per_token
    return 4 * d_model * (g * batch_tokens / z) * min(k, z / g) * (z - g) / z / bandwidth


def ep_min_d_ff(experts_per_token: int, ep_degree: int, peak_flops: float, bandwidth: float,
                domain: int = 1) -> float:
    """The expert width ``F`` above which expert parallelism is compute-bound.

    Each device computes ``4 B k D F / (Z C)`` (its tokens' ``k`` expert MLPs, forward);
    setting it above :func:`ep_comm_time` gives ``F > alpha g min(k, Z/g) (Z - g) / (Z
    k)``: ``alpha (Z - 8) / k`` for a few nodes (``k > Z / 8``), about ``8 alpha`` for
    many.
    """
    alpha = _hw(peak_flops, bandwidth)
    _ep_args(experts_per_token, ep_degree, domain)
    g, z, k = domain, ep_degree, experts_per_token
    return alpha * g * min(k, z / g) * (z - g) / (z * k)
