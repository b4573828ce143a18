"""GPU readiness checks, run by ``make gpu-check``.

Every test here needs CUDA, NCCL and at least one visible GPU; without them each module
skips as a whole (``gpu_setup.skip_without_cuda``): one line in the summary gives the
reason, and ``make test`` and ``make gpu-check`` stay green on a laptop. ``COMPANION_GPU_CHECK_DEVICE=cpu`` runs the same tests with gloo on the CPU: a dry
run of the code paths (launch, comparisons, tolerances) for machines without a GPU. It is
never set by ``make test``.

The GPU is detected the way the launcher detects it (``companion.backends``: NVML first), so
this process never initialises CUDA itself; only the ranks own the GPU.
"""
from __future__ import annotations

import pytest

from gpu_setup import SKIP_REASON


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session, exitstatus):
    # Modules skipped as a whole leave no test items, which pytest reports as exit status 5
    # ("no tests collected"); for `make gpu-check` on a machine without CUDA that is the
    # expected, clean outcome.
    if SKIP_REASON and exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED:
        session.exitstatus = pytest.ExitCode.OK
