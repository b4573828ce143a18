"""Strings that the notebooks' code (English, shared by every edition) passes to the
package, in Simplified Chinese: prediction questions, units and choices.
Looked up like :mod:`.messages`; tests/test_translations.py checks that every literal
question, unit and choice of every notebook has an entry and that each key is still used.
Questions a cell builds with an f-string stay English (their text is computed there).
"""

# Strings that a notebook's (English, shared) code passes to the package: prediction
# questions and units. Looked up like the messages above; tests/test_translations.py
# checks that each key still occurs in an English notebook's code, and that notebooks
# 00 and 03 (the ones CI runs in Chinese) have all of theirs.
NOTEBOOK_ZH_CN = {
    "For the same dense BF16 FLOP/s, how many times the power of a GB200 NVL72 does a "
    "CloudMatrix 384 draw?":
        "同样的稠密 BF16 FLOP/s，CloudMatrix 384 的功耗是 GB200 NVL72 的多少倍？",
    "years": "年",
    "How many milliseconds from launch() to results for 8 ranks (a trivial all-reduce)?":
        "对 8 个 rank 做一次简单的全规约，从调用 launch() 到拿到结果需要多少毫秒？",
    "With N = 4 ranks, what number does rank 2 hold after the all-reduce?":
        "N = 4 个 rank 时，全规约之后 rank 2 持有的数是多少？",
    "How many bytes per parameter does each GPU keep for the five items above together?":
        "上面五项加在一起，每个 GPU 为每个参数保存多少字节？",
    "ZeRO-3 / FSDP on these 4 ranks: how many times the parameter bytes does each "
    "rank send per step (DDP: 2(N-1)/N = 1.5)?":
        "ZeRO-3 / FSDP 在这 4 个 rank 上：每一步每个 rank 发送的字节数是参数字节数的多少倍"
        "（DDP 为 2(N-1)/N = 1.5）？",
    "ms": "毫秒",
    "bytes": "字节",
    "x the parameter bytes": "倍参数字节数",
    "fraction": "比例",
    # the other notebooks' literal questions, units and choices (f-string questions stay
    # English: their text is computed in the cell)
    "Every rank holds a 16-byte tensor (4 floats) and there are 4 ranks. How many bytes "
    "does the busiest rank send in the ring all-reduce?":
        "共有 4 个 rank，每个 rank 持有一个 16 字节的张量（4 个浮点数）。在环形全规约中，"
        "发送最多的 rank 要发送多少字节？",
    "On 8 ranks, recursive doubling sends how many times the bytes per rank that the ring "
    "all-reduce sends?":
        "在 8 个 rank 上，递归倍增每个 rank 发送的字节数是环形全规约的多少倍？",
    "At N = 8, the parameter server's busiest rank sends how many times as many bytes as a "
    "rank of the ring all-reduce?":
        "N = 8 时，参数服务器中最忙的 rank 发送的字节数是环形全规约中一个 rank 的多少倍？",
    "On 4 ranks, above what tensor size is Rabenseifner's algorithm faster than recursive "
    "doubling?":
        "在 4 个 rank 上，张量大于多少时 Rabenseifner 算法比递归倍增更快？",
    "times": "倍",
    "GPipe with p = 8 stages and m = 24 micro-batches: what fraction of the time do the "
    "stages idle?":
        "GPipe，p = 8 个阶段、m = 24 个微批次：各阶段空闲的时间占多大比例？",
    "p = 4, m = 8: 1F1B's bubble, compared with GPipe's, is ...":
        "p = 4，m = 8：与 GPipe 相比，1F1B 的气泡……",
    "smaller": "更小",
    "the same": "相同",
    "larger": "更大",
    "p = 4, m = 8: at most how many micro-batches' activations does stage 0 hold at once "
    "under 1F1B?":
        "p = 4，m = 8：在 1F1B 下，阶段 0 同时最多保存多少个微批次的激活值？",
    "micro-batches": "个微批次",
    "At its peak, DualPipeV holds ... micro-batches' activations as ZB-V":
        "在峰值时，DualPipeV 保存的微批次激活值与 ZB-V 相比……",
    "fewer": "更少",
    "as many": "一样多",
    "more": "更多",
    "4 transformer blocks on 4 ranks: how many times the bytes of the busiest pipeline "
    "rank does one rank send under tensor parallelism?":
        "4 个 transformer 块放在 4 个 rank 上：在张量并行下，一个 rank 发送的字节数是流水线"
        "中最忙 rank 的多少倍？",
    "One tensor-parallel transformer block (attention + MLP) on t=2 ranks: how many "
    "all-reduces does each rank issue in one forward and one backward pass, together?":
        "t=2 个 rank 上的一个张量并行 transformer 块（注意力 + MLP）：一次前向加一次反向，"
        "每个 rank 一共发起多少次全规约？",
    "all-reduces": "次全规约",
    "Forget f (identity both ways). Compared with the single-process MLP, which results "
    "are still right?":
        "去掉 f（前向和反向都是恒等）。与单进程 MLP 相比，哪些结果仍然正确？",
    "none": "都不对",
    "the output only": "只有输出",
    "the output and the weight gradients": "输出和权重梯度",
    "everything": "全部",
    "Plain TP (no SP) on t=4 ranks, for the block measured below: what fraction of the "
    "single-process block's saved activations does one rank keep?":
        "t=4 个 rank 上的普通张量并行（无序列并行），对下面测量的块：一个 rank 保存的激活值"
        "占单进程块的多大比例？",
    "Which row of the ablation learns slowest: the lowest held-out accuracy averaged over "
    "the whole run?":
        "消融实验中哪一行学得最慢：整个训练过程平均的留出集准确率最低？",
    "After warm-up, how many times fewer bytes than the dense fp32 gradient does a rank "
    "send per step at 99.9% sparsity?":
        "预热之后，在 99.9% 稀疏度下，一个 rank 每步发送的字节数比稠密 fp32 梯度少多少倍？",
    "Llama-3 8B, FSDP on 8 H100s, 8,192 tokens per GPU, selective recomputation: peak GB per "
    "GPU?":
        "Llama-3 8B，8 块 H100 上用 FSDP，每块 GPU 8,192 个 token，选择性重计算：每块 GPU 的峰值是多少 GB？",
    "Plain DDP, Llama-3 70B with Adam in mixed precision: how many GB of model states per "
    "GPU?":
        "普通 DDP，Llama-3 70B，混合精度 Adam：每个 GPU 的模型状态有多少 GB？",
    "Below how many tokens is an H100 bf16 matmul limited by memory bandwidth, not compute?":
        "token 数少于多少时，H100 上的 bf16 矩阵乘法受内存带宽限制而不是受计算限制？",
    "tokens": "个 token",
    "The largest power-of-two TP degree at which Llama-3 70B's MLP stays compute-bound on "
    "H100 NVLink?":
        "在 H100 NVLink 上，Llama-3 70B 的 MLP 保持计算受限的最大 2 的幂 TP 度是多少？",
    "Hierarchical vs flat ring all-reduce of 1 MB on the emulated 2 nodes x 2: how many "
    "times faster is the hierarchical one?":
        "在仿真的 2 个节点 x 2 上对 1 MB 做全规约：分层全规约比扁平环快多少倍？",
    "times faster": "倍",
    "x": "倍",
    "At 512 rows per rank, what percentage of FSDP's all-gather time on the link does "
    "prefetch hide under compute?":
        "每个 rank 512 行时，FSDP 的全收集在链路上的时间中，有百分之多少被预取藏到了计算之下？",
    "On 4 NVLinked GPUs, which plan does the solver pick for fc1 then fc2?":
        "在 4 块以 NVLink 相连的 GPU 上，求解器为 fc1 和 fc2 依次选择哪种方案？",
    "Megatron's MLP on 4 ranks under DTensor: how many all-reduces in the forward pass?":
        "用 DTensor 在 4 个 rank 上运行 Megatron 的 MLP：前向传播中有几次全规约？",
    "Llama-3.2 1B on 8 H100s: how much faster is Alpa's slicing than the best "
    "equal-layers split?":
        "Llama-3.2 1B 在 8 块 H100 上：Alpa 的阶段切分比最好的等层数切分快多少倍？",
    "x (speed-up)": "倍（加速比）",
    "DeepSeek-V3 on 2,048 H800s (EP 64, PP 16, DP 128): training tokens per GPU per "
    "second?":
        "DeepSeek-V3 在 2,048 块 H800 上（EP 64、PP 16、DP 128）：每块 GPU 每秒训练多少个 token？",
    "tokens/s": "token/秒",
    "After the restart, how far are the final weights from those of the run that never "
    "failed?":
        "重启之后，最终权重与从未失败过的那次运行的权重相差多少？",
    "bit for bit equal": "逐位相同",
    "equal up to float32 rounding": "在 float32 舍入误差范围内相等",
    "visibly different": "明显不同",
    "With the larger pause above and one interruption every M hours as printed, how many "
    "minutes of training between checkpoints waste the least time?":
        "取上面较长的那个暂停时间，中断间隔 M 取打印出的小时数：两次检查点之间训练多少分钟，"
        "浪费的时间最少？",
    "minutes": "分钟",
    "Mixtral 8x22B as NVIDIA configures it (TP 4, EP 8, PP 4 on 256 H100s): how many times "
    "as long is the planner's step with the experts split 4 ways like the attention (ETP 4) "
    "as with whole experts (ETP 1)?":
        "按 NVIDIA 的配置训练 Mixtral 8x22B（256 块 H100 上 TP 4、EP 8、PP 4）：专家像注意力一样"
        "切成 4 份（ETP 4）时，规划器给出的单步时间是专家不切分（ETP 1）时的多少倍？",
    # ---- display names: prediction choices and the labels a cell keeps as English keys
    # (it looks values up by them) and shows through gettext(name) ----------------------
    # notebook 12
    "col then row (Megatron)": "先 col 后 row（Megatron）",
    "row then col": "先 row 后 col",
    "dp then dp (data parallel)": "两个都用 dp（数据并行）",
    "col then col": "两个都用 col",
    "vision": "视觉",
    "language": "语言",
    "rep then rep": "两个都用 rep（复制）",
    "equal axes (NVLink both)": "两轴相同（都是 NVLink）",
    "axis 0 across nodes, axis 1 NVLink": "轴 0 跨节点，轴 1 为 NVLink",
    "attention": "注意力",
    "solver": "求解器",
    "megatron": "Megatron",
    "forward": "前向",
    "backward": "反向",
    "MLP, 1D mesh of 4": "MLP，4 个 rank 的一维网格",
    "attention, 1D mesh of 4": "注意力，4 个 rank 的一维网格",
    "MLP, 2x2, the solver's plan for a slow axis 0": "MLP，2x2，求解器针对慢轴 0 的方案",
    "MLP, 2x2, Megatron's plan": "MLP，2x2，Megatron 的方案",
    "GPT-3 (up to 39B), vs Megatron-LM": "GPT-3（最大 39B），对比 Megatron-LM",
    "GShard MoE, vs DeepSpeed, 2 nodes": "GShard MoE，对比 DeepSpeed，2 个节点",
    "GShard MoE, vs DeepSpeed, 4 nodes": "GShard MoE，对比 DeepSpeed，4 个节点",
    "Wide-ResNet, 32 GPUs: linear-scaling efficiency": "Wide-ResNet，32 块 GPU：线性扩展效率",
    "stage slicing: DP vs equal operators, Wide-ResNet 32 GPUs":
        "阶段切分：动态规划对比等算子数切分，Wide-ResNet，32 块 GPU",
    "stage slicing: DP vs equal layers, Wide-ResNet 32 GPUs":
        "阶段切分：动态规划对比等层数切分，Wide-ResNet，32 块 GPU",
    "matches or slightly exceeds": "持平或略优",
    "MLP, 4 GPUs on NVLink: solver vs Megatron": "MLP，NVLink 上 4 块 GPU：求解器对比 Megatron",
    "attention, 4 GPUs on NVLink: solver vs Megatron": "注意力，NVLink 上 4 块 GPU：求解器对比 Megatron",
    "{name}, 2x2 mesh, {label}: solver vs Megatron": "{name}，2x2 网格，{label}：求解器对比 Megatron",
    "stage slicing: DP vs equal layers, Llama-3.2 1B on 8 GPUs":
        "阶段切分：动态规划对比等层数切分，8 块 GPU 上的 Llama-3.2 1B",
    # notebook 07
    "dense momentum SGD": "稠密动量 SGD",
    "momentum correction": "动量修正",
    "+ momentum correction": "+ 动量修正",
    "+ local clipping": "+ 局部梯度裁剪",
    "+ factor masking": "+ 动量因子掩码",
    "+ warm-up": "+ 预热",
    "32-bit index, prune everything": "32 位索引，全部张量都剪枝",
    "32-bit index, vectors dense": "32 位索引，向量保持稠密",
    "16-bit index, prune everything": "16 位索引，全部张量都剪枝",
    "16-bit index, vectors dense": "16 位索引，向量保持稠密",
    # notebook 08
    "home router, 100 Mbps": "家用路由器，100 Mbps",
    "home router, 1 Gbps": "家用路由器，1 Gbps",
    "fibre switch, 25 Gbps": "光纤交换机，25 Gbps",
    "InfiniBand, 400 Gbps": "InfiniBand，400 Gbps",
    "same machine": "同一台机器",
    "data centre": "数据中心内",
    "home Wi-Fi-like": "类似家庭 Wi-Fi",
    "across a continent": "横跨一个大陆",
    "across the Pacific": "横跨太平洋",
    "sync SGD": "同步 SGD",
    # display names notebooks look up with gettext: 06 §6's two ways of sending a token,
    # 09 §4's headings of a case study's notes
    "one copy per expert": "每个专家一份副本",
    "one copy per node": "每个节点一份副本",
    "assumed": "假设",
    "shape": "形状",
    "cannot express": "无法表达",
}
