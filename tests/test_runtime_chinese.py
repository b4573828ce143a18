"""What a Chinese-first student reads at run time is Chinese: the widgets' labels, option
labels, titles and figure texts, the experiments' summaries and the launcher's banner.

Each widget and summary is called with the language zh-CN and small arguments; all the
text it shows is collected (controls, HTML, printed output, every matplotlib Text of every
figure it drew) and must hold no run of three English words outside code, identifiers,
numbers, units and the names of models, chips, methods and papers. One English call
shows the English text is unchanged.
"""
from __future__ import annotations

import os
import re
from types import SimpleNamespace

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

import companion  # noqa: E402
from companion import i18n  # noqa: E402

# Names that stay as they are in the Chinese edition: models, clusters, chips, methods.
NAMES = ("Llama-3", "Llama 3", "DeepSeek-V3", "Mixtral", "GPT-3", "Megatron-SP", "Megatron",
         "LayerNorm", "GeLU", "PowerSGD", "TernGrad", "DualPipeV", "FedAvg", "ZeRO", "FSDP",
         "H100", "H200", "A100", "V100", "RTX", "top-k", "1-bit", "gloo", "nccl", "cpu")
_CODE = re.compile(r"`[^`]*`|<[^>]+>|\$[^$]*\$|\{[^}]*\}|\S*[_/.()\[\]=:]\S*[a-z]\S*")
_WORD = re.compile(r"[A-Za-z][a-z]+(?:-[a-z]+)*")
_RUN = re.compile(rf"{_WORD.pattern}(?:[ ,;]+{_WORD.pattern}){{2,}}")


def english_runs(text: str) -> list[str]:
    """Runs of 3 or more English words (lower-case words: acronyms such as GPU are units)."""
    for name in NAMES:
        text = text.replace(name, " ")
    runs = []
    for line in text.splitlines():
        line = _CODE.sub(" ", line)
        runs += [m.group() for m in _RUN.finditer(line)]
    return runs


@pytest.fixture
def chinese(monkeypatch):
    """zh-CN for the test; every figure's texts recorded when it is closed or saved."""
    seen: list[str] = []

    def harvest(fig):
        seen.extend(t.get_text() for t in fig.findobj(matplotlib.text.Text))

    real_close, real_savefig = plt.close, matplotlib.figure.Figure.savefig

    def close(fig=None):
        figs = [fig] if isinstance(fig, matplotlib.figure.Figure) else [
            plt.figure(n) for n in plt.get_fignums()]
        for f in figs:
            harvest(f)
        return real_close(fig) if fig is not None else real_close("all")

    def savefig(self, *args, **kwargs):
        harvest(self)
        return real_savefig(self, *args, **kwargs)

    monkeypatch.setattr(plt, "close", close)
    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", savefig)
    i18n.set_language("zh-CN")
    yield seen
    i18n._chosen = None
    os.environ.pop(i18n.ENV, None)
    real_close("all")


def widget_texts(w) -> list[str]:
    """Every string a student sees in a widget tree: descriptions, values, option labels,
    and the text outputs of its Output areas."""
    found = []
    for name in ("description", "value", "placeholder", "tooltip"):
        value = getattr(w, name, None)
        if isinstance(value, str):
            found.append(value)
    found += [str(label) for label in getattr(w, "_options_labels", ())]
    for out in getattr(w, "outputs", ()):
        found += [out.get("text", "")] + [v for k, v in out.get("data", {}).items()
                                           if k.startswith("text/plain")]
    for child in getattr(w, "children", ()):
        found += widget_texts(child)
    return found


def assert_chinese(texts, what):
    bad = [(t[:80], runs) for t in texts if (runs := english_runs(t))]
    assert not bad, f"{what} still reads English: {bad[:6]}"


def test_the_detector_finds_english_and_passes_chinese():
    assert english_runs("each rank holds its own data")
    assert not english_runs("开始：每个 rank 持有自己的数据 `all_reduce(SUM)` Llama-3 405B on H100")


def _figures_of(draw, chinese):
    fig, ax = plt.subplots()
    draw(ax)
    plt.close(fig)
    return list(chinese)


def test_the_widgets_speak_chinese(chinese):
    from companion import widgets as W
    from companion.widgets.tensor_parallel import draw_fg_dataflow, draw_split
    from companion.widgets.topology import draw_topology, topology_player

    boxes = {"zero_memory": W.zero_memory(), "activation_memory": W.activation_memory(),
             "tp_split_explorer": W.tp_split_explorer(), "schedule_explorer": W.schedule_explorer(),
             "planner": W.planner(), "dga_explorer": W.dga_explorer(world_size=2),
             "autoparallel_planner": W.autoparallel_planner(model="Llama-3 8B"
                                                            if "Llama-3 8B" in
                                                            companion.planner.MODELS else
                                                            "Llama-3 405B")}
    boxes["schedule_explorer"].send.value = 0.1     # the title's other case
    for name, box in boxes.items():
        assert_chinese(widget_texts(box), name)
    assert_chinese([boxes["schedule_explorer"].title if hasattr(boxes["schedule_explorer"],
                                                                "title") else ""], "title")
    for sp in (False, True):
        _figures_of(lambda ax: draw_fg_dataflow(2, sp, ax), chinese)
    for kind in ("column", "row", "qkv"):
        _figures_of(lambda ax: draw_split(kind, 2, ax), chinese)
    cluster = SimpleNamespace(nodes=2, ranks_per_node=2, layout="nodes")
    messages = [dict(src=0, dst=1, link="intra", bytes=1000, start=10.0, end=11.0),
                dict(src=1, dst=3, link="inter", bytes=4000, start=10.5, end=12.0)]
    _figures_of(lambda ax: draw_topology(cluster, messages, at=0.6, ax=ax, title="ring"), chinese)
    player = topology_player(cluster, messages, frames=3)
    player.slider.value = 2
    assert_chinese(widget_texts(player), "topology_player")
    assert chinese, "no figure was drawn"
    assert_chinese(chinese, "figures")


def _ring():
    from companion import collectives as C
    with C.traffic() as t:
        C.ring_all_reduce(torch.ones(4))
    return t


def test_the_launcher_and_the_replay_speak_chinese(chinese, capsys):
    from companion import launcher, widgets as W
    launcher._last_announced = None
    traffics = companion.launch(_ring, world_size=2)
    banner = capsys.readouterr().out
    assert banner.startswith("[launch] ") and "后端" in banner, banner
    assert_chinese([banner], "the launch banner")
    box = W.collective_replay(traffics, title="ring")
    box.slider.value = 1
    assert_chinese(widget_texts(box) + chinese, "collective_replay")


def test_the_summaries_speak_chinese(chinese):
    from companion import basics
    import importlib
    ablation = importlib.import_module("companion.compression.ablation")
    train = importlib.import_module("companion.compression.train")
    from companion.data_parallel import param_server
    from companion.hybrid import expert, mesh3d
    from companion.topology import timing

    who = [dict(rank=r, pid=100 + r, host="pc1", backend="gloo", device="cpu", threads=1)
           for r in range(2)]
    run = dict(method="dgc", test_acc=[0.9], bytes=[100], dense_bytes=1000)
    diffs = [dict(max_param_diff=0.0, max_grad_diff=0.0, measured=1, predicted=1, seconds=0.1)]
    texts = [basics._whoami_table(who),
             basics._all_reduce_summary([dict(after=3.0), dict(after=3.0)]),
             basics._all_reduce_summary([dict(after=3.0), dict(after=2.0)]),
             train._summary([run]), ablation._ablation_summary([{"dense": [run]}]),
             timing._table([{"ring": dict(predicted=1e-3, best=2e-3)}]),
             mesh3d._summary(diffs), expert._summary(diffs),
             param_server._ps_summary([dict(losses=[0.5], traffic=dict(bytes_sent=1,
                                                                        bytes_received=2)), {}])]
    assert_chinese(texts, "summaries")
    assert "每个 rank r 贡献 r+1" in texts[1] and texts[1].endswith("：OK")


def test_the_pipeline_run_summary_speaks_chinese(chinese):
    from companion import experiments
    from companion.pipeline.tinymlp import run_pipeline
    results = companion.launch(run_pipeline, world_size=2, microbatches=2, depth=3)
    text = experiments.get("pipeline_run").summarize(results)
    assert "利用率" in text
    assert_chinese([text], "pipeline_run's summary")


def test_notebook_10_and_11_figures_speak_chinese(chinese):
    from companion import widgets as W
    from companion.overlap import draw_overlap
    from companion.overlap.crossover import _summarize_crossover
    from companion.overlap.runs import _summarize_overlap
    from companion.why_distribute import plot_compute_growth

    box = W.roofline_explorer(measured_point=(1.0, 0.5),
                              planner_choice=dict(model="Llama-3 70B", chip="H100",
                                                  devices=1024, batch_tokens=2 ** 20, x=64, y=16))
    box.batch.value = 2 ** 26                      # the readout's compute-bound case
    assert "计算受限" in box.text.value
    tl = dict(rank=0, step_s=0.01, compute_s=0.006, compute=[(0.0, 0.006)], waits=[(0.006, 0.008)],
              comm=[dict(start=0.004, end=0.008)])
    _figures_of(lambda ax: draw_overlap(ax, [tl, dict(tl, rank=1)]), chinese)
    _figures_of(plot_compute_growth, chinese)
    row = dict(strategy="ddp", batch=16, bucket_size_mb=1, prefetch=False, comm_s=0.01,
               exposed_s=0.002, compute_s=0.02)
    sweep = dict(strategy="ddp", world_size=2, bandwidth_bytes_s=50e6,
                 effective_bandwidth_bytes_s=40e6, flops_per_s=5e9, predicted_batch=64,
                 measured_batch=64, rows=[dict(batch=16, slowest_compute_s=0.01, comm_s=0.02,
                                               slowest_exposed_s=0.01)])
    texts = [_summarize_overlap([[row]]), _summarize_crossover([sweep])]
    assert_chinese(widget_texts(box) + texts + chinese, "notebook 10 and 11")
    assert any("步内时间" in t for t in chinese) and any("训练 FLOPs" in t for t in chinese)


def test_the_planner_shows_its_rejection_reasons_in_chinese(chinese):
    from companion.planner import CLUSTERS, MODELS, plan
    from companion.planner.feasibility import REASON_TEMPLATES, shown_reason
    from companion.widgets.planner import ranking_html

    assert all(i18n.gettext(t) != t for t in REASON_TEMPLATES)
    feasible, infeasible = plan(MODELS["Llama-3 70B"], CLUSTERS["16 nodes, 128x H100"], 64,
                                chunk_options=(1, 2), schedules=("1f1b", "dualpipev"),
                                cp_options=(1, 3))
    reasons = {p.reason for p in infeasible} | {"out of memory"}
    assert any(r.startswith("out of memory: ") for r in reasons)
    # The plan keeps the English reason that code compares; only what is shown changes.
    assert all(r.isascii() for r in reasons)
    assert_chinese([shown_reason(r) for r in reasons] + [ranking_html(feasible, infeasible)],
                   "rejection reasons")


def test_the_case_studies_and_published_runs_speak_chinese(chinese):
    # Notebook 09 prints each row's sources and assumptions, notebook 12 each run's source.
    from companion.tools.scan import looked_up_data
    assert_chinese([i18n.gettext(t) for t, _where in looked_up_data()], "case studies")


def test_the_cheatsheet_tables_speak_chinese(chinese):
    from companion import cheatsheet as cs
    from companion.cheatsheet.tables import TABLE_TEXTS
    labels = sorted(TABLE_TEXTS)
    reason = "TP=16 does not divide the 40 attention heads"
    table = cs.markdown_table(labels, [labels, [reason] + ["ring"] * (len(labels) - 1)])
    assert "| ring |" in table                     # an algorithm's name is a value: unchanged
    assert_chinese([table], "the cheat-sheet's tables")


def test_the_other_experiment_summaries_speak_chinese(chinese):
    from companion.collectives import demos, hierarchical
    from companion.data_parallel import runs as dp_runs
    from companion.dga import runs as dga_runs
    from companion.network import delayed
    from companion.network.cluster import Cluster
    from companion.pipeline.tinymlp import timeline_from_results
    from companion.sequence_parallel import block, moe, runs as sp_runs
    from companion.tensor_parallel import checks

    grid = dict(rank=0, node=0, env=dict(GROUP_RANK=0, LOCAL_RANK=0), intra_group=[0, 1],
                inter_group=[0], equal=True)
    held = dict(params=10, grads=10, optimizer=20)
    diffs = dict(out=0.0, x_grad=0.0, w_grad=0.0, param=0.0, forward={}, backward={})
    texts = [hierarchical._summarize([grid]), hierarchical._summarize([dict(grid, equal=False)]),
             demos._table([{"broadcast": (torch.ones(2), dict(messages=1, steps=1))}]),
             dp_runs._summarize_train([dict(strategy="zero1", num_params=100, losses=[0.5],
                                            held=held, comm_bytes=8)]),
             delayed._summarize_link([[dict(alpha_ms=1.0, model_ms=2.0, measured_ms=2.1,
                                            real_ms=0.5)]]),
             sp_runs._attention_summary([dict(out=0.0, grads=0.0, forward={}, backward={})]),
             dga_runs._summarize([dict(accuracy=0.9, seconds_per_step=0.01)]),
             checks._diff_summary([diffs]), checks._saved_summary([dict(bytes=8)]),
             moe._moe_summary([dict(out=0.0, x_grad=0.0, router_grad=0.0, expert_grad=0.0,
                                    dropped=0)]),
             block._benchmark_summary([dict(seconds=0.01, bytes=64, max_diff=0.0)]),
             Cluster(2, 2, intra=(1e-6, float("inf")), inter=(1e-4, 1e9)).describe(),
             timeline_from_results([dict(rank=0, chunks=1, split_backward=False,
                                         schedule="1f1b",
                                         events=[("F", 0, 0, 0.0, 1.0, None)])]).name]
    assert_chinese(texts, "summaries")
    assert texts[-1] == "1f1b（实测）"


def test_the_planner_critique_speaks_chinese(chinese):
    from companion.planner import CLUSTERS, MODELS, critique, evaluate, plan
    model, cluster = MODELS["Llama-3 70B"], CLUSTERS["16 nodes, 128x H100"]
    fastest = plan(model, cluster, 256)[0][0]
    configs = [dict(dp=128, tp=1, pp=1, zero=0), dict(dp=128, tp=1, pp=1, zero=3),
               dict(dp=8, tp=16, pp=1, zero=1), dict(dp=2, tp=8, pp=8, zero=1),
               dict(dp=4, tp=8, pp=4, zero=1, recompute="full"), dict(dp=16, tp=8, pp=1, zero=3),
               dict(dp=4, tp=8, pp=4, zero=1, chunks=2), dict(dp=2, tp=16, pp=4, zero=1),
               dict(dp=fastest.dp, tp=fastest.tp, pp=fastest.pp, zero=fastest.zero,
                    micro_batch=fastest.micro_batch, recompute=fastest.recompute,
                    chunks=fastest.chunks)]
    results = [critique(evaluate(model, cluster, 256, **c), fastest, cluster) for c in configs]
    assert [passed for passed, _ in results].count(True) == 1
    assert_chinese([text for _, text in results], "the planner's critique")
    assert "内存不足" in results[0][1]


def test_english_is_unchanged(monkeypatch, tmp_path):
    from companion import basics
    monkeypatch.delenv(i18n.ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    assert i18n.get_language() == "en"
    assert basics._all_reduce_summary([dict(after=3.0), dict(after=3.0)]) == (
        "each rank r contributed r+1; after all_reduce(SUM) every rank holds [3.0] "
        "(expected 1+2+...+2 = 3): OK")
    assert basics._whoami_table([]) == f"{'rank':>4}  {'pid':>7}  {'host':<16} {'backend':<7} " \
                                       f"{'device':<7} threads"
    from companion.planner.feasibility import shown_reason
    reason = "out of memory: needs 93.1 GB per GPU, the GPU has 80 GB"
    assert shown_reason(reason) == reason
    from companion.cheatsheet import markdown_table
    assert markdown_table(["step time", "a"], [["synchronous SGD", 1]]) == \
        "| step time | a |\n|---|---|\n| synchronous SGD | 1 |"
    from companion.widgets.tensor_parallel import _owner_grid
    assert _owner_grid("column", 2, 8, 16, 4)[1] == \
        "fc1 [16 x 8], column-parallel: rank i keeps 8 output rows"
