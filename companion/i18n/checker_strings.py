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
The words without values are in :mod:`.checker_plain`, the f-string problems in
:mod:`.checker_filled`; both are merged into ``WRITTEN_ZH_CN`` here.
"""
from .checker_filled import FILLED_ZH_CN
from .checker_plain import PLAIN_ZH_CN

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
    "You predicted {value}; computed {shown} (within {tol}; your number is {ratio}x the "
    "computed value).":
        "你的预测是 {value}；计算值为 {shown}（误差在 {tol} 以内；你的数值是计算值的 {ratio} 倍）。",
    "You predicted {value}; computed {shown} (outside {tol}; your number is {ratio}x the "
    "computed value).":
        "你的预测是 {value}；计算值为 {shown}（误差超出 {tol}；你的数值是计算值的 {ratio} 倍）。",
    "You predicted {value}; computed {shown} (within {tol} or {abs_tol}; your number is "
    "{ratio}x the computed value).":
        "你的预测是 {value}；计算值为 {shown}（误差在 {tol} 或 {abs_tol} 以内；你的数值是计算值的 {ratio} 倍）。",
    "You predicted {value}; computed {shown} (outside {tol} or {abs_tol}; your number is "
    "{ratio}x the computed value).":
        "你的预测是 {value}；计算值为 {shown}（误差超出 {tol}，也超出 {abs_tol}；你的数值是计算值的 {ratio} 倍）。",
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
    "Dropless, on {P} real ranks: rank {hot} computes {many} token-expert assignments, rank "
    "{cold} only {few}. Rank {cold}'s step (dispatch, its experts, combine) takes how many "
    "times as long as rank {hot}'s?":
        "无丢弃，在 {P} 个真实的 rank 上：rank {hot} 要计算 {many} 个 token 到专家的分配，rank "
        "{cold} 只有 {few} 个。rank {cold} 的一步（分发、它的专家、合并）是 rank {hot} 的多少倍长？",
    "Top-{k} of {E} experts on 2 nodes. A plain all-to-all sends a token across once per "
    "expert it has on the other node. With node-limited routing (M = {M}) and one copy per "
    "(token, node), what fraction of those inter-node bytes is left?":
        "2 个节点上的 {E} 个专家中选 top-{k}。普通的全对全让一个 token 为它在另一个节点上的"
        "每个专家各跨越一次。使用节点受限路由（M = {M}）并且每个（token，节点）只发一份副本时，"
        "这些跨节点字节还剩下多大比例？",
    "Synchronous SGD with {c_ms:g} ms of compute per step and {latency} ms of latency per "
    "all-reduce: how long does one step take?":
        "同步 SGD，每步计算 {c_ms:g} 毫秒，每次全规约延迟 {latency} 毫秒：一步需要多长时间？",
    "Stale averaging (no correction term) with D = {d}: what held-out accuracy after training?":
        "D = {d} 的陈旧平均（不加修正项）：训练后在留出集上的准确率是多少？",
    "At {latency} ms of latency and {c_ms:g} ms of compute per step, how many times faster per "
    "step is DGA with D = {d} than synchronous SGD?":
        "在延迟 {latency} 毫秒、每步计算 {c_ms:g} 毫秒时，D = {d} 的 DGA 每步比同步 SGD "
        "快多少倍？",
    "GPT-3 on one A100 running at half its {peak:g} TFLOP/s peak: how many years?":
        "GPT-3 在一块以其 {peak:g} TFLOP/s 峰值的一半运行的 A100 上训练：需要多少年？",
    "With TP = {tp} (two nodes), what fraction of the step is TP communication?":
        "TP = {tp}（两个节点）时，TP 通信占一步的多大比例？",
    "A flat ring all-reduce of {size} on {nodes} nodes x {per_node}: how many bytes cross "
    "between the nodes in total (all ranks, both directions)?":
        "在 {nodes} 个节点 x {per_node} 上对 {size} 做扁平环形全规约：节点之间总共传输多少字节"
        "（所有 rank，两个方向合计）？",
}

WRITTEN_ZH_CN = {
    # why a call is forbidden (the exercise cards and the verdicts)
    "it pickles Python objects; broadcast the tensor itself":
        "它会 pickle 序列化 Python 对象；请直接广播张量本身",
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
    "it is the package's ZeRO-1/2":
        "它是本包的 ZeRO-1/2",
    "it is torch's ZeRO-1: write the step yourself":
        "它是 torch 的 ZeRO-1：请自己写这一步",
    "it lays out 1F1B's warm-up, steady state and cool-down for you; write the op lists "
    "yourself":
        "它替你排好了 1F1B 的预热、稳定和收尾阶段；请自己写操作列表",
    "it is the package's interleaved order of ops; write the op lists yourself":
        "它是本包的交错操作顺序；请自己写操作列表",
    "it is the package's column-parallel linear":
        "它是本包的列并行线性层",
    "it is the package's weight split":
        "它是本包的权重切分",
    "it is the package's own f or g":
        "它是本包自己的 f 或 g",
    "it is the package's own sequence-parallel gather":
        "它是本包自己的序列并行收集",
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
    "it is the package's PowerSGD (PowerSGD.exchange)":
        "它是本包的 PowerSGD（PowerSGD.exchange）",
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
    "it places the mesh for you; here you place it":
        "它替你完成网格的放置；这里要你自己放置",
    "it is the same phases with one ring each":
        "它就是同样的几个阶段，每个阶段一个环",
    "it is the package's two-way rings":
        "它是本包的双向环",
    "it is the package's multi-ring round":
        "它是本包的多环轮次",
    "it is section 7's run, averaging included":
        "它是第 7 节的运行，其中已包括平均",
    "it is Alpa's program, the one you are writing":
        "它是 Alpa 的程序，也就是你正在写的那个",
    "it returns the package's schedules, {target} included; write the op lists yourself":
        "它返回本包的调度，其中包括 {target}；请自己写操作列表",
    "it is the package's {target} schedule":
        "它是本包的 {target} 调度",
    "it builds {label}; reordering a built-in schedule's ops skips the exercise":
        "它会构建 {label}；对内置调度的操作重新排序等于跳过了这道练习",
    "it returned one flat list of {len(ops)} ops; return one list per stage ({p} lists for "
    "p={p}), even when they are alike.":
        "它返回了一个包含 {len(ops)} 个操作的扁平列表；请每个阶段返回一个列表（p={p} 时共 {p} 个列表），即使它们相同",
    "it returned {type(ops).__name__} {ops!r:.60}; return a list with one list of ops per "
    "stage ({p} lists for p={p}).":
        "它返回了 {type(ops).__name__} {ops!r:.60}；请返回一个列表，其中每个阶段一个操作列表（p={p} 时共 {p} 个列表）",
    "it called {', '.join(other)}; pipeline stages talk only point to point, to their "
    "neighbours":
        "它调用了 {', '.join(other)}；流水线各阶段只与相邻阶段进行点对点通信",
    "it exchanged messages with rank(s) {stray}, which are not its neighbours":
        "它与 rank {stray} 交换了消息，但它们不是它的相邻阶段",
    "it made {got} {names[0]}s with rank {peer}; a stage exchanges one message per {per} "
    "({want}) with each neighbour ({what} rank {peer})":
        "它与 rank {peer} 进行了 {got} 次 {names[0]}；一个阶段与每个相邻阶段每个{per}交换一条消息（共 {want} 条）（对 rank "
        "{peer}：{what}）",
    "it handed {sent} bytes to its all-gathers over {STEPS} steps; k values and k indices are "
    "at most {most} (8 B + 8 B per kept entry), the dense gradient {dense}. Send only the k "
    "kept entries.":
        "它在 {STEPS} 步中交给全收集 {sent} 字节；k 个值和 k 个索引最多 {most} 字节（每个保留项 8 B + 8 B），而稠密梯度是 {dense} "
        "字节。请只发送保留下来的 k 项",
    "it sent to rank(s) {far}, not its torus neighbours {sorted(near)}: the torus has no "
    "switch, so such a message is forwarded chip by chip across other links; build the sums "
    "from rings, each step to the next chip":
        "它发给了 rank {far}，而不是它在环面上的邻居 "
        "{sorted(near)}：环面没有交换机，这样的消息要逐个芯片经由其他链路转发；请用环求和，每一步只发给下一个芯片",
    **PLAIN_ZH_CN,
    **FILLED_ZH_CN,
}

CHECKER_ZH_CN = {**WRITTEN_ZH_CN, **SAID_ZH_CN}
