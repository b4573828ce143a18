"""The lectures' models and clusters, by name: a data table (``MODELS``, ``CLUSTERS``).

Taught in notebook 09 (``notebooks/09_hybrid_parallelism.ipynb``; DeepSeek-V3 and
Mixtral in notebook 12). The specs' logic is ``planner.specs`` and
``planner.cluster_spec``; each entry here only states a published architecture.
"""
from __future__ import annotations

from .cluster_spec import ClusterSpec
from .specs import MLA, ModelSpec

__all__ = ["MODELS", "CLUSTERS"]

MODELS = {m.name: m for m in [
    ModelSpec("GPT-3 175B", layers=96, hidden=12288, heads=96, seq_len=2048, vocab=50257,
              tied_embeddings=True, published_params=175e9),
    ModelSpec("Llama-3 8B", layers=32, hidden=4096, heads=32, seq_len=8192, vocab=128256,
              ffn_hidden=14336, kv_heads=8, gated_mlp=True, published_params=8e9),
    ModelSpec("Llama-3 70B", layers=80, hidden=8192, heads=64, seq_len=8192, vocab=128256,
              ffn_hidden=28672, kv_heads=8, gated_mlp=True, published_params=70e9),
    ModelSpec("Llama-3 405B", layers=126, hidden=16384, heads=128, seq_len=8192, vocab=128256,
              ffn_hidden=53248, kv_heads=8, gated_mlp=True, published_params=405e9),
    ModelSpec("7B (Llama-2 shape)", layers=32, hidden=4096, heads=32, seq_len=4096, vocab=32000,
              ffn_hidden=11008, gated_mlp=True, published_params=7e9),
    # arXiv 2412.19437 §4.2: 61 layers, hidden 7168, 128 heads, MLA (ranks 1536 / 512,
    # head dims 128 + 64 RoPE, values 128), first 3 layers dense (FFN 18432), then 1
    # shared + 256 routed experts of 2048, top-8, each token to at most 4 nodes; 4K
    # sequences; vocabulary 129,280 (its config.json). The MTP module is not counted,
    # as the paper's 671B does not count it.
    ModelSpec("DeepSeek-V3 671B", layers=61, hidden=7168, heads=128, seq_len=4096, vocab=129280,
              ffn_hidden=18432, gated_mlp=True, experts=256, top_k=8, expert_ffn=2048,
              shared_experts=1, dense_layers=3, max_route_nodes=4,
              mla=MLA(1536, 512, 128, 64, 128), published_params=671e9, published_active=37e9),
    # Mixtral 8x7B (arXiv 2401.04088): Mistral 7B's shape with 8 experts, top-2.
    ModelSpec("Mixtral 8x7B", layers=32, hidden=4096, heads=32, seq_len=4096, vocab=32000,
              ffn_hidden=14336, kv_heads=8, gated_mlp=True, experts=8, top_k=2,
              expert_ffn=14336, published_params=46.7e9, published_active=12.9e9),
]}

# Figures from companion.hardware (peak, per direction): H100 SXM 989 TFLOP/s dense bf16,
# NVLink 4 at 450 GB/s, one 400 Gb/s (50 GB/s) NIC per GPU; A100 SXM 312 TFLOP/s,
# NVLink 3 at 300 GB/s, one 200 Gb/s (25 GB/s) NIC per GPU. Memory budgets as the
# datasheets state them (80 "GB", which NVIDIA means as GiB: the budget errs safe).
CLUSTERS = {c.name: c for c in [
    ClusterSpec.of("1 node, 8x H100", "H100", 1),
    ClusterSpec.of("16 nodes, 128x H100", "H100", 16),
    ClusterSpec.of("Llama-3 scale: 16,384x H100", "H100", 2048),
    ClusterSpec.of("128 nodes, 1,024x A100", "A100", 128),
    ClusterSpec.of("DeepSeek-V3: 2,048x H800", "H800", 256),
]}
