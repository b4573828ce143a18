"""Attempts for notebook 10's exercises (see tests/test_exercises.py)."""

CASES = {
    "10.fsdp-bound": dict(
        cheat="from companion.roofline import dp_critical_tokens\n\n"
              "def my_fsdp_gpus(batch_tokens, max_gpus, gpus_per_node, peak_flops, nvlink_bw,\n"
              "                 node_bw):\n"
              "    n, most = 2, 1\n"
              "    while n <= max_gpus:\n"
              "        w = nvlink_bw if n <= gpus_per_node else node_bw\n"
              "        if batch_tokens / n > dp_critical_tokens(peak_flops, w):\n"
              "            most = n\n"
              "        n *= 2\n"
              "    return most\n",
        # NVLink's bandwidth for every group: right inside a node, too many GPUs once the
        # group spans nodes (GPT-3 on A100s gets 2,048 instead of 1,024).
        wrong="def my_fsdp_gpus(batch_tokens, max_gpus, gpus_per_node, peak_flops, nvlink_bw,\n"
              "                 node_bw):\n"
              "    n, most = 2, 1\n"
              "    while n <= max_gpus:\n"
              "        if batch_tokens / n > peak_flops / nvlink_bw:\n"
              "            most = n\n"
              "        n *= 2\n"
              "    return most\n",
        wrong_kind="wrong_value",
    ),
    "10.tp-limit": dict(
        cheat="import companion\n\n"
              "def my_narrowest_mlp(tp, peak_flops, bandwidth):\n"
              "    return companion.learning.nb10.narrowest_mlp_reference(tp, peak_flops, bandwidth)\n",
        # F rounded to a whole number of tiles instead of each GPU's slice.
        wrong="def my_narrowest_mlp(tp, peak_flops, bandwidth):\n"
              "    return math.ceil(tp * peak_flops / bandwidth / 128) * 128\n",
        wrong_kind="wrong_value",
    ),
    "10.fsdp-tp-split": dict(
        cheat="from companion.roofline import fsdp_tp_bandwidths\n\n"
              "def my_fsdp_tp_degrees(batch_tokens, seq_len, d_ff, devices, gpus_per_node,\n"
              "                       nvlink_bandwidth, nic_bandwidth):\n"
              "    best, y = None, 1\n"
              "    while y <= min(gpus_per_node, devices):\n"
              "        x = devices // y\n"
              "        if x <= batch_tokens // seq_len:\n"
              "            w_fsdp, w_tp = fsdp_tp_bandwidths('H100', devices, y)\n"
              "            t = max(d_ff / (y * w_fsdp), batch_tokens / (x * w_tp))\n"
              "            if best is None or t < best[0]:\n"
              "                best = (t, x, y)\n"
              "        y *= 2\n"
              "    return best and best[1:]\n",
        # Every FSDP group gets the node's eight NICs whatever Y is, so TP seems to speed up
        # FSDP: Llama-3 70B on 2,048 H100s gets Y = 2 instead of pure FSDP.
        wrong="def my_fsdp_tp_degrees(batch_tokens, seq_len, d_ff, devices, gpus_per_node,\n"
              "                       nvlink_bandwidth, nic_bandwidth):\n"
              "    best, y = None, 1\n"
              "    while y <= min(gpus_per_node, devices):\n"
              "        x = devices // y\n"
              "        if x <= batch_tokens // seq_len:\n"
              "            w = nvlink_bandwidth if devices <= gpus_per_node else \\\n"
              "                gpus_per_node * nic_bandwidth\n"
              "            t = max(d_ff / (y * w), batch_tokens / (x * nvlink_bandwidth))\n"
              "            if best is None or t < best[0]:\n"
              "                best = (t, x, y)\n"
              "        y *= 2\n"
              "    return best and best[1:]\n",
        wrong_kind="wrong_value",
    ),
    "10.prefetch-order": dict(
        # The package's own forward pass, which is the answer.
        cheat="def my_fsdp_forward(x, shards, layer):\n"
              "    import companion\n"
              "    return companion.learning.nb10_prefetch.prefetch_forward_reference(\n"
              "        x, shards, layer)\n",
        # No prefetch: each unit's all-gather is issued and waited for just before it
        # computes, so nothing is in flight while a unit computes.
        wrong="def my_fsdp_forward(x, shards, layer):\n"
              "    world = dist.get_world_size()\n"
              "    for k in range(len(shards)):\n"
              "        full = torch.empty(shards[k].numel() * world)\n"
              "        dist.all_gather_single(full, shards[k], async_op=True).wait()\n"
              "        x = layer(k, x, full.view(8, 8))\n"
              "    return x\n",
        wrong_kind="wrong_value",
    ),
}
