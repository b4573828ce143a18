"""Attempts for notebook 03's exercises (see tests/test_exercises.py)."""

CASES = {
    "03.predict-memory": dict(
        # the package's formula answers the exercise
        cheat="def choose_stage(num_params, world_size, budget):\n"
              "    import companion.data_parallel.memory as M\n"
              "    for stage in range(4):\n"
              "        need = M.zero_memory_per_gpu(num_params, world_size, stage,\n"
              "                                     precision='fp32', optimizer='adamw')\n"
              "        if need['total'] <= budget:\n"
              "            return {'stage': stage, 'bytes': need['total']}\n"
              "    return {'stage': None, 'bytes': need['total']}\n",
        # a plausible mistake: the gradients are not sharded at stage 2
        wrong="def choose_stage(num_params, world_size, budget):\n"
              "    n = world_size\n"
              "    need = [16 * num_params, 8 * num_params + 8 * num_params / n,\n"
              "            8 * num_params + 8 * num_params / n, 16 * num_params / n]\n"
              "    for stage, nbytes in enumerate(need):\n"
              "        if nbytes <= budget:\n"
              "            return {'stage': stage, 'bytes': nbytes}\n"
              "    return {'stage': None, 'bytes': need[3]}\n",
        wrong_kind="wrong_value",
    ),
    "03.zero2-step": dict(
        # the package's ZeRO does the step
        cheat="def my_zero2_step(w, grad, momentum, lr, beta):\n"
              "    import companion.data_parallel.zero\n"
              "    p = torch.nn.Parameter(w.clone())\n"
              "    opt = companion.data_parallel.zero.ShardedOptimizer([p], torch.optim.SGD, stage=1,\n"
              "                                          lr=lr, momentum=beta)\n"
              "    p.grad = grad.clone()\n"
              "    opt.step()\n"
              "    return {'grad_shard': grad, 'momentum': momentum, 'weights': p.detach()}\n",
        # a plausible mistake: the reduce-scatter's sum is used as the mean
        wrong="def my_zero2_step(w, grad, momentum, lr, beta):\n"
              "    n, r = dist.get_world_size(), dist.get_rank()\n"
              "    c = w.numel() // n\n"
              "    g = torch.empty(c, dtype=grad.dtype)\n"
              "    dist.reduce_scatter_single(g, grad)\n"
              "    m = beta * momentum + g\n"
              "    full = torch.empty_like(w)\n"
              "    dist.all_gather_single(full, w[r * c:(r + 1) * c] - lr * m)\n"
              "    return {'grad_shard': g, 'momentum': m, 'weights': full}\n",
        wrong_kind="wrong_value",
    ),
    "03.fsdp-forward": dict(
        # the package's un-sharding step
        cheat="def my_fsdp_forward(x, shards, shapes, layers):\n"
              "    from companion.data_parallel.zero import unpack_chunks\n"
              "    n = dist.get_world_size()\n"
              "    for i, (shard, shape) in enumerate(zip(shards, shapes)):\n"
              "        gathered = torch.empty(n * shard.numel(), dtype=shard.dtype)\n"
              "        dist.all_gather_single(gathered, shard)\n"
              "        numel = shape[0] * shape[1]\n"
              "        w = unpack_chunks(gathered.view(n, -1), [numel])[0].view(shape)\n"
              "        x = layers(i, x, w)\n"
              "    return x\n",
        # a plausible mistake: the reduce-scatter's sum is kept as if it were the mean
        wrong="def my_fsdp_forward(x, shards, shapes, layers):\n"
              "    n = dist.get_world_size()\n"
              "    def gather(i):\n"
              "        flat = torch.empty(n * shards[i].numel(), dtype=shards[i].dtype)\n"
              "        dist.all_gather_single(flat, shards[i])\n"
              "        return flat[:shapes[i][0] * shapes[i][1]].view(shapes[i])\n"
              "    acts = [x]\n"
              "    for i in range(len(shards)):\n"
              "        acts.append(layers(i, acts[-1], gather(i)))\n"
              "    grad, grad_shards = acts[-1], [None] * len(shards)\n"
              "    for i in reversed(range(len(shards))):\n"
              "        dz = grad * (1 - acts[i + 1] ** 2)\n"
              "        dw = (dz.T @ acts[i]).reshape(-1)\n"
              "        if i > 0:\n"
              "            grad = dz @ gather(i)\n"
              "        padded = torch.zeros(n * shards[i].numel(), dtype=dw.dtype)\n"
              "        padded[:dw.numel()] = dw\n"
              "        grad_shards[i] = torch.empty_like(shards[i])\n"
              "        dist.reduce_scatter_single(grad_shards[i], padded)\n"
              "    return acts[-1], grad_shards\n",
        wrong_kind="wrong_value",
    ),
}
