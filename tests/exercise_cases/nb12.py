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
              "def my_stage_slicing(times, devices):\n"
              "    return companion.learning.nb12.stage_slicing_reference(times, devices)\n",
        # Equal layers, one device per stage: what the DP is there to beat.
        wrong="def my_stage_slicing(times, devices):\n"
              "    n = len(times)\n"
              "    bounds = [round(i * n / devices) for i in range(devices + 1)]\n"
              "    stages = [(bounds[i], bounds[i + 1], 1) for i in range(devices) if bounds[i + 1] > bounds[i]]\n"
              "    return max(stage_time(times, *s) for s in stages), stages\n",
        wrong_kind="wrong_value",
    ),
    "12.cp-ep-degrees": dict(
        cheat="from companion import planner\n\n"
              "def my_cp_ep(model, cluster, global_batch, tp, pp):\n"
              "    best = planner.plan(model, cluster, global_batch, cp_options=CP_DEGREES,\n"
              "                        tp_options=(tp,))[0][0]\n"
              "    return best.cp, best.ep\n",
        # Never split a sequence: the 128K stage cannot fill its pipeline (or its memory).
        wrong="def my_cp_ep(model, cluster, global_batch, tp, pp):\n"
              "    return 1, ep_options(model)[-1]\n",
        wrong_kind="wrong_value",
    ),
}
