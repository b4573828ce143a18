"""The checker's words in Simplified Chinese that carry no values: why a pattern is
required, the parts of a result a verdict names, and the problems an exercise states in
plain words; keyed by the English text. Part of :mod:`.checker_strings` (which merges it
into ``WRITTEN_ZH_CN``), split from it by concept.
This module is a table of data: one entry per message, however many the checker has.
"""

PLAIN_ZH_CN = {
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
    "an all-reduce leaves every rank with the full gradient, the copy ZeRO-2 removes: "
    "reduce-scatter it instead":
        "全规约让每个 rank 都留有完整梯度，而这正是 ZeRO-2 去掉的那份副本：请改用规约散射",
    "the closed forms decide this; simulating every candidate is a search":
        "这由闭式公式决定；逐个模拟候选方案就成了搜索",
    "torch's column split does it for you":
        "torch 的列切分替你完成了",
    "torch's row split does it for you":
        "torch 的行切分替你完成了",
    "torch's sequence parallelism does it for you":
        "torch 的序列并行替你完成了",
    "torch's tensor parallelism does it for you":
        "torch 的张量并行替你完成了",
    "its backward is an all-reduce too, so it is neither f nor g; write the backward yourself":
        "它的反向也是一次全规约，所以它既不是 f 也不是 g；请自己写反向",
    "use torch.distributed.all_reduce, the collective the lecture names":
        "请用 torch.distributed.all_reduce，即讲义中提到的那个集合通信",
    "an autograd all-gather writes the backward for you, and keeps the gathered input":
        "autograd 版的全收集替你写好了反向，并且保留了收集后的输入",
    "an autograd reduce-scatter writes the backward for you":
        "autograd 版的规约散射替你写好了反向",
    "torch's clipping: compute this rank's norm and the factor yourself":
        "torch 的裁剪：请自己算出本 rank 的范数和缩放因子",
    "compute this rank's norm yourself":
        "请自己算出本 rank 的范数",
    "scale the gradients yourself":
        "请自己缩放梯度",
    "the package's orthonormalisation: call torch.linalg.qr yourself":
        "本包的正交化：请自己调用 torch.linalg.qr",
    "the package's averaging":
        "本包的平均",
    "torch's PowerSGD hook does the whole step":
        "torch 的 PowerSGD 钩子完成了整个步骤",
    "DDP would average the gradients for you":
        "DDP 会替你平均梯度",
    "the DP gradient average is yours to write here":
        "这里要你自己写 DP 的梯度平均",
    "build the all-reduce from reduce-scatter and all-gather":
        "请用规约散射和全收集搭出全规约",
    "a collective over all ranks; send one message":
        "这是对所有 rank 的集合通信；请只发一条消息",
    "build the sums from your rings' messages":
        "请用你自己的环上的消息求出这些和",
    "DDP would average every gradient over its one group":
        "DDP 会在它唯一的通信组上平均所有梯度",
    "its ColwiseParallel/RowwiseParallel styles choose the placements for you":
        "它的 ColwiseParallel/RowwiseParallel 风格会替你选择放置方式",
    "one collective is enough":
        "一次集合通信就够了",
    "one rank sends, all receive: one broadcast":
        "一个 rank 发送，所有 rank 接收：一次广播",
    "a sum over ranks is an all-reduce":
        "跨 rank 求和就是一次全规约",
    "point-to-point messages only":
        "只允许点对点消息",
    "the ring is built from point-to-point messages":
        "环形算法由点对点消息构成",
    "built from point-to-point messages":
        "由点对点消息构成",
    "a worker (one push to rank 0, one pull from it)":
        "一个工作节点（向 rank 0 推送一次，再从它拉取一次）",
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
    "calls of layers":
        "各层被调用的次数",
    "most full weights alive at once":
        "同时存活的完整权重最多有几份",
    "no more than one layer's weight bytes alive at once":
        "同时存活的权重字节不超过一层",
    "FSDP gathers weights and reduce-scatters gradients, nothing else":
        "FSDP 只收集权重、对梯度做规约散射，别的都不做",
    "interleaved 1F1B":
        "交错式 1F1B",
    "interleaved zero bubble":
        "交错式零气泡",
    "fits the budget on this rank (measured)":
        "符合这个 rank 上的预算（实测）",
    "activations to / gradients from":
        "发送激活值 / 接收梯度",
    "gradients to / activations from":
        "发送梯度 / 接收激活值",
    "bytes fc1 keeps for backward":
        "fc1 为反向保留的字节数",
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
    "Ulysses re-partitions with an all-to-all":
        "Ulysses 用一次全对全重新划分",
    "one exchange re-partitions the whole tensor":
        "一次交换就重新划分了整个张量",
    "expert parallelism dispatches with all-to-alls":
        "专家并行用全对全进行分发",
    "an all-reduce adds dense tensors, zeros included; every rank keeps different positions, "
    "so the k (index, value) pairs are all-gathered":
        "全规约把稠密张量相加，包括其中的零；每个 rank 保留的位置各不相同，所以要对 k 个（索引，值）对做全收集",
    "local clipping needs no communication: DGC's one all-gather per step is all":
        "本地裁剪无需通信：DGC 每步一次全收集就是全部通信",
    "P and Q have the same shape on every rank":
        "P 和 Q 在每个 rank 上形状相同",
    "the gradients are averaged by all-reduce":
        "梯度通过全规约求平均",
    "the weights are averaged by all-reduce":
        "权重通过全规约求平均",
    "making groups needs no message of yours; the two all-reduces are the checker's probe":
        "建立通信组不需要你发任何消息；那两次全规约是检查器的探测",
    "partial sums and gradient averages are both all-reduces":
        "部分和与梯度平均都是全规约",
    "Llama-3 8B on 16 H100s, 64 sequences":
        "Llama-3 8B，16 块 H100，64 条序列",
    "trains like one process":
        "训练结果与单进程一致",
    "moves the bytes the planner predicts":
        "传输的字节数与规划器的预测一致",
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
    "a torus all-reduce is messages between neighbours":
        "环面上的全规约就是相邻芯片之间的消息",
    "the checker's own call, which gathers your rounds":
        "检查器自己的调用，它收集你的各个轮次",
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
    "slowest stage (returned)":
        "最慢阶段（返回值）",
    "slowest of your stages":
        "你的各阶段中最慢的",
    "sent":
        "发送",
    "received":
        "接收",
    "micro-batch":
        "微批次",
    "micro-batch and chunk":
        "微批次和分块",
}
