"""Attempts for notebook 02's exercises (see tests/test_exercises.py)."""

CASES = {
    "02.parameter-server": dict(
        cheat="def my_parameter_server_all_reduce(x):\n"
              "    return C.parameter_server_all_reduce(x)\n",
        # the server forgets its own tensor: it starts from zeros
        wrong="def my_parameter_server_all_reduce(x):\n"
              "    n, r = dist.get_world_size(), dist.get_rank()\n"
              "    total = torch.zeros_like(x)\n"
              "    if r == 0:\n"
              "        buf = torch.empty_like(x)\n"
              "        for w in range(1, n):\n"
              "            dist.recv(buf, src=w)\n"
              "            total += buf\n"
              "        for w in range(1, n):\n"
              "            dist.send(total, dst=w)\n"
              "    else:\n"
              "        dist.send(x, dst=0)\n"
              "        dist.recv(total, src=0)\n"
              "    return total\n",
        wrong_kind="wrong_value",
    ),
    "02.tree": dict(
        cheat="def my_tree_all_reduce(x):\n"
              "    total = C.reduce(x, dst=0)\n"
              "    return C.broadcast(total if total is not None else torch.empty_like(x), src=0)\n",
        # the broadcast runs the distances in the same order as the reduce (1, 2, 4):
        # rank 2 passes its partial sum to rank 3 before it has the total
        wrong="def my_tree_all_reduce(x):\n"
              "    n, r = dist.get_world_size(), dist.get_rank()\n"
              "    total, buf = x.clone(), torch.empty_like(x)\n"
              "    ds, d = [], 1\n"
              "    while d < n:\n"
              "        ds.append(d)\n"
              "        d *= 2\n"
              "    for d in ds:\n"
              "        if r % (2 * d) == d:\n"
              "            dist.send(total, r - d)\n"
              "        elif r % (2 * d) == 0 and r + d < n:\n"
              "            dist.recv(buf, r + d)\n"
              "            total += buf\n"
              "    for d in ds:\n"
              "        if r % (2 * d) == 0 and r + d < n:\n"
              "            dist.send(total, r + d)\n"
              "        elif r % (2 * d) == d:\n"
              "            dist.recv(total, r - d)\n"
              "    return total\n",
        wrong_kind="wrong_value",
    ),
    "02.pick-by-size": dict(
        cheat="def my_pick_all_reduce(x, alpha, beta):\n"
              "    n = dist.get_world_size()\n"
              "    cut = companion.collectives.costmodel.rd_rhd_crossover_bytes(n, alpha, beta)\n"
              "    if x.numel() * 4 <= cut:\n"
              "        return {'algorithm': 'recursive_doubling',\n"
              "                'result': C.recursive_doubling_all_reduce(x)}\n"
              "    return {'algorithm': 'recursive_halving_doubling',\n"
              "            'result': C.recursive_halving_doubling_all_reduce(x)}\n",
        # the bandwidth terms swapped: recursive doubling then looks cheaper at every size
        wrong="def my_pick_all_reduce(x, alpha, beta):\n"
              "    n, size = dist.get_world_size(), x.numel() * x.element_size()\n"
              "    t_rd = math.log2(n) * alpha + 2 * (n - 1) / n * size / beta\n"
              "    t_rhd = 2 * math.log2(n) * alpha + math.log2(n) * size / beta\n"
              "    if t_rd <= t_rhd:\n"
              "        return {'algorithm': 'recursive_doubling',\n"
              "                'result': C.recursive_doubling_all_reduce(x)}\n"
              "    return {'algorithm': 'recursive_halving_doubling',\n"
              "            'result': C.recursive_halving_doubling_all_reduce(x)}\n",
        wrong_kind="wrong_value",
    ),
}
