"""Process-group set-up and tear-down: the one helper pair every rank goes through.

Taught in notebook 00 (``notebooks/00_launching_ranks.ipynb``).

The same two functions serve three ways of starting ranks:

* :func:`companion.launch` from a notebook cell (it passes rank, world size and a
  file rendezvous explicitly);
* ``python -m companion run NAME --world-size N`` (which calls ``launch``);
* ``torchrun ... -m companion run NAME`` on one or many nodes, where rank, world size
  and the rendezvous address come from torchrun's environment variables.

Code that runs *inside* a rank asks :func:`rank`, :func:`world_size` and
:func:`device` rather than reading globals, so it does not care who started it.
"""
from __future__ import annotations

import contextlib
import datetime
import os
import socket

import torch
import torch.distributed as dist

from .validation import nonnegative_int, one_of, positive_int, positive_number

__all__ = [
    "setup_process_group",
    "teardown_process_group",
    "process_group",
    "rank",
    "world_size",
    "local_rank",
    "device",
    "backend",
    "loopback_interface",
]

DEFAULT_TIMEOUT_S = 60.0


def loopback_interface() -> str:
    """Name of this machine's loopback interface ("lo" on Linux, "lo0" on macOS).

    gloo and NCCL bind their data sockets on the interface named in
    ``GLOO_SOCKET_IFNAME`` / ``NCCL_SOCKET_IFNAME``; pinning them to loopback keeps a
    notebook's ranks from listening on the student's Wi-Fi address.
    """
    try:
        names = [name for _, name in socket.if_nameindex()]
    except OSError:  # pragma: no cover - platforms without if_nameindex
        names = []
    for name in names:
        if name == "lo" or name.startswith("lo0"):
            return name
    for name in names:
        if name.startswith("lo"):
            return name
    return "lo"


def plugin_backend(name) -> bool:
    """Whether ``name`` is a backend registered with ``torch.distributed.Backend.
    register_backend`` (the exercise checker's recording group, notebook 00)."""
    return isinstance(name, str) and name.upper() in getattr(dist.Backend, "_plugins", {})


def plugin_of(name):
    """The registration of plugin backend ``name`` (None for gloo/nccl), for the ranks."""
    return dist.Backend._plugins[name.upper()] if plugin_backend(name) else None


def register_plugin(name, plugin) -> None:
    """In a rank: register what :func:`plugin_of` found in the parent, unless unpickling
    its creator already did (the creator's module registers itself on import)."""
    if plugin is not None and not plugin_backend(name):
        dist.Backend.register_backend(name, plugin.creator_fn, extended_api=plugin.extended_api,
                                      devices=["cpu"])


def _env_int(name: str) -> int | None:
    value = os.environ.get(name)
    return int(value) if value not in (None, "") else None


def setup_process_group(
    rank: int | None = None,
    world_size: int | None = None,
    backend: str = "gloo",
    init_method: str | None = None,
    timeout: float = DEFAULT_TIMEOUT_S,
    loopback_only: bool = True,
) -> None:
    """Initialise the default process group (no-op if one already exists).

    With ``rank``/``world_size``/``init_method`` left as ``None`` they come from the
    environment torchrun sets (``RANK``, ``WORLD_SIZE``, ``MASTER_ADDR``,
    ``MASTER_PORT``), so the same code runs under ``torchrun`` on several nodes.

    ``timeout`` bounds every collective: torch's default is 30 minutes, which would
    freeze a notebook for that long when one rank never joins.

    ``loopback_only`` pins gloo/NCCL sockets to the loopback interface; the launcher
    sets it (all ranks are on this machine), the torchrun path does not (ranks may be
    on other nodes).
    """
    if dist.is_initialized():
        return
    if rank is None:
        rank = _env_int("RANK")
    if world_size is None:
        world_size = _env_int("WORLD_SIZE")
    if rank is None or world_size is None:
        raise ValueError(
            "setup_process_group needs rank and world_size, either as arguments or "
            "from torchrun's RANK/WORLD_SIZE environment variables; start the script "
            "with `torchrun --nproc-per-node N ...` or call companion.launch(fn)."
        )
    # Checked here, not by init_process_group: a world_size of 0 or a rank past the end
    # would otherwise wait at the rendezvous until the timeout.
    world_size = positive_int("world_size", world_size, "pass the number of ranks, such as 2.")
    rank = nonnegative_int("rank", rank, "ranks are numbered from 0.")
    if rank >= world_size:
        raise ValueError(f"rank={rank} must be below world_size={world_size}; ranks are "
                         f"numbered 0..{world_size - 1}.")
    if not plugin_backend(backend):
        one_of("backend", backend, ("gloo", "nccl"),
               "use 'gloo' on the CPU or 'nccl' with one GPU per rank.")
    positive_number("timeout", timeout, "pass the seconds a collective may take, such as 60.")
    if init_method is None:
        init_method = "env://"
    if loopback_only:
        iface = loopback_interface()
        os.environ.setdefault("GLOO_SOCKET_IFNAME", iface)
        os.environ.setdefault("NCCL_SOCKET_IFNAME", iface)
    if backend == "nccl":
        if torch.cuda._is_in_bad_fork():
            # A process forked from one that had started CUDA cannot use it; the launcher
            # forks ranks from an exec'd server so this never happens, and says so if it does.
            raise RuntimeError(f"rank {rank} was forked from a process that had initialised "
                               "CUDA, so it cannot use the GPU; start ranks with "
                               "companion.launch or torchrun, not os.fork.")
        # Rank r on a node owns cuda:LOCAL_RANK; set it before NCCL creates communicators.
        torch.cuda.set_device(local_rank_default(rank))
    kwargs, spec = {}, backend
    if backend == "nccl":
        kwargs["device_id"] = torch.device("cuda", torch.cuda.current_device())
        # NCCL alone has no CPU backend: a collective on a CPU tensor (a table a rank
        # builds on the host, a one-rank cell of notebook 05 or 07) would fail with "No
        # backend type associated with device type cpu". Gloo serves the CPU tensors.
        spec = "cpu:gloo,cuda:nccl"
    dist.init_process_group(
        backend=spec,
        init_method=init_method,
        rank=rank,
        world_size=world_size,
        timeout=datetime.timedelta(seconds=timeout),
        **kwargs,
    )


def teardown_process_group() -> None:
    """Destroy the default process group if there is one (safe to call twice)."""
    if dist.is_initialized():
        try:
            dist.destroy_process_group()
        except Exception:  # noqa: BLE001 - a failed peer must not mask the real error
            pass


@contextlib.contextmanager
def process_group(**kwargs):
    """``with process_group(...):`` sets up on entry and always tears down on exit."""
    setup_process_group(**kwargs)
    try:
        yield
    finally:
        teardown_process_group()


def local_rank_default(global_rank: int) -> int:
    value = _env_int("LOCAL_RANK")
    return value if value is not None else global_rank


def rank() -> int:
    """This process's rank (0 outside a process group)."""
    return dist.get_rank() if dist.is_initialized() else 0


def world_size() -> int:
    """Number of ranks in the default group (1 outside a process group)."""
    return dist.get_world_size() if dist.is_initialized() else 1


def local_rank() -> int:
    """Rank within this node: torchrun's ``LOCAL_RANK``, else the global rank."""
    return local_rank_default(rank())


def backend() -> str | None:
    """Backend of the default group ("gloo", "nccl"), or None outside one. A group made
    with ``backend="nccl"`` (gloo beside it for CPU tensors) reports "nccl"."""
    if not dist.is_initialized():
        return None
    name = str(dist.get_backend())
    return "nccl" if "nccl" in name else name


def device() -> torch.device:
    """The device this rank should compute on: its own GPU under NCCL, else the CPU.

    The one helper every rank function takes its device from (notebook 00); the GPU
    check's audit (:mod:`companion.learning.placement`) finds tensors and models made without it."""
    if backend() == "nccl":
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")



def synchronize() -> None:
    """Wait until this rank's device has finished its queued work; a no-op on the CPU.

    Under NCCL a collective's ``wait()`` and a kernel launch return before the GPU is
    done, so a clock read after them measures the host's issue time; every timing in a
    rank function calls this before reading the clock."""
    dev = device()
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)

# Why a rank function stays on the CPU on every machine; the launcher's banner says it.
LOOPBACK = "it times gloo on this machine's loopback, which is the lesson; on GPUs it would time NVLink, another lesson"
EMULATED = "it emulates nodes or a slow link on one machine with gloo"


def cpu_by_design(why: str):
    """Decorator: ``fn`` is a rank function whose lesson runs on the CPU on every machine
    (``why``: :data:`LOOPBACK` or :data:`EMULATED`). Under ``backend="auto"`` the launcher
    then starts gloo even where there is a GPU per rank, and its banner says why
    (notebook 00); the GPU check keeps the list of such functions."""
    one_of("why", why, (LOOPBACK, EMULATED), "use runtime.LOOPBACK or runtime.EMULATED.")

    def mark(fn):
        fn.cpu_by_design = why
        return fn
    return mark
