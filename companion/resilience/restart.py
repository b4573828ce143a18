"""A data-parallel job that checkpoints, loses a rank, and resumes bit for bit.

Taught in notebook 10 (``notebooks/10_when_parallelism_pays.ipynb``), section 9a, after
CS336 L8 section 8 ("GPUs fail all the time ... you need redundancy") and the Llama 3
report, section 3.3.4 (https://arxiv.org/abs/2407.21783).

* :func:`train_with_checkpoints` is the rank function: ``TinyMLP`` on digits under the
  package's DDP with Adam, a ``torch.distributed.checkpoint`` (DCP) save every ``every``
  steps, and optionally one rank that sends itself ``SIGKILL`` in the middle of a step
  (no exception, no handler, no goodbye: the way a process dies with its GPU);
* :func:`kill_and_resume` is the supervisor: it runs the job once uninterrupted, then
  again with the kill; the launcher notices the dead rank and stops its peers
  (:mod:`companion.supervisor`), and the job is launched again, on fresh processes, from
  the newest complete checkpoint;
* :func:`reference_run` is the single-process reference: one process computes each
  rank's gradient and sums them in rank order, as the 2-rank all-reduce does.

Why the resumed run is equal bit for bit: the batch of step ``s`` is a function of ``s``
alone (:func:`companion.data.global_batch_indices`), the checkpoint holds every bit of
state the next step reads (weights, Adam's two moments and its step count, the step
number), and the resumed ranks repeat the same operations in the same order (same world
size, same reduction order, one thread each). IEEE arithmetic is deterministic, so the
same inputs give the same bits.
"""
from __future__ import annotations

import math
import os
import shutil
import signal
import tempfile
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F

from ..validation import nonnegative_int, positive_int, positive_number, preflight

__all__ = ["latest_checkpoint", "train_with_checkpoints", "reference_run", "kill_and_resume"]

_COMPLETE = ".metadata"  # DCP writes it last, after every rank's data: its presence = done
_KILLED_AT = "killed_at"  # the victim's wall-clock time of death, for the detection delay


def latest_checkpoint(directory) -> int | None:
    """Steps covered by the newest *complete* checkpoint in ``directory``, or None.

    A save that a failure interrupted has no ``.metadata`` file and is never chosen.
    Taught in notebook 10, 9a.
    """
    if not isinstance(directory, (str, os.PathLike)):
        raise TypeError(f"directory must be a path, got {type(directory).__name__}; "
                        "pass the folder the job saves into.")
    if not os.path.isdir(directory):
        return None
    done = [int(name.split("_")[1]) for name in os.listdir(directory)
            if name.startswith("step_") and os.path.exists(os.path.join(directory, name, _COMPLETE))]
    return max(done, default=None)


def _check(steps, every, kill_rank, kill_step, batch_size, lr, hidden, world_size=1):
    positive_int("world_size", world_size, "pass the number of ranks, e.g. 2.")
    positive_int("steps", steps, "pass the optimizer steps of the whole job, e.g. 16.")
    positive_int("every", every, "pass the steps between checkpoints, e.g. 4.")
    positive_int("batch_size", batch_size, "pass the global batch, e.g. 64.")
    positive_number("lr", lr, "pass a learning rate, e.g. 0.01.")
    positive_int("hidden", hidden, "pass the MLP's width, e.g. 32.")
    if batch_size % world_size:
        raise ValueError(f"batch_size={batch_size} must split evenly over {world_size} ranks.")
    if kill_rank is not None:
        nonnegative_int("kill_rank", kill_rank, "pass the rank to kill, or None.")
        if kill_rank >= world_size:
            raise ValueError(f"kill_rank={kill_rank} must be below world_size={world_size}.")
        nonnegative_int("kill_step", kill_step, "pass the step (from 0) in which it dies.")
        if kill_step >= steps:
            raise ValueError(f"kill_step={kill_step} must be below steps={steps}.")


def _model_and_optimizer(hidden, lr, seed):
    from ..models import TinyMLP

    model = TinyMLP(hidden=hidden, seed=seed)
    return model, torch.optim.Adam(model.parameters(), lr=lr)


def _state(model, optimizer, step):
    from torch.distributed.checkpoint.state_dict import get_state_dict

    model_state, optim_state = get_state_dict(model, optimizer)
    return {"model": model_state, "optim": optim_state, "step": torch.tensor(step)}


def _load(directory, step, model, optimizer):
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.state_dict import set_state_dict

    state = _state(model, optimizer, 0)
    dcp.load(state, checkpoint_id=os.path.join(directory, f"step_{step:06d}"))
    set_state_dict(model, optimizer, model_state_dict=state["model"],
                   optim_state_dict=state["optim"])
    return int(state["step"])


@preflight(_check)
def train_with_checkpoints(directory, steps: int = 16, every: int = 4, kill_rank=None,
                           kill_step=None, batch_size: int = 64, lr: float = 1e-2,
                           hidden: int = 32, seed: int = 0) -> dict:
    """Rank function: train, save a DCP checkpoint every ``every`` steps, resume if one
    exists; rank ``kill_rank`` dies by ``SIGKILL`` in step ``kill_step``, before its
    backward. Returns this rank's parameters, where it started, its save and load times,
    and the wall-clock time its first step began (notebook 10, 9a)."""
    import torch.distributed.checkpoint as dcp

    from ..data import digits_batch, load_digits
    from ..data_parallel.ddp import DDP

    _check(steps, every, kill_rank, kill_step, batch_size, lr, hidden, dist.get_world_size())
    torch.set_num_threads(1)  # one thread, as reference_run: no thread-count-dependent sums
    rank, world = dist.get_rank(), dist.get_world_size()
    resume = latest_checkpoint(directory)
    # A resumed job starts from other random weights: whatever it ends with came from the file.
    model, optimizer = _model_and_optimizer(hidden, lr, seed if resume is None else seed + 1)
    ddp = DDP(model)
    start, load_s = 0, math.nan
    if resume is not None:
        t0 = time.perf_counter()
        start = _load(directory, resume, model, optimizer)
        load_s = time.perf_counter() - t0
    data, saves, first_step_wall = load_digits(), [], time.time()
    t_loop = time.perf_counter()
    for step in range(start, steps):
        x, y = digits_batch(step, batch_size, rank, world, seed, data)
        loss = F.cross_entropy(ddp(x), y)
        if step == kill_step and rank == kill_rank:
            with open(os.path.join(directory, _KILLED_AT), "w") as f:
                f.write(f"{rank} {time.time()!r}")
            os.kill(os.getpid(), signal.SIGKILL)  # its peers wait in the gradient all-reduce
        optimizer.zero_grad()
        loss.backward()  # DDP all-reduces every gradient during backward
        optimizer.step()
        if (step + 1) % every == 0 or step + 1 == steps:
            t0 = time.perf_counter()
            dcp.save(_state(model, optimizer, step + 1),
                     checkpoint_id=os.path.join(directory, f"step_{step + 1:06d}"))
            saves.append(time.perf_counter() - t0)
    step_s = (time.perf_counter() - t_loop - sum(saves)) / max(1, steps - start)
    return {"params": {n: p.detach().clone() for n, p in model.named_parameters()},
            "started_at": start, "load_s": load_s, "save_s": saves, "step_s": step_s,
            "first_step_wall": first_step_wall}


def reference_run(steps: int = 16, world_size: int = 2, batch_size: int = 64,
                  lr: float = 1e-2, hidden: int = 32, seed: int = 0) -> dict:
    """One process, no checkpoint: each rank's gradient in turn, summed in rank order
    and divided by the world size, then Adam. Equal bit for bit to the 2-rank job (a sum
    of two numbers rounds the same in either order); with more ranks gloo's ring adds
    in another order. Returns ``{"params": {name: tensor}}`` (notebook 10, 9a)."""
    _check(steps, 1, None, None, batch_size, lr, hidden, world_size)
    from ..data import digits_batch, load_digits

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        model, optimizer = _model_and_optimizer(hidden, lr, seed)
        data = load_digits()
        for step in range(steps):
            grads = []
            for rank in range(world_size):
                x, y = digits_batch(step, batch_size, rank, world_size, seed, data)
                model.zero_grad(set_to_none=True)
                F.cross_entropy(model(x), y).backward()
                grads.append([p.grad.clone() for p in model.parameters()])
            for i, p in enumerate(model.parameters()):
                total = grads[0][i]
                for g in grads[1:]:
                    total = total + g[i]
                p.grad = total.div_(world_size)
            optimizer.step()
    finally:
        torch.set_num_threads(threads)
    return {"params": {n: p.detach().clone() for n, p in model.named_parameters()}}


def _max_diff(a: dict, b: dict) -> float:
    return max((x - b[n]).abs().max().item() for n, x in a.items())


def _bit_exact(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(torch.equal(x, b[n]) for n, x in a.items())


def kill_and_resume(steps: int = 16, every: int = 4, kill_rank: int = 1, kill_step: int = 10,
                    world_size: int = 2, batch_size: int = 64, lr: float = 1e-2,
                    hidden: int = 32, seed: int = 0, timeout: float = 60.0) -> dict:
    """Run the job uninterrupted; run it again, kill a rank, restart it from the newest
    complete checkpoint on fresh ranks; compare (notebook 10, 9a).

    Returns the failure the launcher reported (the rank it names, its exit code, the
    message; the rank that was killed; seconds from the kill to the report), the step the
    job resumed from, the completed steps it had to compute again, a checkpoint's bytes on
    disk, the measured save,
    load, detection and restart times, and whether the resumed parameters equal the
    uninterrupted run's (and, at 2 ranks, :func:`reference_run`'s) bit for bit.
    """
    from .. import launcher

    _check(steps, every, kill_rank, kill_step, batch_size, lr, hidden, world_size)
    positive_number("timeout", timeout, "pass the seconds one launch may take, e.g. 60.")
    options = dict(steps=steps, every=every, batch_size=batch_size, lr=lr, hidden=hidden,
                   seed=seed)
    run = dict(world_size=world_size, backend="gloo", timeout=timeout)
    root = tempfile.mkdtemp(prefix="companion-checkpoints-")
    try:
        clean_dir, failing_dir = os.path.join(root, "uninterrupted"), os.path.join(root, "failing")
        t0 = time.perf_counter()
        clean = launcher.launch(train_with_checkpoints, clean_dir, **options, **run)
        clean_s = time.perf_counter() - t0
        failure = None
        try:
            launcher.launch(train_with_checkpoints, failing_dir, **options, kill_rank=kill_rank,
                            kill_step=kill_step, **run)
        except launcher.LaunchError as error:
            detected = time.time()
            failure = {"rank": error.rank, "exitcode": error.exitcode,
                       "message": str(error).splitlines()[0]}
        if failure is None:
            raise RuntimeError(f"rank {kill_rank} was to die in step {kill_step}, but the job "
                               "finished; the failure was not injected.")
        with open(os.path.join(failing_dir, _KILLED_AT)) as f:
            victim, died = f.read().split()
        failure.update(killed_rank=int(victim), detection_s=detected - float(died))
        last = os.path.join(clean_dir, f"step_{latest_checkpoint(clean_dir):06d}")
        state_bytes = sum(os.path.getsize(os.path.join(last, f)) for f in os.listdir(last))
        resume_from = latest_checkpoint(failing_dir)
        resumed = launcher.launch(train_with_checkpoints, failing_dir, **options, **run)
        reference = (reference_run(steps, world_size, batch_size, lr, hidden, seed)
                     if world_size <= 2 else None)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    final = resumed[0]["params"]
    return {
        "failure": failure, "resume_from": resume_from or 0,
        "started_at": resumed[0]["started_at"],
        "steps_recomputed": kill_step - (resume_from or 0),
        "save_s": [max(s) for s in zip(*(r["save_s"] for r in clean))],  # done when all are
        "state_bytes": state_bytes,
        "load_s": max(r["load_s"] for r in resumed),
        "restart_s": max(r["first_step_wall"] for r in resumed) - detected,
        "uninterrupted_s": clean_s, "step_s": max(r["step_s"] for r in clean),
        "ranks_agree": all(_bit_exact(r["params"], final) for r in resumed),
        "bit_exact": _bit_exact(final, clean[0]["params"]),
        "max_abs_diff": _max_diff(final, clean[0]["params"]),
        "reference_bit_exact": None if reference is None else _bit_exact(final, reference["params"]),
        "params": final,
    }
