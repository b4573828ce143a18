"""Attempts for notebook 01's exercises (see tests/test_exercises.py)."""

CASES = {
    "01.pass-right": dict(
        # (torch's own collectives are refused by the pattern check, "only point-to-point";
        # the watcher does not yet flag forbidden torch.distributed calls by name)
        cheat="def my_pass_right(x):\n"
              "    everyone = C.all_gather(x)\n"
              "    return everyone[(dist.get_rank() - 1) % dist.get_world_size()]\n",
        # the deadlock fixed, but the direction mixed up: what arrives is the right
        # neighbour's tensor
        wrong="def my_pass_right(x):\n"
              "    n, r = dist.get_world_size(), dist.get_rank()\n"
              "    got = torch.empty_like(x)\n"
              "    work = [dist.isend(x, (r - 1) % n), dist.irecv(got, (r + 1) % n)]\n"
              "    for w in work:\n"
              "        w.wait()\n"
              "    return got\n",
        wrong_kind="wrong_value",
    ),
    "01.ring": dict(
        cheat="def my_ring_all_reduce(x):\n"
              "    return C.ring_all_reduce(x)\n",
        # adds in the all-gather half too, instead of copying the finished chunks
        wrong="def my_ring_all_reduce(x):\n"
              "    n, r = dist.get_world_size(), dist.get_rank()\n"
              "    buf = x.clone().reshape(-1)\n"
              "    chunks = list(buf.tensor_split(n))\n"
              "    for s in range(2 * (n - 1)):\n"
              "        c_out, c_in = (r - s) % n, (r - s - 1) % n\n"
              "        incoming = torch.empty_like(chunks[c_in])\n"
              "        work = [dist.isend(chunks[c_out].contiguous(), (r + 1) % n),\n"
              "                dist.irecv(incoming, (r - 1) % n)]\n"
              "        for w in work:\n"
              "            w.wait()\n"
              "        chunks[c_in] += incoming\n"
              "    return buf.view(x.shape)\n",
        wrong_kind="wrong_value",
    ),
    "01.recursive-doubling": dict(
        cheat="def my_recursive_doubling_all_reduce(x):\n"
              "    return C.recursive_doubling_all_reduce(x)\n",
        # a plausible slip: the partner adds the folded-in tensor only after the doubling,
        # so the other ranks never see the extra ranks' values
        wrong="def my_recursive_doubling_all_reduce(x):\n"
              "    n, r = dist.get_world_size(), dist.get_rank()\n"
              "    p = 1 << (n.bit_length() - 1)\n"
              "    extra = n - p\n"
              "    total = x.clone()\n"
              "    if r < 2 * extra and r % 2 == 0:\n"
              "        dist.send(total, r + 1)\n"
              "        dist.recv(total, r + 1)\n"
              "        return total\n"
              "    folded = torch.zeros_like(x)\n"
              "    if r < 2 * extra:\n"
              "        dist.recv(folded, r - 1)\n"
              "    me = r // 2 if r < 2 * extra else r - extra\n"
              "    for k in range(p.bit_length() - 1):\n"
              "        v = me ^ (1 << k)\n"
              "        partner = 2 * v + 1 if v < extra else v + extra\n"
              "        incoming = torch.empty_like(x)\n"
              "        work = [dist.isend(total, partner), dist.irecv(incoming, partner)]\n"
              "        for w in work:\n"
              "            w.wait()\n"
              "        total = total + incoming\n"
              "    total = total + folded\n"
              "    if r < 2 * extra:\n"
              "        dist.send(total, r - 1)\n"
              "    return total\n",
        wrong_kind="wrong_value",
    ),
}
