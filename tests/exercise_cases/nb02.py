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
              "    n, size = dist.get_world_size(), x.numel() * x.element_size()\n"
              "    M = companion.collectives.costmodel\n"
              "    seconds = {a: M.predict_time(a, size, n, alpha, beta)\n"
              "               for a in ('tree', 'ring', 'recursive_doubling')}\n"
              "    best = min(seconds, key=seconds.get)\n"
              "    return {'algorithm': best, 'seconds': seconds[best],\n"
              "            'result': C.ALL_REDUCE_ALGORITHMS[best](x)}\n",
        # MPICH's rule with notebook 01's crossover, as if 6 were a power of two: it never
        # considers the ring, which wins for large tensors once both recursive algorithms fold
        wrong="def my_pick_all_reduce(x, alpha, beta):\n"
              "    n, size = dist.get_world_size(), x.numel() * x.element_size()\n"
              "    steps = math.log2(n)\n"
              "    t_rd = steps * alpha + steps * size / beta\n"
              "    t_rhd = 2 * steps * alpha + 2 * (n - 1) / n * size / beta\n"
              "    best = 'recursive_doubling' if t_rd <= t_rhd else 'recursive_halving_doubling'\n"
              "    return {'algorithm': best, 'seconds': min(t_rd, t_rhd),\n"
              "            'result': C.ALL_REDUCE_ALGORITHMS[best](x)}\n",
        wrong_kind="wrong_value",
    ),
}
