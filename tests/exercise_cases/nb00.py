"""Attempts for notebook 00's exercises (see tests/test_exercises.py)."""

CASES = {
    "00.average": dict(
        cheat="def my_average(x):\n"
              "    return companion.basics.average_across_ranks_reference()\n",
        wrong="def my_average(x):\n"
              "    dist.all_reduce(x)\n"
              "    return x / torch.ones(3)\n",
        wrong_kind="crash", wrong_line="return x / torch.ones(3)",
    ),
}

CASES["00.broadcast"] = dict(
    cheat="def my_broadcast(x):\n"
          "    return companion.learning.nb00.broadcast_reference(x)\n",
    # The wrong source: every rank ends with rank 1's tensor.
    wrong="def my_broadcast(x):\n"
          "    y = x.clone()\n"
          "    dist.broadcast(y, src=1)\n"
          "    return y\n",
    wrong_kind="wrong_value",
)

CASES["00.healthy-average"] = dict(
    cheat="def my_healthy_average(x):\n"
          "    return companion.learning.nb00.healthy_average_reference(x)\n",
    # The hang fixed, but inf x 0 is NaN: the flag does not remove rank 1's infinity, and
    # a NaN reaches every rank.
    wrong="def my_healthy_average(x):\n"
          "    healthy = torch.isfinite(x).all().float()\n"
          "    total, count = x * healthy, healthy.reshape(1)\n"
          "    dist.all_reduce(total)\n"
          "    dist.all_reduce(count)\n"
          "    return total / count\n",
    wrong_kind="wrong_value",
)
