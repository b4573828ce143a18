"""Attempts for notebook 08's exercises (see tests/test_exercises.py)."""

CASES = {
    "08.sync-sgd": dict(
        # The package's loop does the whole exercise.
        cheat="def my_sync_sgd(grad_fn, w, steps, lr):\n"
              "    with companion.network.delayed.DelayedComm() as comm:\n"
              "        companion.dga.algorithms.run_worker(grad_fn, w, comm, algorithm='sync',\n"
              "                                 steps=steps, lr=lr)\n"
              "    return w\n",
        # The classic slip: all_reduce's default op is SUM, so this steps 4x too far.
        wrong="def my_sync_sgd(grad_fn, w, steps, lr):\n"
              "    for i in range(steps):\n"
              "        g, loss = grad_fn(w, i)\n"
              "        dist.all_reduce(g)\n"
              "        w -= lr * g\n"
              "    return w\n",
        wrong_kind="wrong_value",
    ),
    "08.dga-loop": dict(
        # Its own loop, but the package's correction term.
        cheat="def my_dga(grad_fn, w, steps, lr, delay):\n"
              "    in_flight = collections.deque()\n"
              "    for i in range(steps):\n"
              "        g, loss = grad_fn(w, i)\n"
              "        avg = g.clone()\n"
              "        in_flight.append((g, avg, dist.all_reduce(avg, op=dist.ReduceOp.AVG,\n"
              "                                                  async_op=True)))\n"
              "        if i >= delay:\n"
              "            g_then, avg_then, handle = in_flight.popleft()\n"
              "            handle.wait()\n"
              "            g = companion.dga.algorithms.dga_update(g, g_then, avg_then)\n"
              "        w -= lr * g\n"
              "    return w\n",
        # Stale averaging: the right schedule, without the correction term.
        wrong="def my_dga(grad_fn, w, steps, lr, delay):\n"
              "    in_flight = collections.deque()\n"
              "    for i in range(steps):\n"
              "        g, loss = grad_fn(w, i)\n"
              "        avg = g.clone()\n"
              "        in_flight.append((avg, dist.all_reduce(avg, op=dist.ReduceOp.AVG,\n"
              "                                               async_op=True)))\n"
              "        if i >= delay:\n"
              "            avg_then, handle = in_flight.popleft()\n"
              "            handle.wait()\n"
              "            w -= lr * avg_then\n"
              "    return w\n",
        wrong_kind="wrong_value",
    ),
    "08.fedavg": dict(
        # torch's own model averaging does the round's all-reduce.
        cheat="def my_fedavg(grad_fn, w, steps, lr, local_steps):\n"
              "    from torch.distributed.algorithms.model_averaging.utils import "
              "average_parameters\n"
              "    p = torch.nn.Parameter(w, requires_grad=False)\n"
              "    for i in range(steps):\n"
              "        g, loss = grad_fn(w, i)\n"
              "        w -= lr * g\n"
              "        if (i + 1) % local_steps == 0:\n"
              "            average_parameters(iter([p]), dist.group.WORLD)\n"
              "    return w\n",
        # Off by one: averages at the start of each round (steps 0, K, 2K), not the end.
        wrong="def my_fedavg(grad_fn, w, steps, lr, local_steps):\n"
              "    for i in range(steps):\n"
              "        g, loss = grad_fn(w, i)\n"
              "        w -= lr * g\n"
              "        if i % local_steps == 0:\n"
              "            dist.all_reduce(w, op=dist.ReduceOp.AVG)\n"
              "    return w\n",
        wrong_kind="wrong_value",
    ),
}
