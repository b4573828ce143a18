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
    "11.torus": dict(
        cheat="import companion\n\n"
              "def my_torus_all_reduce(x, cols):\n"
              "    return companion.collectives.torus_all_reduce(x, rows=dist.get_world_size() // cols)\n",
        # Both directions, but one half after the other: balanced bytes, twice the rounds.
        wrong="def ring(buf, ring, gather):\n"
              "    m, p = len(ring), ring.index(dist.get_rank())\n"
              "    chunks = buf.tensor_split(m)\n"
              "    for s in range(m - 1):\n"
              "        out = chunks[(p - s) % m] if gather else chunks[(p - s - 1) % m]\n"
              "        into = chunks[(p - s - 1) % m] if gather else chunks[(p - s - 2) % m]\n"
              "        got = into if gather else torch.empty_like(into)\n"
              "        exchange([(ring[(p + 1) % m], out, 0, 'copy')], [(ring[(p - 1) % m], got, 0, 'copy')])\n"
              "        if not gather:\n"
              "            into += got\n"
              "    return chunks[p]\n\n"
              "def my_torus_all_reduce(x, cols):\n"
              "    n, r = dist.get_world_size(), dist.get_rank()\n"
              "    row = [r // cols * cols + j for j in range(cols)]\n"
              "    column = list(range(r % cols, n, cols))\n"
              "    out = x.clone()\n"
              "    for half, turn in zip(out.tensor_split(2), (1, -1)):\n"
              "        chunk = ring(half, row[::turn], False)\n"
              "        ring(chunk, column[::turn], False)\n"
              "        ring(chunk, column[::turn], True)\n"
              "        ring(half, row[::turn], True)\n"
              "    return out\n",
        wrong_kind="wrong_value",
    ),
}
