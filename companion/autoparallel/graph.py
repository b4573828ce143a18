"""The computational graphs the auto-sharding program works on (notebook 12, L20 p.9-14).

A graph is a list of :class:`Node` in execution order. Every activation is a 2-D tensor
``[tokens, features]`` with ``tokens = batch * seq`` (batch outermost), so "shard the
batch" is ``Shard(0)`` and "shard the features" (columns, or heads) is ``Shard(1)``.
Operators, with their FLOPs (forward; backward costs twice as much for every op here):

* ``input``  the activation entering the graph (its gradient is wanted too, as if a
  previous layer sent it), replicated (``placement="R"``, as a tensor-parallel block
  receives it) or in any layout the solver likes (``None``: data arrive batch-split);
  no FLOPs.
* ``linear`` ``y = x @ W`` with ``W: [d_in, d_out]``: ``2 * tokens * d_in * d_out``.
* ``gelu``, ``add``: elementwise, charged 1 FLOP per output element (they are
  memory-bound; the charge only makes a replicated copy cost something).
* ``attention`` softmax(q k^T / sqrt(d_head)) v over ``heads`` heads (not causal), from
  one fused ``[tokens, 3 * hidden]`` projection laid out head by head (``[heads, 3,
  d_head]``: q, k, v of head 0, then head 1, ...), so a column split hands each device
  whole heads; ``4 * batch * seq^2 * hidden`` FLOPs (q k^T and the product with v).
* ``output`` a sink that wants the last activation replicated (``placement="R"``) or
  takes it as it comes (``placement=None``); no FLOPs.

The builders :func:`mlp`, :func:`attention_block` and :func:`transformer` make
Megatron's MLP (linear, GeLU, linear), an attention block (the fused q, k, v
projection, the attention core, the output projection) and pre-norm-free transformer blocks with
residual adds (layer norms are left out: they would only add more elementwise nodes).
"""
from __future__ import annotations

import dataclasses

from ..validation import positive_int

__all__ = ["Node", "Graph", "mlp", "attention_block", "transformer"]

KINDS = ("input", "linear", "gelu", "add", "attention", "output")


@dataclasses.dataclass(frozen=True)
class Node:
    name: str
    kind: str
    inputs: tuple = ()        # names of the producing nodes, in argument order
    shape: tuple = ()         # output [tokens, features] (None for the output sink)
    weight: tuple = ()        # linear: [d_in, d_out]
    placement: str | None = None  # input and output: "R" or None (free)


@dataclasses.dataclass(frozen=True)
class Graph:
    name: str
    nodes: tuple
    batch: int
    seq: int
    heads: int

    def node(self, name: str) -> Node:
        return next(n for n in self.nodes if n.name == name)

    def flops(self, node: Node) -> float:
        """Forward + backward FLOPs of ``node`` on one device holding everything."""
        tokens = self.batch * self.seq
        if node.kind == "linear":
            fwd = 2 * tokens * node.weight[0] * node.weight[1]
        elif node.kind == "attention":
            fwd = 4 * self.batch * self.seq ** 2 * node.shape[1]
        elif node.kind in ("gelu", "add"):
            fwd = node.shape[0] * node.shape[1]
        else:
            fwd = 0
        return 3.0 * fwd

    @property
    def edges(self) -> list:
        """``(producer, consumer, argument index)`` for every input of every node."""
        return [(src, n.name, k) for n in self.nodes for k, src in enumerate(n.inputs)]


class _Builder:
    def __init__(self, batch, seq, hidden):
        self.tokens, self.hidden, self.nodes = batch * seq, hidden, []

    def add(self, name, kind, inputs=(), features=None, weight=(), placement=None):
        shape = (self.tokens, features or self.hidden) if kind != "output" else ()
        self.nodes.append(Node(name, kind, tuple(inputs), shape, tuple(weight), placement))
        return name

    def linear(self, name, x, d_in, d_out):
        return self.add(name, "linear", (x,), d_out, (d_in, d_out))

    def mlp(self, prefix, x, ffn):
        h = self.linear(f"{prefix}fc1", x, self.hidden, ffn)
        h = self.add(f"{prefix}gelu", "gelu", (h,), ffn)
        return self.linear(f"{prefix}fc2", h, ffn, self.hidden)

    def attention(self, prefix, x):
        qkv = self.linear(f"{prefix}qkv", x, self.hidden, 3 * self.hidden)
        a = self.add(f"{prefix}attn", "attention", (qkv,))
        return self.linear(f"{prefix}o", a, self.hidden, self.hidden)


def _check(batch, seq, hidden, heads=1, ffn=1, blocks=1) -> None:
    for name, value in (("batch", batch), ("seq", seq), ("hidden", hidden), ("heads", heads),
                        ("ffn", ffn), ("blocks", blocks)):
        positive_int(name, value, "pass a positive integer size, e.g. batch=8, hidden=64.")
    if hidden % heads:
        raise ValueError(f"hidden={hidden} does not split into heads={heads} equal heads; "
                         f"use a hidden size that is a multiple of heads.")


def _start(batch, seq, hidden, input):
    if input not in ("R", None):
        raise ValueError(f"input={input!r} must be 'R' (replicated, as a tensor-parallel "
                         f"block receives it) or None (any layout, e.g. batch-split data).")
    b = _Builder(batch, seq, hidden)
    return b, b.add("x", "input", placement=input)


def _finish(b: _Builder, name, last, output, batch, seq, heads) -> Graph:
    if output not in ("R", None):
        raise ValueError(f"output={output!r} must be 'R' (the result replicated, as the next "
                         f"layer of a TP model wants it) or None (any layout).")
    b.add("out", "output", (last,), placement=output)
    return Graph(name, tuple(b.nodes), batch, seq, heads)


def mlp(batch: int = 8, seq: int = 512, hidden: int = 1024, ffn: int = 4096,
        input: str | None = "R", output: str | None = "R") -> Graph:
    """Megatron's MLP: ``x -> fc1 [hidden, ffn] -> GeLU -> fc2 [ffn, hidden] -> out``."""
    _check(batch, seq, hidden, ffn=ffn)
    b, x = _start(batch, seq, hidden, input)
    return _finish(b, "mlp", b.mlp("", x, ffn), output, batch, seq, 1)


def attention_block(batch: int = 8, seq: int = 512, hidden: int = 1024, heads: int = 16,
                    input: str | None = "R", output: str | None = "R") -> Graph:
    """Self-attention: ``qkv = x W_qkv``; ``a = attention(qkv)``; ``a W_o``."""
    _check(batch, seq, hidden, heads)
    b, x = _start(batch, seq, hidden, input)
    return _finish(b, "attention", b.attention("", x), output, batch, seq, heads)


def transformer(batch: int = 8, seq: int = 512, hidden: int = 1024, ffn: int = 4096,
                heads: int = 16, blocks: int = 2, input: str | None = None,
                output: str | None = "R") -> Graph:
    """``blocks`` transformer blocks: ``h = x + attn(x)``, ``x' = h + mlp(h)`` (no norms).
    The input comes as the solver likes (data parallelism splits the batch at the loader)."""
    _check(batch, seq, hidden, heads, ffn, blocks)
    b, x = _start(batch, seq, hidden, input)
    for i in range(blocks):
        h = b.add(f"b{i}.res1", "add", (x, b.attention(f"b{i}.", x)))
        x = b.add(f"b{i}.res2", "add", (h, b.mlp(f"b{i}.", h, ffn)))
    return _finish(b, "transformer", x, output, batch, seq, heads)
