"""CS336 L8's case studies (§8, [01:13:31]-[01:17:25]) and what the planner makes of each.

This module is a table of data: one row (:class:`CaseStudy`) per model the lecture names
besides Llama 3 and OLMo (notebook 09 treats those two on their own), each stating where
its shape and its layout come from and what had to be assumed where the source is
silent. :func:`evaluate_case` runs the planner on a row. Taught in notebook 09
(``notebooks/09_hybrid_parallelism.ipynb``, §4, "The rest of the lecture's case
studies").

How a row is evaluated, with the planner's one set of constants (kernel efficiency 0.6
of the dense 16-bit peak, the links of ``companion.hardware``; nothing fitted per row):

* ``planner.plan`` searches the row's option space (``search``), timing every layout
  even where the memory model says it does not fit (a published layout ran);
* the **published layout** is the fastest plan that satisfies the row's ``published``
  constraints (a value or a tuple of allowed values per ``Plan`` field; ``"tp*pp"``
  for a product), preferring plans that fit. Where a source gives the strategies but
  not their degrees (DeepSeek LLM, Yi), that is the best layout of the published form;
* its **rank** counts the distinct layouts that fit and are strictly faster (a layout
  counted once, at its fastest recomputation choice);
* pipelines use Llama 3's split (one block fewer on the first and last stages, which
  hold the embedding and the head; Megatron's "account for embedding and loss"), and a
  step takes as long as its slowest stage.

Sources of the layouts: Gemma 2 (arXiv 2408.00118, §3.3 and Table 3); DeepSeek LLM
(arXiv 2401.02954, §2.4); Yi (arXiv 2403.04652, §4); Mixtral 8x22B and DeepSeek-V3 in
Megatron-LM's parallelism guide (``docs/user-guide/parallelism-guide.md``, "Recommended
mixture-of-experts configurations"; the lecture found them through Megatron Bridge);
Qwen 3 and Nemotron 3 Super in Megatron Bridge's performance recipes
(``src/megatron/bridge/perf_recipes``) and its performance summary
(``docs/performance-summary-archive.md``, container 26.04.01).
"""
from __future__ import annotations

import dataclasses

from .cost import Plan
from .presets import CLUSTERS, MODELS
from .search import plan as search

__all__ = ["CaseStudy", "CaseResult", "CASES", "evaluate_case", "layout_label", "shown_texts"]

_FIELDS = ("dp", "tp", "pp", "cp", "ep", "etp", "zero", "micro_batch", "chunks", "recompute",
           "tp*pp")
_RECOMPUTES = ("none", "selective", "full")


@dataclasses.dataclass(frozen=True)
class CaseStudy:
    """One model the lecture names, its published layout and what the table assumes."""

    name: str
    lecture: str                 # the layout in the lecture's words
    model: str | None            # a planner.presets.MODELS key; None: not expressible
    shape_source: str
    cluster: str | None = None   # a planner.presets.CLUSTERS key
    global_batch: int = 0        # sequences per step
    published: dict = dataclasses.field(default_factory=dict)
    layout_source: str = ""
    assumed: str = ""            # what the sources do not say, what the table takes, why
    search: dict = dataclasses.field(default_factory=dict)   # planner.plan options
    shape: str = ""              # for a row the planner cannot express: its shape, in words
    cannot: str = ""             # why the planner cannot express it
    measured_tokens_per_gpu_s: float | None = None
    measured_source: str = ""

    def __post_init__(self):
        if self.model is None:
            if not self.cannot:
                raise ValueError(f"{self.name}: a case without a model must say why the "
                                 "planner cannot express it (cannot=...).")
            return
        if self.model not in MODELS:
            raise ValueError(f"model={self.model!r} is not a preset; known: {sorted(MODELS)}.")
        if self.cluster not in CLUSTERS:
            raise ValueError(f"cluster={self.cluster!r} is not a preset; known: "
                             f"{sorted(CLUSTERS)}.")
        if not isinstance(self.global_batch, int) or self.global_batch < 1:
            raise ValueError(f"global_batch must be a positive number of sequences, got "
                             f"{self.global_batch!r}.")
        unknown = set(self.published) - set(_FIELDS)
        if unknown:
            raise ValueError(f"published: unknown field(s) {sorted(unknown)}; use {_FIELDS}.")

    def spec(self):
        return MODELS[self.model] if self.model else None

    def cluster_spec(self):
        return CLUSTERS[self.cluster] if self.cluster else None


@dataclasses.dataclass
class CaseResult:
    """What :func:`evaluate_case` found: the published layout's plan, whether it fits,
    its rank among the ``ranked`` distinct layouts that fit, and the planner's best."""

    case: CaseStudy
    published: Plan | None = None
    fits: bool = False
    rank: int = 0
    ranked: int = 0
    best: Plan | None = None

    @property
    def gap(self) -> float:
        """Published step time over the planner's best (1.0: the planner agrees)."""
        return self.published.step_time / self.best.step_time if self.best else float("nan")


def layout_label(plan: Plan) -> str:
    """A plan's layout with every axis it uses, ETP included (``Plan.label`` hides ETP
    when it equals TP or when EP is 1)."""
    if not isinstance(plan, Plan):
        raise TypeError(f"plan: pass a planner.Plan (from planner.plan or evaluate), got "
                        f"{type(plan).__name__}.")
    p = plan
    parts = [f"DP{p.dp}", f"TP{p.tp}"]
    if p.cp > 1:
        parts.append(f"CP{p.cp}")
    if p.ep > 1 or p.etp != p.tp:
        parts += [f"EP{p.ep}", f"ETP{p.etp}"]
    parts.append(f"PP{p.pp}" + (f" VP{p.chunks}" if p.chunks > 1 else ""))
    parts += [f"ZeRO-{p.zero}", f"mb{p.micro_batch}", p.recompute]
    return " ".join(parts)


def _matches(p: Plan, constraints: dict) -> bool:
    for key, allowed in constraints.items():
        value = p.tp * p.pp if key == "tp*pp" else getattr(p, key)
        if value not in (allowed if isinstance(allowed, tuple) else (allowed,)):
            return False
    return True


def _key(p: Plan) -> tuple:
    return (p.dp, p.tp, p.pp, p.cp, p.ep, p.etp, p.zero, p.micro_batch, p.chunks, p.schedule)


_SEARCHES: dict = {}   # rows that share a search (Mixtral's two readings) run it once


def _search(case: CaseStudy) -> list[Plan]:
    options = {"recomputes": _RECOMPUTES, **case.search}
    key = (case.model, case.cluster, case.global_batch, tuple(sorted(options.items())))
    if key not in _SEARCHES:
        _SEARCHES[key] = search(case.spec(), case.cluster_spec(), case.global_batch,
                              enforce_memory=False, stage_split="llama3", **options)[0]
    return _SEARCHES[key]


def evaluate_case(case: CaseStudy) -> CaseResult:
    """The planner on one row (the module docstring says how); a row the planner cannot
    express comes back with no plans."""
    if not isinstance(case, CaseStudy):
        raise TypeError(f"case: pass a planner.case_studies.CaseStudy (one of CASES), got "
                        f"{type(case).__name__}.")
    result = CaseResult(case)
    if case.model is None:
        return result
    budget = case.cluster_spec().gpu_memory_gb * 1e9
    plans = _search(case)
    candidates = [p for p in plans if _matches(p, case.published)]
    if not candidates:
        raise ValueError(f"{case.name}: no layout in the search matches published="
                         f"{case.published}; widen the row's search options.")
    fitting = lambda p: p.memory["total"] <= budget   # noqa: E731
    result.published = min(candidates, key=lambda p: (not fitting(p), p.step_time))
    result.fits = fitting(result.published)
    fastest = {}
    for p in plans:   # plans come fastest first: the first of a layout is its best
        if fitting(p):
            fastest.setdefault(_key(p), p)
    layouts = list(fastest.values())
    result.ranked = len(layouts)
    result.best = layouts[0] if layouts else None
    if result.fits:
        cut = result.published.step_time * (1 - 1e-9)
        result.rank = 1 + sum(p.step_time < cut for p in layouts
                              if _key(p) != _key(result.published))
    return result


_PAPER = "arXiv 2408.00118"
CASES = (
    CaseStudy("Gemma 2", "FSDP + TP + SP, no PP (TPUs)", "Gemma 2 27B",
         "Gemma 2 report, Table 1 (arXiv 2408.00118)", "Gemma 2: 6,144x TPU v5p", 1536,
         {"tp": 8, "pp": 1, "zero": 3},
         f"{_PAPER} §3.3: 27B on an 8x24x32 TPU v5p slice, 768-way data replication, "
         "8-way model sharding, optimizer states sharded 'similar to ZeRO-3'",
         "batch not published: 1,536 sequences of 8K (2 per data replica, 12.6M tokens, "
         "the scale of Llama 3's 16M); the torus as one domain at one axis's ICI",
         {"tp_options": (1, 2, 4, 8, 16, 32), "micro_batches": (1, 2), "chunk_options": (1,)}),
    CaseStudy("DeepSeek V1", "DP + ZeRO-1 + TP + SP + PP", "DeepSeek LLM 67B",
         "DeepSeek LLM, Table 2 (arXiv 2401.02954); FFN from config.json",
         "128 nodes, 1,024x A100", 4608,
         {"zero": 1, "tp": (2, 4, 8, 16), "pp": (2, 4, 8, 16, 32, 64)},
         "arXiv 2401.02954 §2.4 (HAI-LLM): data, tensor, sequence and 1F1B pipeline "
         "parallelism, ZeRO-1; degrees, GPUs not published",
         "cluster not published: 1,024 A100 80GB (DeepSeek trained on A100s, Fire-Flyer "
         "2, arXiv 2408.14158, whose PCIe nodes the hardware table lacks); batch 4,608 "
         "sequences of 4K is Table 2's; the row is the best layout of the published form",
         {"tp_options": (1, 2, 4, 8, 16), "micro_batches": (1, 2), "chunk_options": (1, 2)}),
    CaseStudy("Yi", "ZeRO-1 + TP + PP", "Yi 34B", "Yi report, Table 1 and §2.2 (arXiv "
         "2403.04652); FFN from config.json", "128 nodes, 1,024x A100", 1024,
         {"zero": 1, "tp": (2, 4), "pp": (2, 4), "tp*pp": (4, 8), "recompute": "none"},
         "arXiv 2403.04652 §4: ZeRO-1; TP with PP inside each node; 'avoid using "
         "activation checkpointing'; degrees, GPUs, batch not published",
         "cluster not published ('thousands of GPUs'): 1,024 A100 80GB; batch 1,024 "
         "sequences of 4K (4M tokens, Llama 2's: Yi's code follows Llama's); TP, PP > 1, "
         "one node; the row is the best layout of that form",
         {"tp_options": (1, 2, 4, 8, 16), "micro_batches": (1, 2), "chunk_options": (1, 2)}),
    CaseStudy("Mixtral 8x22B", "EP 8, PP 4, TP 4 for attention", "Mixtral 8x22B",
         "config.json (mistralai/Mixtral-8x22B-v0.1)", "32 nodes, 256x H100", 256,
         {"tp": 4, "pp": 4, "ep": 8, "etp": 4, "zero": 1},
         "Megatron-LM parallelism guide, recommended MoE configurations: 256 GPUs, TP 4, "
         "PP 4, CP 1, EP 8; no --expert-tensor-parallel-size, whose default is TP (the "
         "lecture names Megatron Bridge, whose current tree has no Mixtral recipe; the "
         "guide refers to it)",
         "GPU, batch, sequence not in the guide: H100; 256 sequences of 4K and mb 1 as "
         "NVIDIA's Megatron-MoE-ModelZoo benchmarks 8x22B; the distributed optimizer "
         "(ZeRO-1)",
         {"tp_options": (1, 2, 4, 8), "micro_batches": (1,), "chunk_options": (1, 2),
          "zero_stages": (1,), "etp_options": (1, 2, 4)}),
    CaseStudy("Mixtral 8x22B, ETP 1", "the lecture's reading: TP 4 for attention only",
         "Mixtral 8x22B", "config.json (mistralai/Mixtral-8x22B-v0.1)",
         "32 nodes, 256x H100", 256, {"tp": 4, "pp": 4, "ep": 8, "etp": 1, "zero": 1},
         "the same guide, with --expert-tensor-parallel-size 1 (Megatron-Core's MoE README: "
         "prefer EP over TP for the experts; their TP at 1 'often gets better MFU')",
         "as the row above",
         {"tp_options": (1, 2, 4, 8), "micro_batches": (1,), "chunk_options": (1, 2),
          "zero_stages": (1,), "etp_options": (1, 2, 4)}),
    CaseStudy("Qwen 3", "EP 32, PP 8, TP 2", "Qwen3 235B-A22B",
         "Qwen3 report, Table 2 (arXiv 2505.09388); widths from config.json",
         "32 nodes, 256x H100", 8192,
         {"tp": 2, "pp": 8, "ep": 32, "etp": 1, "chunks": 4, "micro_batch": 1,
          "recompute": "none", "zero": 1},
         "Megatron Bridge perf recipe qwen3_235b_a22b_pretrain_256gpu_h100_bf16: 256 H100, "
         "TP 2, PP 8, VP 4, EP 32, ETP 1, GBS 8192, mb 1, 4K, no recomputation, "
         "distributed optimizer, MoE all-to-all overlap on. NVIDIA's benchmark, not "
         "Alibaba's run (the Qwen3 report gives no layout)",
         "nothing on the layout; the measurement is FP8, the planner's peak bf16",
         {"tp_options": (1, 2, 4, 8), "micro_batches": (1,), "chunk_options": (1, 2, 4),
          "zero_stages": (1,), "etp_options": (1, 2)},
         measured_tokens_per_gpu_s=1712,
         measured_source="Megatron Bridge performance summary, 26.04.01, DGX-H100, FP8"),
    CaseStudy("Nemotron 3 Super", "much EP, plus CP (long-context extension)", None,
         "config.json (nvidia/NVIDIA-Nemotron-3-Super-120B-A12B) and Megatron Bridge's "
         "recipe tests",
         layout_source="Megatron Bridge H100 pre-training recipe: TP 8, PP 1, EP 16, ETP 1, "
                       "16 GPUs, GBS 1024, 8K; its GB300 benchmark: EP 64",
         shape="88 layers (40 Mamba-2, 40 LatentMoE, 8 attention), d 4096, 32 heads of "
               "128, 2 KV heads, 512 experts of 2688 in a 1024-wide latent, top-22, one "
               "shared expert of 5376, vocabulary 131072, MTP; 120B, 12B active",
         cannot="Mamba-2 mixers (no attention, a scan state), experts working in a latent "
                "narrower than the model (the all-to-all carries 1024 wide tokens), layers "
                "that are a mixer or an MoE but not both, and MTP heads: the planner's "
                "blocks are attention + MLP"),
)


def shown_texts() -> list[str]:
    """The rows' words that notebook 09 prints, each looked up in the student's language
    (``companion.i18n``; the rows themselves stay English)."""
    fields = ("lecture", "shape_source", "layout_source", "assumed", "shape", "cannot",
              "measured_source")
    return list(dict.fromkeys(getattr(c, f) for c in CASES for f in fields if getattr(c, f)))
