"""Attempts for notebook 06's exercises (see tests/test_exercises.py)."""

# Half the fix: the hop now goes out before the skip, so the ring turns, but the block
# index still runs the wrong way round the ring, so the mask skips the wrong blocks.
_RING_WRONG = '''
def my_ring_attention(q, k, v):
    rank, n = dist.get_rank(), dist.get_world_size()
    nxt, prv = (rank + 1) % n, (rank - 1) % n
    scale = 1.0 / math.sqrt(q.shape[-1])
    m = torch.full(q.shape[:-1], float("-inf"), dtype=q.dtype)
    l = torch.zeros_like(m)
    o = torch.zeros_like(q)
    kb, vb = k, v
    for step in range(n):
        j = (rank + step) % n
        if step < n - 1:
            k_next, v_next = torch.empty_like(kb), torch.empty_like(vb)
            hop = [dist.isend(kb, nxt), dist.isend(vb, nxt),
                   dist.irecv(k_next, prv), dist.irecv(v_next, prv)]
        if j <= rank:
            s = q @ kb.transpose(-2, -1) * scale
            if j == rank:
                s = s.masked_fill(torch.ones_like(s, dtype=torch.bool).triu(1), float("-inf"))
            m_new = torch.maximum(m, s.amax(dim=-1))
            p = torch.exp(s - m_new.unsqueeze(-1))
            alpha = torch.exp(m - m_new)
            l = l * alpha + p.sum(dim=-1)
            o = o * alpha.unsqueeze(-1) + p @ vb
            m = m_new
        if step < n - 1:
            for request in hop:
                request.wait()
            kb, vb = k_next, v_next
    return o / l.unsqueeze(-1)
'''

# Every token arrives in the right place, but the counts returned are the ones this rank
# sent, not the ones it received.
_MOE_WRONG = '''
def my_dispatch(tokens, expert, n_experts):
    n = dist.get_world_size()
    per = n_experts // n
    counts = torch.bincount(expert, minlength=n_experts)
    arriving = torch.empty_like(counts)
    dist.all_to_all_single(arriving, counts)
    send = tokens[torch.argsort(expert, stable=True)]
    recv_sizes = arriving.view(n, per).sum(dim=1).tolist()
    received = tokens.new_empty(sum(recv_sizes), tokens.shape[1])
    dist.all_to_all_single(received, send, recv_sizes, counts.view(n, per).sum(dim=1).tolist())
    return received, counts.view(n, per)
'''

CASES = {
    "06.ulysses-a2a": dict(
        cheat="def my_seq_to_heads(x):\n"
              "    from companion.sequence_parallel import seq_to_heads\n"
              "    return seq_to_heads(x)\n",
        # A strided split: rank j gets heads j, j+P, ... instead of a contiguous block.
        # The shape is right; only the values show the mistake.
        wrong="def my_seq_to_heads(x):\n"
              "    n = dist.get_world_size()\n"
              "    inputs = [x[:, j::n].contiguous() for j in range(n)]\n"
              "    outputs = [torch.empty_like(c) for c in inputs]\n"
              "    dist.all_to_all(outputs, inputs)\n"
              "    return torch.cat(outputs, dim=2)\n",
        wrong_kind="wrong_value",
    ),
    "06.ring-attention": dict(
        cheat="def my_ring_attention(q, k, v):\n"
              "    from companion.sequence_parallel import ring_attention\n"
              "    return ring_attention(q, k, v, causal=True)\n",
        wrong=_RING_WRONG, wrong_kind="wrong_value",
    ),
    "06.moe-dispatch": dict(
        # The shortcut: the package's own dropless dispatch.
        cheat="def my_dispatch(tokens, expert, n_experts):\n"
              "    from companion.learning.nb06 import dispatch_reference\n"
              "    return dispatch_reference(tokens, expert, n_experts)\n",
        wrong=_MOE_WRONG, wrong_kind="wrong_value",
    ),
}
