"""Llama 3 405B's published interruption record, and what follows from it by arithmetic.

Taught in notebook 10 (``notebooks/10_when_parallelism_pays.ipynb``), section 9. Source:
Llama Team, AI @ Meta, "The Llama 3 Herd of Models" (https://arxiv.org/abs/2407.21783),
section 3.3.1 (storage, checkpoint sizes) and section 3.3.4 with Table 5 (interruptions
during a 54-day snapshot of pre-training). The figures below are the paper's, copied
once; everything else is computed from them, so a disagreement between the paper's own
numbers shows (its Table 5 prints 30.1% beside 148 of 419 interruptions, and 148 / 419
is 35.3%).
"""
from __future__ import annotations

from .cost import scale_mtbi

__all__ = ["TABLE_5", "LLAMA3_405B", "interruption_summary"]

# (component, category, interruptions, the percentage the table prints)
TABLE_5 = (
    ("Faulty GPU", "GPU", 148, 30.1),
    ("GPU HBM3 Memory", "GPU", 72, 17.2),
    ("Software Bug", "Dependency", 54, 12.9),
    ("Network Switch/Cable", "Network", 35, 8.4),
    ("Host Maintenance", "Unplanned Maintenance", 32, 7.6),
    ("GPU SRAM Memory", "GPU", 19, 4.5),
    ("GPU System Processor", "GPU", 17, 4.1),
    ("NIC", "Host", 7, 1.7),
    ("NCCL Watchdog Timeouts", "Unknown", 7, 1.7),
    ("Silent Data Corruption", "GPU", 6, 1.4),
    ("GPU Thermal Interface + Sensor", "GPU", 6, 1.4),
    ("SSD", "Host", 3, 0.7),
    ("Power Supply", "Host", 3, 0.7),
    ("Server Chassis", "Host", 2, 0.5),
    ("IO Expansion Board", "Host", 2, 0.5),
    ("Dependency", "Dependency", 2, 0.5),
    ("CPU", "Host", 2, 0.5),
    ("System Memory", "Host", 2, 0.5),
)

LLAMA3_405B = {
    "days": 54,                      # the snapshot period (section 3.3.4)
    "interruptions": 466,
    "planned": 47,                   # automated maintenance, operator-initiated
    "unexpected": 419,               # classified in Table 5
    "gpus": 16_384,                  # "up to 16K H100 GPUs" (section 3.3.1; Table 4)
    "effective_training_time": 0.90,  # "higher than 90%" (section 3.3.4)
    "gpu_share_stated": 0.587,       # "GPU issues ... 58.7% of all unexpected issues"
    "storage_sustained_bytes_s": 2e12,  # Tectonic: 2 TB/s sustained, 7 TB/s peak (3.3.1)
    "storage_peak_bytes_s": 7e12,
    "checkpoint_bytes_per_gpu_max": 4e9,  # "from 1 MB to 4 GB per GPU" (3.3.1)
    "source": "The Llama 3 Herd of Models, arXiv:2407.21783, sections 3.3.1 and 3.3.4, Table 5",
}


def interruption_summary(record: dict | None = None, table=TABLE_5) -> dict:
    """What Table 5 and section 3.3.4 imply, computed (notebook 10, section 9).

    Returns the mean time between interruptions (all, and unexpected only) of the job
    and of one GPU, the GPU-category count and its share computed from the counts, each
    row's share computed beside the printed one, and the most time one interruption may
    have cost on average, everything included, for the stated effective training time.
    """
    record = dict(LLAMA3_405B if record is None else record)
    missing = {"days", "interruptions", "planned", "unexpected", "gpus",
               "effective_training_time"} - set(record)
    if missing:
        raise ValueError(f"record lacks {sorted(missing)}; pass a dict like LLAMA3_405B.")
    if record["planned"] + record["unexpected"] != record["interruptions"]:
        raise ValueError("record: planned + unexpected must equal interruptions.")
    if sum(row[2] for row in table) != record["unexpected"]:
        raise ValueError("table: its counts must add up to record['unexpected'].")
    span_s = record["days"] * 86_400
    unexpected_mtbi = span_s / record["unexpected"]
    gpu = sum(count for _, category, count, _ in table if category == "GPU")
    rows = [{"component": c, "category": k, "count": n, "printed_pct": p,
             "computed_pct": 100 * n / record["unexpected"]} for c, k, n, p in table]
    return {
        "span_s": span_s,
        "mtbi_s": span_s / record["interruptions"],
        "unexpected_mtbi_s": unexpected_mtbi,
        "gpu_mtbi_s": scale_mtbi(unexpected_mtbi, record["gpus"], 1),
        "gpu_category": gpu,
        "gpu_share": gpu / record["unexpected"],
        "gpu_share_printed": sum(r["printed_pct"] for r in rows if r["category"] == "GPU") / 100,
        "rows": rows,
        "max_loss_per_interruption_s":
            (1 - record["effective_training_time"]) * span_s / record["interruptions"],
    }
