"""Topology-aware all-reduce: hierarchical (nodes of GPUs) and 2D (a torus), from send/recv.

Taught in notebook 11 (``notebooks/11_networks_and_topology.ipynb``); CS336 L8 §1 and
the all-reduce = reduce-scatter + all-gather identity of notebook 01.

Both split the N = rows x cols ranks into a grid, rank ``r`` at ``(r // cols, r % cols)``
(a row is a node, so torchrun's numbering fits), and run three phases of rings:

1. **reduce-scatter along the row** (inside the node): afterwards the rank at column
   ``c`` holds chunk ``c`` of the tensor summed over its row;
2. **all-reduce along the column** (across nodes) of that chunk, as a ring
   (reduce-scatter then all-gather): the chunk is now summed over everyone;
3. **all-gather along the row**: every rank gets every chunk.

For a tensor of n bytes each rank sends ``2 (cols-1)/cols * n`` bytes inside its row and
only ``2 (rows-1)/rows * n / cols`` across rows: every GPU of a node uses its own NIC
for 1/cols of the data, so the node's NICs carry the cross-node traffic together
(the planner's "aggregate NIC bandwidth"). The flat ring sends ``2 (N-1)/N * n`` from
the ranks at node boundaries over one NIC each.

:func:`hierarchical_all_reduce` runs one ring per phase. :func:`torus_all_reduce` runs
two at once, in opposite directions, each on half of the tensor: a torus link carries
``beta`` each way at the same time, so both directions of every link work (on a torus
dimension of size 2, both rings use the one link pair and gain nothing).

Each element is summed once, in one place, and then copied, so every rank gets the same
bits. NCCL's double binary tree (a latency-friendly alternative across nodes) and SHARP
(switches that add, so the bytes cross each link once) are not built here.
"""
from __future__ import annotations

from ..i18n import gettext as tr

import dataclasses
import os

import torch
import torch.distributed as dist

from .. import runtime
from ..experiments import experiment
from ..network import emulator
from ..validation import divides, positive_int, preflight
from .primitives import check_op, finish
from .traffic import chunk_offsets, exchange, note_initial, traffic

__all__ = ["hierarchical_all_reduce", "torus_all_reduce", "node_groups", "grid_shape",
           "hierarchical_demo"]


@dataclasses.dataclass
class _Ring:
    buf: torch.Tensor  # flat destination
    src: torch.Tensor  # flat input (the same tensor for an in-place ring)
    base: int  # offset of buf in the collective's flat buffer (for the recorded messages)
    members: list  # global ranks in ring order
    pos: int  # this rank's place in members

    def offsets(self):
        return chunk_offsets(self.buf.numel(), len(self.members))


def _reduce_scatter(rings, name) -> None:
    """All rings at once (one exchange per round): chunk ``pos`` of each ends summed."""
    length = len(rings[0].members)
    if length == 1:  # a ring of one: nothing to add, but the output must hold the input
        for ring in rings:
            if ring.src is not ring.buf:
                ring.buf.copy_(ring.src)
        return
    offs = [ring.offsets() for ring in rings]
    spare = [torch.empty(max(1, ring.buf.numel()), dtype=ring.buf.dtype, device=ring.buf.device)
             for ring in rings]
    for s in range(length - 1):
        sends, recvs, adds = [], [], []
        for ring, off, incoming in zip(rings, offs, spare):
            p, m = ring.pos, ring.members
            c_out, c_in = (p - s - 1) % length, (p - s - 2) % length
            out = (ring.src if s == 0 else ring.buf)[off[c_out]:off[c_out + 1]]
            got = incoming[:off[c_in + 1] - off[c_in]]
            sends.append((m[(p + 1) % length], out, ring.base + off[c_out], "reduce"))
            recvs.append((m[(p - 1) % length], got, ring.base + off[c_in], "reduce"))
            adds.append((ring, off, c_in, got))
        exchange(sends, recvs, name)
        for ring, off, c, got in adds:
            torch.add(ring.src[off[c]:off[c + 1]], got, out=ring.buf[off[c]:off[c + 1]])


def _all_gather(rings, name) -> None:
    """All rings at once: every rank's chunk ``pos`` is copied to the whole ring."""
    length = len(rings[0].members)
    offs = [ring.offsets() for ring in rings]
    for s in range(length - 1):
        sends, recvs = [], []
        for ring, off in zip(rings, offs):
            p, m = ring.pos, ring.members
            c_out, c_in = (p - s) % length, (p - s - 1) % length
            sends.append((m[(p + 1) % length], ring.buf[off[c_out]:off[c_out + 1]],
                          ring.base + off[c_out], "copy"))
            recvs.append((m[(p - 1) % length], ring.buf[off[c_in]:off[c_in + 1]],
                          ring.base + off[c_in], "copy"))
        exchange(sends, recvs, name)


def node_groups(ranks_per_node: int | None = None) -> tuple[list[int], list[int]]:
    """This rank's two groups: ``(its node's ranks, the ranks at its local index on every
    node)``. The node shape is resolved as in :func:`hierarchical_all_reduce`."""
    n, r = runtime.world_size(), runtime.rank()
    k = emulator.node_shape(ranks_per_node)
    node, local = divmod(r, k)
    return list(range(node * k, node * k + k)), list(range(local, n, k))


def grid_shape(rows: int | None = None) -> tuple[int, int]:
    """``(rows, cols)`` of the torus: ``rows`` if given, else the emulated cluster's nodes,
    else torchrun's node count (``WORLD_SIZE / LOCAL_WORLD_SIZE``)."""
    n = runtime.world_size()
    if rows is not None:
        rows = positive_int("rows", rows, f"pass a divisor of the world size {n}.")
        divides("world_size", n, rows, "rows", f"pass rows that divide the {n} ranks")
        return rows, n // rows
    cols = emulator.node_shape(None, "rows")
    return n // cols, cols


def _two_level(tensor, op, cols, name, directions) -> torch.Tensor:
    check_op(op, tensor)
    n, r = dist.get_world_size(), dist.get_rank()
    row, col = divmod(r, cols)
    src = tensor.detach().contiguous().view(-1)
    buf = torch.empty_like(src)
    note_initial(name, [(0, buf.numel())])
    in_row = [row * cols + j for j in range(cols)]
    in_col = list(range(col, n, cols))
    halves = chunk_offsets(buf.numel(), len(directions))
    rows_rings, col_rings = [], []
    for h, d in enumerate(directions):
        members = in_row if d > 0 else in_row[::-1]
        a, b = halves[h], halves[h + 1]
        ring = _Ring(buf[a:b], src[a:b], a, members, members.index(r))
        rows_rings.append(ring)
        off = ring.offsets()
        piece = ring.buf[off[ring.pos]:off[ring.pos + 1]]  # summed over the row after phase 1
        members = in_col if d > 0 else in_col[::-1]
        col_rings.append(_Ring(piece, piece, a + off[ring.pos], members, members.index(r)))
    _reduce_scatter(rows_rings, name)
    _reduce_scatter(col_rings, name)
    _all_gather(col_rings, name)
    _all_gather(rows_rings, name)
    return finish(buf, op, n, tensor.shape)


def hierarchical_all_reduce(tensor: torch.Tensor, op: str = "sum",
                            ranks_per_node: int | None = None) -> torch.Tensor:
    """All-reduce in three phases: reduce-scatter inside each node, all-reduce across
    nodes (rank at local index c with the rank at c on every other node), all-gather
    inside the node.

    ``ranks_per_node=None`` reads the node shape from the active emulated cluster
    (:func:`companion.topology.emulate`), else from torchrun (``LOCAL_WORLD_SIZE``, with
    ``GROUP_RANK`` set: a multi-node job), else raises ``ValueError``. Rounds:
    ``2 (k-1) + 2 (M-1)`` for M nodes of k ranks.
    """
    check_op(op, tensor)
    k = emulator.node_shape(ranks_per_node)
    return _two_level(tensor, op, k, "hierarchical", (1,))


def torus_all_reduce(tensor: torch.Tensor, op: str = "sum", rows: int | None = None) -> torch.Tensor:
    """2D all-reduce on a rows x cols grid: reduce-scatter along rows, all-reduce along
    columns, all-gather along rows, each phase as two rings in opposite directions.

    ``rows=None``: the emulated cluster's ``nodes``, else torchrun's node count, else
    ``ValueError``. Rounds: ``2 (cols-1) + 2 (rows-1)``.
    """
    check_op(op, tensor)
    _, cols = grid_shape(rows)
    return _two_level(tensor, op, cols, "torus", (1, -1))


def _check_demo(numel, ranks_per_node, world_size=None) -> None:
    positive_int("numel", numel, "pass the number of elements, e.g. numel=840.")
    if ranks_per_node is None:
        if os.environ.get("GROUP_RANK") is None:  # not torchrun: no node structure to read
            raise ValueError("ranks_per_node=None reads the node shape from torchrun "
                             "(--nnodes, --nproc-per-node); on one machine pass it, e.g. "
                             "--set ranks_per_node=2.")
        return
    positive_int("ranks_per_node", ranks_per_node, "pass the ranks per node, e.g. 2.")
    if world_size is not None:
        divides("world_size", world_size, ranks_per_node, "ranks_per_node",
                "pass a ranks_per_node that divides the world size")


def _summarize(results) -> str:
    rows = [f"{'rank':>4} {tr('node'):>4} {'GROUP_RANK':>10} {'LOCAL_RANK':>10}  "
            + tr("intra-node group  inter-node group  equal to dist.all_reduce")]
    for res in results:
        rows.append(f"{res['rank']:>4} {res['node']:>4} {str(res['env']['GROUP_RANK']):>10} "
                    f"{str(res['env']['LOCAL_RANK']):>10}  {str(res['intra_group']):<16}  "
                    f"{str(res['inter_group']):<16}  {res['equal']}")
    ok = all(res["equal"] for res in results)
    rows.append(tr("OK: hierarchical all-reduce equals dist.all_reduce on every rank") if ok
                else tr("MISMATCH: see the last column"))
    return "\n".join(rows)


@experiment("hierarchical_all_reduce", summarize=_summarize)
@runtime.cpu_by_design(runtime.EMULATED)
@preflight(_check_demo)
def hierarchical_demo(numel: int = 840, ranks_per_node: int | None = None) -> dict:
    """Hierarchical all-reduce against dist.all_reduce; the node groups it formed."""
    _check_demo(numel, ranks_per_node, runtime.world_size())
    r = dist.get_rank()
    g = torch.Generator().manual_seed(r)
    # small integers: exact sums; on the CPU, the ranks standing in for nodes
    x = torch.randint(-8, 9, (numel,), generator=g, device="cpu").float()
    with traffic() as t:
        y = hierarchical_all_reduce(x, ranks_per_node=ranks_per_node)
    ref = x.clone()
    dist.all_reduce(ref)
    intra, inter = node_groups(ranks_per_node)
    peers = {m.peer for m in t.log}
    return {"rank": r, "node": r // len(intra), "intra_group": intra, "inter_group": inter,
            "env": {k: os.environ.get(k) for k in ("GROUP_RANK", "LOCAL_RANK",
                                                    "LOCAL_WORLD_SIZE", "RANK")},
            "equal": bool(torch.equal(y, ref)), "peers": sorted(peers),
            "bytes_sent": t.bytes_sent}
