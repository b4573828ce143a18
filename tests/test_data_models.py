"""Shipped data (checksums, sharding contract) and the parallelism-free models."""
from __future__ import annotations

import pytest
import torch

from companion import data, models


def test_checksums_verify():
    assert data.verify_checksums() == {"digits": True, "corpus.txt": True, "training_compute.csv": True}


def test_a_changed_file_fails_loudly(tmp_path, monkeypatch):
    (tmp_path / "SHA256SUMS").write_text((data.data_dir() / "SHA256SUMS").read_text())
    (tmp_path / "corpus.txt").write_text("tampered")
    monkeypatch.setenv("COMPANION_DATA", str(tmp_path))
    with pytest.raises(RuntimeError, match="checksum mismatch"):
        data.load_corpus()


def test_digits_shape_and_range():
    x, y = data.load_digits()
    assert x.shape == (1797, 64) and y.shape == (1797,)
    assert 0.0 <= x.min() and x.max() <= 1.0 and set(y.tolist()) == set(range(10))


@pytest.mark.parametrize("world_size", [1, 2, 4])
def test_rank_shards_concatenate_to_the_global_batch(world_size):
    xs = data.load_digits()
    full_x, full_y = data.digits_batch(7, 64, data=xs)
    parts = [data.digits_batch(7, 64, rank=r, world_size=world_size, data=xs) for r in range(world_size)]
    assert torch.equal(torch.cat([p[0] for p in parts]), full_x)
    assert torch.equal(torch.cat([p[1] for p in parts]), full_y)


def test_batches_change_with_step_and_epochs_cover_everything():
    n, b = 100, 20
    epoch = torch.cat([data.global_batch_indices(n, b, s) for s in range(5)])
    assert sorted(epoch.tolist()) == list(range(n))
    assert not torch.equal(data.global_batch_indices(n, b, 0), data.global_batch_indices(n, b, 5))


def test_uneven_shard_names_the_fix():
    with pytest.raises(ValueError, match="multiple of 3"):
        data.shard(torch.arange(10), 0, 3)


def test_corpus_batches_are_shifted_by_one():
    corpus = data.CharCorpus()
    x, y = corpus.batch(step=3, batch_size=4, seq_len=16)
    assert x.shape == y.shape == (4, 16)
    assert torch.equal(x[:, 1:], y[:, :-1])
    assert corpus.decode(x[0]) in corpus.text


def test_models_are_deterministic_by_seed():
    a, b, c = models.TinyMLP(seed=1), models.TinyMLP(seed=1), models.TinyMLP(seed=2)
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))
    assert not torch.equal(a[0].weight, c[0].weight)


def test_transformer_ties_weights_and_is_causal():
    model = models.TinyTransformer(vocab_size=20, d_model=32, n_heads=4, n_layers=2, max_seq_len=16)
    assert model.head.weight is model.tok_emb.weight
    untied = models.TinyTransformer(vocab_size=20, d_model=32, n_heads=4, n_layers=2,
                                    max_seq_len=16, tie_weights=False)
    assert models.count_parameters(untied) - models.count_parameters(model) == 20 * 32
    idx = torch.randint(0, 20, (2, 10))
    changed = idx.clone()
    changed[:, -1] = (changed[:, -1] + 1) % 20
    # Changing the last token must not change any earlier position's logits.
    assert torch.equal(model(idx)[:, :-1], model(changed)[:, :-1])


def test_attention_matches_torch_sdpa():
    q, k, v = (torch.randn(2, 3, 8, 4) for _ in range(3))
    ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    # Same maths, different kernel and summation order: agree to float32 rounding.
    torch.testing.assert_close(models.attention(q, k, v, causal=True), ref, rtol=1e-5, atol=1e-6)


def test_bad_model_sizes_raise():
    with pytest.raises(ValueError, match="divisible"):
        models.TinyTransformer(d_model=30, n_heads=4)
    with pytest.raises(ValueError):
        models.TinyMLP(depth=0)


def test_a_clone_reads_its_top_level_data_from_any_folder(tmp_path, monkeypatch):
    """In a clone (and an editable install) the data are the repository's data/; a wheel
    carries the same files as companion/_data/ (tests/test_colab_install.py installs one)."""
    from pathlib import Path

    import companion

    monkeypatch.delenv("COMPANION_DATA", raising=False)
    monkeypatch.chdir(tmp_path)
    assert Path(data.data_dir()) == Path(companion.__file__).resolve().parent.parent / "data"
    assert len(data.load_corpus()) > 1000


def test_a_missing_file_names_itself_and_the_fix(tmp_path, monkeypatch):
    monkeypatch.setenv("COMPANION_DATA", str(tmp_path))
    with pytest.raises(FileNotFoundError, match=r"corpus.txt is missing .*reinstall the package"):
        data.load_corpus()
