"""The activation-memory calculator of notebooks 03 and 05: Korthikanti et al.'s bytes per
transformer layer (:func:`companion.data_parallel.memory.activation_memory_per_layer`) for
every parallelism and recomputation choice, the chosen one highlighted.

Notebook 03 (``notebooks/03_zero_memory.ipynb``, section 6) shows every control on GPT-3
175B's layer: activations are the memory ZeRO does not shard. Notebook 05
(``notebooks/05_tensor_parallelism.ipynb``, section 7) shows the sequence length, the TP
degree within a node, sequence parallelism and recomputation for its 4096-wide layer.

The box draws once on creation. Every control is an attribute of the box (``box.seq_len``,
``box.tp``, ...), shown or not, so a test can move any of them; the bars' bytes are in
``box.values``, the chosen configuration's in ``box.selected``, the figure is the PNG in
``box.image`` and the numbers are in ``box.text``; ``box.output`` shows invalid input.
GB = 10^9 bytes, the course's unit (:mod:`companion.units`).
"""
from __future__ import annotations

import ipywidgets as W

from ..data_parallel import memory as M
from ..i18n import gettext as tr
from ..units import GB
from ..validation import divides, one_of, positive_int
from ._base import guarded, png_into, pre_html

__all__ = ["activation_memory"]

_CONTROLS = ("seq_len", "batch", "hidden", "heads", "tp", "sequence_parallel", "recompute",
             "layers")
_TP_DEGREES = (1, 2, 4, 8, 16, 32, 64)
_RECOMPUTE = ("none", "selective", "full")
def _recompute_label(value: str) -> str:
    """The dropdown's label; its values stay English, as the model compares them."""
    # keyed with a context, as gettext's pgettext does: a bare "none" is also a prediction
    # choice ("none of these"), which reads differently in Chinese
    label = {"none": tr("recompute: none"), "selective": tr("recompute: selective"),
             "full": tr("recompute: full")}[value]
    return value if label.startswith("recompute: ") else label


_PER_ROW = 4  # controls side by side; eight fit in two rows of a notebook's width


def _variants(t: int) -> list[tuple[str, dict]]:
    """(key in ``box.values``, configuration) of each bar, for TP degree ``t``."""
    return [("no parallelism", dict(tp=1)),
            ("TP", dict(tp=t)),
            ("TP+SP", dict(tp=t, sequence_parallel=True)),
            ("TP + selective", dict(tp=t, recompute="selective")),
            ("TP+SP + selective", dict(tp=t, sequence_parallel=True, recompute="selective")),
            ("full recompute", dict(tp=t, recompute="full"))]


def _check(seq_len, batch, hidden, heads, tp, recompute, layers, controls, tp_degrees):
    # The text boxes clamp at 0 and the dropdowns refuse unknown values with a trait
    # error; checking here names the argument instead.
    for name, value in (("seq_len", seq_len), ("batch", batch), ("hidden", hidden),
                        ("heads", heads), ("layers", layers)):
        positive_int(name, value, f"pass a whole number such as {name}=8.")
    divides("hidden", hidden, heads, "heads", "pick a head count that divides hidden.")
    if isinstance(tp_degrees, str) or not tp_degrees:
        raise ValueError(f"tp_degrees={tp_degrees!r}: pass the TP degrees to offer, "
                         "e.g. (1, 2, 4, 8).")
    for degree in tp_degrees:
        positive_int("tp_degrees", degree, "every TP degree is a whole number such as 8.")
    one_of("tp", tp, tp_degrees, "pick one of tp_degrees, the degrees the dropdown offers.")
    one_of("recompute", recompute, _RECOMPUTE)
    if isinstance(controls, str) or not controls:
        raise ValueError(f"controls={controls!r}: pass the names of the controls to show, "
                         "e.g. ('seq_len', 'tp').")
    for name in controls:
        one_of("controls", name, _CONTROLS, "name the controls to show.")


def _make_controls(seq_len, batch, hidden, heads, tp, sequence_parallel, recompute, layers,
                   tp_degrees) -> dict:
    return {
        "seq_len": W.BoundedIntText(value=seq_len, min=0, max=10_000_000,
                                    description=tr("seq len s")),
        "batch": W.BoundedIntText(value=batch, min=0, max=100_000, description=tr("batch b")),
        "hidden": W.BoundedIntText(value=hidden, min=0, max=1_000_000,
                                   description=tr("hidden h")),
        "heads": W.BoundedIntText(value=heads, min=0, max=10_000, description=tr("heads a")),
        "tp": W.Dropdown(options=list(tp_degrees), value=tp, description=tr("TP degree t")),
        "sequence_parallel": W.Checkbox(value=sequence_parallel,
                                        description=tr("sequence parallel")),
        "recompute": W.Dropdown(options=[(_recompute_label(r), r) for r in _RECOMPUTE],
                                value=recompute,
                                description=tr("recompute")),
        "layers": W.BoundedIntText(value=layers, min=0, max=10_000, description=tr("layers L")),
    }


def _figure(values: dict, selected: float, v: dict):
    """Horizontal bars of ``values`` (bytes), those equal to ``selected`` highlighted."""
    import matplotlib.pyplot as plt
    from ..plotting import OKABE_ITO

    fig, ax = plt.subplots(figsize=(9, 4))
    sizes = list(values.values())
    colors = [OKABE_ITO[1] if size == selected else OKABE_ITO[0] for size in sizes]
    ax.barh(range(len(sizes)), [size / GB for size in sizes], color=colors)
    ax.set_yticks(range(len(sizes)), [f"TP t={v['tp']}" if key == "TP" else tr(key)
                                      for key in values])
    ax.invert_yaxis()
    for i, size in enumerate(sizes):
        ax.text(size / GB, i, f" {size / GB:,.2f}", va="center")
    ax.set_xlabel(tr("activation memory per layer per GPU (GB)"))
    s, h, a = v["seq_len"], v["hidden"], v["heads"]
    ax.set_title(f"s={s}, b={v['batch']}, h={h}, a={a}: 5as/h = {5 * a * s / h:,.1f} vs 34")
    ax.set_xlim(0, max(sizes) / GB * 1.25)
    return fig


def activation_memory(seq_len: int = 2048, batch: int = 1, hidden: int = 12288,
                      heads: int = 96, tp: int = 8, sequence_parallel: bool = False,
                      recompute: str = "none", layers: int = 96,
                      controls: tuple[str, ...] = _CONTROLS,
                      tp_degrees: tuple[int, ...] = _TP_DEGREES) -> W.VBox:
    """Activation memory per layer per GPU for no parallelism, TP, TP+SP, selective and
    full recomputation, the configuration the controls select highlighted, and its total
    for ``layers`` layers; the defaults are GPT-3 175B's.

    ``controls``: which controls to show, in order, out of ``seq_len``, ``batch``,
    ``hidden``, ``heads``, ``tp``, ``sequence_parallel``, ``recompute`` and ``layers``
    (the others keep their values). ``tp_degrees``: the TP degrees the ``tp`` dropdown
    offers, e.g. ``(1, 2, 4, 8)`` for TP within one node.
    """
    _check(seq_len, batch, hidden, heads, tp, recompute, layers, controls, tp_degrees)
    c = _make_controls(seq_len, batch, hidden, heads, tp, sequence_parallel, recompute, layers,
                       tp_degrees)
    image, text, output = W.Image(format="png"), W.HTML(), W.Output()
    shown = [c[name] for name in controls]
    rows = [W.HBox(shown[i:i + _PER_ROW]) for i in range(0, len(shown), _PER_ROW)]
    box = W.VBox([*rows, output, image, text])

    @guarded(output)
    def redraw(change=None):
        v = {name: control.value for name, control in c.items()}
        if min(v["seq_len"], v["batch"], v["hidden"], v["heads"], v["layers"]) <= 0:
            raise ValueError(tr("sequence, batch, hidden, heads and layers must be positive; "
                                "type a number above zero."))
        args = (v["seq_len"], v["batch"], v["hidden"], v["heads"])
        values = {key: M.activation_memory_per_layer(*args, **kw)
                  for key, kw in _variants(v["tp"])}
        selected = M.activation_memory_per_layer(*args, tp=v["tp"],
                                                 sequence_parallel=v["sequence_parallel"],
                                                 recompute=v["recompute"])
        box.values, box.selected = values, selected
        png_into(image, output, lambda: _figure(values, selected, v))
        text.value = pre_html([tr("selected (t={t}, SP={sp}, recompute={rc}): {gb} GB per "
                                  "layer, {total} GB for {layers} layers").format(
            t=v["tp"], sp=v["sequence_parallel"], rc=_recompute_label(v["recompute"]), gb=f"{selected / GB:,.3f}",
            total=f"{selected * v['layers'] / GB:,.1f}", layers=v["layers"])])

    for control in c.values():
        control.observe(redraw, "value")
    for name, control in c.items():
        setattr(box, name, control)
    box.output, box.image, box.text, box.values, box.selected = output, image, text, {}, None
    redraw()
    return box
