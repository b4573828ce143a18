"""The package's student-facing messages in Simplified Chinese, keyed by the English text
(gettext's msgid convention; see :mod:`companion.i18n`). The Traditional (zh-TW) table,
``data/messages.zh-TW.json``, is generated from this one by ``python -m companion.tools.i18n_build``
(companion.tools.zh_tw); edit only this file, :mod:`.runtime_strings` and :mod:`.cheatsheet_strings`. Placeholders ({rank}, ...) must stay as they are:
tests/test_translations.py checks them, and that every ``_("...")`` has an entry here.
This module is a table of data: one entry per message, however many the package has.
Terms follow docs/glossary.md's zh-CN column (rank stays "rank", as in the notebooks).
The words of figures, tables and run summaries are in :mod:`.runtime_strings`, merged below.
"""
from .cheatsheet_strings import CHEATSHEET_ZH_CN
from .runtime_strings import RUNTIME_ZH_CN

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
    "Computed: {shown}. (No prediction was locked in: next time commit to one first; "
    "being wrong is where the learning happens.)":
        "计算值：{shown}。（没有锁定预测：下次请先给出你的预测；猜错正是学习发生的地方。）",
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
    "rank {s}": "rank {s}",
    "input": "输入",
    "loss": "损失",
    "{name}: layout {layout}, colour = chunk": "{name}：布局 {layout}，颜色 = 模型块",
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
}
ZH_CN.update(RUNTIME_ZH_CN)   # one table for every lookup, the zh-TW build and the tests
ZH_CN.update(CHEATSHEET_ZH_CN)
