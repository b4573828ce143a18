"""Attempts for notebook 03's exercises (see tests/test_exercises.py)."""

CASES = {
    "03.predict-memory": dict(
        # the package's formula answers the exercise
        cheat="def predict_bytes(num_params, world_size, stage):\n"
              "    import companion.data_parallel.memory as M\n"
              "    got = M.zero_memory_per_gpu(num_params, world_size, stage,\n"
              "                                precision='fp32', optimizer='adamw')\n"
              "    return {k: got[k] for k in ('params', 'grads', 'optimizer')}\n",
        # a plausible mistake: the gradients are not sharded at stage 2
        wrong="def predict_bytes(num_params, world_size, stage):\n"
              "    n = world_size\n"
              "    return {'params': 4 * num_params / (n if stage >= 3 else 1),\n"
              "            'grads': 4 * num_params / (n if stage >= 3 else 1),\n"
              "            'optimizer': 8 * num_params / (n if stage >= 1 else 1)}\n",
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
        # a plausible mistake: the padding is not cut off before reshaping
        wrong="def my_fsdp_forward(x, shards, shapes, layers):\n"
              "    n = dist.get_world_size()\n"
              "    for i, (shard, shape) in enumerate(zip(shards, shapes)):\n"
              "        gathered = torch.empty(n * shard.numel(), dtype=shard.dtype)\n"
              "        dist.all_gather_single(gathered, shard)\n"
              "        x = layers(i, x, gathered.view(shape))\n"
              "    return x\n",
        wrong_kind="crash", wrong_line="x = layers(i, x, gathered.view(shape))",
    ),
}
