"""A whole transformer block on a sequence shard (context parallelism), and the rank
function that times it against tensor parallelism with and without sequence parallelism.
Notebook 06 (``notebooks/06_sequence_parallelism.ipynb``) teaches the attention it uses but
does not run this block; ``benchmarks/tensor_parallel.py`` times it and
``tests/test_sequence_parallel.py`` checks it against the single-process block.
"""
from __future__ import annotations

import torch
import torch.distributed as dist

from .. import runtime
from ..collectives import log as comm_log
from ..experiments import experiment
from ..validation import one_of, positive_int, preflight
from .ring import ring_attention
from .runs import _check_seq
from .ulysses import _rank_size, ulysses_attention

__all__ = ["SequenceParallelBlock", "benchmark_layer"]


class SequenceParallelBlock(torch.nn.Module):
    """A whole transformer block on a sequence shard ``[b, s/P, d]`` (context
    parallelism): weights replicated, every token-wise part local, attention by Ulysses
    or ring. Weight gradients are partial (this rank's tokens): sum them over ranks with
    :meth:`allreduce_grads`, as data parallelism does."""

    def __init__(self, full, method: str = "ulysses", group=None):
        super().__init__()
        import copy

        if method not in ("ulysses", "ring"):
            raise ValueError(f"method must be 'ulysses' or 'ring', got {method!r}.")
        self.block, self.method, self.group = copy.deepcopy(full), method, group

    def forward(self, x):
        blk, attn = self.block, self.block.attn
        b, s_local, _ = x.shape
        q, k, v = (t.view(b, s_local, attn.n_heads, attn.head_dim).transpose(1, 2)
                   for t in attn.qkv(blk.ln1(x)).split(attn.n_heads * attn.head_dim, dim=-1))
        if self.method == "ulysses":
            y = ulysses_attention(q, k, v, causal=True, group=self.group)
        else:
            y = ring_attention(q, k, v, causal=True, group=self.group)
        x = x + attn.proj(y.transpose(1, 2).reshape(b, s_local, -1))
        return x + blk.mlp(blk.ln2(x))

    def allreduce_grads(self):
        for p in self.parameters():
            if p.grad is not None:
                p.grad = comm_log.all_reduce(p.grad, self.group, label="grad_sync")


def _check_benchmark(method, steps, batch, seq, d_model, heads, world_size=1) -> None:
    one_of("method", method, ("single", "tp", "tp_sp", "ulysses", "ring"))
    for name, value in (("steps", steps), ("batch", batch), ("seq", seq), ("d_model", d_model),
                        ("heads", heads)):
        positive_int(name, value, f"pass a whole number such as {name}=8.")
    _check_seq(seq, world_size)


def _benchmark_summary(rs) -> str:
    from ..i18n import gettext as tr
    return tr("{ms} ms/step, {bytes} bytes sent per rank, max diff {diff}").format(
        ms=f"{1e3 * rs[0]['seconds']:.1f}", bytes=f"{rs[0]['bytes']:.0f}",
        diff=f"{rs[0]['max_diff']:.1e}")


@experiment("sp_benchmark_layer", summarize=_benchmark_summary)
@preflight(_check_benchmark)
def benchmark_layer(method: str = "tp", steps: int = 5, batch: int = 2, seq: int = 256,
                    d_model: int = 128, heads: int = 8, seed: int = 0) -> dict:
    """Rank function: median seconds per forward+backward of one transformer block and
    the activation bytes this rank sent per step (weight-gradient syncs not included),
    for ``method`` in "single", "tp", "tp_sp", "ulysses", "ring"; plus the largest
    output difference from the single-process block."""
    import time

    from ..models import Block, seeded
    from ..tensor_parallel import ParallelBlock

    dev = runtime.device()
    _check_benchmark(method, steps, batch, seq, d_model, heads)
    rank, size = _rank_size(None)
    _check_seq(seq, size)
    with seeded(seed):
        full = Block(d_model, heads, 4 * d_model)
    full.to(dev)
    # Drawn on the CPU from the CPU generator, then moved: the same numbers on every device.
    x = torch.randn(batch, seq, d_model, generator=torch.Generator().manual_seed(seed),
                    device="cpu").to(dev)
    shard = x.chunk(size, dim=1)[rank].clone()
    layer, inp, ref = {
        "single": (full, x, lambda y: y),
        "tp": (ParallelBlock(full), x, lambda y: y),
        "tp_sp": (ParallelBlock(full, sequence_parallel=True), shard, None),
        "ulysses": (SequenceParallelBlock(full, "ulysses"), shard, None),
        "ring": (SequenceParallelBlock(full, "ring"), shard, None),
    }[method]
    layer.to(dev)
    times, sent = [], 0.0
    for _ in range(steps + 1):  # the first step warms up
        xi = inp.clone().requires_grad_()
        if dist.is_initialized():
            dist.barrier()
        runtime.synchronize()
        start = time.perf_counter()
        with comm_log.recording() as log:
            out = layer(xi)
            out.pow(2).mean().backward()
        runtime.synchronize()
        times.append(time.perf_counter() - start)
        sent = log.bytes()
        layer.zero_grad(set_to_none=True)
    with torch.no_grad():
        expect = full(x) if ref is not None else full(x).chunk(size, dim=1)[rank]
        diff = (layer(inp) - expect).abs().max().item()
    return {"seconds": sorted(times[1:])[len(times[1:]) // 2], "bytes": sent, "max_diff": diff}
