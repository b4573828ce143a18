"""Attempts for notebook 09's exercises (see tests/test_exercises.py)."""

CASES = {
    "09.mesh-groups": dict(
        cheat="from torch.distributed.device_mesh import init_device_mesh\n\n"
              "def my_mesh_groups(dp, tp):\n"
              "    mesh = init_device_mesh('cpu', (dp, tp), mesh_dim_names=('dp', 'tp'))\n"
              "    return mesh.get_group('dp'), mesh.get_group('tp')\n",
        # Rows and columns swapped: the TP pair becomes (0, 2), the DP pair (0, 1).
        wrong="def my_mesh_groups(dp, tp):\n"
              "    rank = dist.get_rank()\n"
              "    rows = [dist.new_group(list(range(d * tp, (d + 1) * tp))) for d in range(dp)]\n"
              "    columns = [dist.new_group(list(range(t, dp * tp, tp))) for t in range(tp)]\n"
              "    return rows[rank // tp], columns[rank % tp]\n",
        wrong_kind="wrong_value",
    ),
    "09.dp-tp-step": dict(
        cheat="def my_hybrid_step(x, y, w1, w2, dp_group, tp_group, lr, micro_batches):\n"
              "    return companion.learning.nb09.single_process_step(x, y, w1, w2, lr,\n"
              "                                                       micro_batches)\n",
        # The notebook's broken step as given: f where the output needs g, the micro-batch
        # losses not scaled, and the DP average after every micro-batch.
        wrong="def my_hybrid_step(x, y, w1, w2, dp_group, tp_group, lr, micro_batches):\n"
              "    w1 = w1.detach().clone().requires_grad_()\n"
              "    w2 = w2.detach().clone().requires_grad_()\n"
              "    for xs, ys in zip(x.chunk(micro_batches), y.chunk(micro_batches)):\n"
              "        out = f(torch.relu(xs @ w1.T) @ w2.T, tp_group)\n"
              "        ((out - ys) ** 2).mean().backward()\n"
              "        for p in (w1, w2):\n"
              "            dist.all_reduce(p.grad, group=dp_group)\n"
              "            p.grad /= dist.get_world_size(dp_group)\n"
              "    return (w1 - lr * w1.grad).detach(), (w2 - lr * w2.grad).detach()\n",
        wrong_kind="wrong_value",
    ),
    "09.configuration": dict(
        cheat="def my_configuration(model, cluster, global_batch):\n"
              "    best = planner.plan(model, cluster, global_batch)[0][0]\n"
              "    return dict(dp=best.dp, tp=best.tp, pp=best.pp, zero=best.zero,\n"
              "                micro_batch=best.micro_batch)\n",
        # The rule of thumb taken as a target: TP = a whole node, however small the need.
        wrong="def my_configuration(model, cluster, global_batch):\n"
              "    tp = cluster.gpus_per_node\n"
              "    return dict(dp=cluster.gpus // tp, tp=tp, pp=1, zero=1, micro_batch=1)\n",
        wrong_kind="precheck",
    ),
}
