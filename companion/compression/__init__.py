"""Gradient compression: sparsification (DGC), low rank (PowerSGD), quantisation.

Taught in notebook 07 (``notebooks/07_gradient_compression.ipynb``), MIT 6.5940 L20
p.26-60. Modules: ``wire`` (payload bytes, bit packing, all-gather exchange),
``sparse`` (top-k, gradient dropping, DGC), ``powersgd``, ``quantization`` (1-bit SGD,
threshold quantisation, TernGrad), ``train`` (training on real ranks), ``ablation``
(many runs in lockstep), ``stacked`` (the p.47 ablation as one stacked model),
``arithmetic`` (compression ratios of the lecture's models).
"""
from .ablation import ablation, ablation_settings, train_many
from .stacked import train_stacked
from .arithmetic import alexnet_shapes, resnet50_shapes, sparse_bytes, split_counts
from .powersgd import PowerSGD, orthonormalize, torch_powersgd_bytes
from .quantization import OneBit, QuantizedExchange, TernGrad, Threshold, TopKNoFeedback
from .sparse import (ABLATION, DGC, DGCConfig, clip_locally, density_schedule, dgc_accumulate,
                     lr_warmup, momentum_correction, topk_indices)
from .train import (METHODS, BiasFreeMLP, densification, make_compressor, split_digits, train,
                    train_torch_powersgd)
from .wire import all_gather_payloads, pack_bits, payload_bytes, unpack_bits

__all__ = ["train_many", "train_stacked", "alexnet_shapes", "resnet50_shapes", "sparse_bytes", "split_counts", "PowerSGD",
           "orthonormalize", "torch_powersgd_bytes", "OneBit", "QuantizedExchange", "TernGrad",
           "Threshold", "TopKNoFeedback", "ABLATION", "DGC", "DGCConfig", "density_schedule",
           "lr_warmup", "momentum_correction", "clip_locally", "dgc_accumulate", "topk_indices", "METHODS", "BiasFreeMLP", "ablation",
           "ablation_settings", "densification", "make_compressor", "split_digits", "train",
           "train_torch_powersgd", "all_gather_payloads", "pack_bits", "payload_bytes",
           "unpack_bits"]
