"""Run-time text in Simplified Chinese: what the widgets, the launcher's banner, the
experiment summaries, the planner's reasons and the cheat-sheet's tables show, keyed by the
English text like :mod:`.messages` (which merges this table into ``ZH_CN``, so every
lookup, the zh-TW build and tests/test_translations.py see one table). Split from it by
concept: these are the words of figures and tables, those of the checker and the grader.
This module is a table of data: one entry per message, however many the package shows.
"""

RUNTIME_ZH_CN = {
    # ---- run-time text: notebook 04's schedule explorer (widgets/pipeline.py) -------------
    "{name}, p={p}, m={m}{v}: utilisation {utilisation}, bubble {bubble} (closed form {formula} (ignores latency)); peak activations/stage {peaks}":
        "{name}，p={p}，m={m}{v}：利用率 {utilisation}，气泡 {bubble}（闭式解 {formula}，未计延迟）；每个阶段的激活值峰值 {peaks}",
    "{name}, p={p}, m={m}{v}: utilisation {utilisation}, bubble {bubble} (closed form {formula}); peak activations/stage {peaks}":
        "{name}，p={p}，m={m}{v}：利用率 {utilisation}，气泡 {bubble}（闭式解 {formula}）；每个阶段的激活值峰值 {peaks}",
    "{name}, p={p}, m={m}{v}: utilisation {utilisation}, bubble {bubble} (no closed form here); peak activations/stage {peaks}":
        "{name}，p={p}，m={m}{v}：利用率 {utilisation}，气泡 {bubble}（此处没有闭式解）；每个阶段的激活值峰值 {peaks}",
    # ---- notebook 05's Megatron diagram and split explorer, 06's ring (widgets/tensor_parallel.py)
    "LayerNorm\non X[s/t]\n(per rank)":
        "LayerNorm\n作用于 X[s/t]\n（每个 rank）",
    "g (Megatron-SP)\nin place of f\nfwd: all-gather\nbwd: reduce-scatter":
        "g（Megatron-SP）\n取代 f\n前向：全收集\n反向：规约散射",
    "f\nfwd: identity\nbwd: all-reduce":
        "f\n前向：恒等\n反向：全规约",
    "ḡ (Megatron-SP)\nin place of g\nfwd: reduce-scatter\nbwd: all-gather":
        # no mathtext beside hanzi: matplotlib's math fonts have no CJK glyphs
        "ḡ（Megatron-SP）\n取代 g\n前向：规约散射\n反向：全收集",
    "g\nfwd: all-reduce\nbwd: identity":
        "g\n前向：全规约\n反向：恒等",
    "rank {r}: column shard $A_{r}$":
        "rank {r}：按列切分的 A{r}",
    "row shard $B_{r}$":
        "按行切分的 B{r}",
    "no communication between the two linears":
        "两个线性层之间没有通信",
    "{name} MLP on t={tp} ranks: collectives only at the region's edges":
        "t={tp} 个 rank 上的 {name} MLP：集合通信只发生在该区域的两端",
    "fc1 [{d_ff} x {d_model}], column-parallel: rank i keeps {rows} output rows":
        "fc1 [{d_ff} x {d_model}]，列并行：rank i 保留 {rows} 个输出行",
    "fc2 [{d_model} x {d_ff}], row-parallel: rank i keeps {columns} input columns":
        "fc2 [{d_model} x {d_ff}]，行并行：rank i 保留 {columns} 个输入列",
    "qkv [3*{d_model} x {d_model}] split by heads: rank i keeps {heads} head(s) of q, of k and of v":
        "qkv [3*{d_model} x {d_model}] 按注意力头切分：rank i 保留 q、k、v 各 {heads} 个头",
    "fc1: column split":
        "fc1：按列切分",
    "fc2: row split":
        "fc2：按行切分",
    "fused qkv: split by heads":
        "融合的 qkv：按注意力头切分",
    "ring step {step}: K/V block held {holds}":
        "环第 {step} 步：各 rank 持有的 K/V 块 {holds}",
    "masked":
        "被掩码",
    "step {v}":
        "第 {v} 步",
    # ---- notebook 01's collective replay (widgets/collectives.py) ----------------------------
    "Σ all":
        "Σ 全部",
    "chunk {c}\n[{a}:{b}]":
        "块 {c}\n[{a}:{b}]",
    "start: each rank holds its own data":
        "开始：每个 rank 持有自己的数据",
    "after step {frame} of {steps}: {n} messages, {bytes} bytes":
        "第 {frame} 步之后（共 {steps} 步）：{n} 条消息，{bytes} 字节",
    "after step {frame} of {steps}: {n} message, {bytes} bytes":
        "第 {frame} 步之后（共 {steps} 步）：{n} 条消息，{bytes} 字节",
    "chunk [element range]\narrow: solid = received and added, dashed = copied":
        "块 [元素范围]\n箭头：实线 = 接收并相加，虚线 = 复制",
    # ---- notebook 11's topology replay (widgets/topology.py) -------------------------------
    "node {node}":
        "节点 {node}",
    "switch":
        "交换机",
    "t = {t}, {n} in flight; delivered: {done}":
        "t = {t}，{n} 条消息在传输中；已送达：{done}",
    "t = {t}, {n} in flight; delivered: nothing yet":
        "t = {t}，{n} 条消息在传输中；已送达：尚无",
    # ---- notebook 08's DGA explorer (widgets/dga.py) ----------------------------------------
    "sync SGD":
        "同步 SGD",
    "modeled, {compute} ms compute per step, {latency} ms latency":
        "模型估算：每步计算 {compute} ms，延迟 {latency} ms",
    "measured: sync SGD {sync:.1f} ms/step (model {sync_model:.1f}), DGA D={d} {dga:.1f} ms/step (model {dga_model:.1f}): {speedup:.1f}x faster":
        "实测：同步 SGD {sync:.1f} ms/步（模型 {sync_model:.1f}），DGA D={d} {dga:.1f} ms/步（模型 {dga_model:.1f}）：快 {speedup:.1f} 倍",
    # ---- notebook 07's compression explorer (widgets/compression.py) ---------------------------
    "dense all-reduce":
        "稠密全规约",
    "gradient dropping":
        "梯度丢弃",
    "DGC (momentum correction + masking + clipping)":
        "DGC（动量修正 + 掩码 + 裁剪）",
    "top-k, no accumulation":
        "top-k，不累积残差",
    "PowerSGD rank 2":
        "PowerSGD，秩 2",
    "1-bit SGD":
        "1 比特 SGD",
    "threshold quantisation":
        "阈值量化",
    "<b>{method}</b>: test accuracy {acc:.3f} (dense {dense:.3f}); {bytes:,} bytes per rank per step, {ratio:.0f}x smaller than dense":
        "<b>{method}</b>：测试准确率 {acc:.3f}（稠密 {dense:.3f}）；每个 rank 每步 {bytes:,} 字节，比稠密小 {ratio:.0f} 倍",
    "dense":
        "稠密",
    "training loss ({n} ranks, rank 0's shard)":
        "训练损失（{n} 个 rank，rank 0 的数据分片）",
    # ---- notebook 03's ZeRO calculator: option labels (widgets/zero.py) -------------------------
    "DDP (stage 0)":
        "DDP（阶段 0）",
    "custom":
        "自定义",
    "ZeRO paper 7.5B":
        "ZeRO 论文中的 7.5B 模型",
    # ---- notebooks 03 and 05's activation calculator: recompute options (widgets/activations.py)
    "recompute: none":
        "不重计算",
    "recompute: selective":
        "选择性重计算",
    "recompute: full":
        "完全重计算",
    # ---- notebooks 09 and 12's planner widgets (widgets/planner.py, widgets/autoparallel.py)
    "TP comm":
        "TP 通信",
    "PP comm":
        "PP 通信",
    "pipeline bubble":
        "流水线气泡",
    "DP comm (exposed)":
        "DP 通信（未被隐藏）",
    "CP comm (exposed)":
        "CP 通信（未被隐藏）",
    "EP all-to-all (exposed)":
        "EP 全对全（未被隐藏）",
    "runtime reserve":
        "运行时预留",
    "<b>{feasible} feasible</b>, {rejected} rejected.":
        "<b>{feasible} 个可行</b>，{rejected} 个被排除。",
    "{model} on {cluster}, batch {batch} x {seq} tokens":
        "{model}，{cluster}，批大小 {batch} x {seq} token",
    "configuration":
        "配置",
    "step (s)":
        "每步（秒）",
    "bubble":
        "气泡",
    "why configurations were rejected":
        "配置被排除的原因",
    "{gb} GB GPU":
        "{gb} GB 的 GPU",
    "plan":
        "方案",
    "seq (tokens)":
        "序列长度（token）",
    "search CP (context parallel)":
        "搜索 CP（上下文并行）",
    "DualPipeV for MoE (hides EP)":
        "MoE 使用 DualPipeV（隐藏 EP 通信）",
    "no configuration to try":
        "没有可尝试的配置",
    "<b>Nothing fits.</b> For example: {reason}":
        "<b>没有放得下的配置。</b>例如：{reason}",
    "<b>Best:</b> {plan} (MoE, {seq:,}-token sequences). ":
        "<b>最佳：</b>{plan}（MoE，序列长 {seq:,} 个 token）。",
    "<b>Best:</b> {plan} (dense, {seq:,}-token sequences). ":
        "<b>最佳：</b>{plan}（稠密模型，序列长 {seq:,} 个 token）。",
    "<b>Changed:</b> {moved}.":
        "<b>变化：</b>{moved}。",
    "Same axes as the last plan that fitted.":
        "与上一个放得下的方案的各并行维度相同。",
    "No configuration fits: more GPUs, a smaller batch or CP for long sequences.":
        "没有放得下的配置：请增加 GPU、减小批大小，或对长序列使用 CP。",
    # ---- the launcher's banner and why it chose its backend (launcher.py, backends.py) -----------
    "[launch] {backend} backend: {reason}":
        "[launch] {backend} 后端：{reason}",
    "registered with torch.distributed; ranks compute on CPU":
        "已在 torch.distributed 中注册；各 rank 在 CPU 上计算",
    "asked for; {gpus} GPU(s), rank r on cuda:r":
        "按要求使用；{gpus} 块 GPU，rank r 使用 cuda:r",
    "asked for; ranks compute on CPU":
        "按要求使用；各 rank 在 CPU 上计算",
    "{gpus} GPU(s) visible but CUDA cannot start here ({error}), so ranks compute on CPU":
        "可见 {gpus} 块 GPU，但 CUDA 在这里无法启动（{error}），因此各 rank 在 CPU 上计算",
    "{gpus} GPU(s) visible, one per rank (rank r on cuda:r)":
        "可见 {gpus} 块 GPU，每个 rank 一块（rank r 使用 cuda:r）",
    "this torch build has no CUDA, so ranks compute on CPU":
        "这个 torch 版本不带 CUDA，因此各 rank 在 CPU 上计算",
    "{name} computes on the CPU on every machine: {why}":
        "{name} 在任何机器上都在 CPU 上计算：{why}",
    "it times gloo on this machine's loopback, which is the lesson; on GPUs it would time NVLink, another lesson":
        "它测的是本机回环上的 gloo，这正是本课的内容；在 GPU 上测到的会是 NVLink，那是另一课",
    "it emulates nodes or a slow link on one machine with gloo":
        "它在一台机器上用 gloo 模拟多个节点或一条慢链路",
    "no GPU visible, so ranks compute on CPU":
        "看不到 GPU，因此各 rank 在 CPU 上计算",
    "only {gpus} GPU(s) for {world_size} ranks and NCCL needs one per rank, so ranks compute on CPU":
        "{world_size} 个 rank 只有 {gpus} 块 GPU，而 NCCL 要求每个 rank 一块，因此各 rank 在 CPU 上计算",
    # ---- notebook 00's first experiments (basics.py) ------------------------------------------
    "host":
        "主机",
    "backend":
        "后端",
    "device":
        "设备",
    "threads":
        "线程数",
    "each rank r contributed r+1; after all_reduce(SUM) every rank holds {got} (expected 1+2+...+{n} = {expected}): OK":
        "每个 rank r 贡献 r+1；all_reduce(SUM) 之后每个 rank 都持有 {got}（应为 1+2+...+{n} = {expected}）：OK",
    "each rank r contributed r+1; after all_reduce(SUM) every rank holds {got} (expected 1+2+...+{n} = {expected}): MISMATCH":
        "每个 rank r 贡献 r+1；all_reduce(SUM) 之后每个 rank 都持有 {got}（应为 1+2+...+{n} = {expected}）：MISMATCH",
    # ---- experiment summaries: pipeline, compression, parameter server, topology, hybrid ---------
    "{name}: step {step:.1f} ms, utilisation {utilisation:.1%}, peak activations per stage {peaks}":
        "{name}：每步 {step:.1f} ms，利用率 {utilisation:.1%}，每个阶段的激活值峰值 {peaks}",
    "{method}: final test accuracy {acc:.3f}, {bytes} B/step per rank vs {dense} B dense ({ratio:.0f}x)":
        "{method}：最终测试准确率 {acc:.3f}，每个 rank 每步 {bytes} B，稠密为 {dense} B（{ratio:.0f} 倍）",
    "{row} final test accuracy per seed":
        "{row} 每个随机种子的最终测试准确率",
    "row":
        "配置",
    "algorithm":
        "算法",
    "predicted":
        "预测",
    "measured":
        "实测",
    "ratio":
        "比值",
    "max |param diff| {param:.1e}, max |grad diff| {grad:.1e}; bytes measured == planner on every rank: True; slowest rank {seconds:.2f} s":
        "参数最大差 |param diff| {param:.1e}，梯度最大差 |grad diff| {grad:.1e}；每个 rank 上实测字节数都等于规划器的预测：是；最慢的 rank 用时 {seconds:.2f} s",
    "max |param diff| {param:.1e}, max |grad diff| {grad:.1e}; bytes measured == planner on every rank: False; slowest rank {seconds:.2f} s":
        "参数最大差 |param diff| {param:.1e}，梯度最大差 |grad diff| {grad:.1e}；每个 rank 上实测字节数都等于规划器的预测：否；最慢的 rank 用时 {seconds:.2f} s",
    "max |param diff| {param:.1e}, max |grad diff| {grad:.1e}; bytes measured == closed form on every rank: True":
        "参数最大差 |param diff| {param:.1e}，梯度最大差 |grad diff| {grad:.1e}；每个 rank 上实测字节数都等于闭式解：是",
    "max |param diff| {param:.1e}, max |grad diff| {grad:.1e}; bytes measured == closed form on every rank: False":
        "参数最大差 |param diff| {param:.1e}，梯度最大差 |grad diff| {grad:.1e}；每个 rank 上实测字节数都等于闭式解：否",
    "parameter server: {workers} workers, final loss {loss:.4f}; server sent {sent} B and received {received} B":
        "参数服务器：{workers} 个 worker，最终损失 {loss:.4f}；服务器发送 {sent} B，接收 {received} B",
    # ---- notebook 10's roofline explorer and overlap timeline, notebook 11's growth figure ----
    "compute-bound": "计算受限",
    "<b>{model}</b> on {n} x {chip}: {tokens} tokens per device (FSDP alone needs {alpha}). X = {x}, Y = {y}: per layer compute {compute} ms, communication {comm} ms &rarr; <b>{bound}</b>. Least communication: X = {bx}, Y = {by}.":
        "<b>{model}</b>，{n} x {chip}：每个设备 {tokens} 个 token（单用 FSDP 需要 {alpha} 个）。X = {x}，Y = {y}：每层计算 {compute} ms，通信 {comm} ms &rarr; <b>{bound}</b>。通信最少的切分：X = {bx}，Y = {by}。",
    "your split X = {x}, Y = {y}": "你的切分 X = {x}，Y = {y}",
    "planner: X = {x}, Y = {y}": "规划器：X = {x}，Y = {y}",
    "time in the step (ms)": "步内时间（ms）",
    "computing": "计算",
    "waiting": "等待",
    "link: hidden": "链路：被隐藏",
    "link: exposed": "链路：暴露",
    "exposed beyond the slowest rank's compute: {ms} ms":
        "超出最慢 rank 计算时间的暴露通信：{ms} ms",
    "training FLOPs (doubles every {months} months)":
        "训练 FLOPs（每 {months} 个月翻一番）",
    # ---- notebook 10's overlap and crossover summaries (overlap/runs.py, overlap/crossover.py) ----
    "{strategy} batch {batch} bucket {bucket} prefetch {prefetch}: comm {comm} ms, exposed {exposed} ms, compute {compute} ms":
        "{strategy} 批大小 {batch} 桶 {bucket} 预取 {prefetch}：通信 {comm} ms，暴露 {exposed} ms，计算 {compute} ms",
    "{strategy} on {ranks} ranks, link {link} MB/s ({effective} effective), slowest rank {gflops} GFLOP/s: predicted T* = {predicted} rows, measured {measured}":
        "{strategy}，{ranks} 个 rank，链路 {link} MB/s（有效 {effective}），最慢的 rank {gflops} GFLOP/s：预测 T* = {predicted} 行，实测 {measured}",
    "batch {batch}: slowest compute {compute} ms, comm {comm} ms, exposed beyond the slowest {exposed} ms":
        "批大小 {batch}：最慢的计算 {compute} ms，通信 {comm} ms，超出最慢者的暴露通信 {exposed} ms",
    # ---- the planner's rejection reasons, translated where a widget shows them (feasibility.py) ----
    "{what} = {n} but the cluster has {gpus} GPUs":
        "{what} = {n}，但集群有 {gpus} 块 GPU",
    "TP={tp} does not divide the {heads} attention heads":
        "TP={tp} 不能整除 {heads} 个注意力头",
    "PP={pp} stages for only {layers} layers":
        "PP={pp} 个阶段，但只有 {layers} 层",
    "CP={cp} needs the sequence ({seq}) in 2 x CP equal chunks (each rank takes one early and one late chunk, to balance causal attention)":
        "CP={cp} 要求把序列（{seq}）切成 2 x CP 个等长的块（每个 rank 取一个靠前的块和一个靠后的块，以平衡因果注意力）",
    "EP={ep} but {model} has no experts":
        "EP={ep}，但 {model} 没有专家",
    "EP={ep} x ETP={etp} must divide the {experts} experts and the TP x CP x DP = {ranks} ranks of a stage":
        "EP={ep} x ETP={etp} 必须整除 {experts} 个专家，以及一个阶段的 TP x CP x DP = {ranks} 个 rank",
    "ETP={etp} does not divide the expert FFN ({ffn})":
        "ETP={etp} 不能整除专家 FFN 的宽度（{ffn}）",
    "the {split} split leaves a stage of PP={pp} without a layer":
        "{split} 切分使 PP={pp} 中的某个阶段没有层",
    "global batch {batch} is not a multiple of DP x micro-batch = {n}":
        "全局批大小 {batch} 不是 DP x 微批次大小 = {n} 的整数倍",
    "{m} micro-batch(es) per replica for {pp} pipeline stages: the pipeline never fills; raise the global batch or lower DP or the micro-batch size":
        "每个副本 {m} 个微批次，却有 {pp} 个流水线阶段：流水线永远填不满；请增大全局批大小，或减小 DP 或微批次大小",
    "interleaving {chunks} chunks needs PP > 1, micro-batches ({m}) a multiple of PP ({pp}) and at least {layers} layers":
        "交错 {chunks} 个块要求 PP > 1、微批次数（{m}）是 PP（{pp}）的整数倍，并且至少有 {layers} 层",
    "DualPipeV needs PP > 1, no interleaving, at least 2 x PP = {n} micro-batches (has {m}) and 2 x PP layers":
        "DualPipeV 要求 PP > 1、不交错、至少 2 x PP = {n} 个微批次（现有 {m} 个）以及 2 x PP 层",
    "ZeRO-2/3 with pipeline parallelism would re-communicate gradients or weights for every micro-batch (DeepSpeed forbids the combination)":
        "ZeRO-2/3 与流水线并行同用时，每个微批次都要重新通信梯度或权重（DeepSpeed 禁止这种组合）",
    "out of memory: needs {need} GB per GPU, the GPU has {has} GB":
        "内存不足：每个 GPU 需要 {need} GB，而 GPU 只有 {has} GB",
    "out of memory":
        "内存不足",
    # ---- the cheat-sheet's table headers and row labels (cheatsheet/rules.py markdown_table) ----
    "formula (a; b)": "公式（a; b）",
    "memory per GPU": "每个 GPU 的内存",
    "sent per rank per step": "每个 rank 每步发送",
    "x parameter bytes": "参数字节数的倍数",
    "large-N multiple": "N 很大时的倍数",
    "formula": "公式",
    "closed form": "闭式解",
    "simulated": "模拟",
    "peak activations": "激活值峰值",
    "layout": "布局",
    "activations per layer": "每层激活值",
    "TP + SP + selective recomputation": "TP + SP + 选择性重计算",
    "full recomputation": "完全重计算",
    "Ulysses forward": "Ulysses 前向",
    "ring forward": "环形前向",
    "ring / Ulysses": "环形 / Ulysses",
    "bytes for fc6": "fc6 的字节数",
    "time per step": "每步时间",
    "speed-up over sync": "相对同步的加速比",
    "synchronous SGD": "同步 SGD",
    "step time": "每步时间",
    "MFU (or why not)": "MFU（或不可行的原因）",
    "DP4 TP8 PP4 ZeRO-1 (TP inside a node)": "DP4 TP8 PP4 ZeRO-1（TP 在节点内）",
    "DP4 TP16 PP2 ZeRO-1 (TP across 2 nodes)": "DP4 TP16 PP2 ZeRO-1（TP 跨 2 个节点）",
    "DP4 TP8 PP4 ZeRO-3 (ZeRO-3 with PP)": "DP4 TP8 PP4 ZeRO-3（ZeRO-3 与 PP 同用）",
    "DP4 TP8 PP4, micro-batch 64": "DP4 TP8 PP4，微批次大小 64",
    "DP8 TP8 PP4 (256 GPUs on 128)": "DP8 TP8 PP4（要 256 块 GPU，只有 128 块 GPU）",
    # ---- experiment summaries: collectives, ZeRO, latency link, sequence and tensor parallelism,
    # DGA, the measured pipeline ---------------------------------------------------------------
    "{schedule} (measured)": "{schedule}（实测）",
    "node": "节点",
    "intra-node group  inter-node group  equal to dist.all_reduce":
        "节点内组            节点间组            与 dist.all_reduce 相等",
    "OK: hierarchical all-reduce equals dist.all_reduce on every rank":
        "OK：每个 rank 上分层全规约的结果都等于 dist.all_reduce",
    "MISMATCH: see the last column": "MISMATCH：见最后一列",
    "collective": "集合通信",
    "result on rank 0": "rank 0 上的结果",
    "msgs": "消息数",
    "steps": "步数",
    "{strategy} on {ranks} rank(s), {params} parameters":
        "{strategy}，{ranks} 个 rank，{params} 个参数",
    "step {i}: loss {loss}": "第 {i} 步：损失 {loss}",
    "rank {rank} holds params {params} B, grads {grads} B, optimizer {optimizer} B; sent {sent} B last step":
        "rank {rank} 持有参数 {params} B、梯度 {grads} B、优化器状态 {optimizer} B；上一步发送 {sent} B",
    "alpha={alpha} ms: model {model} ms, measured {measured} ms (real all-reduce {real} ms)":
        "alpha={alpha} ms：模型 {model} ms，实测 {measured} ms（真实全规约 {real} ms）",
    "max |diff| vs full attention: output {out}, grads {grads}; collectives per rank: forward {forward}, backward {backward}":
        "与完整注意力的最大差 |diff|：输出 {out}，梯度 {grads}；每个 rank 的集合通信：前向 {forward}，反向 {backward}",
    "mean test accuracy over {ranks} ranks: {acc} %, {ms} ms per step":
        "{ranks} 个 rank 的平均测试准确率：{acc} %，每步 {ms} ms",
    "max |diff| vs single process over {ranks} rank(s): {diffs}\ncollectives per rank: forward {forward}, backward {backward}":
        "{ranks} 个 rank 与单进程的最大差 |diff|：{diffs}\n每个 rank 的集合通信：前向 {forward}，反向 {backward}",
    "saved activations per rank: {counts} bytes": "每个 rank 保存的激活值：{counts} 字节",
    # ---- experiment summaries: expert parallelism and the sequence-parallel benchmark ------------
    "max |diff| vs single-process MoE: {diffs}; dropped per rank {dropped}":
        "与单进程 MoE 的最大差 |diff|：{diffs}；每个 rank 丢弃的（token, 专家）分配数 {dropped}",
    "{ms} ms/step, {bytes} bytes sent per rank, max diff {diff}":
        "每步 {ms} ms，每个 rank 发送 {bytes} 字节，最大差 {diff}",
    # ---- notebook 09's grade and critique of a configuration (planner/grading.py) --------------
    "DP comm not hidden": "未被隐藏的 DP 通信",
    "weights {params}, gradients {grads}, optimizer {optimizer}, activations {activations}, reserve {reserve}":
        "权重 {params}，梯度 {grads}，优化器状态 {optimizer}，激活值 {activations}，预留 {reserve}",
    "the model states ({states}) are the largest part: they shrink with the ZeRO stage (yours is {zero}) over the DP replicas, and with TP and PP, which split the layers":
        "模型状态（{states}）是最大的部分：它们随 ZeRO 阶段（你的是 {zero}）在各 DP 副本间分片而减小，也随切分各层的 TP 和 PP 而减小",
    "the activations ({activations}) are the largest part: ZeRO does not shard them; TP (with sequence parallelism) and PP divide them, and a smaller micro-batch or full recomputation keeps fewer of them":
        "激活值（{activations}）是最大的部分：ZeRO 不对它们分片；TP（配合序列并行）和 PP 会切分它们，更小的微批次或完全重计算会让保存的激活值更少",
    "Per GPU: {parts}. {why}.":
        "每个 GPU：{parts}。{why}。",
    "your TP group of {tp} spans {nodes} nodes: every all-reduce also crosses the nodes' NICs ({gpus} x {bw} GB/s per node), and with only {dp} replicas each one's {seqs} sequences per step each need {count} full activation all-reduces per layer, on the critical path":
        "你的 {tp} 路 TP 组跨越 {nodes} 个节点：每次全规约还要经过节点的网卡（每个节点 {gpus} x {bw} GB/s），而只有 {dp} 个副本时，每个副本每步的 {seqs} 条序列每层各需要 {count} 次完整的激活值全规约，都在关键路径上",
    "TP={tp} all-reduces every layer's activations {count} times per micro-batch, on the critical path, and a ring all-reduce sends 2(p-1)/p of them per GPU":
        "TP={tp} 对每个微批次的每层激活值做 {count} 次全规约，都在关键路径上，而环形全规约每个 GPU 要发送其中的 2(p-1)/p",
    "PP={pp} with {m} micro-batches per replica leaves the pipeline idle {idle}% of the step even interleaved":
        "PP={pp}、每个副本 {m} 个微批次时，即使交错，流水线在一步中也有 {idle}% 的时间空闲",
    "PP={pp} with {m} micro-batches per replica leaves the pipeline idle {idle}% of the step (1F1B: (p-1)/(m+p-1))":
        "PP={pp}、每个副本 {m} 个微批次时，流水线在一步中有 {idle}% 的时间空闲（1F1B：(p-1)/(m+p-1)）",
    "full recomputation runs every forward twice (compute x 4/3)":
        "完全重计算把每次前向都运行两遍（计算量 x 4/3）",
    "more arithmetic than needed":
        "计算量超出了所需",
    "ZeRO-{zero} over DP={dp} moves {moved} per GPU per step and {exposed} s of it does not hide behind the backward pass":
        "在 DP={dp} 上的 ZeRO-{zero} 每个 GPU 每步传输 {moved}，其中 {exposed} s 没能隐藏在反向传播之后",
    "stage boundaries carry {carried} per step (each micro-batch's activation forward and its gradient back)":
        "阶段边界每步传输 {carried}（每个微批次的激活值向前传、其梯度向后传）",
    "{plan} cannot run: {reason}.":
        "{plan} 无法运行：{reason}。",
    "{plan}: {step} s per step ({breakdown}), {memory} per GPU, MFU {mfu}%":
        "{plan}：每步 {step} s（{breakdown}），每个 GPU {memory}，MFU {mfu}%",
    "{summary}. The fastest configuration the planner found, {fastest}, takes {step} s: yours is {ratio}x that (allowed: {allowed}x).":
        "{summary}。规划器找到的最快配置 {fastest} 每步 {step} s：你的是它的 {ratio} 倍（允许：{allowed} 倍）。",
    "That is {ratio}x the fastest step the planner found ({step} s; allowed: {allowed}x). Where yours loses time against it:":
        "这是规划器找到的最快一步的 {ratio} 倍（{step} s；允许：{allowed} 倍）。你的配置相对它多花时间的地方：",
    "{text} {why}": "{text}{why}",
    "{summary}.": "{summary}。",
    "{name} +{d} s: {why}.": "{name} +{d} s：{why}。",
    # ---- notebook 11's emulated cluster in one line (network/cluster.py describe) ---------------
    "unlimited": "不限",
    "{link}: alpha {alpha}, beta {beta} per direction": "{link}：alpha {alpha}，每个方向 beta {beta}",
    "{nodes} x {per_node} ranks, layout {layout}; {intra}; {inter}":
        "{nodes} x {per_node} 个 rank，布局 {layout}；{intra}；{inter}",
}
from .display_strings import DISPLAY_ZH_CN  # noqa: E402  (the same table, continued)

RUNTIME_ZH_CN.update(DISPLAY_ZH_CN)
from .cli_strings import CLI_ZH_CN  # noqa: E402  (the same table, continued)

RUNTIME_ZH_CN.update(CLI_ZH_CN)
