"""Run-time text in Simplified Chinese, continued from :mod:`.runtime_strings` (which
merges this table into its own, so every lookup, the zh-TW build and
tests/test_translations.py see one table): the display names of values that the
notebooks also look up by their English text (table rows, strategy and mesh names), and
the package's computed sentences beside them. Keyed by the English text.
This module is a table of data: one entry per message, however many the package has.
"""

DISPLAY_ZH_CN = {
    # ---- notebook 00 section 0: L19 p.6-10 recomputed (why_distribute.py) -----------------
    "GPT-3 training FLOPs": "GPT-3 训练 FLOPs",
    "GPT-3 GPU-years, one GPU": "GPT-3 的 GPU 年数（单块 GPU）",
    "GPT-3 GPU-hours, one GPU": "GPT-3 的 GPU 小时数（单块 GPU）",
    "GPT-3 GPU-years on an A100": "GPT-3 在 A100 上的 GPU 年数",
    "GPT-3 GPU-years on an A100 at peak": "GPT-3 在 A100 上按峰值算的 GPU 年数",
    "ResNet-50 GPU-hours on an A100": "ResNet-50 在 A100 上的 GPU 小时数",
    "10 GPU-days on 1,024 GPUs, minutes": "10 GPU 天的工作放到 1,024 块 GPU 上（分钟）",
    "GPT-3 on 1,024 A100s, days": "GPT-3 在 1,024 块 A100 上（天）",
    "TSM speed-up, 1 -> 256 Summit nodes": "TSM 加速比，1 -> 256 个 Summit 节点",
    "TSM scaling efficiency": "TSM 扩展效率",
    "6 x {params:.3g} params x {tokens:.3g} tokens (paper: 3.14e23)":
        "6 x {params:.3g} 个参数 x {tokens:.3g} 个 token（论文：3.14e23）",
    "3.14e23 FLOPs at 28 TFLOP/s (Lambda's V100)":
        "3.14e23 FLOPs，按 28 TFLOP/s 计算（Lambda 所用的 V100）",
    "the same, in hours": "同上，以小时计",
    "A100 at {pct} of its 312 TFLOP/s dense bf16 peak":
        "A100 以其 312 TFLOP/s 稠密 bf16 峰值的 {pct} 运行",
    "A100 at 100% of peak (a floor)": "A100 以峰值的 100% 运行（下限）",
    "3 x 2 x 3.8e9 FLOPs x 1.28M images x 90 epochs at peak":
        "3 x 2 x 3.8e9 FLOPs x 128 万张图像 x 90 个 epoch，按峰值计算",
    "perfect linear scaling": "完美的线性扩展",
    "A100 at {pct} of peak, perfect scaling": "A100 以峰值的 {pct} 运行，完美扩展",
    "49 h 50 min / 14 min": "49 小时 50 分钟 / 14 分钟",
    "speed-up / 256 (6 GPUs per node both times)":
        "加速比 / 256（两次都是每个节点 6 块 GPU）",
    "L19 p.6 (as the notes put it) sets GPT-3 at 355 GPU-years on an A100. 3.14e23 FLOPs "
    "at 28 TFLOP/s give {v100:.0f} years: that is the V100 figure of Lambda's "
    "'Demystifying GPT-3' ({source}). On an A100 at {pct:.0%} of its "
    "312 TFLOP/s bf16 peak it is {a100:.0f} GPU-years ({peak:.0f} at 100% of peak).":
        "L19 p.6（按讲义的说法）称 GPT-3 在 A100 上需要 355 GPU 年。3.14e23 FLOPs 按 "
        "28 TFLOP/s 计算得到 {v100:.0f} 年：这是 Lambda 的《Demystifying GPT-3》（{source}）"
        "给出的 V100 数字。在以 312 TFLOP/s bf16 峰值的 {pct:.0%} 运行的 A100 上，"
        "是 {a100:.0f} GPU 年（按峰值的 100% 算是 {peak:.0f}）。",
    "3.1 million GPU-hours is {years:.0f} years, not 355: the slide rounds the "
    "hours (355 years is {hours:.2f} million).":
        "310 万 GPU 小时是 {years:.0f} 年，而不是 355 年：幻灯片对小时数做了取整"
        "（355 年是 {hours:.2f} 百万小时）。",
    "ResNet-50's 31 A100-hours is ~{ratio:.0f}x its FLOP count at peak ({peak:.1f} h): "
    "a measured run's time, at {share:.0%} of the bf16 peak, not arithmetic.":
        "ResNet-50 的 31 个 A100 小时约是按峰值计算其 FLOP 数所得时间（{peak:.1f} h）的 "
        "{ratio:.0f} 倍：这是一次实测运行的时间，相当于 bf16 峰值的 {share:.0%}，而不是算出来的。",
    "The 14 minutes (10 GPU-days on 1,024 GPUs) is exact arithmetic that assumes perfect "
    "scaling; TSM on Summit reached {efficiency:.0%} of it at 256 nodes with the notes' "
    "rounded times, {paper:.0%} with the paper's own ({source}).":
        "14 分钟（10 GPU 天的工作放到 1,024 块 GPU 上）是假设完美扩展的精确算术；"
        "按讲义取整后的时间，TSM 在 Summit 上用 256 个节点时达到了它的 {efficiency:.0%}，"
        "按论文自己给出的时间则是 {paper:.0%}（{source}）。",
}


from .case_strings import CASE_ZH_CN  # noqa: E402  (the same table, continued)

DISPLAY_ZH_CN.update(CASE_ZH_CN)
