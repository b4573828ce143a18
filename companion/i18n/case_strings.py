"""Run-time text in Simplified Chinese, continued from :mod:`.display_strings` (which
merges this table into its own): the words of ``planner.case_studies``'s rows, which
notebook 09 §4 prints (what the lecture says, where each shape and layout come from,
what the table assumes), and the sources of ``planner.published``'s runs (notebook 12). Keyed by the English text; the rows keep their English, which
the tests compare. Quoted sources stay in their own words.
This module is a table of data: one entry per message, however many the package has.
"""

CASE_ZH_CN = {
    # ---- what the lecture says of each run (CS336 L8 §8) -----------------------------------
    "FSDP + TP + SP, no PP (TPUs)": "FSDP + TP + SP，不用 PP（TPU）",
    "DP + ZeRO-1 + TP + SP + PP": "DP + ZeRO-1 + TP + SP + PP",   # the same in Chinese
    "ZeRO-1 + TP + PP": "ZeRO-1 + TP + PP",
    "EP 8, PP 4, TP 4 for attention": "EP 8、PP 4，注意力层用 TP 4",
    "the lecture's reading: TP 4 for attention only": "讲义的理解：TP 4 只用于注意力层",
    "EP 32, PP 8, TP 2": "EP 32、PP 8、TP 2",
    "much EP, plus CP (long-context extension)": "大量 EP，外加 CP（长上下文扩展训练）",
    # ---- where each shape comes from ---------------------------------------------------------
    "Gemma 2 report, Table 1 (arXiv 2408.00118)": "Gemma 2 技术报告，表 1（arXiv 2408.00118）",
    "DeepSeek LLM, Table 2 (arXiv 2401.02954); FFN from config.json":
        "DeepSeek LLM，表 2（arXiv 2401.02954）；FFN 宽度取自 config.json",
    "Yi report, Table 1 and §2.2 (arXiv 2403.04652); FFN from config.json":
        "Yi 技术报告，表 1 与 §2.2（arXiv 2403.04652）；FFN 宽度取自 config.json",
    "config.json (mistralai/Mixtral-8x22B-v0.1)": "config.json（mistralai/Mixtral-8x22B-v0.1）",
    "Qwen3 report, Table 2 (arXiv 2505.09388); widths from config.json":
        "Qwen3 技术报告，表 2（arXiv 2505.09388）；各层宽度取自 config.json",
    "config.json (nvidia/NVIDIA-Nemotron-3-Super-120B-A12B) and Megatron Bridge's recipe tests":
        "config.json（nvidia/NVIDIA-Nemotron-3-Super-120B-A12B）和 Megatron Bridge 的配方测试",
    # ---- where each layout comes from ------------------------------------------------------
    "arXiv 2408.00118 §3.3: 27B on an 8x24x32 TPU v5p slice, 768-way data replication, "
    "8-way model sharding, optimizer states sharded 'similar to ZeRO-3'":
        "arXiv 2408.00118 §3.3：27B 模型跑在 8x24x32 的 TPU v5p 切片上，768 路数据复制、"
        "8 路模型切分，优化器状态按“类似 ZeRO-3”的方式切分",
    "arXiv 2401.02954 §2.4 (HAI-LLM): data, tensor, sequence and 1F1B pipeline parallelism, "
    "ZeRO-1; degrees, GPUs not published":
        "arXiv 2401.02954 §2.4（HAI-LLM）：数据并行、张量并行、序列并行和 1F1B 流水线并行，"
        "加 ZeRO-1；各并行度和 GPU 数量均未公开",
    "arXiv 2403.04652 §4: ZeRO-1; TP with PP inside each node; 'avoid using activation "
    "checkpointing'; degrees, GPUs, batch not published":
        "arXiv 2403.04652 §4：ZeRO-1；TP 和 PP 都在节点内；“避免使用激活检查点”；各并行度、GPU 数量和批次均未公开",
    "Megatron-LM parallelism guide, recommended MoE configurations: 256 GPUs, TP 4, PP 4, "
    "CP 1, EP 8; no --expert-tensor-parallel-size, whose default is TP (the lecture names "
    "Megatron Bridge, whose current tree has no Mixtral recipe; the guide refers to it)":
        "Megatron-LM 并行指南中推荐的 MoE 配置：256 块 GPU，TP 4、PP 4、CP 1、EP 8；没有设置 "
        "--expert-tensor-parallel-size，其默认值等于 TP（讲义提到的是 Megatron Bridge，"
        "但它当前的代码树里没有 Mixtral 配方；该指南指向了它）",
    "the same guide, with --expert-tensor-parallel-size 1 (Megatron-Core's MoE README: "
    "prefer EP over TP for the experts; their TP at 1 'often gets better MFU')":
        "同一份指南，加上 --expert-tensor-parallel-size 1（Megatron-Core 的 MoE README："
        "专家优先用 EP 而不是 TP；专家的 TP 设为 1 时“MFU 往往更高”）",
    "Megatron Bridge perf recipe qwen3_235b_a22b_pretrain_256gpu_h100_bf16: 256 H100, TP 2, "
    "PP 8, VP 4, EP 32, ETP 1, GBS 8192, mb 1, 4K, no recomputation, distributed optimizer, "
    "MoE all-to-all overlap on. NVIDIA's benchmark, not Alibaba's run (the Qwen3 report "
    "gives no layout)":
        "Megatron Bridge 的性能配方 qwen3_235b_a22b_pretrain_256gpu_h100_bf16：256 块 H100，"
        "TP 2、PP 8、VP 4、EP 32、ETP 1，GBS 8192，mb 1，4K，不做重计算，使用分布式优化器，"
        "开启 MoE 全对全重叠。这是 NVIDIA 的基准测试，不是阿里巴巴的训练（Qwen3 技术报告"
        "没有给出布局）",
    "Megatron Bridge H100 pre-training recipe: TP 8, PP 1, EP 16, ETP 1, 16 GPUs, GBS 1024, "
    "8K; its GB300 benchmark: EP 64":
        "Megatron Bridge 的 H100 预训练配方：TP 8、PP 1、EP 16、ETP 1，16 块 GPU，GBS 1024，"
        "8K；它的 GB300 基准测试：EP 64",
    # ---- what the table assumes where the sources are silent -----------------------------
    "batch not published: 1,536 sequences of 8K (2 per data replica, 12.6M tokens, the "
    "scale of Llama 3's 16M); the torus as one domain at one axis's ICI":
        "批次未公开：取 1,536 条 8K 序列（每个数据副本 2 条，共 1,260 万个 token，与 Llama 3 "
        "的 1,600 万同一量级）；把环面当作一个域，带宽按一个轴的 ICI 计",
    "cluster not published: 1,024 A100 80GB (DeepSeek trained on A100s, Fire-Flyer 2, "
    "arXiv 2408.14158, whose PCIe nodes the hardware table lacks); batch 4,608 sequences "
    "of 4K is Table 2's; the row is the best layout of the published form":
        "集群未公开：取 1,024 块 A100 80GB（DeepSeek 在 A100 上训练，即 Fire-Flyer 2，"
        "arXiv 2408.14158，其 PCIe 节点不在硬件表中）；批次 4,608 条 4K 序列取自表 2；"
        "这一行是符合公开形式的最佳布局",
    "cluster not published ('thousands of GPUs'): 1,024 A100 80GB; batch 1,024 sequences "
    "of 4K (4M tokens, Llama 2's: Yi's code follows Llama's); TP, PP > 1, one node; the "
    "row is the best layout of that form":
        "集群未公开（“数千块 GPU”）：取 1,024 块 A100 80GB；批次 1,024 条 4K 序列"
        "（400 万个 token，与 Llama 2 相同：Yi 的代码沿用 Llama 的）；TP、PP 都大于 1，"
        "且在一个节点内；这一行是这种形式的最佳布局",
    "GPU, batch, sequence not in the guide: H100; 256 sequences of 4K and mb 1 as NVIDIA's "
    "Megatron-MoE-ModelZoo benchmarks 8x22B; the distributed optimizer (ZeRO-1)":
        "指南里没有 GPU、批次和序列长度：取 H100；256 条 4K 序列、mb 1，与 NVIDIA 的 "
        "Megatron-MoE-ModelZoo 测试 8x22B 时相同；使用分布式优化器（ZeRO-1）",
    "as the row above": "同上一行",
    "nothing on the layout; the measurement is FP8, the planner's peak bf16":
        "布局上没有假设；实测用的是 FP8，规划器按 bf16 峰值计",
    "Megatron Bridge performance summary, 26.04.01, DGX-H100, FP8":
        "Megatron Bridge 性能汇总，26.04.01，DGX-H100，FP8",
    # ---- the row the planner cannot express --------------------------------------------------
    "88 layers (40 Mamba-2, 40 LatentMoE, 8 attention), d 4096, 32 heads of 128, 2 KV "
    "heads, 512 experts of 2688 in a 1024-wide latent, top-22, one shared expert of 5376, "
    "vocabulary 131072, MTP; 120B, 12B active":
        "88 层（40 层 Mamba-2、40 层 LatentMoE、8 层注意力），d 4096，32 个宽 128 的头，"
        "2 个 KV 头，512 个宽 2688 的专家、工作在 1024 维的潜空间中，top-22，一个宽 5376 的"
        "共享专家，词表 131072，MTP；共 120B 参数，每个 token 用到其中 12B",
    "Mamba-2 mixers (no attention, a scan state), experts working in a latent narrower than "
    "the model (the all-to-all carries 1024 wide tokens), layers that are a mixer or an MoE "
    "but not both, and MTP heads: the planner's blocks are attention + MLP":
        "Mamba-2 混合层（没有注意力，只有扫描状态）、工作在比模型更窄的潜空间里的专家（全对全"
        "传的是 1024 维的 token）、要么是混合层要么是 MoE 而不会两者兼有的层，以及 MTP 头："
        "规划器的块只有注意力 + MLP",
    # ---- the measured runs the planner is checked against (planner.published) ---------------
    "Megatron-LM 2021, Table 1": "Megatron-LM 2021，表 1",
    "Korthikanti et al. 2022, Table 5": "Korthikanti 等 2022，表 5",
    "Llama 3, Table 4": "Llama 3，表 4",
    "DeepSeek-V3, §3-4": "DeepSeek-V3，§3-4",
}
