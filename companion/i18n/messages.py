"""The package's student-facing messages in Simplified Chinese, keyed by the English text
(gettext's msgid convention; see :mod:`companion.i18n`). The Traditional (zh-TW) table,
``data/messages.zh-TW.json``, is generated from this one by ``python -m companion.tools.i18n_build``
(OpenCC s2twp); edit only this file. Placeholders ({rank}, ...) must stay as they are:
tests/test_translations.py checks them, and that every ``_("...")`` has an entry here.
Terms follow docs/glossary.md's zh-CN column (rank stays "rank", as in the notebooks).
This module is a table of data: one entry per message, however many the package has.
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
        "{id} 在 {ranks} 上通过：数值与参考实现一致；rank 0 的通信：{summary}。",
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
    "GPU GB": "GPU 内存 GB",
    "GPU": "GPU",
    "fits": "放得下",
    "does not fit": "放不下",
    "weights": "权重",
    "gradients": "梯度",
    "optimizer state": "优化器状态",
    "GPU memory {gb} GB": "GPU 内存 {gb} GB",
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
        "模型大小、GPU 数量和 GPU 内存都必须为正数；请输入大于零的数。",
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
    "Memory per GPU by part": "每个 GPU 内存的组成",
    "GB (1e9 bytes)": "GB（1e9 字节）",
    "cluster": "集群",
    "batch (seqs)": "批大小（序列数）",
    "No configuration fits: more GPUs, a smaller batch or more GPU memory.":
        "没有放得下的配置：请增加 GPU、减小批大小或使用内存更大的 GPU。",
    "chip": "芯片",
    "devices N": "设备数 N",
    "batch (tok)": "批大小（token）",
    "FSDP X": "FSDP 度 X",
    "communication-bound": "通信受限",
    "pure FSDP (X = N)": "纯 FSDP（X = N）",
    "best FSDP x TP split": "最佳 FSDP x TP 切分",
    "your batch": "你的批大小",
    "tokens per device / (C / W)  (1 = FSDP's critical tokens)":
        "每个设备的 token 数 / (C / W)  （1 = FSDP 的临界 token 数）",
    "communication / compute (one layer)": "通信 / 计算（一层）",
    "measured on this CPU": "在本机 CPU 上测得",
    "input feature": "输入特征",
    "output feature": "输出特征",
    "layer": "层",
    "t (TP size)": "t（TP 规模）",
    "before: rank r holds tokens of shard r, all heads": "之前：rank r 持有分片 r 的 token，所有头",
    "after all-to-all: rank r holds all tokens of its heads (attention runs locally)":
        "全对全之后：rank r 持有其负责的头的全部 token（注意力在本地计算）",
    "after the inverse all-to-all: back to sequence shards": "逆向全对全之后：回到按序列切分",
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
    # ---- the checker's integrity and the answers every exercise forbids ----------------------
    "the checker was switched off: {what}. An attempt that switches the checker off does not count; remove that code and check again.":
        "检查器被关闭了：{what}。关闭检查器的尝试不算数；请删除那段代码后重新检查。",
    "your code called `{name}`, which would replace the checker's profile hook":
        "你的代码调用了 `{name}`，它会替换检查器的 profile 钩子",
    "the checker's profile hook was replaced while your code ran":
        "你的代码运行期间，检查器的 profile 钩子被替换了",
    "a thread your code started was still running when your function returned, where nothing watches it; join every thread before returning":
        "你的函数返回时，它启动的一个线程仍在运行，而此后没有任何东西监视它；请在返回之前 join 每一个线程",
    "your code ran operations on the process group's gloo backend directly, past the group that records every message":
        "你的代码绕过记录每条消息的进程组，直接在进程组的 gloo 后端上执行了操作",
    "your code made a process group of another backend ({name}), which sends its messages directly, past the group that records every message":
        "你的代码创建了使用其他后端（{name}）的进程组，它绕过记录每条消息的进程组直接发送消息",
    "your code called `{name}`, which reaches into the checker's own frames and objects":
        "你的代码调用了 `{name}`，它会深入检查器自己的栈帧和对象",
    "it is the package's solution to this exercise":
        "它是本包对这道练习的参考答案",
    "it computes this exercise's expected answer":
        "它计算这道练习的预期答案",
    "it makes every rank's input: a rank may learn the others' only from messages":
        "它生成每个 rank 的输入：一个 rank 只能通过消息得知其他 rank 的输入",
    "the checker computes this exercise's answer with it":
        "检查器用它计算这道练习的答案",
    "rank {rank} sent a result the checker cannot read ({reason}).":
        "rank {rank} 发回的结果检查器无法读取（{reason}）。",
    "a rank sent a result the checker cannot read.":
        "有一个 rank 发回的结果检查器无法读取。",
    # ---- the grader (python -m companion grade) ----------------------------------------------
    "wrote {csv} ({rows} rows) and the feedback of {students} students to {folder}/":
        "已写入 {csv}（{rows} 行），并把 {students} 名学生的反馈写入 {folder}/",
    "{student} / {notebook}: {points} of {max_points} points ({seconds} s)":
        "{student} / {notebook}：{points} / {max_points} 分（{seconds} 秒）",
    "{student}: no course notebook in the folder; nothing graded":
        "{student}：文件夹中没有课程笔记本，未评分",
    "the grading process stopped (exit code {code}) before checking it; its last output: {tail}":
        "评分进程在检查它之前就停止了（退出码 {code}）；它最后的输出：{tail}",
    "not implemented: after your notebook ran from top to bottom there was no {name} (define it in the exercise's cell, under that name).":
        "尚未实现：你的笔记本从头到尾运行完之后，其中没有 {name}（请在练习的单元格中用这个名字定义它）。",
    "the grader stopped checking this notebook after {seconds} s.":
        "评分程序在 {seconds} 秒后停止了对这个笔记本的检查。",
    "the grader could not take {name} out of your notebook's kernel: {problem}.":
        "评分程序无法从你的笔记本内核中取出 {name}：{problem}。",
    "the grader could not check it: {error}":
        "评分程序无法检查它：{error}",
    "Each notebook ran from top to bottom in a fresh kernel; then every function you wrote was checked on real ranks. What your notebook's own check cells printed does not count.":
        "每个笔记本都在一个全新的内核中从头到尾运行；之后你写的每个函数都在真实的 rank 上检查。你的笔记本中检查单元格自己打印的内容不计入成绩。",
    "# Feedback for {student}":
        "# {student} 的反馈",
    "{points} of {max_points} points.":
        "共得 {points} 分，满分 {max_points} 分。",
    "## {notebook}: {points} of {max_points} points":
        "## {notebook}：{points} / {max_points} 分",
    "Note: {note}; the notebook ran on, as the grader runs every cell.":
        "注意：{note}；笔记本仍然继续运行，因为评分程序会运行每一个单元格。",
    "### {id} ({level}): {title}":
        "### {id}（{level}）：{title}",
    "Passed: {points} of {max_points} points.":
        "通过：得 {points} 分，满分 {max_points} 分。",
    "Not passed: {points} of {max_points} points.":
        "未通过：得 {points} 分，满分 {max_points} 分。",
    "the notebook did not finish within the grader's time limit of {seconds} s: it was still running {cell} (`{line}`); every exercise in it gets 0.":
        "笔记本没有在评分程序的时间限制 {seconds} 秒内运行完：它仍在运行 {cell}（`{line}`）；其中每个练习都得 0 分。",
    "the notebook's kernel died in {cell} (`{line}`): a crash, os._exit or a kill; every exercise in it gets 0.":
        "笔记本的内核在 {cell}（`{line}`）中终止了：崩溃、os._exit 或被杀死；其中每个练习都得 0 分。",
    "the notebook could not be run ({error}); every exercise in it gets 0.":
        "笔记本无法运行（{error}）；其中每个练习都得 0 分。",
    "{cell} (`{line}`) raised {error}":
        "{cell}（`{line}`）抛出了 {error}",
    "the grader could not take the functions out of the kernel ({error}); every exercise gets 0.":
        "评分程序无法从内核中取出这些函数（{error}）；每个练习都得 0 分。",
    "the notebook cannot be read ({error}); every exercise in it gets 0.":
        "无法读取笔记本（{error}）；其中每个练习都得 0 分。",
    # ---- will it fit (python -m companion fit, notebook 09) ----------------------------------
    "{model} on {gpus} GPUs: TP {tp}, PP {pp}, CP {cp}, DP {dp}, ZeRO-{zero}; sequence {seq}, micro-batch {mb}, recompute {rc}, {precision}":
        "{model}，{gpus} 块 GPU：TP {tp}、PP {pp}、CP {cp}、DP {dp}、ZeRO-{zero}；序列长度 {seq}，微批次 {mb}，重计算 {rc}，{precision}",
    "component":
        "组成部分",
    "predicted GB":
        "预测 GB",
    "measured GB":
        "实测 GB",
    "peak per GPU":
        "每块 GPU 的峰值",
    "yes":
        "能",
    "no":
        "不能",
    "predicted {p} GB, measured {m} GB per GPU":
        "每块 GPU 预测 {p} GB，实测 {m} GB",
    "predicted {p} GB per GPU (not measured)":
        "每块 GPU 预测 {p} GB（未实测）",
    "fits on {gpu} ({capacity} GB): {verdict} - {tail}":
        "能否放进 {gpu}（{capacity} GB）：{verdict} —— {tail}",
    "parameters (fp32, sharded)":
        "参数（fp32，分片）",
    "gradients (fp32, sharded)":
        "梯度（fp32，分片）",
    "AdamW states (fp32)":
        "AdamW 状态（fp32）",
    "gathered weights (bf16)":
        "聚合后的权重（bf16）",
    "activations":
        "激活值",
    "loss and gradient buffers":
        "损失与梯度缓冲区",
    # ---- the reasons notebooks 00-03's exercises give for a forbidden call -------------
    "the package's exchange posts the messages for you: that is the fix to find":
        "本软件包的 exchange 会替你发起这些消息：而这正是你要找出的修复方法",
    "the package's fold: write your own":
        "这是本软件包的折叠：请自己写一个",
    "the package's cost model: work the costs out yourself":
        "这是本软件包的代价模型：请自己算出各个代价",
    "the package's cost model: read the coefficients off the table":
        "这是本软件包的代价模型：请从表格中读出各个系数",
    "it is the checker's answer":
        "它是检查器的答案",
    "it is the package's answer to the bytes per rank":
        "它是本软件包对每个 rank 字节数的答案",
    "the package's communication count: section 3 says what each stage sends":
        "这是本软件包的通信量统计：第 3 节说明了每个阶段发送多少",
    "it is the checker's formula":
        "它是检查器的公式",
    "it is the checker's decision":
        "它是检查器的决定",
    "an all-reduce rebuilds weights at twice an all-gather's traffic, and leaves every rank the full gradient: reduce-scatter it":
        "全规约重建权重的通信量是全收集的两倍，而且会让每个 rank 都持有完整的梯度：请对它做规约散射",
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
