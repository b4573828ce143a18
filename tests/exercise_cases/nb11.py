"""Attempts for notebook 11's exercises (see tests/test_exercises.py)."""

CASES = {
    "11.swap": dict(
        cheat="def my_swap(x, ranks_per_node):\n"
              "    return companion.learning.nb11.swap_reference(x, ranks_per_node)\n",
        # The neighbour on the same node: the fast link, and the wrong partner.
        wrong="def my_swap(x, ranks_per_node):\n"
              "    peer = dist.get_rank() ^ 1\n"
              "    out = torch.empty_like(x)\n"
              "    reqs = [dist.isend(x, peer), dist.irecv(out, peer)]\n"
              "    for req in reqs:\n"
              "        req.wait()\n"
              "    return out\n",
        wrong_kind="wrong_value",
    ),
    "11.hierarchical": dict(
        cheat="def my_hierarchical_all_reduce(x, ranks_per_node):\n"
              "    return companion.collectives.hierarchical_all_reduce(x, ranks_per_node=ranks_per_node)\n",
        # Right sums, but the whole tensor crosses the nodes: the node's sum is all-reduced
        # (reduce-scatter + all-gather) in the node, then the full tensor across nodes.
        wrong="def my_hierarchical_all_reduce(x, ranks_per_node):\n"
              "    n, r, k = dist.get_world_size(), dist.get_rank(), ranks_per_node\n"
              "    rows = [dist.new_group(list(range(i, i + k))) for i in range(0, n, k)]\n"
              "    cols = [dist.new_group(list(range(j, n, k))) for j in range(k)]\n"
              "    out = x.clone()\n"
              "    for g, size in ((rows[r // k], k), (cols[r % k], n // k)):\n"
              "        piece = torch.empty(out.numel() // size)\n"
              "        dist.reduce_scatter_single(piece, out, group=g)\n"
              "        dist.all_gather_single(out, piece, group=g)\n"
              "    return out\n",
        wrong_kind="pattern",
    ),
    "11.placement": dict(
        cheat="def my_placement(rank, nodes, ranks_per_node, tp):\n"
              "    return companion.learning.nb11.placement_reference(rank, nodes, ranks_per_node, tp)\n",
        # TP outermost: a TP pair is (0, 2), one rank on each node.
        wrong="def my_placement(rank, nodes, ranks_per_node, tp):\n"
              "    dp = nodes * ranks_per_node // tp\n"
              "    return rank % dp, rank // dp\n",
        wrong_kind="precheck",
    ),
}
