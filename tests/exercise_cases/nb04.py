"""Attempts for notebook 04's exercises (see tests/test_exercises.py)."""

CASES = {
    "04.micro-batches": dict(
        # The shortcut: the package's own plan.
        cheat="def my_plan(p, batch_size, target, budget):\n"
              "    from companion.learning.nb04 import plan_reference\n"
              "    return plan_reference(p, batch_size, target, budget)\n",
        # The plan that reads only the bubble: the fewest micro-batches that meet the
        # target, with 1F1B; at p=4, batch 32 its stages hold 16 samples, over the budget.
        wrong="def my_plan(p, batch_size, target, budget):\n"
              "    for m in range(1, batch_size + 1):\n"
              "        if batch_size % m == 0 and (p - 1) / (m + p - 1) <= target:\n"
              "            return ('1f1b', m)\n"
              "    return None\n",
        wrong_kind="precheck",
    ),
    "04.one-f-one-b": dict(
        # 1F1B is GPipe's ops reordered: sorting GPipe's would still use a builder.
        cheat="def my_1f1b(p, m):\n"
              "    return [list(ops) for ops in companion.pipeline.one_f_one_b(p, m).ops]\n",
        # Half the fix: warm-up counted from the right end, but not capped at m, so at
        # p=4, m=2 stage 0 runs a forward of micro-batch 2, which does not exist.
        wrong="def my_1f1b(p, m):\n"
              "    stages = []\n"
              "    for s in range(p):\n"
              "        w = p - 1 - s\n"
              "        ops = [Op('F', mb) for mb in range(w)]\n"
              "        for k in range(m - w):\n"
              "            ops += [Op('F', w + k), Op('B', k)]\n"
              "        stages.append(ops + [Op('B', mb) for mb in range(max(m - w, 0), m)])\n"
              "    return stages\n",
        wrong_kind="precheck",
    ),
    "04.zb-h1": dict(
        # ZB-H1 from the builder, re-wrapped.
        cheat="def my_zb_h1(p, m):\n"
              "    from companion.pipeline.schedules import zb_h1\n"
              "    return [list(ops) for ops in zb_h1(p, m).ops]\n",
        # A crash: each round takes the oldest pending W before adding this round's B,
        # so stage 0 pops from an empty list in round p-1.
        wrong="def my_zb_h1(p, m):\n"
              "    stages = []\n"
              "    for s in range(p):\n"
              "        ops, pending = [], []\n"
              "        for x in range(m + p - 1):\n"
              "            if x < m:\n"
              "                ops.append(Op('F', x))\n"
              "            if x >= p - 1:\n"
              "                ops.append(Op('W', pending.pop(0)))\n"
              "            b = x - (p - 1 - s)\n"
              "            if 0 <= b < m:\n"
              "                ops.append(Op('B', b))\n"
              "                pending.append(b)\n"
              "        stages.append(ops)\n"
              "    return stages\n",
        wrong_kind="crash", wrong_line="ops.append(Op('W', pending.pop(0)))",
    ),
    "04.zb-v": dict(
        # The package's ZB-V, op lists copied out.
        cheat="def my_zb_v(p, m):\n"
              "    return [list(ops) for ops in companion.pipeline.zb_v(p, m).ops]\n",
        # Every W straight after its B, also in the cool-down: valid, but the upstream
        # rank's next B now waits behind each W, so the bubble grows (11.1 % vs 5.9 %).
        wrong="def my_zb_v(p, m):\n"
              "    stages = []\n"
              "    for r in range(p):\n"
              "        ops, nf, nb = [], [0, 0], [0, 0]\n"
              "        def f(c):\n"
              "            ops.append(Op('F', nf[c], c)); nf[c] += 1\n"
              "        def bw(c):\n"
              "            ops.extend([Op('B', nb[c], c), Op('W', nb[c], c)]); nb[c] += 1\n"
              "        for _ in range(2 * (p - r) - 1):\n"
              "            f(0)\n"
              "        for _ in range(r):\n"
              "            f(1); f(0)\n"
              "        for _ in range(p - r):\n"
              "            f(1); bw(1)\n"
              "        while nf[0] < m or nf[1] < m:\n"
              "            if nf[0] < m:\n"
              "                f(0)\n"
              "            bw(0); f(1); bw(1)\n"
              "        while nb[0] < m or nb[1] < m:\n"
              "            if nb[0] < m:\n"
              "                bw(0)\n"
              "            if nb[1] < m:\n"
              "                bw(1)\n"
              "        stages.append(ops)\n"
              "    return stages\n",
        wrong_kind="precheck",
    ),
}
