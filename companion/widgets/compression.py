"""Widget for notebook 07: pick a compressor, density and momentum; watch training.

Every change launches a real 4-rank training run (``companion.compression.train``)
and redraws its loss and test-accuracy curves next to the dense baseline.
"""
from __future__ import annotations
from companion.i18n import gettext as tr

__all__ = ["compression_explorer"]

_METHODS = {
    "dense all-reduce": dict(method="dense"),
    "gradient dropping": dict(method="dgc", momentum_correction=False, factor_masking=False),
    "DGC (momentum correction + masking + clipping)": dict(method="dgc", clip_norm=1.0),
    "top-k, no accumulation": dict(method="topk_no_feedback"),
    "PowerSGD rank 2": dict(method="powersgd"),
    "1-bit SGD": dict(method="onebit"),
    "threshold quantisation": dict(method="threshold", tau=0.01),
    "TernGrad": dict(method="terngrad"),
}


def _label(name: str) -> str:
    """The dropdown's label for a method; the option values stay the English keys above."""
    return {"dense all-reduce": tr("dense all-reduce"), "gradient dropping": tr("gradient dropping"),
            "DGC (momentum correction + masking + clipping)":
                tr("DGC (momentum correction + masking + clipping)"),
            "top-k, no accumulation": tr("top-k, no accumulation"),
            "PowerSGD rank 2": tr("PowerSGD rank 2"), "1-bit SGD": tr("1-bit SGD"),
            "threshold quantisation": tr("threshold quantisation")}.get(name, name)


def compression_explorer(world_size: int = 4, steps: int = 150, lr: float = 0.05):
    """A method dropdown, a density slider (log scale) and a momentum slider.

    Controls are attributes (``.method``, ``.density``, ``.momentum``) and the last
    run's numbers are in ``.summary.value``, so a test can drive the widget.
    """
    import ipywidgets as W
    import matplotlib.pyplot as plt

    import companion
    from companion.compression import split_digits, train, train_many
    from companion.widgets._base import guarded, showing

    from companion.backends import validate_launch
    from companion.validation import positive_int, positive_number

    validate_launch(world_size, 60.0, "auto")
    positive_int("steps", steps, "try steps=150.")
    positive_number("lr", lr, "try lr=0.05.")
    method = W.Dropdown(options=[(_label(m), m) for m in _METHODS], value="gradient dropping",
                        description=tr("method"))
    density = W.FloatLogSlider(value=0.001, base=10, min=-4, max=0, step=0.25,
                               description=tr("density"), readout_format=".4f",
                               continuous_update=False)
    momentum = W.FloatSlider(value=0.9, min=0.0, max=0.98, step=0.01, description=tr("momentum"),
                             continuous_update=False)
    summary = W.HTML()
    output = W.Output()
    baselines = {}
    data = split_digits()  # once, in this process: ranks then need no scikit-learn

    def run(settings, m):
        kw = dict(steps=steps, lr=lr, momentum=m, density=density.value,
                  eval_every=max(1, steps // 10), data=data)
        if settings["method"] == "powersgd":  # it cannot share the all-gather
            if m not in baselines:
                baselines[m] = companion.launch(train, world_size=world_size, method="dense",
                                                **kw)[0]
            return baselines[m], companion.launch(train, world_size=world_size, **settings,
                                                  **kw)[0]
        kw.pop("density")
        runs = [dict(method="dense"), dict(settings, density=density.value)]
        # both models in lockstep, one all-gather per step: half the collectives
        return tuple(companion.launch(train_many, runs, world_size=world_size, **kw)[0])

    @guarded(output)
    def redraw(_=None):
        if not 0 < density.value <= 1:
            raise ValueError("density must be in (0, 1]; 99.9% sparsity is 0.001.")
        base, result = run(_METHODS[method.value], momentum.value)
        ratio = result["dense_bytes"] / result["bytes"][-1]
        summary.value = tr("<b>{method}</b>: test accuracy {acc:.3f} (dense {dense:.3f}); "
                           "{bytes:,} bytes per rank per step, {ratio:.0f}x smaller than "
                           "dense").format(method=_label(method.value), acc=result["test_acc"][-1],
                                           dense=base["test_acc"][-1], bytes=result["bytes"][-1],
                                           ratio=ratio)
        with showing(output):
            fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 3.8))
            for r, label, style in ((base, tr("dense"), "--"), (result, _label(method.value), "-")):
                ax1.plot(r["losses"], style, label=label, alpha=0.8)
                ax2.plot(r["eval_steps"], r["test_acc"], style + "o", label=label)
            ax1.set(title=tr("training loss ({n} ranks, rank 0's shard)").format(n=world_size),
                    xlabel=tr("step"),
                    ylabel=tr("cross-entropy"), yscale="log")
            ax2.set(title=tr("held-out accuracy"), xlabel=tr("step"), ylabel=tr("accuracy"), ylim=(0, 1))
            ax2.legend(loc="lower right", fontsize=9)
            plt.show()

    for control in (method, density, momentum):
        control.observe(redraw, names="value")
    box = W.VBox([W.HBox([method, density, momentum]), summary, output])
    box.method, box.density, box.momentum, box.summary, box.output = (
        method, density, momentum, summary, output)
    redraw()
    return box
