"""Attempts for notebook 07's exercises (see tests/test_exercises.py)."""

CASES = {
    "07.topk-feedback": dict(
        # The shortcut: the package's own top-k encoder and payload exchange.
        cheat="from companion.compression.sparse import decode_topk, encode_topk\n"
              "from companion.compression.wire import all_gather_payloads\n\n"
              "def my_topk_exchange(grad, residual, k):\n"
              "    v = grad + residual\n"
              "    p = encode_topk(v, k / v.numel())\n"
              "    rest = v.clone().reshape(-1)\n"
              "    rest[p['indices'].long()] = 0\n"
              "    got = all_gather_payloads([p], equal_sizes=True)\n"
              "    update = sum(decode_topk(r[0], v) for r in got) / len(got)\n"
              "    return update, rest.view_as(v)\n",
        # A plausible mistake: top-k of this step's gradient alone, the residual ignored
        # (no error feedback), so the updates differ from the second step on.
        wrong="def my_topk_exchange(grad, residual, k):\n"
              "    v = grad.reshape(-1)\n"
              "    idx = v.abs().topk(k).indices\n"
              "    new_residual = (grad + residual).reshape(-1).clone()\n"
              "    new_residual[idx] = 0\n"
              "    world = dist.get_world_size()\n"
              "    all_idx = [torch.empty_like(idx) for _ in range(world)]\n"
              "    all_val = [torch.empty_like(v[idx]) for _ in range(world)]\n"
              "    dist.all_gather(all_idx, idx)\n"
              "    dist.all_gather(all_val, v[idx])\n"
              "    update = torch.zeros_like(v)\n"
              "    for i, x in zip(all_idx, all_val):\n"
              "        update.index_add_(0, i, x)\n"
              "    return (update / world).view_as(grad), new_residual.view_as(grad)\n",
        wrong_kind="wrong_value",
    ),
    "07.momentum-correction": dict(
        cheat="def my_dgc_accumulate(u, v, grads, momentum, clip_norm, world_size):\n"
              "    return companion.compression.dgc_accumulate(u, v, grads, momentum,\n"
              "                                                clip_norm, world_size)\n",
        # The formula section 2 prints, transcribed: plain momentum correction, whose
        # dense limit is momentum SGD, not Nesterov's.
        wrong="def my_dgc_accumulate(u, v, grads, momentum, clip_norm, world_size):\n"
              "    if clip_norm is not None:\n"
              "        limit = clip_norm / world_size ** 0.5\n"
              "        norm = torch.sqrt(sum((g ** 2).sum() for g in grads))\n"
              "        grads = [g * min(1.0, limit / (float(norm) + 1e-12)) for g in grads]\n"
              "    u = [momentum * ui + g for ui, g in zip(u, grads)]\n"
              "    return u, [vi + ui for vi, ui in zip(v, u)]\n",
        wrong_kind="wrong_value",
    ),
    "07.powersgd-step": dict(
        cheat="import torch.distributed.algorithms.ddp_comm_hooks.powerSGD_hook as ps\n\n"
              "def my_powersgd_step(grad, error, q):\n"
              "    m = grad + error\n"
              "    p = m @ q\n"
              "    dist.all_reduce(p)\n"
              "    ps._orthogonalize(p.unsqueeze(0))   # torch's Gram-Schmidt, in place\n"
              "    q = m.T @ p\n"
              "    dist.all_reduce(q)\n"
              "    q = q / dist.get_world_size()\n"
              "    return p @ q.T, m - p @ q.T, q\n",
        # Two of the colleague's three mistakes fixed (error feedback, orthonormalise
        # after the sum), the third kept: P averaged instead of Q, which QR undoes, so the
        # update is the sum over ranks, not the mean.
        wrong="def my_powersgd_step(grad, error, q):\n"
              "    m = grad + error\n"
              "    p = m @ q\n"
              "    dist.all_reduce(p)\n"
              "    p = torch.linalg.qr(p / dist.get_world_size()).Q\n"
              "    new_q = m.T @ p\n"
              "    dist.all_reduce(new_q)\n"
              "    update = p @ new_q.T\n"
              "    return update, m - update, new_q\n",
        wrong_kind="wrong_value",
    ),
}
