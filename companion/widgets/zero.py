"""Widgets of notebook 03 (``notebooks/03_zero_memory.ipynb``): a ZeRO memory calculator
and an activation-memory calculator, both drawn from :mod:`companion.data_parallel.memory`.

Each function returns an ipywidgets ``VBox`` that draws once on creation; its controls
are attributes of the box (``box.params_b``, ``box.gpus``, ...), the figure is the PNG in
``box.image`` and the numbers are in ``box.text``, so a test can change a control and see
the output change; ``box.output`` shows invalid input.

Units follow the course's convention (:mod:`companion.units`): GB = 10^9 bytes, the unit
of the ZeRO paper and the lectures. A GPU's memory is typed as its label says ("80 GB");
vendors' labels are close to GiB (an "80 GB" A100 has 80 GiB = 85.9 GB), which notebook
03 points out.
"""
from __future__ import annotations

import ipywidgets as W

from ..data_parallel import memory as M
from ..units import GB
from ..i18n import gettext as tr
from ._base import guarded
from ..validation import one_of, positive_int, positive_number

__all__ = ["zero_memory", "activation_memory"]

_PARTS = ("params", "grads", "optimizer")
_PART_LABELS = {"params": "weights", "grads": "gradients", "optimizer": "optimizer state"}
_STAGE_NAMES = ["DDP (stage 0)", "ZeRO-1", "ZeRO-2", "ZeRO-3 / FSDP"]
_GPUS = {"A100 / H100 80 GB": 80, "H200 141 GB": 141, "V100 32 GB": 32, "RTX 4090 24 GB": 24}


def _render(image, output, draw):
    """Draw into a PNG shown by an Image widget: it updates in place (no flicker) and
    works the same in a kernel, in Voila and in a test."""
    import io

    import matplotlib.pyplot as plt

    output.outputs = ()  # drops an old error message; clear_output() can hang Voila: see showing
    fig = draw()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=80, bbox_inches="tight")
    plt.close(fig)
    image.value = buffer.getvalue()


def _pre(lines):
    import html

    return "<pre style='font-size: 13px'>" + html.escape("\n".join(lines)) + "</pre>"


def zero_memory(params_b: float = 7.5, gpus: int = 64, stage: int = 3,
                precision: str = "mixed", optimizer: str = "adam",
                gpu_memory_gb: float = 80.0) -> W.VBox:
    """Bytes per GPU of weights, gradients and optimizer state for ZeRO stages 0-3.

    Stacked bars per stage for the chosen model, GPU count, precision and optimizer, a
    line at the GPU's memory, each bar marked fits / does not fit; below, the largest
    model each stage fits. Activations are not included (see :func:`activation_memory`).
    """
    # The text boxes clamp at 0 and the dropdowns refuse unknown values with a trait
    # error; checking here names the argument instead.
    positive_number("params_b", params_b, "pass the model size in billions, e.g. 7.5.")
    positive_int("gpus", gpus, "pass the number of GPUs, e.g. 64.")
    one_of("stage", stage, (0, 1, 2, 3), "ZeRO stages are 0 (DDP) to 3 (FSDP).")
    one_of("precision", precision, M.PRECISIONS)
    one_of("optimizer", optimizer, M.OPTIMIZERS)
    positive_number("gpu_memory_gb", gpu_memory_gb, "pass the GPU's memory in GB, e.g. 80.")
    presets = {"custom": None, "ZeRO paper 7.5B": 7.5e9}
    presets.update({name: M.transformer_params(**cfg) for name, cfg in M.MODEL_CONFIGS.items()})
    preset = W.Dropdown(options=list(presets), value="ZeRO paper 7.5B"
                        if params_b == 7.5 else "custom", description=tr("model"))
    size = W.BoundedFloatText(value=params_b, min=0, max=1e6, step=0.1,
                              description=tr("params (B)"))
    n = W.BoundedIntText(value=gpus, min=0, max=1_000_000, description=tr("GPUs (N)"))
    st = W.Dropdown(options=[(name, i) for i, name in enumerate(_STAGE_NAMES)], value=stage,
                    description=tr("stage"))
    prec = W.Dropdown(options=list(M.PRECISIONS), value=precision, description=tr("precision"))
    opt = W.Dropdown(options=list(M.OPTIMIZERS), value=optimizer, description=tr("optimizer"))
    mem = W.BoundedFloatText(value=gpu_memory_gb, min=0, max=1e5, description=tr("GPU GB"))
    gpu = W.Dropdown(options=["custom"] + list(_GPUS), value="custom", description=tr("GPU"))
    image, text, output = W.Image(format="png"), W.HTML(), W.Output()

    @guarded(output)
    def on_preset(change):
        if presets.get(preset.value):
            size.value = round(presets[preset.value] / 1e9, 3)

    @guarded(output)
    def on_gpu(change):
        if gpu.value in _GPUS:
            mem.value = _GPUS[gpu.value]

    @guarded(output)
    def redraw(change=None):
        if size.value <= 0 or n.value <= 0 or mem.value <= 0:
            raise ValueError(tr("model size, GPU count and GPU memory must be positive; "
                                "type a number above zero."))
        num = int(round(size.value * 1e9))
        kw = dict(precision=prec.value, optimizer=opt.value)
        rows = [M.zero_memory_per_gpu(num, n.value, s, **kw) for s in range(4)]
        limit = mem.value * GB

        def draw():
            import matplotlib.pyplot as plt
            from ..plotting import OKABE_ITO

            fig, ax = plt.subplots(figsize=(9, 4.2))
            bottom = [0.0] * 4
            for part, color in zip(_PARTS, OKABE_ITO):
                values = [r[part] / GB for r in rows]
                ax.bar(range(4), values, bottom=bottom, color=color, label=tr(_PART_LABELS[part]))
                bottom = [b + v for b, v in zip(bottom, values)]
            for s, r in enumerate(rows):
                fits = r["total"] <= limit
                ax.text(s, r["total"] / GB, f"{r['total'] / GB:,.1f} GB\n"
                        + (tr("fits") if fits else tr("does not fit")), ha="center", va="bottom",
                        color="black" if fits else OKABE_ITO[3],
                        fontweight="bold" if s == st.value else "normal")
            ax.axhline(mem.value, color="black", linestyle="--",
                       label=tr("GPU memory {gb} GB").format(gb=f"{mem.value:g}"))
            ax.set_xticks(range(4), [("> " if s == st.value else "") + name
                                     for s, name in enumerate(_STAGE_NAMES)])
            ax.set_ylabel(tr("model states per GPU (GB)"))
            ax.set_ylim(0, max(max(bottom), mem.value) * 1.3)
            ax.set_title(tr("{billions}B parameters on N = {n} GPUs, {precision} {optimizer}"
                            ).format(billions=f"{num / 1e9:,.2f}", n=n.value,
                                     precision=prec.value, optimizer=opt.value))
            ax.legend(loc="upper right", fontsize=10)
            return fig

        _render(image, output, draw)
        per = M.bytes_per_param(**kw)
        chosen = rows[st.value]
        fits = tr("fits") if chosen["total"] <= limit else tr("does not fit")
        lines = [tr("{params} + {grads} + {optimizer} = {total} bytes per parameter before "
                    "sharding.").format(**per, total=sum(per.values())),
                 tr("{stage}: {gb} GB per GPU ({fits} in {limit} GB).").format(
                     stage=_STAGE_NAMES[st.value], gb=f"{chosen['total'] / GB:,.2f}",
                     fits=fits, limit=f"{mem.value:g}"),
                 tr("Largest model that fits (weights + gradients + optimizer state only):")]
        for s, name in enumerate(_STAGE_NAMES):
            biggest = M.max_params_that_fit(limit, n.value, s, **kw)
            lines.append(f"  {name:>14}: " + tr("{billions}B parameters").format(
                billions=f"{biggest / 1e9:,.1f}"))
        text.value = _pre(lines)

    preset.observe(on_preset, "value")
    gpu.observe(on_gpu, "value")
    for control in (size, n, st, prec, opt, mem):
        control.observe(redraw, "value")
    box = W.VBox([W.HBox([preset, size, n]), W.HBox([st, prec, opt]), W.HBox([gpu, mem]),
                  output, image, text])
    box.preset, box.params_b, box.gpus, box.stage = preset, size, n, st
    box.precision, box.optimizer, box.gpu, box.gpu_memory_gb = prec, opt, gpu, mem
    box.output, box.image, box.text = output, image, text
    redraw()
    return box


def activation_memory(seq_len: int = 2048, batch: int = 1, hidden: int = 12288,
                      heads: int = 96, tp: int = 8, sequence_parallel: bool = False,
                      recompute: str = "none", layers: int = 96) -> W.VBox:
    """Activation memory per layer (Korthikanti et al.) for every parallelism and
    recomputation choice, the selected one highlighted; defaults are GPT-3 175B's."""
    for name, value in (("seq_len", seq_len), ("batch", batch), ("hidden", hidden),
                        ("heads", heads), ("layers", layers)):
        positive_int(name, value, f"pass a whole number such as {name}=8.")
    one_of("tp", tp, (1, 2, 4, 8, 16, 32, 64), "the TP degree is a power of two up to 64.")
    one_of("recompute", recompute, ("none", "selective", "full"))
    s = W.BoundedIntText(value=seq_len, min=0, max=10_000_000, description=tr("seq len s"))
    b = W.BoundedIntText(value=batch, min=0, max=100_000, description=tr("batch b"))
    h = W.BoundedIntText(value=hidden, min=0, max=1_000_000, description=tr("hidden h"))
    a = W.BoundedIntText(value=heads, min=0, max=10_000, description=tr("heads a"))
    t = W.Dropdown(options=[1, 2, 4, 8, 16, 32, 64], value=tp, description=tr("TP degree t"))
    sp = W.Checkbox(value=sequence_parallel, description=tr("sequence parallel"))
    rc = W.Dropdown(options=["none", "selective", "full"], value=recompute,
                    description=tr("recompute"))
    L = W.BoundedIntText(value=layers, min=0, max=10_000, description=tr("layers L"))
    image, text, output = W.Image(format="png"), W.HTML(), W.Output()

    @guarded(output)
    def redraw(change=None):
        if min(s.value, b.value, h.value, a.value, L.value) <= 0:
            raise ValueError(tr("sequence, batch, hidden, heads and layers must be positive; "
                                "type a number above zero."))
        args = (s.value, b.value, h.value, a.value)
        variants = [("no parallelism", dict(tp=1)),
                    (f"TP t={t.value}", dict(tp=t.value)),
                    ("TP+SP", dict(tp=t.value, sequence_parallel=True)),
                    ("TP + selective", dict(tp=t.value, recompute="selective")),
                    ("TP+SP + selective", dict(tp=t.value, sequence_parallel=True,
                                               recompute="selective")),
                    ("full recompute", dict(tp=t.value, recompute="full"))]
        values = [M.activation_memory_per_layer(*args, **kw) for _, kw in variants]
        chosen = M.activation_memory_per_layer(*args, tp=t.value,
                                               sequence_parallel=sp.value, recompute=rc.value)

        def draw():
            import matplotlib.pyplot as plt
            from ..plotting import OKABE_ITO

            fig, ax = plt.subplots(figsize=(9, 4))
            colors = [OKABE_ITO[1] if v == chosen else OKABE_ITO[0] for v in values]
            ax.barh(range(len(values)), [v / GB for v in values], color=colors)
            ax.set_yticks(range(len(values)), [tr(name) for name, _ in variants])
            ax.invert_yaxis()
            for i, v in enumerate(values):
                ax.text(v / GB, i, f" {v / GB:,.2f}", va="center")
            ax.set_xlabel(tr("activation memory per layer per GPU (GB)"))
            ax.set_title(f"s={s.value}, b={b.value}, h={h.value}, a={a.value}: 5as/h = "
                         f"{5 * a.value * s.value / h.value:,.1f} vs 34")
            ax.set_xlim(0, max(values) / GB * 1.25)
            return fig

        _render(image, output, draw)
        text.value = _pre([tr("selected (t={t}, SP={sp}, recompute={rc}): {gb} GB per layer, "
                              "{total} GB for {layers} layers").format(
            t=t.value, sp=sp.value, rc=rc.value, gb=f"{chosen / GB:,.3f}",
            total=f"{chosen * L.value / GB:,.1f}", layers=L.value)])

    for control in (s, b, h, a, t, sp, rc, L):
        control.observe(redraw, "value")
    box = W.VBox([W.HBox([s, b, h, a]), W.HBox([t, sp, rc, L]), output, image, text])
    box.seq_len, box.batch, box.hidden, box.heads = s, b, h, a
    box.tp, box.sequence_parallel, box.recompute, box.layers = t, sp, rc, L
    box.output, box.image, box.text = output, image, text
    redraw()
    return box
