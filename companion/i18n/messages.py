"""The package's student-facing messages in Simplified Chinese, keyed by the English text
(gettext's msgid convention; see :mod:`companion.i18n`). The Traditional (zh-TW) table,
``data/messages.zh-TW.json``, is generated from this one by ``python -m companion.tools.i18n_build``
(OpenCC s2twp); edit only this file. Placeholders ({rank}, ...) must stay as they are:
tests/test_translations.py checks them, and that every ``_("...")`` has an entry here.
Terms follow docs/glossary.md's zh-CN column (rank stays "rank", as in the notebooks).
"""

ZH_CN = {
    # ---- the launcher and its supervisor (LaunchError / LaunchTimeout) -----------------
    "rank {rank} returned a value that cannot be pickled ({exc}); return tensors, numbers, "
    "lists or dicts.":
        "rank {rank} 返回的值无法被 pickle 序列化（{exc}）；请返回张量、数字、列表或字典。",
    "rank {rank} raised {summary}\n\n--- traceback from rank {rank} ---\n":
        "rank {rank} 抛出了异常 {summary}\n\n--- rank {rank} 的回溯信息（traceback）---\n",
    "rank {rank} died without reporting a result ({how}); its output above may say why.":
        "rank {rank} 在报告结果之前就退出了（{how}）；上面它的输出可能说明了原因。",
    "ranks {late} had not finished after {seconds} s (a rank waiting in a collective its "
    "peers never joined?); all ranks were stopped. Pass a larger timeout= if the job is "
    "just slow.":
        "rank {late} 在 {seconds} 秒后仍未结束（是否有某个 rank 在等待一个其他 rank 从未参与的"
        "集合通信？）；所有 rank 已被终止。如果只是任务较慢，请传入更大的 timeout=。",
    "killed by signal {signal}": "被信号 {signal} 终止",
    "exit code {code}": "退出码 {code}",
    # ---- the exercise card and hints ---------------------------------------------------
    "warm-up": "热身",
    "core": "核心",
    "stretch": "进阶",
    "implement": "实现",
    "diagnose": "诊断",
    "decide": "决策",
    "predict": "预测",
    "**Exercise {id} ({level}, {kind}, {points} points): {title}**":
        "**练习 {id}（{level}，{kind}，{points} 分）：{title}**",
    "Exercise {id} ({level}): {title}": "练习 {id}（{level}）：{title}",
    "\n- not allowed: {names} ({reason})": "\n- 不允许使用：{names}（{reason}）",
    "Stuck? `{short}.hint()` shows the next of {count} hints, one at a time.":
        "卡住了？`{short}.hint()` 会逐条显示下一条提示（共 {count} 条）。",
    "No more hints for {id}. Re-read the last one, then compare your code with the "
    "lecture's figure; the instructor's notebook has the solution in a collapsed cell.":
        "{id} 没有更多提示了。请重读最后一条提示，再把你的代码与讲义中的图对照；"
        "教师版 notebook 的折叠单元格里有参考答案。",
    "Hint {n} of {count}: ": "提示 {n}/{count}：",
    "   (a hint: {short}.hint())": "   （查看提示：{short}.hint()）",
    # ---- the checker's verdicts --------------------------------------------------------
    "pass the {what} you wrote (the name, without parentheses); got {got}.":
        "请传入你写的 {what}（只写名字，不加括号）；收到的是 {got}。",
    "it did not finish within {seconds} s on {world_size} ranks. Some rank waits for a "
    "message no rank sends: check that every send has a matching recv, and that all ranks "
    "call the same collectives in the same order.":
        "在 {world_size} 个 rank 上运行 {seconds} 秒仍未结束。有 rank 在等待一条没有任何 rank "
        "发送的消息：检查每个 send 是否都有对应的 recv，以及所有 rank 是否以相同顺序调用"
        "相同的集合通信。",
    "rank {rank}: your code changed its input in place, so the caller's tensor changed "
    "too. Work on a copy (x.clone()).":
        "rank {rank}：你的代码原地修改了输入，调用者的张量也随之改变。请在副本上操作"
        "（x.clone()）。",
    "rank {rank}: the result {problem}.{where}": "rank {rank}：结果{problem}。{where}",
    "the values are right, but the communication is not the pattern asked for: "
    "{problem}.{where}":
        "数值正确，但通信方式不是题目要求的模式：{problem}。{where}",
    "{n} real rank": "{n} 个真实 rank",
    "{n} real ranks": "{n} 个真实 rank",
    "{id} passed on {ranks}: values equal the reference; rank 0's communication: "
    "{summary}.":
        "{id} 在 {ranks}上通过：数值与参考实现一致；rank 0 的通信：{summary}。",
    "not implemented yet: replace the `raise NotImplementedError` with your code, then "
    "run this cell again.":
        "尚未实现：把 `raise NotImplementedError` 替换为你的代码，然后重新运行这个单元格。",
    "your code raised": "你的代码抛出了异常",
    "rank {rank} raised": "rank {rank} 抛出了异常",
    "   at your line {line}": "   位于你的代码 {line}",
    "your code called `{name}`, which this exercise does not allow: {reason}":
        "你的代码调用了 `{name}`，本练习不允许这样做：{reason}",
    # ---- where a result differs from the reference (feedback.py) -----------------------
    "tensor of shape {shape}, dtype {dtype}: [{head}, ...]":
        "形状为 {shape}、dtype 为 {dtype} 的张量：[{head}, ...]",
    "differs at {listed}{more}": "在以下位置不同：{listed}{more}",
    " (your {name}, defined at {where})": "（你的 {name}，定义于 {where}）",
    "is {type} {got}, expected a tensor {expected}":
        "是 {type} {got}，应为张量 {expected}",
    "has shape {got}, expected shape {expected}": "的形状为 {got}，应为 {expected}",
    "is {got}, expected {expected}": "是 {got}，应为 {expected}",
    "; ... ({wrong} of {total} positions wrong)": "；……（{total} 个位置中有 {wrong} 个错误）",
    " ({wrong} of {total} positions wrong)": "（{total} 个位置中有 {wrong} 个错误）",
    "returned {n} values in the shape {spec}, expected {n_expected} in the shape "
    "{spec_expected}":
        "返回了结构为 {spec} 的 {n} 个值，应为结构为 {spec_expected} 的 {n_expected} 个值",
    "[{index}] got {got} expected {expected}": "[{index}] 得到 {got}，应为 {expected}",
    "keys differ: missing {missing}, unexpected {extra}":
        "键不一致：缺少 {missing}，多出 {extra}",
    "entry {path} ": "条目 {path} ",
    "returned {type} {shown}, expected ": "返回了 {type} {shown}，应为 ",
    # ---- predictions -------------------------------------------------------------------
    "Measured: {shown}. (No prediction was locked in: next time commit to one first; "
    "being wrong is where the learning happens.)":
        "测量值：{shown}。（没有锁定预测：下次请先给出你的预测；猜错正是学习发生的地方。）",
    "You predicted {value}; the answer is {measured}. ":
        "你的预测是 {value}；答案是 {measured}。",
    "Right.": "正确。",
    "Not this time: read on for why.": "这次没猜中：继续往下读，看看原因。",
    "You predicted {value}; measured {shown} ": "你的预测是 {value}；测量值为 {shown}",
    "(within {tol}": "（误差在 {tol} 以内",
    "(outside {tol}": "（误差超出 {tol}",
    " or {abs_tol}": " 或 {abs_tol}",
    "; your number is {ratio}x the measurement).": "；你的数值是测量值的 {ratio} 倍）。",
    "<b>Predict:</b> {question}": "<b>预测：</b>{question}",
    "choose ...": "请选择……",
    "your number": "你的数值",
    "Lock in": "锁定",
    "type or choose your prediction first": "请先输入或选择你的预测",
    "Locked in: {value}": "已锁定：{value}",
    ". Now run the cells below.": "。现在运行下面的单元格。",
    "Invalid input: {error}": "输入无效：{error}",
    # ---- notebook 03's widgets (widgets/zero.py) ---------------------------------------
    "model": "模型",
    "params (B)": "参数（十亿）",
    "GPUs (N)": "GPU 数（N）",
    "stage": "阶段",
    "precision": "精度",
    "optimizer": "优化器",
    "GPU GB": "GPU 显存 GB",
    "GPU": "GPU",
    "fits": "放得下",
    "does not fit": "放不下",
    "weights": "权重",
    "gradients": "梯度",
    "optimizer state": "优化器状态",
    "GPU memory {gb} GB": "GPU 显存 {gb} GB",
    "model states per GPU (GB)": "每个 GPU 上的模型状态（GB）",
    "{billions}B parameters on N = {n} GPUs, {precision} {optimizer}":
        "{billions}B 参数，N = {n} 个 GPU，{precision} {optimizer}",
    "{params} + {grads} + {optimizer} = {total} bytes per parameter before sharding.":
        "切分前每个参数 {params} + {grads} + {optimizer} = {total} 字节。",
    "{stage}: {gb} GB per GPU ({fits} in {limit} GB).":
        "{stage}：每个 GPU {gb} GB（{limit} GB 中{fits}）。",
    "Largest model that fits (weights + gradients + optimizer state only):":
        "放得下的最大模型（仅计权重 + 梯度 + 优化器状态）：",
    "{billions}B parameters": "{billions}B 参数",
    "model size, GPU count and GPU memory must be positive; type a number above zero.":
        "模型大小、GPU 数量和 GPU 显存都必须为正数；请输入大于零的数。",
    "seq len s": "序列长度 s",
    "batch b": "批大小 b",
    "hidden h": "隐藏维度 h",
    "heads a": "注意力头数 a",
    "TP degree t": "TP 度 t",
    "sequence parallel": "序列并行",
    "recompute": "重计算",
    "layers L": "层数 L",
    "no parallelism": "无并行",
    "TP + selective": "TP + 选择性重计算",
    "TP+SP + selective": "TP+SP + 选择性重计算",
    "full recompute": "完全重计算",
    "sequence, batch, hidden, heads and layers must be positive; type a number above zero.":
        "序列长度、批大小、隐藏维度、头数和层数都必须为正数；请输入大于零的数。",
    "activation memory per layer per GPU (GB)": "每个 GPU 每层的激活内存（GB）",
    "selected (t={t}, SP={sp}, recompute={rc}): {gb} GB per layer, {total} GB for "
    "{layers} layers":
        "当前选择（t={t}，SP={sp}，重计算={rc}）：每层 {gb} GB，{layers} 层共 {total} GB",
    # ---- the other notebooks' widgets: labels, axes, legends -----------------------------
    "element": "元素",
    "method": "方法",
    "density": "密度",
    "momentum": "动量",
    "step": "步数",
    "cross-entropy": "交叉熵",
    "held-out accuracy": "留出集准确率",
    "accuracy": "准确率",
    "time since start (ms)": "自开始以来的时间（毫秒）",
    "time (ms)": "时间（毫秒）",
    "latency (ms)": "延迟（毫秒）",
    "DGA delay D": "DGA 延迟步数 D",
    "FedAvg K": "FedAvg 本地步数 K",
    "compute": "计算",
    "waiting": "等待",
    "message in flight": "传输中的消息",
    "running ...": "运行中……",
    "measure on {n} real ranks": "在 {n} 个真实 rank 上测量",
    "play": "播放",
    "time": "时间",
    "stages p": "阶段数 p",
    "micro-batches m": "微批次数 m",
    "schedule": "调度",
    "chunks v (interleaved, looped-bfs, -zb)": "模型块数 v（interleaved、looped-bfs、-zb）",
    "F time": "F 耗时",
    "B time": "B 耗时",
    "W time": "W 耗时",
    "send latency": "发送延迟",
    "Step time by part": "每步时间的组成",
    "seconds per step": "每步秒数",
    "Memory per GPU by part": "每个 GPU 显存的组成",
    "GB (1e9 bytes)": "GB（1e9 字节）",
    "cluster": "集群",
    "batch (seqs)": "批大小（序列数）",
    "No configuration fits: more GPUs, a smaller batch or more GPU memory.":
        "没有放得下的配置：请增加 GPU、减小批大小或使用显存更大的 GPU。",
    "chip": "芯片",
    "devices N": "设备数 N",
    "batch (tok)": "批大小（token）",
    "FSDP X": "FSDP 度 X",
    "communication-bound": "通信受限",
    "pure FSDP (X = N)": "纯 FSDP（X = N）",
    "best FSDP x TP split": "最佳 FSDP x TP 切分",
    "your batch": "你的批大小",
    "tokens per device / (C / W)  (1 = FSDP's critical tokens)":
        "每设备 token 数 / (C / W)  （1 = FSDP 的临界 token 数）",
    "communication / compute (one layer)": "通信 / 计算（一层）",
    "measured on this CPU": "在本机 CPU 上测得",
    "input feature": "输入特征",
    "output feature": "输出特征",
    "layer": "层",
    "t (TP size)": "t（TP 规模）",
    "before: rank r holds tokens of shard r, all heads": "之前：rank r 持有分片 r 的 token，所有头",
    "after all-to-all: rank r holds all tokens of its heads (attention runs locally)":
        "全交换之后：rank r 持有其负责的头的全部 token（注意力在本地计算）",
    "after the inverse all-to-all: back to sequence shards": "逆向全交换之后：回到按序列切分",
    "token position": "token 位置",
    "head": "注意力头",
    "K/V block": "K/V 块",
    "query block (= rank)": "查询块（= rank）",
    # ---- plot helpers (pipeline/plot.py, why_distribute.py) ------------------------------
    "stage {s}": "阶段 {s}",
    "time ({unit})": "时间（{unit}）",
    "{name}: utilisation {utilisation}, bubble {bubble}": "{name}：利用率 {utilisation}，气泡 {bubble}",
    "F: forward": "F：前向",
    "B: backward": "B：反向",
    " (input grad when W is split off)": "（拆出 W 时为输入梯度）",
    "W: weight grad": "W：权重梯度",
    "idle (bubble)": "空闲（气泡）",
    "one GPU's peak FLOP/s (doubles every {months} months)":
        "单个 GPU 的峰值 FLOP/s（每 {months} 个月翻一番）",
    "year": "年份",
    "growth since the first point (log)": "相对第一个点的增长（对数）",
    "Training compute outgrows one GPU": "训练算力需求超过单个 GPU 的增长",
}
