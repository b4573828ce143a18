"""Attempts for notebook 12's exercises (see tests/test_exercises.py)."""

CASES = {
    "12.megatron-placements": dict(
        cheat="import companion\n\n"
              "def my_megatron_placements(w1, w2, mesh):\n"
              "    return companion.learning.nb12.megatron_placements_reference(w1, w2, mesh)\n",
        # Both matrices split along dimension 0: right values, but DTensor must gather
        # the hidden activation that W2's rows need (an all-gather the lecture's plan avoids).
        wrong="def my_megatron_placements(w1, w2, mesh):\n"
              "    return distribute_tensor(w1, mesh, [Shard(0)]), distribute_tensor(w2, mesh, [Shard(0)])\n",
        wrong_kind="wrong_value",
    ),
    "12.stage-slicing": dict(
        cheat="import companion\n\n"
              "def my_stage_slicing(times, nodes, gpus_per_node):\n"
              "    return companion.learning.nb12.stage_slicing_reference(times, nodes, gpus_per_node)\n",
        # The recurrence as the notebook prints it, any number of GPUs per stage: a lower
        # slowest stage, on sub-meshes the cluster does not have (3 GPUs of a node of 4).
        wrong="def my_stage_slicing(times, nodes, gpus_per_node):\n"
              "    n, devices = len(times), nodes * gpus_per_node\n"
              "    best = [[math.inf] * (devices + 1) for _ in range(n + 1)]\n"
              "    choice = [[None] * (devices + 1) for _ in range(n + 1)]\n"
              "    best[0][0] = 0.0\n"
              "    for j in range(1, n + 1):\n"
              "        for d in range(1, devices + 1):\n"
              "            for i in range(j):\n"
              "                for k in range(1, d + 1):\n"
              "                    v = max(best[i][d - k], stage_time(times, i, j, k))\n"
              "                    if v < best[j][d]:\n"
              "                        best[j][d], choice[j][d] = v, (i, k)\n"
              "    stages, j, d = [], n, devices\n"
              "    while j:\n"
              "        i, k = choice[j][d]\n"
              "        stages.append((i, j, k))\n"
              "        j, d = i, d - k\n"
              "    return best[n][devices], stages[::-1]\n",
        wrong_kind="wrong_value",
    ),
    "12.expert-grads": dict(
        cheat="import companion\n\n"
              "def my_sync_grads(model, mesh):\n"
              "    companion.learning.nb12.expert_grads_reference(model, mesh)\n",
        # The right groups, the tempting divisor: an expert's copies are dp, so divide by
        # dp. Its gradient already summed its EP group's tokens: ep times too large.
        wrong="def my_sync_grads(model, mesh):\n"
              "    world, dp = dist.get_world_size(), mesh.size(0)\n"
              "    for name, p in model.named_parameters():\n"
              "        expert = name.startswith('moe.experts.')\n"
              "        dist.all_reduce(p.grad, group=mesh.get_group('dp') if expert else None)\n"
              "        p.grad /= dp if expert else world\n",
        wrong_kind="wrong_value",
    ),
}
