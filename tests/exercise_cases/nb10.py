"""Attempts for notebook 10's exercises (see tests/test_exercises.py)."""

CASES = {
    "10.fsdp-bound": dict(
        cheat="from companion.roofline import dp_critical_tokens\n\n"
              "def my_fsdp_verdict(batch_tokens, devices, peak_flops, bandwidth):\n"
              "    crit = dp_critical_tokens(peak_flops, bandwidth)\n"
              "    return batch_tokens / devices, crit, batch_tokens / devices > crit\n",
        # The global batch compared with the threshold: every run looks compute-bound.
        wrong="def my_fsdp_verdict(batch_tokens, devices, peak_flops, bandwidth):\n"
              "    critical = peak_flops / bandwidth\n"
              "    return batch_tokens, critical, batch_tokens > critical\n",
        wrong_kind="wrong_value",
    ),
    "10.tp-limit": dict(
        cheat="import companion\n\n"
              "def my_largest_tp(d_ff, peak_flops, bandwidth):\n"
              "    return companion.learning.nb10.largest_tp_reference(d_ff, peak_flops, bandwidth)\n",
        # The bound truncated, not a power of two: 13-way TP splits no real model evenly.
        wrong="def my_largest_tp(d_ff, peak_flops, bandwidth):\n"
              "    return max(1, int(d_ff * bandwidth / peak_flops))\n",
        wrong_kind="wrong_value",
    ),
    "10.fsdp-tp-split": dict(
        cheat="from companion import roofline\n\n"
              "def my_fsdp_tp_degrees(batch_tokens, d_ff, devices):\n"
              "    return roofline.fsdp_tp_best_degrees(batch_tokens, d_ff, devices)\n",
        # N left out of the square root: the optimum of a single device's problem.
        wrong="import math\n\n"
              "def my_fsdp_tp_degrees(batch_tokens, d_ff, devices):\n"
              "    x = 2 ** round(math.log2(math.sqrt(batch_tokens / d_ff)))\n"
              "    x = min(max(x, 1), devices)\n"
              "    return x, devices // x\n",
        wrong_kind="wrong_value",
    ),
    "10.prefetch-order": dict(
        cheat="def my_prefetch_order(units):\n"
              "    return companion.learning.nb10_prefetch.prefetch_order_reference(units)\n",
        # No prefetch: each all-gather waits for the compute before it.
        wrong="def my_prefetch_order(units):\n"
              "    order = []\n"
              "    for k in range(units):\n"
              "        order += [('gather', k), ('compute', k), ('free', k)]\n"
              "    return order\n",
        wrong_kind="precheck",
    ),
}
