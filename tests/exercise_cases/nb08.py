"""Attempts for notebook 08's exercises (see tests/test_exercises.py)."""

CASES = {
    "08.sync-sgd": dict(
        # The package's loop does the whole exercise (on torch's own all-reduce).
        cheat="def my_sync_sgd(grad_fn, w, steps, lr):\n"
              "    link = companion.learning.nb08.TorchLink()\n"
              "    companion.dga.algorithms.run_worker(grad_fn, w, link, algorithm='sync',\n"
              "                                        steps=steps, lr=lr)\n"
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
        # The notebook's broken loop as given: it waits for this step's message (pop, not
        # popleft), never for the older ones, and averages the gradient it keeps in place.
        wrong="def my_dga(grad_fn, w, steps, lr, delay):\n"
              "    pending = collections.deque()\n"
              "    for t in range(steps):\n"
              "        grad, loss = grad_fn(w, t)\n"
              "        work = dist.all_reduce(grad, op=dist.ReduceOp.AVG, async_op=True)\n"
              "        pending.append((grad, grad, work))\n"
              "        if t >= delay:\n"
              "            g_old, avg_old, work_old = pending.pop()\n"
              "            work_old.wait()\n"
              "            w -= lr * (grad - g_old + avg_old)\n"
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
        # Plain FedAvg, blocking at the end of each round: the schedule shows every
        # average waited for at once, not a round later.
        wrong="def my_fedavg(grad_fn, w, steps, lr, local_steps):\n"
              "    for i in range(steps):\n"
              "        g, loss = grad_fn(w, i)\n"
              "        w -= lr * g\n"
              "        if (i + 1) % local_steps == 0:\n"
              "            dist.all_reduce(w, op=dist.ReduceOp.AVG)\n"
              "    return w\n",
        wrong_kind="wrong_value",
    ),
}
