"""Find every message the package routes through the catalog: ``_("...")``,
``tr("...")`` or ``gettext("...")`` with a literal argument (used by
tests/test_translations.py to check that each one has both translations)."""
from __future__ import annotations

import ast
import string
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent
CALLS = {"_", "tr", "gettext"}
# Messages looked up with a variable argument (exercise levels, widget option names):
# listed here so the completeness test covers them too.
DYNAMIC = ("warm-up", "core", "stretch", "implement", "diagnose", "decide", "predict",
           "weights", "gradients", "optimizer state",
           " (your {name}, defined at {where})",   # learning.feedback._WHERE
           "no parallelism", "TP + selective", "TP+SP + selective", "full recompute",
           "before: rank r holds tokens of shard r, all heads",
           "after all-to-all: rank r holds all tokens of its heads (attention runs locally)",
           "after the inverse all-to-all: back to sequence shards", "token position", "head",
           "K/V block", "query block (= rank)", "parameters (fp32, sharded)",
           "gradients (fp32, sharded)", "AdamW states (fp32)", "gathered weights (bf16)",
           "activations", "loss and gradient buffers",
           # reasons for a forbidden call, which an exercise card shows through _()
           "the package's exchange posts the messages for you: that is the fix to find",
           "the package's fold: write your own",
           "the package's cost model: work the costs out yourself",
           "the package's cost model: read the coefficients off the table",
           "it is the checker's answer",
           "it is the package's answer to the bytes per rank",
           "the package's communication count: section 3 says what each stage sends",
           "it is the checker's formula",
           "it is the checker's decision",
           "an all-reduce rebuilds weights at twice an all-gather's traffic, and leaves "
           "every rank the full gradient: reduce-scatter it")


def literal_messages() -> dict[str, str]:
    """{message: "module.py:line"} for every literal catalog call in the package."""
    found: dict[str, str] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id in CALLS and len(node.args) == 1
                    and isinstance(node.args[0], ast.Constant)
                    and isinstance(node.args[0].value, str)):
                found.setdefault(node.args[0].value,
                                 f"{path.relative_to(PACKAGE.parent)}:{node.lineno}")
    for message in DYNAMIC:
        found.setdefault(message, "companion/tools/scan.py DYNAMIC")
    for message, where in looked_up_data():
        found.setdefault(message, where)
    return found


def looked_up_data() -> list[tuple[str, str]]:
    """(text, where) for the words of the package's data tables that notebooks show
    through ``gettext``: the case studies' rows, the published runs' sources and the
    reasons a lesson stays on the CPU (``runtime.cpu_by_design``)."""
    from companion import runtime
    from companion.planner import case_studies, published
    return [(t, "companion/planner/case_studies.py") for t in case_studies.shown_texts()] + \
        [(r.source, "companion/planner/published.py") for r in published.RUNS] + \
        [(why, "companion/runtime.py") for why in (runtime.LOOPBACK, runtime.EMULATED)]


def placeholders(text: str) -> set[str]:
    return {field for _, field, _, _ in string.Formatter().parse(text) if field is not None}
