"""The course cheat-sheet's formulas, each beside the package function it must agree with.

Used by ``notebooks/cheatsheet.ipynb`` (every formula of notebooks 01-09 on one page);
``tests/test_cheatsheet.py`` holds each closed form here against the package.

Where the package already implements a formula (``costmodel.coefficients``,
``memory.zero_memory_per_gpu``, ``pipeline.bubble_fraction``, ...) the closed form is
written out again here on purpose: the cheat-sheet shows the formula, and the test
proves that the formula shown is the one the package computes. Three formulas have no
package function and live only here: the closed-form compression ratios of DGC,
PowerSGD, 1-bit SGD and TernGrad (notebook 07 sections 4, 6, 7; the package measures
payloads instead), the steady-state step times of synchronous SGD, FedAvg and DGA
(notebook 08 section 3; the package has the step-by-step schedule), and MFU as a
formula (notebook 09; the planner computes it inside ``evaluate``).

Units follow ``companion.units``: decimal bytes (GB = 10^9), seconds.
"""
from __future__ import annotations

from .formulas import (ALL_REDUCE_FORMULAS, COMPRESSION_FORMULAS, TP_COLLECTIVES_PER_LAYER,
                       activation_closed_form, all_reduce_closed_form, all_reduce_table,
                       attention_bytes, bubble_table, compressed_bytes, dga_step_time,
                       measured_bytes, mfu, modeled_step_time, tp_bytes_per_layer,
                       zero_closed_form, zero_traffic_closed_form)
from .rules import (PLANNER_RULES, ROOFLINE_RULES, markdown_table, recorded_run,
                    roofline_closed_forms)

__all__ = ["ALL_REDUCE_FORMULAS", "all_reduce_closed_form", "all_reduce_table",
           "zero_closed_form", "zero_traffic_closed_form", "bubble_table",
           "TP_COLLECTIVES_PER_LAYER", "tp_bytes_per_layer", "activation_closed_form",
           "attention_bytes", "COMPRESSION_FORMULAS", "compressed_bytes", "measured_bytes",
           "dga_step_time", "modeled_step_time", "mfu", "PLANNER_RULES", "markdown_table",
           "recorded_run", "ROOFLINE_RULES", "roofline_closed_forms"]
