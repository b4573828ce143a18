"""Which backend and how many ranks: the launcher's decisions, explained.

Taught in notebook 00. ``backend="auto"`` picks NCCL only with one GPU per rank and
says why it did not otherwise; CPU world sizes are bounded by the cores available.
"""
from __future__ import annotations

import functools
import os

import torch
import torch.distributed as dist

from .validation import one_of, positive_int, positive_number
from .i18n import _

__all__ = ["cpu_cores", "max_world_size", "choose_backend", "validate_launch",
           "MAX_RANKS_PER_CORE"]

BACKENDS = ("auto", "gloo", "nccl")
MAX_RANKS_PER_CORE = 4  # beyond this, gloo ranks spend their time context-switching


def cpu_cores() -> int:
    """Cores this process may run on (respects taskset/cgroup affinity)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - macOS
        return os.cpu_count() or 1


def max_world_size() -> int:
    """Largest CPU world size allowed: ``MAX_RANKS_PER_CORE`` per core, at least 8.

    ``COMPANION_MAX_WORLD_SIZE`` overrides it for machines where you know better.
    """
    override = os.environ.get("COMPANION_MAX_WORLD_SIZE")
    if override:
        return int(override)
    return max(8, MAX_RANKS_PER_CORE * cpu_cores())


def _visible_gpus() -> int:
    # The CPU wheel has no CUDA at all; asking NVML first keeps the CUDA runtime out of
    # the notebook's process (its children must be the only ones to own GPUs).
    if torch.version.cuda is None:
        return 0
    count_nvml = getattr(torch.cuda, "_device_count_nvml", None)
    if count_nvml is not None:
        n = count_nvml()
        if n >= 0:
            return n
    return torch.cuda.device_count()


@functools.lru_cache(maxsize=1)
def _cuda_start_error() -> str | None:
    """None when CUDA initialises in this process, else why not (a driver older than the
    wheel's CUDA, a broken install). NVML can count GPUs that CUDA cannot use, and a rank
    that finds out in ``set_device`` dies after every other rank has started. The kernel
    may hold CUDA state safely: ranks fork from an exec'd server, never from it."""
    try:
        torch.cuda.init()
    except Exception as exc:  # noqa: BLE001 - any failure means: do not pick NCCL
        return f"{type(exc).__name__}: {exc}".splitlines()[0]
    return None


def choose_backend(backend: str, world_size: int) -> tuple[str, str]:
    """Resolve ``backend`` ("auto", "gloo" or "nccl") and say why, as (backend, reason)."""
    one_of("backend", backend, BACKENDS, "use 'auto' to let the launcher choose.")
    gpus = _visible_gpus()
    nccl = dist.is_nccl_available()
    if backend == "nccl":
        if not nccl:
            raise ValueError("backend='nccl' asked for, but this torch build has no NCCL "
                             "(a CPU wheel?); use backend='gloo' or 'auto'.")
        if gpus < world_size:
            raise ValueError(f"backend='nccl' needs one GPU per rank: {world_size} ranks but "
                             f"{gpus} GPU(s) visible; use world_size<={gpus} or backend='gloo'.")
        error = _cuda_start_error()
        if error:
            raise ValueError(f"backend='nccl' asked for, but CUDA cannot start here ({error}); "
                             "install a torch build that matches the driver, or use "
                             "backend='gloo'.")
        return "nccl", _("asked for; {gpus} GPU(s), rank r on cuda:r").format(gpus=gpus)
    if backend == "gloo":
        return "gloo", _("asked for; ranks compute on CPU")
    if gpus >= world_size and nccl:
        error = _cuda_start_error()
        if error:
            return "gloo", _("{gpus} GPU(s) visible but CUDA cannot start here ({error}), so "
                             "ranks compute on CPU").format(gpus=gpus, error=error)
        return "nccl", _("{gpus} GPU(s) visible, one per rank (rank r on cuda:r)").format(gpus=gpus)
    if torch.version.cuda is None:
        return "gloo", _("this torch build has no CUDA, so ranks compute on CPU")
    if gpus == 0:
        return "gloo", _("no GPU visible, so ranks compute on CPU")
    return "gloo", _("only {gpus} GPU(s) for {world_size} ranks and NCCL needs one per rank, so "
                     "ranks compute on CPU").format(gpus=gpus, world_size=world_size)


def backend_for(fn, backend: str, world_size: int) -> tuple[str, str]:
    """:func:`choose_backend` for the rank function ``fn``: a lesson marked
    :func:`companion.runtime.cpu_by_design` stays on gloo under "auto" even where there is a
    GPU per rank, and the reason says why (notebook 00)."""
    chosen, reason = choose_backend(backend, world_size)
    why = getattr(fn, "cpu_by_design", None)
    if why and backend == "auto" and chosen == "nccl":
        return "gloo", _("{name} computes on the CPU on every machine: {why}").format(
            name=getattr(fn, "__name__", "fn"), why=_(why))
    return chosen, reason


def validate_launch(world_size, timeout, backend) -> None:
    """TypeError/ValueError naming the fix for a world size, timeout or backend that cannot work."""
    positive_int("world_size", world_size, "pass a whole number of ranks such as 4.")
    positive_number("timeout", timeout, "pass the seconds to wait for the ranks, such as 60.")
    one_of("backend", backend, BACKENDS, "use 'auto' to let the launcher choose.")
    if backend != "nccl" and world_size > max_world_size():
        raise ValueError(
            f"world_size={world_size} is more ranks than this machine can run usefully: "
            f"{cpu_cores()} CPU core(s) allow at most {max_world_size()} CPU ranks "
            f"({MAX_RANKS_PER_CORE} per core). Use a smaller world_size, run under torchrun "
            "on more machines, or set COMPANION_MAX_WORLD_SIZE if you know better.")
