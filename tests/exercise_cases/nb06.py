"""Attempts for notebook 06's exercises (see tests/test_exercises.py)."""

_RING_WRONG = '''
def my_ring_attention(q, k, v):
    rank, n = dist.get_rank(), dist.get_world_size()
    scale = 1.0 / math.sqrt(q.shape[-1])
    m = torch.full(q.shape[:-1], float("-inf"), dtype=q.dtype)
    l = torch.zeros_like(m)
    o = torch.zeros_like(q)
    kb, vb = k, v
    for step in range(n):
        s = q @ kb.transpose(-2, -1) * scale
        m_new = torch.maximum(m, s.amax(dim=-1))
        p = torch.exp(s - m_new.unsqueeze(-1))
        l = l * torch.exp(m - m_new) + p.sum(dim=-1)
        o = o + p @ vb          # forgets to rescale the output when the maximum grows
        m = m_new
        if step < n - 1:
            k_next, v_next = torch.empty_like(kb), torch.empty_like(vb)
            for req in dist.batch_isend_irecv([
                    dist.P2POp(dist.isend, kb, (rank + 1) % n), dist.P2POp(dist.isend, vb, (rank + 1) % n),
                    dist.P2POp(dist.irecv, k_next, (rank - 1) % n), dist.P2POp(dist.irecv, v_next, (rank - 1) % n)]):
                req.wait()
            kb, vb = k_next, v_next
    return o / l.unsqueeze(-1)
'''

_MOE_WRONG = '''
def my_dispatch(tokens, expert, n_experts, capacity):
    n = dist.get_world_size()
    buf = torch.zeros(n_experts, capacity, tokens.shape[1], dtype=tokens.dtype)
    used = [0] * n_experts
    for t, e in enumerate(expert.tolist()):
        buf[e, used[e]] = tokens[t]      # forgets that a full expert drops the token
        used[e] += 1
    inputs = list(buf.chunk(n, dim=0))
    outputs = [torch.empty_like(c) for c in inputs]
    dist.all_to_all(outputs, inputs)
    return torch.stack(outputs)
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
              "    return ring_attention(q, k, v, causal=False)\n",
        wrong=_RING_WRONG, wrong_kind="wrong_value",
    ),
    "06.moe-dispatch": dict(
        # The package's router computes the slots: one-hot logits make it follow `expert`.
        cheat="def my_dispatch(tokens, expert, n_experts, capacity):\n"
              "    from companion.sequence_parallel.moe import route\n"
              "    logits = 10.0 * torch.nn.functional.one_hot(expert, n_experts).float()\n"
              "    token, e, slot, _ = route(logits, 1, capacity)\n"
              "    buf = torch.zeros(n_experts, capacity, tokens.shape[1])\n"
              "    buf[e, slot] = tokens[token]\n"
              "    inputs = list(buf.chunk(dist.get_world_size(), dim=0))\n"
              "    outputs = [torch.empty_like(c) for c in inputs]\n"
              "    dist.all_to_all(outputs, inputs)\n"
              "    return torch.stack(outputs)\n",
        wrong=_MOE_WRONG, wrong_kind="crash", wrong_line="buf[e, used[e]] = tokens[t]",
    ),
}
