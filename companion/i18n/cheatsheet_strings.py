"""The cheat-sheet's table words of sections 3 and 8-12 and its index, in Simplified
Chinese, keyed by the English text like :mod:`.messages` (which merges this table into
``ZH_CN``, so every lookup, the zh-TW build and tests/test_translations.py see one table).
Split from :mod:`.runtime_strings` by concept: these are the words of
``companion.cheatsheet``'s computed tables (``tables.TABLE_TEXTS``) and of its index
(``cheatsheet.index``). This module is a table of data: one entry per message.
"""

CHEATSHEET_ZH_CN = {
    # ---- the index, written from the section headings (cheatsheet/index.py) --------------
    "Index": "目录",
    "section": "节",
    "derived in": "推导所在",
    "lecture pages": "讲义页码",
    # ---- headers of the computed tables ---------------------------------------------------
    "peak (closed form)": "峰值（闭式解）",
    "rule": "规则",
    "why": "原因",
    "where the planner encodes it": "规划器在何处编码它",
    "taught in": "出处",
    "strategy": "策略",
    "compute-bound when": "何时计算受限",
    "cancels": "消去的量",
    "setting": "设置",
    "steps to the target": "达到目标的步数",
    "samples B S": "样本数 B S",
    "NVLink bytes (all ranks)": "NVLink 字节数（所有 rank）",
    "NIC bytes (all ranks)": "网卡字节数（所有 rank）",
    "per busy NIC": "每块忙碌的网卡",
    "time (model)": "时间（模型）",
    "ranks": "rank 数",
    "switch (model)": "交换机（模型）",
    "torus": "环面",
    "torus (model)": "环面（模型）",
    "torus / switch": "环面 / 交换机",
    "EDP (planner.Mesh)": "EDP（planner.Mesh）",
    # ---- row labels of the worked examples -----------------------------------------------
    "CPU ranks behind notebook 10's emulated link (fp32)": "经过笔记本 10 模拟链路通信的 CPU rank（fp32）",
    "H100s across 16 nodes, their NICs (bf16)": "跨 16 个节点的 H100，经由其网卡（bf16）",
    "2 x 2 emulated, 1 MB": "模拟的 2 x 2，1 MB",
    "4 x 8 H100, 1 GB": "4 x 8 H100，1 GB",
    "the same layout with EP32": "同样的布局，改用 EP32",
    # ---- the planner's rules (PLANNER_RULES) ---------------------------------------------
    "DP x TP x PP = number of GPUs": "DP x TP x PP = GPU 数",
    "every GPU has exactly one coordinate": "每块 GPU 恰好有一个坐标",
    "TP as small as memory allows, inside a node where it can be (TP <= 8 on GPUs), "
    "dividing the heads":
        "TP 在内存允许的范围内尽量小，能留在节点内就留在节点内（GPU 上 TP <= 8），并且整除注意力头数",
    "4 full activation all-reduces per layer and sequence, on the critical path; on a "
    "fixed number of GPUs their traffic per step doubles with TP, and CS336 reports a big "
    "drop in performance once TP leaves the node":
        "每层每个序列 4 次对完整激活值的全规约，位于关键路径上；GPU 总数固定时，每步的通信量随 TP 翻倍，"
        "而 CS336 指出，TP 一旦跨出节点，性能就会大幅下降",
    "TP time on the group's own links (planner.links); a tie goes to TP inside a node":
        "TP 时间按这个组自己的链路计算（planner.links）；用时相同时，选 TP 留在节点内的方案",
    "DP groups across nodes: one NIC per member per node": "跨节点的 DP 组：每个节点中每个成员一块网卡",
    "a hierarchical reduction drives 8 NICs per node when TP x PP = 1, one when TP x PP >= 8":
        "TP x PP = 1 时，分层规约在每个节点驱动 8 块网卡；TP x PP >= 8 时只驱动一块",
    "PP across nodes": "PP 跨节点",
    "only one activation per micro-batch crosses a stage boundary": "每个微批次只有一个激活值跨过阶段边界",
    "micro-batches per replica m >= PP, and many of them": "每个副本的微批次数 m >= PP，而且越多越好",
    "bubble (p-1)/(m+p-1); with m < p the pipeline never fills":
        "气泡为 (p-1)/(m+p-1)；m < p 时流水线永远填不满",
    "no ZeRO-2/3 together with PP": "ZeRO-2/3 不与 PP 同用",
    "gradients or weights would move once per micro-batch": "梯度或权重将在每个微批次都传输一次",
    "minimise model parallelism, give the rest to DP (ZeRO/FSDP when memory is short)":
        "尽量减少模型并行，其余都交给 DP（内存不够时用 ZeRO/FSDP）",
    "DP scales compute with the least communication per FLOP": "DP 以每次浮点运算最少的通信来扩展计算",
    "plan: ranking by step time": "plan：按每步时间排序",
    # ---- the roofline's rules (ROOFLINE_RULES) -------------------------------------------
    "matmul on one chip": "单芯片上的矩阵乘法",
    "tokens per device B / X > C / (W M_X)": "每个设备的 token 数 B / X > C / (W M_X)",
    "FSDP x TP, best split, one kind of link (in a node, a TPU torus)":
        "FSDP x TP，最佳划分，只有一种链路（节点内、TPU 环面）",
    "FSDP x TP across GPU nodes (an FSDP group: per_node / Y NICs per node)":
        "跨 GPU 节点的 FSDP x TP（一个 FSDP 组：每个节点 per_node / Y 块网卡）",
    "FSDP's time is the same for every Y; X <= B / seq_len sets Y":
        "FSDP 的时间对每个 Y 都相同；由 X <= B / seq_len 决定 Y",
    "PP hop": "PP 的一跳",
    "e D C / (2 P L W) < 1 (e bytes per element, P params per layer, L layers per stage)":
        "e D C / (2 P L W) < 1（e 为每个元素的字节数，P 为每层参数数，L 为每个阶段的层数）",
    "EP all-to-all (k experts per token, Z devices, domains of g sharing W)":
        "EP 的全对全（每个 token 去往 k 个专家，Z 个设备，每 g 个设备共享一个 W）",
    "expert width F > (C / W) g min(k, Z / g) (Z - g) / (Z k)":
        "专家宽度 F > (C / W) g min(k, Z / g) (Z - g) / (Z k)",
    # ---- section 6's compression formulas (formulas.COMPRESSION_FORMULAS) ------------------
    "8 ceil(d nm)  (int32 index + fp32 value per kept entry)":
        "8 ceil(d nm)（每个保留的元素：一个 int32 索引 + 一个 fp32 值）",
    "4 r (n + m)  (P is n x r, Q is m x r)":
        "4 r (n + m)（P 为 n x r，Q 为 m x r）",
    "nm/8 + 8m  (a sign bit per entry, two fp32 means per column)":
        "nm/8 + 8m（每个元素一个符号位，每列两个 fp32 均值）",
    "nm/4 + 4  (2 bits per entry, one fp32 scale)":
        "nm/4 + 4（每个元素 2 位，外加一个 fp32 缩放因子）",
}
