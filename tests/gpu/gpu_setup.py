"""Where the GPU checks run: read once, shared by conftest.py and the tests (see conftest.py)."""
from __future__ import annotations

import glob
import os

import pytest
import torch
import torch.distributed as dist

from companion.backends import _visible_gpus

MODE = os.environ.get("COMPANION_GPU_CHECK_DEVICE", "cuda").strip().lower() or "cuda"
if MODE not in ("cuda", "cpu"):
    raise pytest.UsageError(f"COMPANION_GPU_CHECK_DEVICE={MODE!r}: use 'cuda' (the default, "
                            "needs a GPU) or 'cpu' (dry run with gloo).")


def _why_not() -> str | None:
    if MODE == "cpu":
        return None
    devices = sorted(glob.glob("/dev/nvidia[0-9]*"))
    if torch.version.cuda is None and devices:
        # Skipping here would pass while testing nothing on exactly the machine it is for.
        raise pytest.UsageError(
            f"{len(devices)} GPU(s) visible ({', '.join(devices)}) but torch {torch.__version__} "
            "is a CPU build, so nothing could run on them. Install torch's CUDA build for this "
            "driver into the Python that runs the check (torch's install page names the "
            "index), or run `make gpu-check PYTHON=/path/to/python` with a Python whose torch "
            "has CUDA: it then installs nothing.")
    if torch.version.cuda is None:
        return (f"no CUDA: torch {torch.__version__} is a CPU build "
                "(COMPANION_GPU_CHECK_DEVICE=cpu dry-runs these checks with gloo)")
    if not dist.is_nccl_available():
        return f"no NCCL in torch {torch.__version__}, so no GPU ranks"
    if _visible_gpus() < 1:
        return "no CUDA: no GPU visible (COMPANION_GPU_CHECK_DEVICE=cpu dry-runs these checks)"
    return None


SKIP_REASON = _why_not()
GPUS = 0 if MODE == "cpu" or SKIP_REASON else _visible_gpus()
BACKEND = "nccl" if MODE == "cuda" else "gloo"  # what a rank on cuda:r runs under
DEVICE = "cuda:0" if MODE == "cuda" else "cpu"  # where rank 0 computes


def skip_without_cuda() -> None:
    """Skip the calling test module (one line in the summary) unless the check can run."""
    if SKIP_REASON:
        pytest.skip(SKIP_REASON, allow_module_level=True)
