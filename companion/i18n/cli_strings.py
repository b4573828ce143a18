"""The command line's words in Simplified Chinese (``python -m companion``, taught in
notebook 00): its help, argparse's headings and error frame, the torchrun banner.
Keyed by the English text like :mod:`.runtime_strings`, which merges this table into
its own. argparse's refusals themselves ("invalid choice: ...") are in the errors
catalogue's "<argparse>" section (:mod:`.errors`). This module is a table of data.
"""

CLI_ZH_CN = {
    "usage: ": "用法：",
    "positional arguments": "位置参数",
    "options": "选项",
    "show this help message and exit": "显示本帮助信息并退出",
    "{prog}: error: {message}": "{prog}：错误：{message}",
    "Command line: run a registered experiment on real ranks, locally or under torchrun.":
        "命令行：在真实的 rank 上运行一个已注册的实验，可在本机运行，也可在 torchrun 下运行。",
    "Under torchrun every process runs the experiment once; rank 0 gathers the results and\n"
    "prints the summary. Taught in notebook 00; ``fit`` in notebook 09.\n":
        "在 torchrun 下，每个进程各运行一次实验；rank 0 收集结果并打印汇总。\n"
        "讲解见 notebook 00；``fit`` 见 notebook 09。\n",
    "list the registered experiments": "列出已注册的实验",
    "run an experiment on real ranks": "在真实的 rank 上运行一个实验",
    "ranks to start on this machine (ignored under torchrun)":
        "在本机启动的 rank 数（在 torchrun 下忽略）",
    "seconds before giving up": "放弃之前等待的秒数",
    "keyword argument for the experiment (Python literal)": "传给实验的关键字参数（Python 字面量）",
    "write the per-rank results here (pickle)": "把每个 rank 的结果写到这里（pickle）",
    "will a layout fit? the planner's memory per GPU beside torch's measurement on fake ranks (notebook 09)":
        "某个布局放得下吗？规划器估算的每 GPU 内存，与 torch 在假 rank 上的实测并列（notebook 09）",
    "grade students' notebooks: a CSV and a feedback file per student":
        "为学生的 notebook 评分：生成一个 CSV，并为每位学生生成一个反馈文件",
    "Run every student's submitted notebooks in fresh kernels and check each exercise on real ranks (README: Grading).":
        "在全新的内核中运行每位学生提交的 notebook，并在真实的 rank 上检查每道练习（见 README 的“教师：评分”一节）。",
    "a folder with one folder per student, holding the notebooks they filled in":
        "一个文件夹，其中每位学生一个子文件夹，存放他们完成的 notebook",
    "the CSV to write (default grades.csv); the feedback files go to <stem>-feedback/":
        "要写入的 CSV（默认 grades.csv）；反馈文件写到 <stem>-feedback/",
    "seconds one notebook may run": "单个 notebook 最多可运行的秒数",
    "the course's notebooks (default: the repository's notebooks/)":
        "课程的 notebook（默认：仓库中的 notebooks/）",
    "[torchrun] {n} ranks, {backend} backend: {reason}":
        "[torchrun] {n} 个 rank，{backend} 后端：{reason}",
    "per-rank results written to {out}": "每个 rank 的结果已写入 {out}",
    # ---- python -m companion fit's options (planner/fit.py) --------------------------------
    "a built-in model: {models}": "内置模型之一：{models}",
    "GPUs in the job": "这次训练用的 GPU 数",
    "tensor-parallel degree": "张量并行度",
    "pipeline stages": "流水线阶段数",
    "context-parallel degree": "上下文并行度",
    "0 (nothing sharded) or 3 (FSDP)": "0（不切分）或 3（FSDP）",
    "tokens per sequence": "每条序列的 token 数",
    "sequences per micro-batch": "每个微批次的序列数",
    "activation recomputation": "激活重计算",
    "one of {gpus}": "以下之一：{gpus}",
    "print the prediction only (no torch run)": "只打印预测（不运行 torch）",
}
