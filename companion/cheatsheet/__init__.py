"""The course cheat-sheet's formulas, each beside the package function it must agree with.

Used by ``notebooks/cheatsheet.ipynb`` (every formula of notebooks 01-12 on one page);
``tests/test_cheatsheet.py`` holds each closed form here against the package.

Where the package already implements a formula (``costmodel.coefficients``,
``memory.zero_memory_per_gpu``, ``pipeline.bubble_fraction``, ``topology.predict``, ...)
the closed form is written out again here on purpose: the cheat-sheet shows the formula,
and the test proves that the formula shown is the one the package computes. Four formulas
have no package function of their own and live only here: the closed-form compression
ratios of DGC, PowerSGD, 1-bit SGD and TernGrad (notebook 07 sections 4, 6, 7; the
package measures payloads instead), the steady-state step times of synchronous SGD,
FedAvg and DGA (notebook 08 section 3; the package has the step-by-step schedule), MFU as
a formula (notebook 09; the planner computes it inside ``evaluate``) and the compute
factor of full recomputation (notebook 10 section 8 and the planner write it inline).

The index of the cheat-sheet is written from its section headings (:mod:`.index`).

Units follow ``companion.units``: decimal bytes (GB = 10^9), seconds.
"""
from __future__ import annotations

from .formulas import (ALL_REDUCE_FORMULAS, COMPRESSION_FORMULAS, SCHEDULES,
                       TP_COLLECTIVES_PER_LAYER, activation_closed_form, all_reduce_closed_form,
                       all_reduce_table, attention_bytes, bubble_table, compressed_bytes,
                       dga_step_time, measured_bytes, mfu, modeled_step_time, tp_bytes_per_layer,
                       zero_closed_form, zero_traffic_closed_form)
from .index import INDEX_ID, index_markdown, sections
from .rules import (PLANNER_RULES, ROOFLINE_RULES, markdown_table, recorded_run,
                    roofline_closed_forms)
from .scaling import (LINK_FORMULAS, cp_bytes_per_layer, ep_bytes_per_layer,
                      hierarchical_seconds, link_bytes, link_bytes_closed_form, recompute_factor,
                      switch_all_to_all_seconds, torus_seconds)

__all__ = ["ALL_REDUCE_FORMULAS", "all_reduce_closed_form", "all_reduce_table",
           "zero_closed_form", "zero_traffic_closed_form", "SCHEDULES", "bubble_table",
           "TP_COLLECTIVES_PER_LAYER", "tp_bytes_per_layer", "activation_closed_form",
           "attention_bytes", "COMPRESSION_FORMULAS", "compressed_bytes", "measured_bytes",
           "dga_step_time", "modeled_step_time", "mfu", "PLANNER_RULES", "markdown_table",
           "recorded_run", "ROOFLINE_RULES", "roofline_closed_forms", "recompute_factor",
           "LINK_FORMULAS", "link_bytes", "link_bytes_closed_form", "hierarchical_seconds",
           "torus_seconds", "switch_all_to_all_seconds", "cp_bytes_per_layer",
           "ep_bytes_per_layer", "sections", "index_markdown", "INDEX_ID"]
