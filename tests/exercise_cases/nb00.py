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
