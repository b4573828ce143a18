"""The lectures' models and clusters, by name: a data table (``MODELS``, ``CLUSTERS``).

Taught in notebook 09 (``notebooks/09_hybrid_parallelism.ipynb``; DeepSeek-V3 and
Mixtral 8x7B in notebook 12; the lecture's case studies in ``planner.case_studies``). The specs' logic is ``planner.specs`` and
``planner.cluster_spec``; each entry here only states a published architecture.
"""
from __future__ import annotations

from .. import hardware
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
    # CS336 L8's case studies (notebook 09, planner.case_studies). Gemma 2 (arXiv
    # 2408.00118, Table 1): 46 layers, d 4608, 32 heads of 128, 16 KV heads, GeGLU of
    # 2 x 36864 ("feedforward dim 73728"), vocabulary 256128, tied, 8K context. Its
    # post-norms (two more per block) are not counted: 0.002% of Table 2's 27.23B.
    ModelSpec("Gemma 2 27B", layers=46, hidden=4608, heads=32, head_dim=128, kv_heads=16,
              seq_len=8192, vocab=256128, ffn_hidden=36864, gated_mlp=True,
              tied_embeddings=True, published_params=27e9),
    # DeepSeek LLM (arXiv 2401.02954, Table 2): 95 layers, d 8192, 64 heads, 8 KV heads,
    # 4K sequences, vocabulary 102400 (§2.1); FFN 22016 from its config.json.
    ModelSpec("DeepSeek LLM 67B", layers=95, hidden=8192, heads=64, kv_heads=8, seq_len=4096,
              vocab=102400, ffn_hidden=22016, gated_mlp=True, published_params=67e9),
    # Yi (arXiv 2403.04652, Table 1 and §2.2): 60 layers, d 7168, 56 heads, 8 KV heads,
    # 4K sequences, vocabulary 64000; FFN 20480 from its config.json.
    ModelSpec("Yi 34B", layers=60, hidden=7168, heads=56, kv_heads=8, seq_len=4096,
              vocab=64000, ffn_hidden=20480, gated_mlp=True, published_params=34e9),
    # Mixtral 8x22B (its config.json): 56 layers, d 6144, 48 heads, 8 KV heads, 8 experts
    # of 16384, top-2, vocabulary 32768; "141B, 39B active" (Mistral's announcement).
    # 4K sequences, as NVIDIA's Megatron-MoE-ModelZoo benchmarks it.
    ModelSpec("Mixtral 8x22B", layers=56, hidden=6144, heads=48, kv_heads=8, seq_len=4096,
              vocab=32768, ffn_hidden=16384, gated_mlp=True, experts=8, top_k=2,
              expert_ffn=16384, published_params=141e9, published_active=39e9),
    # Qwen3-235B-A22B (arXiv 2505.09388, Table 2; widths from its config.json): 94 layers,
    # d 4096, 64 query heads of 128 (wider than d / heads), 4 KV heads, 128 experts of
    # 1536, top-8, none shared, every layer MoE, vocabulary 151936; 4K sequences (its
    # first pre-training stage, and Megatron Bridge's benchmark).
    ModelSpec("Qwen3 235B-A22B", layers=94, hidden=4096, heads=64, head_dim=128, kv_heads=4,
              seq_len=4096, vocab=151936, gated_mlp=True, experts=128, top_k=8,
              expert_ffn=1536, published_params=235e9, published_active=22e9),
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
    ClusterSpec.of("32 nodes, 256x H100", "H100", 32),
    # Gemma 2 27B's 8x24x32 slice of TPU v5p (arXiv 2408.00118, §3.3) as one ICI domain.
    # A torus is no switch: a ring along one axis has 2 of a chip's 6 links, a third of
    # the chip's ICI figure. Every group gets that here; a DP group over two axes could
    # use twice it, so the DP time errs slow.
    ClusterSpec.of("Gemma 2: 6,144x TPU v5p", "TPU v5p", 1, gpus_per_node=6144,
                   intra_bw_gbps=hardware.accelerator("TPU v5p").scale_up.value / 3e9),
]}
