"""The problems an exercise module writes with its own values, in Simplified Chinese:
each key is the f-string's source template (``{len(calls)}`` and all), by which
:func:`companion.learning.verdict.reworded` finds the text again and fills the Chinese
with the same values. Part of :mod:`.checker_strings` (which merges it into
``WRITTEN_ZH_CN``), split from it by concept.
This module is a table of data: one entry per message, however many the checker has.
"""

FILLED_ZH_CN = {
    "{len(calls)} all-reduces; the values and the count of healthy ranks need two at most "
    "(one, if the count travels in the same tensor)":
        "{len(calls)} 次全规约；数值和健康 rank 的计数最多需要两次（如果计数放在同一个张量里一起传，只需一次）",
    "rank {rank} called {mine} and rank 0 called {first} (name, bytes); every rank must make "
    "the same collective calls in the same order, with tensors of the same size":
        "rank {rank} 调用了 {mine}，而 rank 0 调用了 {first}（名称，字节数）；每个 rank "
        "都必须以相同的顺序、用相同大小的张量进行相同的集合通信调用",
    "passing to the right (rank {rank}: send to {right}, receive from {left})":
        "向右传递（rank {rank}：发给 {right}，从 {left} 接收）",
    "the ring ({rounds} rounds of 2(N-1), each sending one chunk to the right neighbour "
    "{right} and receiving one from the left neighbour {left})":
        "环形算法（共 {rounds} 轮，即 2(N-1) 轮，每轮向右邻居 {right} 发送一个分块，并从左邻居 {left} 接收一个分块）",
    "sent messages of {big} bytes; each ring message carries one chunk (at most {chunk} bytes "
    "here), 1/N of the tensor":
        "发送了 {big} 字节的消息；环中每条消息只携带一个分块（这里最多 {chunk} 字节），即张量的 1/N",
    "{len(folded)} rank(s) sat out ({sorted(folded)}); with N = {world_size} and p = {p}, N - "
    "p = {rest} ranks sit out, each folded into its own partner, and the other {p} run "
    "recursive doubling in log2 p = {steps} rounds":
        "{len(folded)} 个 rank 闲置（{sorted(folded)}）；N = {world_size}、p = {p} 时，应有 N - p = "
        "{rest} 个 rank 闲置，各自折叠进自己的伙伴，其余 {p} 个 rank 在 log2 p = {steps} 轮内完成递归倍增",
    "made {len(peers)} {kind}(s) with peers {peers}; {what} needs {len(want)}, with peers "
    "{sorted(want)}":
        "与 {peers} 进行了 {len(peers)} 次 {kind}；{what}需要 {len(want)} 次，对象为 {sorted(want)}",
    "rank {rank} sent messages of {part} bytes; recursive doubling sends the whole running sum "
    "({whole} bytes) every time (halves are Rabenseifner's algorithm)":
        "rank {rank} 发送了 {part} 字节的消息；递归倍增每次都发送完整的累加和（{whole} 字节）（只发一半的是 Rabenseifner 算法）",
    "rank {rank} sent to {out} and received from {back}. With N = {world_size} every rank is "
    "one of three kinds: folded in (one send and one receive, with one partner), one of the p "
    "= {p} that pair up ({steps} exchanges with {steps} different ranks), or one of those that "
    "also folds one rank in and out ({steps + 1} of each)":
        "rank {rank} 发给了 {out}，并从 {back} 接收。N = {world_size} 时，每个 rank "
        "属于三类之一：被折叠进来的（与一个伙伴各一次发送和接收）；结对的 p = {p} 个之一（与 {steps} 个不同 rank 交换 {steps} 次）；或者还要把一个 "
        "rank 折进折出的那些（各 {steps + 1} 次）",
    "{total} messages were sent in all; a tree all-reduce sends 2(N-1) = {2 * (world_size - "
    "1)}: each rank but the root sends its partial sum up once and receives the total once":
        "总共发送了 {total} 条消息；二项树全规约发送 2(N-1) = {2 * (world_size - 1)} 条：除根以外的每个 rank "
        "向上发送一次部分和，再接收一次总和",
    "the longest chain of messages that wait for each other is {chain}; a binomial tree needs "
    "only 2 ceil(log2 N) = {2 * steps} (halve the ranks that still hold a partial sum every "
    "round, instead of passing it along a line)":
        "彼此等待的最长消息链长度为 {chain}；二项树只需 2 ceil(log2 N) = {2 * steps}（每一轮把仍持有部分和的 rank "
        "减半，而不是沿一条线依次传递）",
    "sent {len(sends)} messages, {got} bytes, over the four tensors; the algorithms you named "
    "send {count} messages, {total} bytes, from this rank: run the algorithm you name":
        "在这四个张量上发送了 {len(sends)} 条消息、{got} 字节；你指定的算法在这个 rank 上应发送 {count} 条消息、{total} "
        "字节：请运行你指定的算法",
    "the server (one receive from each worker {workers}, then one send to each)":
        "服务器（从每个工作节点 {workers} 各接收一次，然后向每个发送一次）",
    "rank {rank} sent messages of {part} bytes; in a tree every message is a whole (partial) "
    "sum, {whole} bytes here":
        "rank {rank} 发送了 {part} 字节的消息；在树中每条消息都是完整的（部分）和，这里是 {whole} 字节",
    "rank {rank} {kind} {len(got)} messages; in a binomial tree no rank handles more than "
    "ceil(log2 N) = {steps} each way (N-1 on one rank is the parameter server's bottleneck)":
        "rank {rank} {kind}了 {len(got)} 条消息；在二项树中，没有哪个 rank 每个方向处理超过 ceil(log2 N) = {steps} "
        "条（一个 rank 处理 N-1 条正是参数服务器的瓶颈）",
    "weight-gradient shard of layer {i}":
        "第 {i} 层的权重梯度分片",
    "rank {rank}: the pass must start with one all-gather per layer (the forward), got "
    "{[c.name for c in forward]}":
        "rank {rank}：这一遍必须以每层一次全收集（前向）开始，实际得到的是 {[c.name for c in forward]}",
    "rank {rank}: after the forward it made {len(gathers)} all-gather(s) and {len(scatters)} "
    "reduce-scatter(s); backward needs {n_layers} reduce-scatters (one per weight gradient) "
    "and the weights again, {n_layers - 1} or {n_layers} all-gathers":
        "rank {rank}：前向之后它做了 {len(gathers)} 次全收集和 {len(scatters)} 次规约散射；反向需要 {n_layers} "
        "次规约散射（每个权重梯度一次），并再次收集权重，即 {n_layers - 1} 或 {n_layers} 次全收集",
    "rank {rank}: backward gathered one layer's weight twice; gather each again once, when its "
    "gradients are computed":
        "rank {rank}：反向把某一层的权重收集了两次；每层在计算它的梯度时只需再收集一次",
    "rank {rank}: backward gathered {ahead} layers' weights before reduce-scattering the first "
    "one's gradient; gather a layer's weight when its gradients are computed, and let it go "
    "before the next":
        "rank {rank}：反向在对第一层的梯度做规约散射之前，就已收集了 {ahead} 层的权重；请在计算某层梯度时才收集它的权重，并在处理下一层之前释放它",
    "at p={p}, batch {batch_size}, target {target:g}, budget {budget:g} samples:":
        "在 p={p}、批量 {batch_size}、目标 {target:g}、预算 {budget:g} 个样本时：",
    "{where} it returned {plan!r:.60}; return (schedule, m) with schedule 'gpipe' or '1f1b' "
    "and m a whole number, or None when no plan fits":
        "{where}它返回了 {plan!r:.60}；请返回 (schedule, m)，其中 schedule 为 'gpipe' 或 '1f1b'，m "
        "为整数；若没有方案可行，则返回 None",
    "{where} m={m} does not cut the batch of {batch_size} into equal micro-batches":
        "{where}m={m} 无法把 {batch_size} 的批量切成大小相等的微批次",
    "{where} {schedule} with m={m} idles {idle:.1%} of the time, over the target":
        "{where}m={m} 的 {schedule} 有 {idle:.1%} 的时间空闲，超过了目标",
    "{where} {schedule} with m={m} holds {held:g} samples' activations on its busiest stage "
    "({held * m / batch_size:g} micro-batches of {batch_size // m} samples), over the budget":
        "{where}m={m} 的 {schedule} 在最忙的阶段保存了 {held:g} 个样本的激活值（{held * m / batch_size:g} 个微批次，每个 "
        "{batch_size // m} 个样本），超出了预算",
    "{where} {schedule} with m={m} fits, but fewer micro-batches also do. More micro-batches "
    "means smaller matrix products, which a GPU runs less efficiently: take the fewest that "
    "meet both":
        "{where}m={m} 的 {schedule} 可行，但更少的微批次也可行。微批次越多，矩阵乘法越小，GPU 运行得越低效：请选满足两个条件的最少微批次数",
    "at p={p}, m={m} your schedule idles {timeline.bubble_fraction:.1%} of the time; {target} "
    "idles {want:.1%}. Draw it and look for the grey gaps: draw_timeline(plt.gca(), "
    "simulate(Schedule('mine', {p}, {m}, {name}({p}, {m}){flag}))).{where}":
        "在 p={p}、m={m} 时，你的调度有 {timeline.bubble_fraction:.1%} 的时间空闲；{target} 只空闲 "
        "{want:.1%}。把它画出来，找找灰色的空隙：draw_timeline(plt.gca(), simulate(Schedule('mine', {p}, {m}, "
        "{name}({p}, {m}){flag})))。{where}",
    "messages of {sorted(sizes)} bytes; each should carry one micro-batch's activation or "
    "gradient, {nbytes} bytes":
        "消息大小为 {sorted(sizes)} 字节；每条消息应携带一个微批次的激活值或梯度，即 {nbytes} 字节",
    "{where} you returned None, but a plan meets both the target and the budget. Look again at "
    "what happens to 1F1B's memory as m grows":
        "{where}你返回了 None，但确有方案同时满足目标和预算。再看看 1F1B 的内存随 m 增大会怎样",
    "at p={p}, m={m} the simulator rejects your schedule: {exc}{where}":
        "在 p={p}、m={m} 时，模拟器拒绝了你的调度：{exc}{where}",
    "at p={p}, m={m} stage {s} holds {got:g} micro-batches' activations at once; {target} "
    "holds at most {want:g} there. Its ops: {_shown(sched.ops[s])}. Free activations sooner: "
    "run each {'W' if split else 'backward'} as soon as it can run.{where}":
        "在 p={p}、m={m} 时，阶段 {s} 同时保存了 {got:g} 个微批次的激活值；{target} 在那里最多保存 {want:g} "
        "个。它的操作：{_shown(sched.ops[s])}。请更早释放激活值：每个 {'W' if split else 'backward'} "
        "一能运行就立刻运行。{where}",
    "made {summary(calls)}; a column-parallel linear needs no communication in forward, since "
    "every rank already holds the whole X":
        "调用了 {summary(calls)}；列并行线性层在前向中无需任何通信，因为每个 rank 都已持有完整的 X",
    "sent {sent} bytes ({summary(calls)}); P-1 = {world_size - 1} hops of one K and one V "
    "block ({_kv_block_bytes(world_size)} bytes a hop) are {need}: after P-1 hops every block "
    "has visited every rank":
        "发送了 {sent} 字节（{summary(calls)}）；P-1 = {world_size - 1} 跳、每跳一个 K 块和一个 V 块（每跳 "
        "{_kv_block_bytes(world_size)} 字节），共 {need}：经过 P-1 跳后每个块都到访过每个 rank",
    "made {summary(calls)}; dropless dispatch is two all-to-alls: the counts, then the tokens":
        "调用了 {summary(calls)}；无丢弃的分发是两次全对全：先发计数，再发 token",
    "its all-to-alls carried {sizes} bytes; the tokens' exchange hands over this rank's "
    "{N_TOKENS} tokens of {D_TOKEN} floats, {tokens} bytes, no more (no padding: every token "
    "is sent once, and only once)":
        "它的全对全传输了 {sizes} 字节；token 交换要交出这个 rank 的 {N_TOKENS} 个 token，每个 {D_TOKEN} 个浮点数，共 "
        "{tokens} 字节，不能更多（不填充：每个 token 只发送一次）",
    "the counts' exchange carried {counts} bytes; one integer per expert is at most {8 * "
    "N_EXPERTS}":
        "计数的交换传输了 {counts} 字节；每个专家一个整数，最多 {8 * N_EXPERTS} 字节",
    "called {c.name}; in ring attention the K/V blocks travel between neighbours by "
    "point-to-point messages (isend/irecv), nothing else":
        "调用了 {c.name}；在环形注意力中，K/V 块只通过点对点消息（isend/irecv）在相邻 rank 之间传递，别无其他",
    "sent to rank {c.peer}; in the ring rank {rank} sends only to rank {nxt}":
        "发给了 rank {c.peer}；在环中 rank {rank} 只发给 rank {nxt}",
    "received from rank {c.peer}; in the ring rank {rank} receives only from rank {prv}":
        "从 rank {c.peer} 接收；在环中 rank {rank} 只从 rank {prv} 接收",
    "{len(calls)} all-gather(s) recorded for {STEPS} steps: each step exchanges its own pairs "
    "with dist.all_gather or dist.all_gather_into_tensor":
        "{STEPS} 步中记录到 {len(calls)} 次全收集：每一步都用 dist.all_gather 或 dist.all_gather_into_tensor "
        "交换自己的数对",
    "its all-reduces carried {got} bytes; one step is two all-reduces, of P (n x r = {PSGD_N} "
    "x {PSGD_R}: {want[0]} B) and then of Q (m x r = {PSGD_M} x {PSGD_R}: {want[1]} B), never "
    "the {PSGD_N} x {PSGD_M} gradient ({4 * PSGD_N * PSGD_M} B)":
        "它的全规约传输了 {got} 字节；一步是两次全规约，先是 P（n x r = {PSGD_N} x {PSGD_R}：{want[0]} B），再是 Q（m x r = "
        "{PSGD_M} x {PSGD_R}：{want[1]} B），绝不是 {PSGD_N} x {PSGD_M} 的梯度（{4 * PSGD_N * PSGD_M} B）",
    "one per step, {DGC_STEPS} steps, two runs":
        "每步一次，共 {DGC_STEPS} 步，运行两次",
    "one per step, {SYNC_STEPS} steps":
        "每步一次，共 {SYNC_STEPS} 步",
    "one per step, {DGA_STEPS} steps, each waited for later":
        "每步一次，共 {DGA_STEPS} 步，每次都在之后才等待",
    "one per round of {FEDAVG_K} steps, not one per step":
        "每 {FEDAVG_K} 步一轮、每轮一次，而不是每步一次",
    "rank {rank} all-reduced over {wide[0].group_size} ranks; every collective of this step "
    "belongs to a pair: the TP pair adds partial sums, the DP pair averages gradients":
        "rank {rank} 在 {wide[0].group_size} 个 rank 上做了全规约；这一步的每次集合通信都属于一个二人组：TP 组累加部分和，DP 组平均梯度",
    "rank {rank} all-reduced a [{rows}, {D}] micro-batch output {len(outs)} times ({back} in "
    "backward); the row-parallel layer needs one all-reduce per micro-batch in forward "
    "({MICRO} here) and none in backward":
        "rank {rank} 对一个 [{rows}, {D}] 的微批次输出做了 {len(outs)} 次全规约（其中反向 {back} "
        "次）；行并行层在前向中每个微批次需要一次全规约（这里共 {MICRO} 次），反向中不需要",
    "rank {rank} all-reduced {other} bytes of gradients in the step; averaging the two "
    "gradient shards once, after the last micro-batch (what DDP's no_sync is for), moves "
    "{grad_bytes} bytes":
        "rank {rank} 在这一步中对 {other} 字节的梯度做了全规约；在最后一个微批次之后对两个梯度分片平均一次（DDP 的 no_sync "
        "就是为此设计的），只传输 {grad_bytes} 字节",
    "{MODEL.name} on 64 H100s, {GLOBAL_BATCH} sequences":
        "{MODEL.name}，64 块 H100，{GLOBAL_BATCH} 条序列",
    "{MODEL.name} on 32 H100s, 128 sequences":
        "{MODEL.name}，32 块 H100，128 条序列",
    "my_configuration returned {type(config).__name__} {config!r:.60}; return a dict such as "
    "dict(dp=..., tp=..., pp=..., zero=..., micro_batch=...)":
        "my_configuration 返回了 {type(config).__name__} {config!r:.60}；请返回一个字典，例如 dict(dp=..., "
        "tp=..., pp=..., zero=..., micro_batch=...)",
    "the configuration's keys: missing {missing}, not understood {extra}; use {', "
    "'.join(_KEYS)} (and optionally {', '.join(_OPTIONAL)})":
        "配置的键：缺少 {missing}，无法识别 {extra}；请使用 {', '.join(_KEYS)}（以及可选的 {', '.join(_OPTIONAL)}）",
    "my_configuration had the cost model price {priced.priced} configurations; the budget is "
    "{EVALUATIONS} per problem. Reason from the breakdowns of a few instead of searching them "
    "all":
        "my_configuration 让代价模型为 {priced.priced} 个配置定价；每个问题的预算是 {EVALUATIONS} "
        "个。请从少数几个配置的分解中推理，而不是把它们全部搜索一遍",
    "on {name}, the cost model rejects it{where}:\n  {text}":
        "在 {name} 上，代价模型拒绝了它{where}：\n  {text}",
    "the planner cannot evaluate {config}: {err}":
        "规划器无法评估 {config}：{err}",
    "cost model, on {next(iter(PROBLEMS))}: {text}\nin miniature on 4 ranks: "
    "{hybrid.miniature_name(config['tp'], config['pp'])} with the tiny transformer trained "
    "like one process and moved the bytes the planner predicts.":
        "代价模型，在 {next(iter(PROBLEMS))} 上：{text}\n在 4 个 rank 上的缩小版："
        "{hybrid.miniature_name(config['tp'], config['pp'])} 训练这个微型 Transformer 的结果与单进程"
        "一致，传输的字节数与规划器预测的相同。",
    "called {summary(calls)}; this is arithmetic: no message is needed":
        "调用了 {summary(calls)}；这只是算术：不需要任何消息",
    "rank {rank} sent {len(sends)} and received {len(recvs)} message(s); a swap is one message "
    "each way":
        "rank {rank} 发送了 {len(sends)} 条、接收了 {len(recvs)} 条消息；一次交换是每个方向各一条消息",
    "rank {rank} sent {sends[0].bytes} bytes; the tensor is 24 bytes":
        "rank {rank} 发送了 {sends[0].bytes} 字节；张量是 24 字节",
    "rank {rank} ran a collective over a group that is neither its node ({k} ranks) nor its "
    "column across the nodes (one rank per node): a group that mixes ranks of one node with "
    "ranks of others sends its messages over the slow links whatever its size":
        "rank {rank} 在一个通信组上做了集合通信，但这个组既不是它所在的节点（{k} 个 rank），也不是它跨节点的那一列（每个节点一个 rank）：一个把本节点的 "
        "rank 与其他节点的 rank 混在一起的组，无论大小，都会通过慢速链路发送消息",
    "rank {rank} exchanged a message with rank {c.peer}, on its own node {_node(rank, "
    "SWAP_K)}: that crosses the intra-node link; the partner sits on the other node":
        "rank {rank} 与 rank {c.peer} 交换了消息，而它们都在它自己的节点 {_node(rank, SWAP_K)} "
        "上：这走的是节点内链路；它的伙伴在另一个节点上",
    "my_placement({r}, {nodes}, {k}, {tp}) returned {c!r}; return a pair of ints (dp_index, "
    "tp_index)":
        "my_placement({r}, {nodes}, {k}, {tp}) 返回了 {c!r}；请返回一对整数 (dp_index, tp_index)",
    "my_placement({r}, {nodes}, {k}, {tp}) returned {c}; on {n} ranks with tp={tp} the dp "
    "index runs over 0..{dp - 1}, the tp index over 0..{tp - 1}":
        "my_placement({r}, {nodes}, {k}, {tp}) 返回了 {c}；在 {n} 个 rank、tp={tp} 时，dp 索引的范围是 0..{dp "
        "- 1}，tp 索引的范围是 0..{tp - 1}",
    "on {nodes} nodes x {k}, tp={tp}: ranks {other} and {r} both got {c}; every (dp, tp) slot "
    "needs exactly one rank":
        "在 {nodes} 个节点 x {k}、tp={tp} 时：rank {other} 和 {r} 都得到了 {c}；每个 (dp, tp) 位置恰好需要一个 rank",
    "on {nodes} nodes x {k} ranks with tp={tp}, replica {d}'s TP group is ranks {members}, on "
    "nodes {spanned}: its all-reduces (two per layer, in forward and backward) would cross the "
    "inter-node links, though a node has room for the whole group":
        "在 {nodes} 个节点 x {k} 个 rank、tp={tp} 时，副本 {d} 的 TP 组是 rank {members}，分布在节点 {spanned} "
        "上：它的全规约（每层两次，前向和反向各一次）会跨越节点间链路，而一个节点就容得下整个组",
    "rank {rank} called {', '.join(odd)}; average the gradients with all-reduces (the MoE "
    "layer's own all-to-alls are not yours)":
        "rank {rank} 调用了 {', '.join(odd)}；请用全规约平均梯度（MoE 层自己的全对全不归你写）",
    "rank {rank} all-reduced over groups of {extra} ranks, which no gradient needs":
        "rank {rank} 在 {extra} 个 rank 的组上做了全规约，但没有哪个梯度需要它",
    "rank {rank} all-reduced {got.get(size, 0):,} bytes over groups of {size} ranks on the two "
    "meshes; {what} are {nbytes:,} bytes there":
        "rank {rank} 在两个网格上、{size} 个 rank 的组中全规约了 {got.get(size, 0):,} 字节；{what}在那里应为 "
        "{nbytes:,} 字节",
    "my_megatron_placements returned {type(d).__name__} for {name}; return DTensors made with "
    "distribute_tensor(w, mesh, [placement])":
        "my_megatron_placements 为 {name} 返回了 {type(d).__name__}；请返回用 distribute_tensor(w, "
        "mesh, [placement]) 创建的 DTensor",
    "{len(LARGE)} layers, {LARGE_NODES} nodes of {LARGE_GPUS}":
        "{len(LARGE)} 层，{LARGE_NODES} 个节点，每个 {LARGE_GPUS} 块 GPU",
    "returned {stages!r:.60} as the stages; return a list of (first, end, devices)":
        "返回了 {stages!r:.60} 作为各阶段；请返回一个由 `(first, end, devices)` 组成的列表",
    "the stages end at layer {j}, but there are {len(times)} layers":
        "各阶段在第 {j} 层结束，但模型共有 {len(times)} 层",
    "the stages use {sum((st[2] for st in stages))} devices; there are {devices}":
        "各阶段共用了 {sum((st[2] for st in stages))} 个设备；实际有 {devices} 个",
    "the stage {st!r:.40} is not a (first, end, devices) triple":
        "阶段 {st!r:.40} 不是 `(first, end, devices)` 三元组",
    "the stages must cover the layers in order without gaps: a stage starts at layer {i} where "
    "{j} was expected":
        "各阶段必须按顺序、无间隙地覆盖所有层：有一个阶段从第 {i} 层开始，而此处应为第 {j} 层",
    "stage {tuple(st)} has {k!r} GPUs; a sub-mesh here has {', '.join(map(str, sizes))}":
        "阶段 {tuple(st)} 有 {k!r} 块 GPU；这里的子网格大小为 {', '.join(map(str, sizes))}",
    "finished within {LIMIT_S:g} s":
        "在 {LIMIT_S:g} 秒内完成",
    "rank {rank} put {got[link]:g} bytes on the inter-node links (a ring per call); the "
    "hierarchical all-reduce of a {n_bytes}-byte tensor puts {want[link]:g} there: across "
    "nodes only this rank's 1/{k} of the node's sum travels":
        "rank {rank} 在节点间链路上放了 {got[link]:g} 字节（每次调用一个环）；对 {n_bytes} 字节张量的分层全规约在那里只放 "
        "{want[link]:g} 字节：跨节点传输的只是本节点之和中属于这个 rank 的 1/{k}",
    "rank {rank} put {got[link]:g} bytes on the intra-node links (a ring per call); the "
    "hierarchical all-reduce of a {n_bytes}-byte tensor puts {want[link]:g} there: a "
    "reduce-scatter and an all-gather of the tensor inside the node":
        "rank {rank} 在节点内链路上放了 {got[link]:g} 字节（每次调用一个环）；对 {n_bytes} 字节张量的分层全规约在那里只放 "
        "{want[link]:g} 字节：在节点内对张量做一次规约散射和一次全收集",
}
