"""Node-limited routing and a DeepEP-style two-hop dispatch: what crosses between nodes.

Taught in notebook 06 (``notebooks/06_sequence_parallelism.ipynb``, section 8).

DeepSeek-V3 (arXiv 2412.19437, §2.1.2 and §3.2.2) sends each token to at most ``M``
nodes (``M = 4`` of 8), the nodes with the largest sum of their top ``K/M`` expert
scores; its released router (``inference/model.py``, 8 groups, 4 kept, top-2 sums)
does this. The dispatch then sends a token **once per target node** over InfiniBand, to
the GPU with the same in-node index, which forwards it over NVLink to the GPUs holding
its experts there; DeepEP (github.com/deepseek-ai/DeepEP) is the library of those
kernels (a token that "goes to Y experts in X nodes": "the kernel will only send X RDMA
messages and broadcast to Y experts via NVLink", its maintainers in DeepEP issue 6).

Here ``ranks_per_node`` consecutive ranks form an emulated node: rank ``r`` is on node
``r // R`` at in-node index ``r % R``; the experts are spread in order, so node ``a``
holds experts ``[a E/N, (a+1) E/N)``. Hop 1 runs over the rank's **rail** (the ranks at
its in-node index on every node), so every byte it sends off the rank crosses nodes;
hop 2 runs inside the node. Both are uneven all-to-alls recorded by
:func:`companion.collectives.log.all_to_all_rows` with their exact bytes, labelled
``"inter-node"`` and ``"intra-node"``. ``dedup=False`` sends one copy per (token,
expert), what a plain all-to-all puts on the wire; ``dedup=True`` one per (token, node).
"""
from __future__ import annotations

import torch
import torch.distributed as dist

from .. import runtime
from ..collectives import log as comm_log
from ..experiments import experiment
from ..models import seeded
from ..validation import positive_int, preflight
from .hybrid import hybrid_groups

__all__ = ["node_limited_topk", "cross_node_rows", "two_hop_dispatch", "expected_arrivals",
           "moe_node_traffic"]


def node_limited_topk(scores: torch.Tensor, top_k: int, n_nodes: int, max_nodes: int):
    """``[T, E]`` scores -> ``[T, top_k]`` expert indices on at most ``max_nodes`` of the
    ``n_nodes`` nodes (experts grouped contiguously by node). A node's score is the sum of
    its top ``max(1, top_k // max_nodes)`` expert scores (DeepSeek-V3 §2.1.2)."""
    n_tokens, n_experts = scores.shape
    positive_int("n_nodes", n_nodes, "pass the nodes the experts are spread over.")
    positive_int("max_nodes", max_nodes, "pass at most how many nodes a token may reach.")
    if n_experts % n_nodes:
        raise ValueError(f"{n_experts} experts do not divide into n_nodes={n_nodes}; use a "
                         f"multiple of {n_nodes} experts.")
    per_node = n_experts // n_nodes
    if not 1 <= top_k <= min(max_nodes, n_nodes) * per_node:
        raise ValueError(f"top_k={top_k} must be between 1 and the experts on max_nodes="
                         f"{max_nodes} nodes ({min(max_nodes, n_nodes) * per_node}).")
    if max_nodes < n_nodes:
        grouped = scores.view(n_tokens, n_nodes, per_node)
        node_score = grouped.topk(max(1, top_k // max_nodes), dim=-1).values.sum(-1)
        keep = node_score.topk(max_nodes, dim=-1).indices
        hidden = torch.ones(n_tokens, n_nodes, dtype=torch.bool,
                            device=scores.device).scatter(1, keep, False)
        scores = grouped.masked_fill(hidden.unsqueeze(-1), float("-inf")).view(n_tokens, -1)
    return scores.topk(top_k, dim=-1).indices


def cross_node_rows(expert_idx: torch.Tensor, node: int, experts_per_node: int,
                    dedup: bool) -> int:
    """Rows one rank on ``node`` sends to other nodes for ``expert_idx`` ``[T, k]``: one
    per (token, expert on another node), or with ``dedup`` one per (token, other node).
    The single-process count that the measured bytes of :func:`two_hop_dispatch` equal."""
    positive_int("experts_per_node", experts_per_node, "pass the experts one node holds.")
    dest = expert_idx // experts_per_node
    remote = dest != node
    if not dedup:
        return int(remote.sum())
    return sum(len(set(row[r].tolist())) for row, r in zip(dest, remote))


def _exchange(rows, meta, dest, group_size, group, label):
    order = torch.argsort(dest, stable=True)
    send = torch.bincount(dest, minlength=group_size)
    recv = torch.stack(comm_log.all_to_all(list(send.view(group_size, 1)), group,
                                           label="counts")).view(-1)
    send, recv = send.tolist(), recv.tolist()
    got_rows = comm_log.all_to_all_rows(rows[order], send, recv, group, label=label)
    got_meta = comm_log.all_to_all_rows(meta[order], send, recv, group, label="routing")
    return got_rows, got_meta


def two_hop_dispatch(x: torch.Tensor, expert_idx: torch.Tensor, n_experts: int,
                     ranks_per_node: int, groups=None, dedup: bool = True):
    """Rank function body: dispatch this rank's tokens ``x`` ``[T, d]`` to the experts in
    ``expert_idx`` ``[T, k]``, across nodes on the rail, then inside the node.

    ``groups`` is ``hybrid_groups(ranks_per_node)`` (node group, rail group), made once
    by every rank. Returns ``{local expert: (src, rows)}``: ``src`` ``[n, 2]`` the (source
    rank, token) of each arrival, ordered by source rank then token, and its rows."""
    R = positive_int("ranks_per_node", ranks_per_node, "pass the ranks of one node, e.g. 2.")
    if expert_idx.dim() != 2 or expert_idx.shape[0] != x.shape[0]:
        raise ValueError(f"expert_idx has shape {tuple(expert_idx.shape)} for {x.shape[0]} "
                         "tokens; pass [tokens, top_k] expert indices.")
    rank, size = dist.get_rank(), dist.get_world_size()
    if size % R or n_experts % size:
        raise ValueError(f"{size} ranks in nodes of ranks_per_node={R} with n_experts="
                         f"{n_experts}: the ranks must divide into nodes and the experts "
                         "into ranks.")
    node_group, rail_group = groups if groups is not None else hybrid_groups(R)
    per, n_nodes = n_experts // size, size // R
    tokens, k = expert_idx.shape
    dev = expert_idx.device
    meta_all = torch.cat([torch.full((tokens, 1), rank, device=dev),
                          torch.arange(tokens, device=dev).view(-1, 1), expert_idx], dim=1)
    if dedup:                                    # one row per (token, destination node)
        dest_node = expert_idx // (per * R)
        pairs = [(t, b) for t in range(tokens) for b in sorted(set(dest_node[t].tolist()))]
        t_of = torch.tensor([t for t, _ in pairs], dtype=torch.long, device=dev)
        meta = meta_all[t_of]
        dest = torch.tensor([b for _, b in pairs], dtype=torch.long, device=dev)
    else:                                        # one row per (token, expert)
        t_of = torch.arange(tokens, device=dev).repeat_interleave(k)
        meta = meta_all[t_of]
        keep_one = torch.arange(k, device=dev).repeat(tokens)  # each copy names only its expert
        meta[:, 2:] = torch.where(torch.arange(k, device=dev) == keep_one.view(-1, 1),
                                  meta[:, 2:], -1)
        dest = expert_idx.reshape(-1) // (per * R)
    rows, meta = _exchange(x[t_of], meta, dest, n_nodes, rail_group, "inter-node")
    return _forward_in_node(rows, meta, rank, R, per, node_group)


def _forward_in_node(rows, meta, rank, R, per, node_group):
    # Forward each arrival once to every rank of this node that holds one of its experts.
    node = rank // R
    first = node * R * per
    pick, dest = [], []
    for i, experts in enumerate(meta[:, 2:].tolist()):
        owners = sorted({(e - first) // per for e in experts if first <= e < first + R * per})
        pick += [i] * len(owners)
        dest += owners
    pick = torch.tensor(pick, dtype=torch.long, device=rows.device)
    dest = torch.tensor(dest, dtype=torch.long, device=rows.device)
    rows, meta = _exchange(rows[pick], meta[pick], dest, R, node_group, "intra-node")
    mine = rank * per
    out = {}
    for i in range(per):
        has = (meta[:, 2:] == mine + i).any(dim=1)
        src = meta[has, :2]
        order = torch.argsort(src[:, 0] * 2**31 + src[:, 1])   # source rank, then token
        out[i] = (src[order], rows[has][order])
    return out


def expected_arrivals(xs, idxs, rank: int, n_experts: int, world_size: int):
    """Single process: what :func:`two_hop_dispatch` must deliver to ``rank`` from every
    rank's ``xs[r]`` and ``idxs[r]``, in its order (bit-exact: data is only moved)."""
    if len(xs) != world_size or len(idxs) != world_size or n_experts % world_size:
        raise ValueError(f"{len(xs)} token sets and {len(idxs)} index sets for world_size="
                         f"{world_size} and n_experts={n_experts}: pass one of each per rank, "
                         "and experts that divide into the ranks.")
    per = n_experts // world_size
    out = {}
    for i in range(per):
        e = rank * per + i
        hits = [(idxs[r] == e).any(dim=1).nonzero().view(-1) for r in range(world_size)]
        src = torch.cat([torch.stack([torch.full_like(t, r), t], dim=1)
                         for r, t in enumerate(hits)])
        out[i] = (src, torch.cat([xs[r][t] for r, t in enumerate(hits)]))
    return out


def _check_traffic(world_size=4, ranks_per_node=2, max_nodes=1, n_experts=8, top_k=2,
                   tokens=64, d_model=16) -> None:
    R = positive_int("ranks_per_node", ranks_per_node, "pass the ranks of one node, e.g. 2.")
    positive_int("tokens", tokens, "pass the tokens per rank, e.g. 64.")
    positive_int("d_model", d_model, "pass the token width, e.g. 16.")
    if world_size % R or n_experts % world_size:
        raise ValueError(f"world_size={world_size}, ranks_per_node={R}, n_experts={n_experts}: "
                         "the ranks must divide into nodes and the experts into ranks.")
    # A dummy score row on the CPU: only its shape is checked, before any rank starts.
    node_limited_topk(torch.zeros(1, n_experts, device="cpu"), top_k, world_size // R,
                      max_nodes)


def _routed(rank, tokens, d_model, n_experts, top_k, n_nodes, max_nodes, seed, dev):
    with seeded(seed):
        router = torch.nn.Linear(d_model, n_experts, bias=False)
    router.to(dev)
    gen = torch.Generator().manual_seed(seed + 1 + rank)
    # Drawn on the CPU from the CPU generator, then moved: the same tokens on every device.
    x = torch.randn(tokens, d_model, generator=gen, device="cpu").to(dev)
    with torch.no_grad():
        scores = router(x).softmax(-1)
    return x, {"top-k": scores.topk(top_k, dim=-1).indices,
               "node-limited": node_limited_topk(scores, top_k, n_nodes, max_nodes)}


def _same(got, want) -> bool:
    return all(torch.equal(got[i][0], want[i][0]) and torch.equal(got[i][1], want[i][1])
               for i in want)


@experiment("moe_node_traffic")
@preflight(_check_traffic)
def moe_node_traffic(ranks_per_node: int = 2, max_nodes: int = 1, n_experts: int = 8,
                     top_k: int = 2, tokens: int = 64, d_model: int = 16,
                     seed: int = 0) -> dict:
    """Rank function: bytes that cross nodes and stay inside them for top-k and
    node-limited routing, each sent once per (token, expert) and once per (token, node).

    Every dispatch is compared with :func:`expected_arrivals` (bit-exact)."""
    size = dist.get_world_size() if dist.is_initialized() else ranks_per_node
    _check_traffic(size, ranks_per_node, max_nodes, n_experts, top_k, tokens, d_model)
    dev = runtime.device()
    rank = dist.get_rank()
    n_nodes = size // ranks_per_node
    groups = hybrid_groups(ranks_per_node)
    x, routed = _routed(rank, tokens, d_model, n_experts, top_k, n_nodes, max_nodes, seed, dev)
    every = [_routed(r, tokens, d_model, n_experts, top_k, n_nodes, max_nodes, seed, dev)
             for r in range(size)]
    result = {"row_bytes": d_model * x.element_size()}
    for routing, idx in routed.items():
        want = expected_arrivals([e[0] for e in every], [e[1][routing] for e in every],
                                 rank, n_experts, size)
        for dedup in (False, True):
            with comm_log.recording() as log:
                got = two_hop_dispatch(x, idx, n_experts, ranks_per_node, groups, dedup)
            result[(routing, dedup)] = {
                "inter": log.bytes(label="inter-node"), "intra": log.bytes(label="intra-node"),
                "routing": log.bytes(label="routing"), "same": _same(got, want),
                "rows": cross_node_rows(idx, rank // ranks_per_node,
                                        n_experts // n_nodes, dedup),
                "nodes_per_token": _nodes_per_token(idx, n_experts // n_nodes)}
    return result


def _nodes_per_token(idx, experts_per_node) -> float:
    dest = idx // experts_per_node
    return sum(len(set(row.tolist())) for row in dest) / len(dest)
