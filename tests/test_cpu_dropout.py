"""models/cpu_dropout.py: dropout masks drawn by numpy are torch's dropout in
distribution (checked against torch's own on the same tensors), repeat
under torch.manual_seed, leave the saved pipeline alone, and are installed
by the training callback where torch's masks are slow."""

import math

import pytest
import spacy
import torch
from thinc.api import Adam, fix_random_seed
from torch import nn

from spacy_memcoref import training_callbacks as tc
from spacy_memcoref.models.cpu_dropout import CpuDropout, torch_dropout_is_vectorized, use_cpu_dropout
from spacy_memcoref.pretrained import torch_modules

from conftest import TRAIN, assert_same_links, make_examples, s2e_config

N = 400_000
P = 0.1


def _dropped_fraction(out: torch.Tensor) -> float:
    return float((out == 0).float().mean())


@pytest.mark.parametrize("p", [0.1, 0.3])
def test_masks_have_torch_dropouts_distribution(p):
    torch.manual_seed(0)
    x = torch.ones(N)
    ours, theirs = CpuDropout(p).train(), nn.Dropout(p).train()
    a, b = ours(x), theirs(x)
    # both drop each element with probability p and scale the rest by 1/(1-p)
    sigma = math.sqrt(p * (1 - p) / N)
    for out in (a, b):
        assert abs(_dropped_fraction(out) - p) < 5 * sigma
        assert set(torch.unique(out).tolist()) == set(torch.unique(b).tolist())
    assert torch.unique(a).tolist() == pytest.approx([0.0, 1.0 / (1.0 - p)])
    assert float(a.mean()) == pytest.approx(1.0, abs=5 * sigma / (1 - p))
    # independent elements: neighbours are both dropped with probability p**2
    both = float(((a[:-1] == 0) & (a[1:] == 0)).float().mean())
    assert abs(both - p * p) < 5 * math.sqrt(p * p / N)


def test_each_call_draws_a_new_mask_and_a_seed_repeats_it():
    x = torch.ones(N)
    dropout = CpuDropout(P).train()
    torch.manual_seed(7)
    first, second = dropout(x), dropout(x)
    overlap = float(((first == 0) & (second == 0)).float().mean())
    assert abs(overlap - P * P) < 5 * math.sqrt(P * P / N)  # two calls: independent masks
    torch.manual_seed(7)
    assert torch.equal(dropout(x), first)
    assert torch.equal(dropout(x), second)
    torch.manual_seed(8)
    assert not torch.equal(dropout(x), first)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_gradient_is_the_mask_times_the_scale(dtype):
    torch.manual_seed(0)
    x = torch.randn(64, 128).to(dtype).requires_grad_(True)
    out = CpuDropout(P).train()(x)
    assert out.dtype == dtype
    upstream = torch.randn(64, 128).to(dtype)
    out.backward(upstream)
    kept = out != 0
    scale = torch.tensor(1.0 / (1.0 - P)).to(dtype)
    assert torch.equal(
        out, torch.where(kept, (x.detach().float() * (1.0 / (1.0 - P))).to(dtype), torch.zeros((), dtype=dtype))
    )
    expected = torch.where(kept, (upstream.float() * (1.0 / (1.0 - P))).to(dtype), torch.zeros((), dtype=dtype))
    assert torch.allclose(
        x.grad.float(), expected.float(), rtol=0, atol=float(scale) * 2**-7 * float(upstream.abs().max())
    )


def test_inplace_changes_the_input_as_torch_does():
    torch.manual_seed(0)
    x = torch.ones(1000)
    out = CpuDropout(P, inplace=True).train()(x)
    assert out.data_ptr() == x.data_ptr()
    assert 0 < _dropped_fraction(x) < 0.3


def test_inplace_bfloat16_keeps_the_dtype_and_the_storage():
    torch.manual_seed(0)
    x = torch.ones(1000, dtype=torch.bfloat16)
    out = CpuDropout(P, inplace=True).train()(x)
    assert out.data_ptr() == x.data_ptr() and out.dtype == torch.bfloat16
    assert 0 < _dropped_fraction(x) < 0.3


@pytest.mark.parametrize("mode", ["eval", "p0", "p1", "meta"])
def test_torchs_own_dropout_where_no_mask_is_drawn(monkeypatch, mode):
    """Evaluation, p = 0, p = 1 (where 1/(1-p) has no value) and tensors off
    the CPU go to nn.Dropout's own forward: no numpy mask is drawn."""
    from spacy_memcoref.models import cpu_dropout

    def no_mask(shape):
        raise AssertionError("a numpy mask was drawn")

    monkeypatch.setattr(cpu_dropout, "uniforms", no_mask)
    x = torch.randn(100, device="meta" if mode == "meta" else "cpu")
    dropout = {
        "eval": CpuDropout(P).eval(),
        "p0": CpuDropout(0.0).train(),
        "p1": CpuDropout(1.0).train(),
        "meta": CpuDropout(P).train(),
    }[mode]
    out = dropout(x)
    if mode == "meta":
        assert out.device.type == "meta" and out.shape == x.shape
    elif mode == "p1":
        assert torch.equal(out, torch.zeros(100))
    else:
        assert torch.equal(out, x)


def test_use_cpu_dropout_swaps_every_dropout_and_keeps_the_state_dict():
    model = nn.Sequential(
        nn.Linear(4, 4), nn.Dropout(0.2), nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.1, inplace=True)), nn.GELU()
    )
    model[2].eval()
    keys = list(model.state_dict())
    assert use_cpu_dropout(model) == 2
    assert type(model[1]) is CpuDropout and model[1].p == 0.2 and model[1].training
    assert type(model[2][1]) is CpuDropout and model[2][1].inplace and not model[2][1].training
    assert list(model.state_dict()) == keys
    assert use_cpu_dropout(model) == 0  # idempotent


@pytest.mark.parametrize(
    "cpuinfo,vectorized",
    [
        ("vendor_id\t: AuthenticAMD\nflags\t: avx2\n", False),
        ("vendor_id\t: GenuineIntel\nflags\t: avx2\n", torch.backends.mkl.is_available()),
        ("vendor_id\t: HygonGenuine\n", False),
        (None, True),  # no /proc/cpuinfo (macOS, Windows): torch's dropout stays
    ],
)
def test_torch_dropout_is_vectorized_on_intel_with_mkl_only(tmp_path, cpuinfo, vectorized):
    path = tmp_path / "cpuinfo"
    if cpuinfo is not None:
        path.write_text(cpuinfo)
    assert torch_dropout_is_vectorized(path) is vectorized


def _dropout_types(nlp):
    return [type(m) for _, _, module in torch_modules(nlp) for m in module.modules() if isinstance(m, nn.Dropout)]


def _train(numpy_dropout, slow, monkeypatch, steps=60):
    monkeypatch.setattr(tc, "_torch_dropout_is_slow", lambda: slow)
    callback = tc.make_before_update(threads=0, release_memory=False, numpy_dropout=numpy_dropout)
    fix_random_seed(0)
    nlp = spacy.blank("en")
    nlp.add_pipe("memcoref", config=s2e_config(dropout=0.3))
    examples = make_examples(nlp)
    nlp.initialize(lambda: examples)
    optimizer = Adam(0.003)
    losses = []
    for step in range(steps):
        callback(nlp, {"step": step, "epoch": 0})
        losses.append(nlp.update(examples, sgd=optimizer)["memcoref"])
    return nlp, losses


def test_the_callback_swaps_the_pipelines_dropout_where_torchs_is_slow(monkeypatch, tmp_path):
    nlp, losses = _train(True, True, monkeypatch)
    types = _dropout_types(nlp)
    assert types and set(types) == {CpuDropout}
    # an s2e head with dropout 0.3 still overfits three documents
    assert losses[-1] < 0.2 * losses[0]
    # the saved pipeline is as with torch's dropout: it loads and predicts alike
    nlp.to_disk(tmp_path / "m")
    loaded = spacy.load(tmp_path / "m")
    assert set(_dropout_types(loaded)) == {nn.Dropout}
    assert_same_links(nlp, loaded, [text for text, _ in TRAIN])


def test_the_callback_reaches_the_transformers_dropout_and_says_so_once(monkeypatch, capsys, tiny_mpnet):
    """An s2e over a (tiny) MPNet with its top layers fine-tuned, as the base
    preset: every dropout of the encoder (attention, hidden states) and of
    the head is swapped at the first update, with one line saying so."""
    monkeypatch.setattr(tc, "_torch_dropout_is_slow", lambda: True)
    callback = tc.make_before_update(threads=0, release_memory=False, numpy_dropout=True)
    fix_random_seed(0)
    nlp = spacy.blank("en")
    encoder = {
        "@architectures": "spacy_memcoref.EmbeddedTransformer.v1",
        "name": str(tiny_mpnet),
        "trainable_layers": 2,
    }
    nlp.add_pipe("memcoref", config=s2e_config(dropout=0.3, tok2vec=encoder))
    examples = make_examples(nlp)
    nlp.initialize(lambda: examples)
    n_dropouts = len(_dropout_types(nlp))
    optimizer = Adam(0.003)
    capsys.readouterr()
    for step in range(2):
        callback(nlp, {"step": step, "epoch": 0})
        nlp.update(examples, sgd=optimizer)
    # MPNet: 3 a layer (attention probabilities, attention output, feed-forward) and the embeddings'; the head: 4
    assert n_dropouts == 3 * 4 + 1 + 4
    assert _dropout_types(nlp) == [CpuDropout] * n_dropouts
    out = capsys.readouterr().out
    assert out.count("torch dropout modules draw their CPU masks with numpy") == 1, out
    assert f"{n_dropouts} torch dropout modules" in out


@pytest.mark.parametrize("numpy_dropout,slow", [(False, True), (True, False)])
def test_the_callback_leaves_torchs_dropout_when_off_or_fast(monkeypatch, numpy_dropout, slow):
    nlp, _ = _train(numpy_dropout, slow, monkeypatch, steps=1)
    assert set(_dropout_types(nlp)) == {nn.Dropout}


def test_the_callback_refuses_a_bad_setting():
    with pytest.raises(ValueError, match="numpy_dropout must be true or false"):
        tc.make_before_update(numpy_dropout="yes")
