"""Notebook 11's exercises 11.placement and 11.torus, and the real runs they check.

Registered on import of :mod:`companion.learning.nb11`
(``notebooks/11_networks_and_topology.ipynb``), which holds the other two.

* ``11.placement`` (warm-up, decide): choose where TP and DP go on a cluster, rank ->
  (dp, tp). Tried on several cluster shapes, then every rank of the emulated 2 x 2
  cluster takes its slot and runs one step of notebook 09's MLP (:func:`dp_tp_step`),
  swapping TP partial sums and DP gradients through the emulated links; the weights must
  equal one process and the bytes must use the link classes the placement implies.
* ``11.torus`` (stretch, diagnose): a given 2D all-reduce turns every ring one way, so
  on a torus half of each link's capacity idles. The fix is run on a 2 x 3 torus of real
  ranks: the sums must be right, the bytes those of the 2D all-reduce, and the rounds it
  posted, played through the torus model (:func:`companion.topology.schedule_time`), as
  fast as two rings turning opposite ways.
"""
from __future__ import annotations

import torch
import torch.distributed as dist

from .. import collectives as C
from .. import topology
from ..collectives.traffic import exchange, traffic
from . import nb09
from .exercise import Exercise, register
from .feedback import defined_at
from .patterns import all_of, counts, only, per_rank
from .feedback import reworded, say


def dp_tp_step(coords: tuple[int, int], cluster, tp: int) -> dict:
    """One DP x TP step of notebook 09's MLP on the emulated ``cluster`` (tp = dp = 2),
    this rank at ``coords``: TP partial sums and DP gradients swapped with the partner
    through the emulated links. Returns the updated shards and the bytes per link class."""
    table = [None] * dist.get_world_size()
    dist.all_gather_object(table, tuple(coords))
    where = {tuple(c): q for q, c in enumerate(table)}
    d, t = coords
    tp_peer, dp_peer = where[(d, 1 - t)], where[(1 - d, t)]
    x, y, w1, w2 = nb09._full_problem()
    half = nb09.BATCH // 2
    cols = slice(t * nb09.FFN // tp, (t + 1) * nb09.FFN // tp)
    x, y = x[d * half:(d + 1) * half], y[d * half:(d + 1) * half]
    w1, w2 = w1[cols].clone().requires_grad_(), w2[:, cols].clone().requires_grad_()
    with topology.emulate(cluster), C.traffic() as log:
        partial = torch.relu(x @ w1.T) @ w2.T
        other = torch.empty_like(partial)
        exchange([(tp_peer, partial.detach(), 0, "reduce")], [(tp_peer, other, 0, "reduce")], "tp")
        parts = [partial, other] if t == 0 else [other, partial]  # one order on both ranks
        out = parts[0] + parts[1]  # the row-parallel g: the gradient passes through
        ((out - y) ** 2).mean().backward()
        grads = torch.cat([w1.grad.view(-1), w2.grad.view(-1)])
        theirs = torch.empty_like(grads)
        exchange([(dp_peer, grads, 0, "reduce")], [(dp_peer, theirs, 0, "reduce")], "dp")
    mean = ((grads + theirs) if d == 0 else (theirs + grads)) / 2
    g1, g2 = mean[:w1.numel()].view_as(w1), mean[w1.numel():].view_as(w2)
    with torch.no_grad():
        new = (w1 - nb09.LR * g1, w2 - nb09.LR * g2)
    # The same step in one process on the full batch, cut to this rank's TP slot. Summed
    # in another order, so equal to float32 rounding (1e-5 relative; the values are O(1)).
    X, Y, W1, W2 = nb09._full_problem()
    W1.requires_grad_(), W2.requires_grad_()
    ((torch.relu(X @ W1.T) @ W2.T - Y) ** 2).mean().backward()
    with torch.no_grad():
        ref = ((W1 - nb09.LR * W1.grad)[cols], (W2 - nb09.LR * W2.grad)[:, cols])
    same = all(torch.allclose(a, b, rtol=1e-5, atol=1e-6) for a, b in zip(new, ref))
    links = log.bytes_per_link()
    return {"trains like one process": same, "bytes per link class":
            {k: links.get(k, 0) for k in ("intra", "inter")}}


# ---- 11.placement -----------------------------------------------------------------------
PLACE_CLUSTER = topology.Cluster(2, 2)
PLACE_TP = 2
# The shapes the placement is tried on before the real step: (nodes, ranks_per_node, tp).
PLACE_SHAPES = ((2, 2, 2), (2, 4, 2), (2, 4, 4), (4, 2, 2), (3, 4, 2), (2, 8, 8))


def placement_reference(rank: int, nodes: int, ranks_per_node: int, tp: int) -> tuple[int, int]:
    """Megatron's order: TP innermost, so a TP group is ``tp`` consecutive ranks."""
    return rank // tp, rank % tp


def _placement_problem(candidate) -> str | None:
    problem = _placement_shapes(candidate)
    return say("{problem}.{where}", problem=reworded(problem),
               where=defined_at(candidate)) if problem else None


def _placement_shapes(candidate) -> str | None:
    for nodes, k, tp in PLACE_SHAPES:
        n, dp = nodes * k, nodes * k // tp
        coords = {}
        for r in range(n):
            c = candidate(r, nodes, k, tp)
            if (not isinstance(c, tuple) or len(c) != 2
                    or not all(isinstance(v, int) and not isinstance(v, bool) for v in c)):
                return (f"my_placement({r}, {nodes}, {k}, {tp}) returned {c!r}; return a pair "
                        "of ints (dp_index, tp_index)")
            if not (0 <= c[0] < dp and 0 <= c[1] < tp):
                return (f"my_placement({r}, {nodes}, {k}, {tp}) returned {c}; on {n} ranks with "
                        f"tp={tp} the dp index runs over 0..{dp - 1}, the tp index over 0..{tp - 1}")
            if c in coords.values():
                other = next(q for q, v in coords.items() if v == c)
                return (f"on {nodes} nodes x {k}, tp={tp}: ranks {other} and {r} both got {c}; "
                        "every (dp, tp) slot needs exactly one rank")
            coords[r] = c
        for d in range(dp):
            members = sorted(r for r, c in coords.items() if c[0] == d)
            spanned = sorted({r // k for r in members})
            if tp <= k and len(spanned) > 1:
                return (f"on {nodes} nodes x {k} ranks with tp={tp}, replica {d}'s TP group is "
                        f"ranks {members}, on nodes {spanned}: its all-reduces (two per layer, "
                        "in forward and backward) would cross the inter-node links, "
                        "though a node has room for the whole group")
    return None


def _place_inputs(rank, world_size):
    return (PLACE_CLUSTER.nodes, PLACE_CLUSTER.ranks_per_node, PLACE_TP)


def _run_placement(candidate, nodes, ranks_per_node, tp):
    coords = candidate(dist.get_rank(), nodes, ranks_per_node, tp)
    return dp_tp_step(coords, PLACE_CLUSTER, tp)


PLACEMENT = register(Exercise(
    id="11.placement", level="warm-up", kind="decide",
    title="decide where TP and DP go on the cluster",
    student_name="my_placement",
    task="A DP x TP job on a cluster of `nodes` x `ranks_per_node` ranks (numbered node by "
         "node) with tensor-parallel degree `tp`. Decide which group gets the fast links: "
         "write `my_placement(rank, nodes, ranks_per_node, tp)` returning this rank's "
         "`(dp_index, tp_index)`, so that every (dp, tp) slot gets one rank and, whenever a "
         "node can hold a whole TP group, each TP group sits inside one node. The checker "
         f"tries it on {len(PLACE_SHAPES)} cluster shapes, then runs notebook 09's DP x TP "
         "training step with your placement on the emulated 2 x 2 cluster: the weights "
         "must equal one process, and the TP partial sums must travel on intra-node links, "
         "the DP gradients across nodes.",
    hints=("A TP all-reduce runs twice per layer, on activations, in forward and in "
           "backward; the DP gradient all-reduce once per step, and it can overlap with "
           "compute. Which group needs the fast link?",
           "Ranks of one node are consecutive. Which ranks must make up one TP group for "
           "it to stay inside a node, and on which shapes is that possible?",
           "Number the slots so that the index of the group that needs the fast link "
           "changes fastest as the rank grows, the way init_device_mesh numbers a mesh "
           "whose last dimension is that group."),
    inputs=_place_inputs, expected=None, reference=placement_reference,
    adapter=_run_placement, precheck=_placement_problem,
    forbidden={"companion.learning.nb11.placement_reference":
               "it is the package's solution to this exercise",
               "torch.distributed.device_mesh.init_device_mesh":
               "it places the mesh for you; here you place it"},
    timeout=30.0,
    context="import torch\nimport companion",
))


# ---- 11.torus ---------------------------------------------------------------------------
# Section 5's torus: 2 rows x 3 columns, every link alike. A tensor of 600 kB per rank
# makes the rounds bandwidth-bound, where turning a ring both ways pays.
TORUS = topology.Cluster(2, 3, intra=(1e-3, 20e6), inter=(1e-3, 20e6), layout="torus")
TORUS_NUMEL = 150_000   # a multiple of 2 halves x 3 columns x 2 rows: every chunk equal
SLACK = 1.02            # the model time may exceed the two-way rings' by 2%


def torus_reference(x: torch.Tensor, cols: int) -> torch.Tensor:
    """The package's 2D all-reduce, two rings turning opposite ways in every phase."""
    return C.torus_all_reduce(x, rows=dist.get_world_size() // cols)


def _torus_inputs(rank, world_size):
    g = torch.Generator().manual_seed(rank)   # small integers: every order of sums is exact
    return (torch.randint(-8, 9, (TORUS_NUMEL,), generator=g).float(), TORUS.ranks_per_node)


def _run_torus(candidate, x, cols):
    """The sums, the bytes this rank's rounds sent, and the time of everybody's rounds
    on the torus model, next to the two-way rings' time."""
    with traffic() as log:
        out = candidate(x, cols)
    mine = [(m.step, m.peer, m.bytes) for m in log.log if m.op == "send"]
    table = [None] * dist.get_world_size()
    dist.all_gather_object(table, mine)   # the model plays every rank's rounds together
    rounds = {}
    for src, sends in enumerate(table):
        for step, dst, nbytes in sends:
            rounds.setdefault(step, []).append((src, dst, nbytes))
    seconds = topology.schedule_time([rounds[s] for s in sorted(rounds)], TORUS)["seconds"]
    two_way = topology.predict("torus", x.numel() * x.element_size(), TORUS)
    fast = "as fast as two rings turning opposite ways"
    return {"sum": out, "bytes your exchange rounds sent": log.bytes_sent,
            "time of your rounds on the torus model": fast if seconds <= SLACK * two_way else
            f"{1e3 * seconds:.1f} ms; two-way rings take {1e3 * two_way:.1f} ms"}


def _neighbours_only(rank, world_size, calls):
    """A ring step passes a message to the next chip; a farther peer is a shortcut that
    the torus has no switch for."""
    cols = TORUS.ranks_per_node
    row, col = divmod(rank, cols)
    near = {row * cols + (col + 1) % cols, row * cols + (col - 1) % cols,
            (rank + cols) % world_size, (rank - cols) % world_size}
    far = sorted({c.peer for c in calls if c.name in ("send", "isend")} - near)
    if far:
        return (f"it sent to rank(s) {far}, not its torus neighbours {sorted(near)}: the torus "
                "has no switch, so such a message is forwarded chip by chip across other "
                "links; build the sums from rings, each step to the next chip")
    return None


TORUS_EX = register(Exercise(
    id="11.torus", level="stretch", kind="diagnose",
    title="both directions of every torus link",
    student_name="my_torus_all_reduce",
    task=f"A torus of {TORUS.nodes} rows x {TORUS.ranks_per_node} columns (rank r at row "
         "r // cols, column r % cols), every link alike and full duplex. "
         "`one_way_torus_all_reduce(x, cols)` in the notebook sums every rank's 1-D `x` "
         "correctly, in the three phases of section 4 along rows and columns, but each ring "
         "turns one way, so every link carries data in one direction while its other "
         "direction idles. Write `my_torus_all_reduce(x, cols)` that returns the same sums "
         "with both directions of every link busy in the same rounds. Keep posting each "
         "round's messages with one `exchange(sends, recvs)` call, as the given code does: "
         "the checker compares the sums and the bytes your rounds sent, then plays all "
         "ranks' rounds through the torus model and wants them as fast as two rings "
         "turning opposite ways.",
    hints=("Run the check on `one_way_torus_all_reduce` first and read its time. In one "
           "round of its row phase, which neighbour does a rank send to, and which link "
           "direction carries nothing?",
           "Split the tensor in two halves. The second half can travel the same three "
           "phases around rings that run the other way: the ring list reversed.",
           "Running the halves one after the other balances the bytes but not the rounds: "
           "the model plays every exchange call as a round of its own. What must one "
           "exchange call hold for its round to use both directions of a link?"),
    inputs=_torus_inputs, reference=torus_reference, adapter=_run_torus,
    world_size=TORUS.world_size, pure=True, timeout=30.0,
    forbidden={"companion.collectives.hierarchical.torus_all_reduce":
               "it is the package's solution to this exercise",
               "companion.collectives.hierarchical.hierarchical_all_reduce":
               "it is the same phases with one ring each",
               "companion.collectives.hierarchical._two_level":
               "it is the package's two-way rings",
               "companion.collectives.hierarchical._reduce_scatter":
               "it is the package's multi-ring round",
               "companion.collectives.hierarchical._all_gather":
               "it is the package's multi-ring round",
               "torch.distributed.all_reduce": "build the sums from your rings' messages"},
    pattern=all_of(only("send", "recv", "isend", "irecv", "all_gather_object",
                        why="a torus all-reduce is messages between neighbours"),
                   counts({"all_gather_object": 1},
                          why="the checker's own call, which gathers your rounds"),
                   per_rank(_neighbours_only)),
    context="import torch\nimport torch.distributed as dist\n"
            "from companion.collectives.traffic import exchange",
))
