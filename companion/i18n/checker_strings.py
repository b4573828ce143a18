"""The checker's explanations in Simplified Chinese, keyed by the English text: why a
call is forbidden, what a communication pattern or a precheck found wrong, the parts of
a result they name, and the prediction verdicts. See :mod:`companion.i18n`; the zh-TW
table is generated from this one by ``python -m companion.tools.i18n_build`` (OpenCC s2twp,
the "checker" key of ``data/messages.zh-TW.json``). tests/test_checker_chinese.py checks
that each key is still written by the package and that what a student reads is Chinese.

Two kinds of entries. ``SAID_ZH_CN``: templates the checker fills in itself
(:func:`companion.learning.verdict.say`), with ``{name}`` fields. ``WRITTEN_ZH_CN``: the
texts the exercise modules write, plain strings and f-strings; an f-string's key is its
own source template (``{len(calls)}`` and all), by which
:func:`companion.learning.verdict.reworded` finds the text again and fills the Chinese
with the same values. Keeping the f-strings as they are leaves each exercise module
readable as English code; a field's text is reworded in turn (a "why" inside a problem).
Terms follow docs/glossary.md's zh-CN column: rank stays "rank".
This module is a table of data: one entry per message, however many the checker has.
"""

SAID_ZH_CN = {
    "{n} {name}":
        "{n} 次 {name}",
    ", ":
        "，",
    "no communication":
        "没有通信",
    "{n} {name} in backward":
        "反向中 {n} 次 {name}",
    " or ":
        " 或 ",
    "{names} in {phase}":
        "{phase}中的 {names}",
    "forward":
        "前向",
    "backward":
        "反向",
    "rank {rank} called {called}; this exercise allows only {allows} ({why})":
        "rank {rank} 调用了 {called}；本练习只允许 {allows}（{why}）",
    "rank {rank} called {called}; this exercise allows only {allows}":
        "rank {rank} 调用了 {called}；本练习只允许 {allows}",
    "rank {rank} made {got} {label} call(s); the pattern needs {n} ({why}). It made: {made}":
        "rank {rank} 调用了 {got} 次 {label}；该模式需要 {n} 次（{why}）。它实际调用了：{made}",
    "rank {rank} made {got} {label} call(s); the pattern needs {n}. It made: {made}":
        "rank {rank} 调用了 {got} 次 {label}；该模式需要 {n} 次。它实际调用了：{made}",
    "rank {rank}: {problem}":
        "rank {rank}：{problem}",
    "You predicted {value}; the answer is {measured}. Right.":
        "你的预测是 {value}；答案是 {measured}。猜对了。",
    "You predicted {value}; the answer is {measured}. Not this time: read on for why.":
        "你的预测是 {value}；答案是 {measured}。这次没猜中：继续往下读，看看原因。",
    "You predicted {value}; measured {shown} (within {tol}; your number is {ratio}x the "
    "measurement).":
        "你的预测是 {value}；测量值为 {shown}（误差在 {tol} 以内；你的数值是测量值的 {ratio} 倍）。",
    "You predicted {value}; measured {shown} (outside {tol}; your number is {ratio}x the "
    "measurement).":
        "你的预测是 {value}；测量值为 {shown}（误差超出 {tol}；你的数值是测量值的 {ratio} 倍）。",
    "You predicted {value}; measured {shown} (within {tol} or {abs_tol}; your number is "
    "{ratio}x the measurement).":
        "你的预测是 {value}；测量值为 {shown}（误差在 {tol} 或 {abs_tol} 以内；你的数值是测量值的 {ratio} 倍）。",
    "You predicted {value}; measured {shown} (outside {tol} or {abs_tol}; your number is "
    "{ratio}x the measurement).":
        "你的预测是 {value}；测量值为 {shown}（误差超出 {tol}，也超出 {abs_tol}；你的数值是测量值的 {ratio} 倍）。",
    "{problem}.{where}":
        "{problem}。{where}",
    "on {name}: {problem}{where}":
        "在 {name} 上：{problem}{where}",

    # prediction questions a notebook fills in with its numbers (predict.question)
    "p = {P}, m = {m}, F = B = W: 1F1B idles {one:.1%} of the time and ZB-H1 {zb:.1%}. What "
    "fraction does ZB-V idle, with two chunks per rank in a V?":
        "p = {P}，m = {m}，F = B = W：1F1B 有 {one:.1%} 的时间空闲，ZB-H1 为 {zb:.1%}。"
        "ZB-V（每个 rank 两个分块，排成 V 形）空闲的时间占多大比例？",
    "Causal ring attention on P={P} ranks, contiguous shards: the busiest rank computes "
    "how many times as many K/V blocks as the least busy one?":
        "在 P={P} 个 rank 上做因果环形注意力，按连续分片：最忙的 rank 计算的 K/V 块数"
        "是最闲的 rank 的多少倍？",
    "Top-1 routing of {n_tok} random tokens to {n_exp} experts with capacity factor 1.0 "
    "(each expert takes at most {cap} tokens): what fraction of the token-expert "
    "assignments is dropped?":
        "把 {n_tok} 个随机 token 以 top-1 路由分给 {n_exp} 个专家，容量因子为 1.0（每个专家"
        "最多接收 {cap} 个 token）：token 到专家的分配中有多大比例被丢弃？",
    "Synchronous SGD with {c_ms:g} ms of compute per step and {latency} ms of latency per "
    "all-reduce: how long does one step take?":
        "同步 SGD，每步计算 {c_ms:g} 毫秒，每次全规约延迟 {latency} 毫秒：一步需要多长时间？",
    "Stale averaging (no correction term) with D = {d}: what held-out accuracy after training?":
        "D = {d} 的陈旧平均（不加修正项）：训练后在留出集上的准确率是多少？",
    "At {latency} ms of latency and {c_ms:g} ms of compute per step, how many times faster per "
    "step is DGA with D = {d} than synchronous SGD?":
        "在延迟 {latency} 毫秒、每步计算 {c_ms:g} 毫秒时，D = {d} 的 DGA 每步比同步 SGD "
        "快多少倍？",
    "With TP = {tp} (two nodes), what fraction of the step is TP communication?":
        "TP = {tp}（两个节点）时，TP 通信占一步的多大比例？",
    "A flat ring all-reduce of {size} on {nodes} nodes x {per_node}: how many bytes cross "
    "between the nodes in total (all ranks, both directions)?":
        "在 {nodes} 个节点 x {per_node} 上对 {size} 做扁平环形全规约：节点之间总共传输多少字节"
        "（所有 rank，两个方向合计）？",
}

WRITTEN_ZH_CN = {
    "it pickles Python objects; broadcast the tensor itself":
        "它会 pickle 序列化 Python 对象；请直接广播张量本身",
    "gathering every rank's tensor moves N times the data; the sum can skip a rank":
        "收集每个 rank 的张量要传输 N 倍的数据；求和可以跳过某个 rank",
    "torch's all-gather collects every tensor to pick one; here one message per rank is the "
    "lesson":
        "torch 的全收集为了挑出一个张量而收集了所有张量；这里要学的是每个 rank 只发一条消息",
    "torch's all-gather, into one tensor":
        "torch 的全收集，收集到一个张量里",
    "torch's all-to-all: use one send and one receive":
        "torch 的全对全：请用一次 send 和一次 recv",
    "torch's broadcast: use one send and one receive":
        "torch 的广播：请用一次 send 和一次 recv",
    "the package's all-gather: use send/recv":
        "本包的全收集：请用 send/recv",
    "the package's all-to-all: use send/recv":
        "本包的全对全：请用 send/recv",
    "torch's all-reduce does the whole job in one call":
        "torch 的全规约一次调用就完成了全部工作",
    "torch's reduce-scatter is the first half of the job":
        "torch 的规约散射是这项工作的前一半",
    "torch's reduce-scatter is the first half":
        "torch 的规约散射是前一半",
    "torch's all-gather is the second half of the job":
        "torch 的全收集是这项工作的后一半",
    "torch's all-gather is the second half":
        "torch 的全收集是后一半",
    "torch's reduce does the summing for you":
        "torch 的 reduce 替你完成了求和",
    "torch's broadcast hands the result out for you":
        "torch 的广播替你把结果分发出去",
    "another all-reduce of the package: here you write recursive doubling":
        "本包的另一种全规约：这里要你自己写递归倍增",
    "another all-reduce of the package: here you write one":
        "本包的另一种全规约：这里要你自己写一个",
    "the package's ring reduce-scatter is the first half of this exercise":
        "本包的环形规约散射是这道练习的前一半",
    "the package's ring all-gather is the second half of this exercise":
        "本包的环形全收集是这道练习的后一半",
    "the package's ring reduce-scatter":
        "本包的环形规约散射",
    "the package's ring all-gather":
        "本包的环形全收集",
    "another all-reduce of the package: here you write the ring":
        "本包的另一种全规约：这里要你自己写环形算法",
    "torch's gather does the push for you":
        "torch 的 gather 替你完成了推送",
    "the package's reduce does the push and the sum":
        "本包的 reduce 替你完成了推送和求和",
    "the package's broadcast does the pull":
        "本包的广播替你完成了拉取",
    "the package's gather does the push":
        "本包的 gather 替你完成了推送",
    "another all-reduce of the package":
        "本包的另一种全规约",
    "the package's crossover: derive it":
        "本包的交叉点计算：请自己推导",
    "torch's all-reduce picks its own algorithm":
        "torch 的全规约会自己选择算法",
    "the package's tree reduce is the first half of this exercise":
        "本包的树形 reduce 是这道练习的前一半",
    "the package's tree broadcast is the second half":
        "本包的树形广播是后一半",
    "it is the package's FSDP":
        "它是本包的 FSDP",
    "it is the package's un-sharding step":
        "它是本包的反分片步骤",
    "it is torch's FSDP2":
        "它是 torch 的 FSDP2",
    "it is torch's FSDP":
        "它是 torch 的 FSDP",
    "it answers the first half (the bytes per parameter): count them yourself":
        "它回答了前一半（每个参数的字节数）：请自己数",
    "it evaluates the package's formula for you":
        "它替你计算本包的公式",
    "an all-reduce leaves every rank with the full gradient, the copy ZeRO-2 removes: "
    "reduce-scatter it instead":
        "全规约让每个 rank 都留有完整梯度，而这正是 ZeRO-2 去掉的那份副本：请改用规约散射",
    "it is the package's ZeRO-1/2":
        "它是本包的 ZeRO-1/2",
    "it is torch's ZeRO-1: write the step yourself":
        "它是 torch 的 ZeRO-1：请自己写这一步",
    "the closed forms decide this; simulating every candidate is a search":
        "这由闭式公式决定；逐个模拟候选方案就成了搜索",
    "it lays out 1F1B's warm-up, steady state and cool-down for you; write the op lists "
    "yourself":
        "它替你排好了 1F1B 的预热、稳定和收尾阶段；请自己写操作列表",
    "it is the package's interleaved order of ops; write the op lists yourself":
        "它是本包的交错操作顺序；请自己写操作列表",
    "it is the package's column-parallel linear":
        "它是本包的列并行线性层",
    "it is the package's weight split":
        "它是本包的权重切分",
    "torch's column split does it for you":
        "torch 的列切分替你完成了",
    "torch's row split does it for you":
        "torch 的行切分替你完成了",
    "torch's sequence parallelism does it for you":
        "torch 的序列并行替你完成了",
    "torch's tensor parallelism does it for you":
        "torch 的张量并行替你完成了",
    "it is the package's own f or g":
        "它是本包自己的 f 或 g",
    "its backward is an all-reduce too, so it is neither f nor g; write the backward yourself":
        "它的反向也是一次全规约，所以它既不是 f 也不是 g；请自己写反向",
    "use torch.distributed.all_reduce, the collective the lecture names":
        "请用 torch.distributed.all_reduce，即讲义中提到的那个集合通信",
    "it is the package's own sequence-parallel gather":
        "它是本包自己的序列并行收集",
    "an autograd all-gather writes the backward for you, and keeps the gathered input":
        "autograd 版的全收集替你写好了反向，并且保留了收集后的输入",
    "an autograd reduce-scatter writes the backward for you":
        "autograd 版的规约散射替你写好了反向",
    "it is the package's router bookkeeping":
        "它是本包的路由簿记",
    "it is the package's dispatch":
        "它是本包的分发",
    "it is the package's expert-parallel layer":
        "它是本包的专家并行层",
    "it is the package's all-to-all wrapper; call torch.distributed yourself":
        "它是本包对全对全的封装；请自己调用 torch.distributed",
    "it is notebook 01's point-to-point all-to-all; here use the collective":
        "它是 notebook 01 用点对点实现的全对全；这里请用集合通信",
    "it is the package's Ulysses all-to-all":
        "它是本包的 Ulysses 全对全",
    "it is the package's 2D attention":
        "它是本包的二维注意力",
    "it is the package's ring hop; post the isend and irecv yourself":
        "它是本包的环上一跳；请自己发起 isend 和 irecv",
    "it computes full attention in one call; the exercise is to merge block by block":
        "它一次调用就算出完整的注意力；这道练习要你逐块合并",
    "it is the package's Ulysses attention":
        "它是本包的 Ulysses 注意力",
    "it is the package's momentum correction: write u and v yourself":
        "它是本包的动量修正：请自己写 u 和 v",
    "it is the package's local clipping":
        "它是本包的本地裁剪",
    "torch's clipping: compute this rank's norm and the factor yourself":
        "torch 的裁剪：请自己算出本 rank 的范数和缩放因子",
    "compute this rank's norm yourself":
        "请自己算出本 rank 的范数",
    "scale the gradients yourself":
        "请自己缩放梯度",
    "it is the package's PowerSGD (PowerSGD.exchange)":
        "它是本包的 PowerSGD（PowerSGD.exchange）",
    "the package's orthonormalisation: call torch.linalg.qr yourself":
        "本包的正交化：请自己调用 torch.linalg.qr",
    "the package's averaging":
        "本包的平均",
    "torch's PowerSGD hook does the whole step":
        "torch 的 PowerSGD 钩子完成了整个步骤",
    "it is torch's PowerSGD orthogonalisation: use torch.linalg.qr":
        "它是 torch 的 PowerSGD 正交化：请用 torch.linalg.qr",
    "it is the package's top-k encoder: select with topk yourself":
        "它是本包的 top-k 编码器：请自己用 topk 挑选",
    "it is the package's decoder: add the pairs with index_add_ yourself":
        "它是本包的解码器：请自己用 index_add_ 累加这些数对",
    "it is the package's top-k selection":
        "它是本包的 top-k 挑选",
    "it is the package's exchange: call dist.all_gather yourself":
        "它是本包的交换：请自己调用 dist.all_gather",
    "it is the package's training loop, which does this for you":
        "它是本包的训练循环，会替你完成这一切",
    "it is the package's single-process version of these loops":
        "它是这些循环在本包中的单进程版本",
    "it is the package's correction term: write the three terms yourself":
        "它是本包的修正项：请自己写出这三项",
    "it is torch's model averaging, which does the round's average for you":
        "它是 torch 的模型平均，会替你完成这一轮的平均",
    "it is torch's FedAvg / local SGD averager":
        "它是 torch 的 FedAvg / 本地 SGD 平均器",
    "DDP would average the gradients for you":
        "DDP 会替你平均梯度",
    "it is the search itself: choose by reading breakdowns from planner.evaluate":
        "它就是搜索本身：请阅读 planner.evaluate 给出的分解来选择",
    "it is the checker; it runs the search":
        "它是检查器；它会运行搜索",
    "it is the package's answer to this exercise":
        "它是本包对这道练习的答案",
    "it computes the answer in one process from the full tensors":
        "它在单个进程中用完整张量算出答案",
    "it is the package's DP x TP training loop":
        "它是本包的 DP x TP 训练循环",
    "the DP gradient average is yours to write here":
        "这里要你自己写 DP 的梯度平均",
    "it builds the mesh's groups for you; here you build them":
        "它替你建好了网格的各个通信组；这里要你自己建",
    "it creates the groups from a list for you; use dist.new_group":
        "它替你根据列表创建通信组；请用 dist.new_group",
    "it is the package's rule; derive it here":
        "它是本包的规则；请在这里自己推导",
    "it is the package's placement rule; derive it here":
        "它是本包的放置规则；请在这里自己推导",
    "it is the package's FSDP, whose prefetch is what you write here":
        "它是本包的 FSDP，而它的预取正是你在这里要写的",
    "it is the same three phases, run as two rings":
        "它就是同样的三个阶段，以两个环的方式运行",
    "build the all-reduce from reduce-scatter and all-gather":
        "请用规约散射和全收集搭出全规约",
    "it places the mesh for you; here you place it":
        "它替你完成网格的放置；这里要你自己放置",
    "a collective over all ranks; send one message":
        "这是对所有 rank 的集合通信；请只发一条消息",
    "it is the same phases with one ring each":
        "它就是同样的几个阶段，每个阶段一个环",
    "it is the package's two-way rings":
        "它是本包的双向环",
    "it is the package's multi-ring round":
        "它是本包的多环轮次",
    "build the sums from your rings' messages":
        "请用你自己的环上的消息求出这些和",
    "it is section 7's run, averaging included":
        "它是第 7 节的运行，其中已包括平均",
    "DDP would average every gradient over its one group":
        "DDP 会在它唯一的通信组上平均所有梯度",
    "its ColwiseParallel/RowwiseParallel styles choose the placements for you":
        "它的 ColwiseParallel/RowwiseParallel 风格会替你选择放置方式",
    "it is Alpa's program, the one you are writing":
        "它是 Alpa 的程序，也就是你正在写的那个",
    "{len(calls)} all-reduces; the values and the count of healthy ranks need two at most "
    "(one, if the count travels in the same tensor)":
        "{len(calls)} 次全规约；数值和健康 rank 的计数最多需要两次（如果计数放在同一个张量里一起传，只需一次）",
    "rank {rank} called {mine} and rank 0 called {first} (name, bytes); every rank must make "
    "the same collective calls in the same order, with tensors of the same size":
        "rank {rank} 调用了 {mine}，而 rank 0 调用了 {first}（名称，字节数）；每个 rank "
        "都必须以相同的顺序、用相同大小的张量进行相同的集合通信调用",
    "one collective is enough":
        "一次集合通信就够了",
    "one rank sends, all receive: one broadcast":
        "一个 rank 发送，所有 rank 接收：一次广播",
    "a sum over ranks is an all-reduce":
        "跨 rank 求和就是一次全规约",
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
    "point-to-point messages only":
        "只允许点对点消息",
    "the ring is built from point-to-point messages":
        "环形算法由点对点消息构成",
    "built from point-to-point messages":
        "由点对点消息构成",
    "a worker (one push to rank 0, one pull from it)":
        "一个工作节点（向 rank 0 推送一次，再从它拉取一次）",
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
    "push and pull are point-to-point messages":
        "推送和拉取都是点对点消息",
    "the tree is built from point-to-point messages":
        "树由点对点消息构成",
    "the package's all-reduces are point-to-point messages":
        "本包的全规约由点对点消息构成",
    "ZeRO-2 replaces DDP's all-reduce by a reduce-scatter and an all-gather":
        "ZeRO-2 把 DDP 的全规约换成一次规约散射和一次全收集",
    "one reduce-scatter of the gradient, one all-gather of the weights":
        "对梯度做一次规约散射，对权重做一次全收集",
    "weight-gradient shard of layer {i}":
        "第 {i} 层的权重梯度分片",
    "calls of layers":
        "各层被调用的次数",
    "most full weights alive at once":
        "同时存活的完整权重最多有几份",
    "no more than one layer's weight bytes alive at once":
        "同时存活的权重字节不超过一层",
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
    "FSDP gathers weights and reduce-scatters gradients, nothing else":
        "FSDP 只收集权重、对梯度做规约散射，别的都不做",
    "interleaved 1F1B":
        "交错式 1F1B",
    "interleaved zero bubble":
        "交错式零气泡",
    "it returns the package's schedules, {target} included; write the op lists yourself":
        "它返回本包的调度，其中包括 {target}；请自己写操作列表",
    "it is the package's {target} schedule":
        "它是本包的 {target} 调度",
    "it builds {label}; reordering a built-in schedule's ops skips the exercise":
        "它会构建 {label}；对内置调度的操作重新排序等于跳过了这道练习",
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
    "fits the budget on this rank (measured)":
        "符合这个 rank 上的预算（实测）",
    "it returned one flat list of {len(ops)} ops; return one list per stage ({p} lists for "
    "p={p}), even when they are alike.":
        "它返回了一个包含 {len(ops)} 个操作的扁平列表；请每个阶段返回一个列表（p={p} 时共 {p} 个列表），即使它们相同",
    "it returned {type(ops).__name__} {ops!r:.60}; return a list with one list of ops per "
    "stage ({p} lists for p={p}).":
        "它返回了 {type(ops).__name__} {ops!r:.60}；请返回一个列表，其中每个阶段一个操作列表（p={p} 时共 {p} 个列表）",
    "at p={p}, m={m} your schedule idles {timeline.bubble_fraction:.1%} of the time; {target} "
    "idles {want:.1%}. Draw it and look for the grey gaps: draw_timeline(plt.gca(), "
    "simulate(Schedule('mine', {p}, {m}, {name}({p}, {m}){flag}))).{where}":
        "在 p={p}、m={m} 时，你的调度有 {timeline.bubble_fraction:.1%} 的时间空闲；{target} 只空闲 "
        "{want:.1%}。把它画出来，找找灰色的空隙：draw_timeline(plt.gca(), simulate(Schedule('mine', {p}, {m}, "
        "{name}({p}, {m}){flag})))。{where}",
    "it called {', '.join(other)}; pipeline stages talk only point to point, to their "
    "neighbours":
        "它调用了 {', '.join(other)}；流水线各阶段只与相邻阶段进行点对点通信",
    "it exchanged messages with rank(s) {stray}, which are not its neighbours":
        "它与 rank {stray} 交换了消息，但它们不是它的相邻阶段",
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
    "activations to / gradients from":
        "发送激活值 / 接收梯度",
    "gradients to / activations from":
        "发送梯度 / 接收激活值",
    "it made {got} {names[0]}s with rank {peer}; a stage exchanges one message per {per} "
    "({want}) with each neighbour ({what} rank {peer})":
        "它与 rank {peer} 进行了 {got} 次 {names[0]}；一个阶段与每个相邻阶段每个{per}交换一条消息（共 {want} 条）（对 rank "
        "{peer}：{what}）",
    "bytes fc1 keeps for backward":
        "fc1 为反向保留的字节数",
    "made {summary(calls)}; a column-parallel linear needs no communication in forward, since "
    "every rank already holds the whole X":
        "调用了 {summary(calls)}；列并行线性层在前向中无需任何通信，因为每个 rank 都已持有完整的 X",
    "f and g communicate with all-reduces only":
        "f 和 g 只用全规约通信",
    "g sums the partial outputs":
        "g 对部分输出求和",
    "f sums the partial input gradients":
        "f 对部分输入梯度求和",
    "sequence parallelism replaces the all-reduce by its two halves":
        "序列并行把全规约换成它的两半",
    "your gather, then fc2's reduce-scatter":
        "你的收集，然后是 fc2 的规约散射",
    "fc2's all-gather, your re-gather and your reduce-scatter":
        "fc2 的全收集、你的再次收集和你的规约散射",
    "fc1.weight grad":
        "fc1.weight 的梯度",
    "fc1.bias grad":
        "fc1.bias 的梯度",
    "fc2.weight grad":
        "fc2.weight 的梯度",
    "fc2.bias grad":
        "fc2.bias 的梯度",
    "K/V blocks computed":
        "计算过的 K/V 块数",
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
    "Ulysses re-partitions with an all-to-all":
        "Ulysses 用一次全对全重新划分",
    "one exchange re-partitions the whole tensor":
        "一次交换就重新划分了整个张量",
    "expert parallelism dispatches with all-to-alls":
        "专家并行用全对全进行分发",
    "{len(calls)} all-gather(s) recorded for {STEPS} steps: each step exchanges its own pairs "
    "with dist.all_gather or dist.all_gather_into_tensor":
        "{STEPS} 步中记录到 {len(calls)} 次全收集：每一步都用 dist.all_gather 或 dist.all_gather_into_tensor "
        "交换自己的数对",
    "it handed {sent} bytes to its all-gathers over {STEPS} steps; k values and k indices are "
    "at most {most} (8 B + 8 B per kept entry), the dense gradient {dense}. Send only the k "
    "kept entries.":
        "它在 {STEPS} 步中交给全收集 {sent} 字节；k 个值和 k 个索引最多 {most} 字节（每个保留项 8 B + 8 B），而稠密梯度是 {dense} "
        "字节。请只发送保留下来的 k 项",
    "its all-reduces carried {got} bytes; one step is two all-reduces, of P (n x r = {PSGD_N} "
    "x {PSGD_R}: {want[0]} B) and then of Q (m x r = {PSGD_M} x {PSGD_R}: {want[1]} B), never "
    "the {PSGD_N} x {PSGD_M} gradient ({4 * PSGD_N * PSGD_M} B)":
        "它的全规约传输了 {got} 字节；一步是两次全规约，先是 P（n x r = {PSGD_N} x {PSGD_R}：{want[0]} B），再是 Q（m x r = "
        "{PSGD_M} x {PSGD_R}：{want[1]} B），绝不是 {PSGD_N} x {PSGD_M} 的梯度（{4 * PSGD_N * PSGD_M} B）",
    "an all-reduce adds dense tensors, zeros included; every rank keeps different positions, "
    "so the k (index, value) pairs are all-gathered":
        "全规约把稠密张量相加，包括其中的零；每个 rank 保留的位置各不相同，所以要对 k 个（索引，值）对做全收集",
    "local clipping needs no communication: DGC's one all-gather per step is all":
        "本地裁剪无需通信：DGC 每步一次全收集就是全部通信",
    "one per step, {DGC_STEPS} steps, two runs":
        "每步一次，共 {DGC_STEPS} 步，运行两次",
    "P and Q have the same shape on every rank":
        "P 和 Q 在每个 rank 上形状相同",
    "the gradients are averaged by all-reduce":
        "梯度通过全规约求平均",
    "one per step, {SYNC_STEPS} steps":
        "每步一次，共 {SYNC_STEPS} 步",
    "one per step, {DGA_STEPS} steps, each waited for later":
        "每步一次，共 {DGA_STEPS} 步，每次都在之后才等待",
    "the weights are averaged by all-reduce":
        "权重通过全规约求平均",
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
    "making groups needs no message of yours; the two all-reduces are the checker's probe":
        "建立通信组不需要你发任何消息；那两次全规约是检查器的探测",
    "partial sums and gradient averages are both all-reduces":
        "部分和与梯度平均都是全规约",
    "{MODEL.name} on 64 H100s, {GLOBAL_BATCH} sequences":
        "{MODEL.name}，64 块 H100，{GLOBAL_BATCH} 条序列",
    "Llama-3 8B on 16 H100s, 64 sequences":
        "Llama-3 8B，16 块 H100，64 条序列",
    "{MODEL.name} on 32 H100s, 128 sequences":
        "{MODEL.name}，32 块 H100，128 条序列",
    "my_configuration returned {type(config).__name__} {config!r:.60}; return a dict such as "
    "dict(dp=..., tp=..., pp=..., zero=..., micro_batch=...)":
        "my_configuration 返回了 {type(config).__name__} {config!r:.60}；请返回一个字典，例如 dict(dp=..., "
        "tp=..., pp=..., zero=..., micro_batch=...)",
    "the configuration's keys: missing {missing}, not understood {extra}; use {', "
    "'.join(_KEYS)} (and optionally {', '.join(_OPTIONAL)})":
        "配置的键：缺少 {missing}，无法识别 {extra}；请使用 {', '.join(_KEYS)}（以及可选的 {', '.join(_OPTIONAL)}）",
    "trains like one process":
        "训练结果与单进程一致",
    "moves the bytes the planner predicts":
        "传输的字节数与规划器的预测一致",
    "my_configuration had the cost model price {priced.priced} configurations; the budget is "
    "{EVALUATIONS} per problem. Reason from the breakdowns of a few instead of searching them "
    "all":
        "my_configuration 让代价模型为 {priced.priced} 个配置定价；每个问题的预算是 {EVALUATIONS} "
        "个。请从少数几个配置的分解中推理，而不是把它们全部搜索一遍",
    "on {name}, the cost model rejects it{where}:\n  {text}":
        "在 {name} 上，代价模型拒绝了它{where}：\n  {text}",
    "the planner cannot evaluate {config}: {err}":
        "规划器无法评估 {config}：{err}",
    "Llama-3 70B, 2M tokens, up to 1,024 H100s":
        "Llama-3 70B，2M token，最多 1,024 块 H100",
    "GPT-3 175B, 3.1M tokens, up to 4,096 A100s":
        "GPT-3 175B，3.1M token，最多 4,096 块 A100",
    "7B, 64 sequences of 4,096, up to 64 B200s":
        "7B，64 条长 4,096 的序列，最多 64 块 B200",
    "Llama-3 405B, 16M tokens, up to 2,048 H100s":
        "Llama-3 405B，16M token，最多 2,048 块 H100",
    "a fine-tune, 18 sequences of 1,024, on one node of 8 H100s":
        "一次微调，18 条长 1,024 的序列，在一个 8 块 H100 的节点上",
    "2,048 tokens, up to 64 A100s":
        "2,048 个 token，最多 64 块 A100",
    "TP 8 on H100 NVLink":
        "TP 8，H100 NVLink",
    "TP 16 across two full H100 nodes":
        "TP 16，跨两个满载的 H100 节点",
    "TP 8 on A100 NVLink":
        "TP 8，A100 NVLink",
    "TP 8 on B200 NVLink":
        "TP 8，B200 NVLink",
    "TP 4 over one TPU v5p torus axis":
        "TP 4，沿 TPU v5p 环面的一个轴",
    "TP 2 across two A100 nodes, one GPU in each":
        "TP 2，跨两个 A100 节点，每个节点一块 GPU",
    "Llama-3 70B, 1M tokens, 1,024 H100s":
        "Llama-3 70B，1M token，1,024 块 H100",
    "Llama-3 70B, 64K tokens, one node of 8 H100s":
        "Llama-3 70B，64K token，一个 8 块 H100 的节点",
    "Llama-3 8B, 4M tokens, 512 H100s":
        "Llama-3 8B，4M token，512 块 H100",
    "Llama-3 70B, 16M tokens, 2,048 H100s":
        "Llama-3 70B，16M token，2,048 块 H100",
    "Llama-3 70B, 2M tokens, 2,048 B200s":
        "Llama-3 70B，2M token，2,048 块 B200",
    "GPT-3 175B, 3.1M tokens, 4,096 A100s":
        "GPT-3 175B，3.1M token，4,096 块 A100",
    "Llama-3 405B, 1M tokens, 8,192 H100s":
        "Llama-3 405B，1M token，8,192 块 H100",
    "called {summary(calls)}; this is arithmetic: no message is needed":
        "调用了 {summary(calls)}；这只是算术：不需要任何消息",
    "FSDP's forward pass only gathers":
        "FSDP 的前向只做收集",
    "one all-gather per unit":
        "每个单元一次全收集",
    "units computed before their own all-gather was waited for":
        "在等待自己的全收集之前就开始计算的单元数",
    "all-gathers in flight while the unit before them computed":
        "在前一个单元计算时仍在进行中的全收集数",
    "most units' gathered weights alive at once":
        "同时存活的已收集单元权重最多有几份",
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
    "a swap is point-to-point":
        "交换是点对点的",
    "the three phases are reduce-scatters and all-gathers in groups":
        "三个阶段都是组内的规约散射和全收集",
    "bytes per link class":
        "每类链路上的字节数",
    "bytes your exchange rounds sent":
        "你的交换轮次发送的字节数",
    "time of your rounds on the torus model":
        "你的轮次在环面模型上的耗时",
    "it sent to rank(s) {far}, not its torus neighbours {sorted(near)}: the torus has no "
    "switch, so such a message is forwarded chip by chip across other links; build the sums "
    "from rings, each step to the next chip":
        "它发给了 rank {far}，而不是它在环面上的邻居 "
        "{sorted(near)}：环面没有交换机，这样的消息要逐个芯片经由其他链路转发；请用环求和，每一步只发给下一个芯片",
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
    "a torus all-reduce is messages between neighbours":
        "环面上的全规约就是相邻芯片之间的消息",
    "the checker's own call, which gathers your rounds":
        "检查器自己的调用，它收集你的各个轮次",
    "rank {rank} called {', '.join(odd)}; average the gradients with all-reduces (the MoE "
    "layer's own all-to-alls are not yours)":
        "rank {rank} 调用了 {', '.join(odd)}；请用全规约平均梯度（MoE 层自己的全对全不归你写）",
    "rank {rank} all-reduced over groups of {extra} ranks, which no gradient needs":
        "rank {rank} 在 {extra} 个 rank 的组上做了全规约，但没有哪个梯度需要它",
    "rank {rank} all-reduced {got.get(size, 0):,} bytes over groups of {size} ranks on the two "
    "meshes; {what} are {nbytes:,} bytes there":
        "rank {rank} 在两个网格上、{size} 个 rank 的组中全规约了 {got.get(size, 0):,} 字节；{what}在那里应为 "
        "{nbytes:,} 字节",
    "the dense gradients":
        "稠密梯度",
    "the experts' gradients":
        "专家的梯度",
    "weight elements on this rank":
        "这个 rank 上的权重元素数",
    "collectives in forward":
        "前向中的集合通信",
    "collectives in backward":
        "反向中的集合通信",
    "my_megatron_placements returned {type(d).__name__} for {name}; return DTensors made with "
    "distribute_tensor(w, mesh, [placement])":
        "my_megatron_placements 为 {name} 返回了 {type(d).__name__}；请返回用 distribute_tensor(w, "
        "mesh, [placement]) 创建的 DTensor",
    "{len(LARGE)} layers, {LARGE_NODES} nodes of {LARGE_GPUS}":
        "{len(LARGE)} 层，{LARGE_NODES} 个节点，每个 {LARGE_GPUS} 块 GPU",
    "embedding + 6 blocks + LM head, 1 node of 4":
        "嵌入层 + 6 个块 + LM 头，1 个 4 卡节点",
    "8 equal blocks, 1 node of 4":
        "8 个相同的块，1 个 4 卡节点",
    "a heavy first layer, 2 nodes of 4":
        "第一层很重，2 个 4 卡节点",
    "an uneven model, 1 node of 8":
        "不均匀的模型，1 个 8 卡节点",
    "two heavy layers, 2 nodes of 4":
        "两个很重的层，2 个 4 卡节点",
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
    "slowest stage (returned)":
        "最慢阶段（返回值）",
    "slowest of your stages":
        "你的各阶段中最慢的",
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
    "sent":
        "发送",
    "received":
        "接收",
    "micro-batch":
        "微批次",
    "micro-batch and chunk":
        "微批次和分块",
}

CHECKER_ZH_CN = {**WRITTEN_ZH_CN, **SAID_ZH_CN}
