"""Gradient compression (notebook 07): codecs, wire bytes and their invariants.

Single-process tests of each compressor's local half (encode, decode, error feedback);
tests/test_compression_distributed.py runs the exchanges and training on real ranks.
"""
from __future__ import annotations

import math

import pytest
import torch

from companion.compression import (DGC, DGCConfig, OneBit, PowerSGD, QuantizedExchange,
                                   TernGrad, Threshold, alexnet_shapes, density_schedule,
                                   pack_bits, payload_bytes, resnet50_shapes, sparse_bytes,
                                   split_counts, topk_indices, unpack_bits)
from companion.compression.arithmetic import MiB
from companion.compression.sparse import encode_topk


def _grads(steps, shapes=((16, 12), (7,)), seed=0):
    gen = torch.Generator().manual_seed(seed)
    return [[torch.randn(s, generator=gen) for s in shapes] for _ in range(steps)]


@pytest.mark.parametrize("bits", [1, 2, 4, 8])
def test_pack_unpack_round_trip(bits):
    codes = torch.randint(0, 2**bits, (37,))
    packed = pack_bits(codes, bits)
    assert packed.dtype == torch.uint8 and packed.numel() == math.ceil(37 * bits / 8)
    assert torch.equal(unpack_bits(packed, bits, 37), codes)


def test_wire_bytes_count_indices_and_scales():
    x = torch.randn(64, 32)
    assert payload_bytes(encode_topk(x, 0.01)) == math.ceil(0.01 * x.numel()) * (4 + 4)
    assert payload_bytes(OneBit().encode(x)) == x.numel() // 8 + 2 * 4 * 32  # bits + 2 scales/column
    assert payload_bytes(TernGrad().encode(x)) == x.numel() // 4 + 4  # 2 bits each + 1 scale
    tau = 1.0
    assert payload_bytes(Threshold(tau).encode(x)) == 4 * int((x.abs() > tau).sum())


def test_train_many_refuses_powersgd():
    from companion.compression import train_many
    with pytest.raises(ValueError, match="train\\(\\)"):
        train_many([dict(method="powersgd")], steps=1)


def test_sampled_threshold_topk_is_exact():
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(300_000, generator=gen)
    exact = set(x.abs().topk(300).indices.tolist())
    sampled = set(topk_indices(x, 300, sample_above=100_000, generator=gen).tolist())
    assert sampled == exact


@pytest.mark.parametrize("momentum_correction", [False, True])
def test_error_feedback_conserves_gradient_mass_topk(momentum_correction):
    # Gradient dropping accumulates g, DGC accumulates u; either way what was sent plus
    # what is still held equals what went in. Only values are moved: exact up to fp32
    # addition order, hence the tolerance.
    grads = _grads(20)
    dgc = DGC([g for g in grads[0]], DGCConfig(density=0.05, momentum=0.9,
                                              momentum_correction=momentum_correction,
                                              factor_masking=False))
    sent = [torch.zeros_like(g) for g in grads[0]]
    inputs = [torch.zeros_like(g) for g in grads[0]]
    u = [torch.zeros_like(g) for g in grads[0]]
    for step, gs in enumerate(grads):
        for p, s, like in zip(dgc.encode(gs, step), sent, gs):
            s += dgc.decode(p, like)
        for i, g in enumerate(gs):
            u[i] = 0.9 * u[i] + g if momentum_correction else g
            inputs[i] += u[i]
    for s, v, total in zip(sent, dgc.v, inputs):
        torch.testing.assert_close(s + v, total, rtol=0, atol=1e-5)


@pytest.mark.parametrize("codec", [OneBit(), Threshold(0.5)], ids=["1-bit", "threshold"])
def test_error_feedback_conserves_gradient_mass_quantizers(codec):
    grads = _grads(30)
    ex = QuantizedExchange(grads[0], codec)
    sent = [torch.zeros_like(g) for g in grads[0]]
    for gs in grads:
        for s, p, like in zip(sent, ex.encode(gs), gs):
            s += codec.decode(p, like)
    for s, e, i in zip(sent, ex.errors, range(2)):
        torch.testing.assert_close(s + e, sum(gs[i] for gs in grads), rtol=0, atol=1e-4)


def test_error_feedback_conserves_gradient_mass_powersgd():
    grads = _grads(15, shapes=((16, 12),))
    ps = PowerSGD(grads[0], rank=1)
    sent = sum(ps.exchange(gs, t)[0] for t, gs in enumerate(grads))
    torch.testing.assert_close(sent + ps.errors[0], sum(gs[0] for gs in grads), rtol=0, atol=1e-4)


def test_terngrad_is_unbiased():
    # Fixed seed: deterministic. Each sample has variance s|g| - g^2 <= s|g| per entry,
    # so the mean of K samples is within 5 standard deviations with overwhelming margin.
    gen = torch.Generator().manual_seed(1234)
    g = torch.randn(200, generator=gen)
    codec, samples = TernGrad(gen), 4000
    mean = sum(codec.decode(codec.encode(g), g) for _ in range(samples)) / samples
    bound = 5 * torch.sqrt(g.abs().max() * g.abs() / samples) + 1e-6
    assert bool(((mean - g).abs() <= bound).all())
    assert set(codec.decode(codec.encode(g), g).abs().unique().tolist()) <= {0.0, g.abs().max().item()}


def test_onebit_reconstruction_values_are_column_means():
    x = torch.tensor([[1.0, -2.0], [3.0, 4.0], [-5.0, 6.0]])
    y = OneBit().decode(OneBit().encode(x), x)
    assert torch.equal(y, torch.tensor([[2.0, -2.0], [2.0, 5.0], [-5.0, 5.0]]))


def test_threshold_reconstructs_plus_minus_tau():
    x = torch.tensor([0.1, -0.7, 0.6, 0.0])
    y = Threshold(0.5).decode(Threshold(0.5).encode(x), x)
    assert torch.equal(y, torch.tensor([0.0, -0.5, 0.5, 0.0]))


@pytest.mark.parametrize("shape", [(8, 5), (5, 8), (6, 2, 3)])
def test_powersgd_full_rank_is_exact(shape):
    g = torch.randn(shape, generator=torch.Generator().manual_seed(3))
    ps = PowerSGD([g], rank=min(shape[0], math.prod(shape[1:])))
    # QR of a full-rank factor spans the whole column space; fp32 products, hence atol.
    torch.testing.assert_close(ps.exchange([g], 0)[0], g, rtol=0, atol=1e-5)
    assert ps.last_bytes == 4 * (shape[0] + math.prod(shape[1:])) * min(shape[0], math.prod(shape[1:]))


def test_powersgd_bytes_match_torch_hook_rule():
    from companion.compression import torch_powersgd_bytes
    shapes = [(128, 64), (128, 128), (10, 128), (10,)]
    ps = PowerSGD([torch.zeros(s) for s in shapes], rank=2)
    ps.exchange([torch.randn(s) for s in shapes], 0)
    assert ps.last_bytes == torch_powersgd_bytes(shapes, 2) == 4 * (2 * (192 + 256 + 138) + 10)


def test_dgc_density_one_with_momentum_correction_is_momentum_sgd_locally():
    # One rank, nothing dropped: the update DGC returns is momentum SGD's buffer.
    grads = _grads(10, shapes=((6, 4),))
    dgc = DGC(grads[0], DGCConfig(density=1.0, momentum=0.9, factor_masking=False))
    buf = torch.zeros(6, 4)
    for t, gs in enumerate(grads):
        buf = 0.9 * buf + gs[0]
        torch.testing.assert_close(dgc.exchange(gs, t)[0], buf, rtol=0, atol=1e-6)


def test_sparsity_warmup_schedule():
    assert [density_schedule(s, 0.001, 40) for s in (0, 10, 20, 30, 40)] == \
        [0.25, 0.0625, 0.015625, 0.00390625, 0.001]


def test_lecture_compression_ratios_recomputed():
    alex = alexnet_shapes()
    assert sum(split_counts(alex)) == 60_965_224
    dense = 4 * sum(split_counts(alex))
    assert round(dense / MiB, 2) == 232.56
    lecture_format = sparse_bytes(alex, 0.001, index_bytes=2)  # 16-bit indices, dense biases
    assert round(lecture_format / MiB, 2) == 0.39 and round(dense / lecture_format) == 598
    assert dense / sparse_bytes(alex, 0.001, index_bytes=4, prune_vectors=True) < 500
    resnet = resnet50_shapes()
    assert sum(split_counts(resnet)) == 25_557_032
    assert round(4 * sum(split_counts(resnet)) / sparse_bytes(resnet, 0.001, index_bytes=2)) == 277


def test_bad_input_names_the_fix():
    with pytest.raises(ValueError, match="density=0.001"):
        DGCConfig(density=0.0)
    with pytest.raises(ValueError, match="tau"):
        Threshold(-1.0)
    with pytest.raises(ValueError, match="rank"):
        PowerSGD([torch.zeros(3, 3)], rank=0)
    with pytest.raises(ValueError, match="k must be"):
        topk_indices(torch.zeros(4), 5)


@pytest.mark.parametrize("momentum", [0.0, 0.9])
def test_momentum_sgd_matches_torch_sgd_bit_for_bit(momentum):
    from companion.compression.train import MomentumSGD
    a, b = torch.nn.Linear(5, 3), torch.nn.Linear(5, 3)
    b.load_state_dict(a.state_dict())
    ours = MomentumSGD(a.parameters(), lr=0.1, momentum=momentum)
    theirs = torch.optim.SGD(b.parameters(), lr=0.1, momentum=momentum)
    for g in _grads(6, shapes=((3, 5), (3,))):
        for p, q, gi in zip(a.parameters(), b.parameters(), g):
            p.grad, q.grad = gi.clone(), gi.clone()
        ours.step()
        theirs.step()
    for p, q in zip(a.parameters(), b.parameters()):
        assert torch.equal(p, q)


def test_local_clipping_bounds_the_rank_norm_and_leaves_small_gradients():
    from companion.compression import clip_locally
    grads = [torch.full((3, 4), 1.0), torch.full((5,), 1.0)]   # norm sqrt(17)
    clipped = clip_locally(grads, clip_norm=2.0, world_size=4)  # limit 2 / sqrt(4) = 1
    norm = torch.sqrt(sum((g ** 2).sum() for g in clipped))
    torch.testing.assert_close(norm, torch.tensor(1.0))
    # One factor for the whole rank: every tensor keeps its direction and relative size.
    assert torch.allclose(clipped[0] / grads[0], clipped[1][0] / grads[1][0])
    small = [g / 100 for g in grads]
    assert all(torch.equal(a, b) for a, b in zip(clip_locally(small, 2.0, 4), small))
    assert clip_locally(grads, None, 4) == grads


def test_dgc_calls_the_accumulation_it_is_given():
    # Notebook 07's core exercise plugs a student's accumulation into DGC: a custom one
    # that equals the package's gives identical payloads; DGC hands it whole lists.
    from companion.compression import dgc_accumulate
    seen = []

    def mine(u, v, grads, momentum, clip_norm, world_size):
        seen.append((len(grads), clip_norm, world_size))
        return dgc_accumulate(u, v, grads, momentum, clip_norm, world_size)

    config = DGCConfig(density=0.1, momentum=0.9, clip_norm=0.5)
    ours, theirs = (DGC(_grads(1)[0], config, world_size=4, accumulate=a)
                    for a in (mine, None))
    for t, gs in enumerate(_grads(4)):
        for a, b in zip(ours.encode(gs, t), theirs.encode(gs, t)):
            assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    assert seen == [(2, 0.5, 4)] * 4


def test_16_bit_indices_are_blocked_or_relative_and_cost_little():
    from companion.compression.arithmetic import index_block_bytes
    alex = alexnet_shapes()
    fc6 = (4096, 256 * 6 * 6)
    assert fc6 in alex and math.prod(fc6) > 2**16   # no absolute 16-bit index reaches it
    headers = index_block_bytes(alex)
    assert headers == 2 * sum(math.ceil(math.prod(s) / 2**16) for s in alex
                              if len(s) >= 2 and math.prod(s) > 2**16)
    lecture_format = sparse_bytes(alex, 0.001, index_bytes=2)
    assert headers < 0.005 * lecture_format
    assert round((lecture_format + headers) / MiB, 2) == 0.39
    assert index_block_bytes([(100, 100)]) == 0   # one block: its count is k, known
