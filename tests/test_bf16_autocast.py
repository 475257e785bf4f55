"""EmbeddedTransformer.v1 bfloat16 (the transformer under bfloat16 autocast)
and transformer_config (settings for the Hugging Face config)."""

import warnings

import numpy
import pytest
import spacy
import torch
from thinc.api import Adam, fix_random_seed

from spacy_memcoref.models.encoder import bf16_autocast
from spacy_memcoref.models.encoder.bf16_autocast import NoNativeBfloat16Warning, _to_float32, install
from spacy_memcoref.models.encoder.encoder import build_embedded_transformer
from spacy_memcoref.models.encoder.transformer_node import find_transformer

from conftest import assert_same_links, make_examples, s2e_config, sample_docs


@pytest.fixture(autouse=True)
def native_bfloat16(monkeypatch):
    """These tests are about autocast itself: pin the CPU check to "native
    bfloat16" so they test the same on an AVX2-only CPU; the tests of the
    check set it False themselves."""
    monkeypatch.setattr(bf16_autocast, "cpu_has_native_bfloat16", lambda: True)
    monkeypatch.setattr(bf16_autocast, "_warned", False)


def test_bf16_vectors_are_float32_and_close_to_float32_vectors():
    nlp = spacy.blank("en")
    docs = sample_docs(nlp)
    fp32 = build_embedded_transformer()
    bf16 = build_embedded_transformer(bfloat16=True)
    fp32.initialize(X=docs)
    bf16.initialize(X=docs)
    for a, b in zip(fp32.predict(docs), bf16.predict(docs)):
        assert b.dtype == numpy.float32 and a.shape == b.shape
        assert not numpy.array_equal(a, b)  # it really ran in bfloat16
        # bfloat16 keeps 8 bits of mantissa: a relative error of a few 1e-3 a product
        cosine = (a * b).sum(1) / (numpy.linalg.norm(a, axis=1) * numpy.linalg.norm(b, axis=1))
        assert cosine.min() > 0.99, cosine.min()


def test_bf16_backward_reaches_every_transformer_weight_in_float32():
    nlp = spacy.blank("en")
    docs = sample_docs(nlp)
    bf16 = build_embedded_transformer(bfloat16=True)
    bf16.initialize(X=docs)
    vectors, backprop = bf16(docs, is_train=True)
    assert all(v.dtype == numpy.float32 for v in vectors)
    backprop([numpy.ones_like(v) for v in vectors])
    hf = find_transformer(bf16).transformer
    params = [p for name, p in hf.named_parameters() if not name.startswith("pooler.")]
    assert all(p.dtype == torch.float32 for p in params)
    assert all(p.grad is not None and p.grad.dtype == torch.float32 for p in params)
    assert all(bool(torch.isfinite(p.grad).all()) for p in params)


def test_bf16_pipeline_learns_and_round_trips(tmp_path):
    """The tiny overfit set: the loss falls under bfloat16, and a saved
    pipeline predicts the same clusters after loading (autocast reinstalled)."""
    fix_random_seed(0)
    nlp = spacy.blank("en")
    config = s2e_config(tok2vec={"@architectures": "spacy_memcoref.EmbeddedTransformer.v1", "bfloat16": True})
    nlp.add_pipe("memcoref", config=config)
    examples = make_examples(nlp)
    nlp.initialize(lambda: examples)
    optimizer = Adam(0.001)
    losses = [nlp.update(examples, sgd=optimizer)["memcoref"] for _ in range(12)]
    # "the loss falls": the best of the second half is under half the first.
    # Not the last loss alone: bfloat16 rounding differs between CPUs, and on
    # an Intel Xeon with AMX this curve went 29.56, 27.01, 14.14, 5.26, 5.25,
    # 4.78, ... and then up to 14.79 at the last step.
    assert min(losses[len(losses) // 2 :]) < 0.5 * losses[0], losses
    texts = [eg.reference.text for eg in examples]
    predicted = [[[s.text for s in g] for g in d.spans.values()] for d in nlp.pipe(texts)]
    nlp.to_disk(tmp_path / "model")
    loaded = spacy.load(tmp_path / "model")
    again = [[[s.text for s in g] for g in d.spans.values()] for d in loaded.pipe(texts)]
    assert again == predicted
    assert_same_links(nlp, loaded, texts)
    hf_loaded = find_transformer(loaded.get_pipe("memcoref").model).transformer
    assert getattr(hf_loaded, "_memcoref_bf16_autocast", False)


def test_install_is_idempotent_and_casts_every_output():
    calls = []

    class Toy(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = torch.nn.Linear(4, 4)

        def forward(self, x):
            calls.append(torch.is_autocast_enabled("cpu"))
            y = self.linear(x)
            return {"last": y, "all": (y, y * 2), "n": 3}

    toy = Toy()
    install(toy)
    install(toy)  # no second wrapper
    out = toy(torch.ones(2, 4))
    assert calls == [True]
    assert out["last"].dtype == torch.float32 and all(t.dtype == torch.float32 for t in out["all"])
    assert out["n"] == 3
    assert _to_float32([torch.ones(1, dtype=torch.bfloat16)])[0].dtype == torch.float32


def test_disable_restores_float32_and_install_then_stays_off():
    from spacy_memcoref.models.encoder.bf16_autocast import disable
    from spacy_memcoref.models.encoder.int8 import INT8_MARK

    seen = []

    class Toy(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = torch.nn.Linear(4, 4)

        def forward(self, x):
            seen.append(torch.is_autocast_enabled("cpu"))
            return self.linear(x)

    toy = Toy()
    install(toy)
    toy(torch.ones(1, 4))
    disable(toy)
    toy(torch.ones(1, 4))
    install(toy)  # the bfloat16 node calls install before every forward: it stays off
    toy(torch.ones(1, 4))
    assert seen == [True, False, False]
    marked = Toy()
    setattr(marked, INT8_MARK, True)  # int8 layers: autocast leaves the model alone
    install(marked)
    marked(torch.ones(1, 4))
    assert seen[-1] is False


def test_transformer_config_reaches_the_hugging_face_config():
    nlp = spacy.blank("en")
    model = build_embedded_transformer(transformer_config={"attention_probs_dropout_prob": 0.0})
    model.initialize(X=sample_docs(nlp))
    config = find_transformer(model).transformer.config
    assert config.attention_probs_dropout_prob == 0.0
    default = build_embedded_transformer()
    default.initialize(X=sample_docs(nlp))
    assert find_transformer(default).transformer.config.attention_probs_dropout_prob == 0.1


@pytest.mark.parametrize("value", [1, "yes", None])
def test_bad_bfloat16(value):
    with pytest.raises(ValueError, match="bfloat16"):
        build_embedded_transformer(bfloat16=value)


def test_eager_attention_by_config_gives_the_same_vectors():
    """configs/s2e.cfg picks eager attention (faster than SDPA's unfused
    path when attention dropout is on, on CPU): the same function."""
    nlp = spacy.blank("en")
    docs = sample_docs(nlp)
    sdpa = build_embedded_transformer()
    eager = build_embedded_transformer(transformer_config={"attn_implementation": "eager"})
    sdpa.initialize(X=docs)
    eager.initialize(X=docs)
    assert find_transformer(eager).transformer.config._attn_implementation == "eager"
    assert find_transformer(sdpa).transformer.config._attn_implementation == "sdpa"
    for a, b in zip(sdpa.predict(docs), eager.predict(docs)):
        numpy.testing.assert_allclose(a, b, atol=1e-5)


def _saved_and_loaded(folder, bfloat16):
    """An s2e pipeline saved with `bfloat16` and loaded back, its examples,
    and a list that records, at each encoder call, whether autocast was on."""
    nlp = spacy.blank("en")
    nlp.add_pipe(
        "memcoref",
        config=s2e_config(tok2vec={"@architectures": "spacy_memcoref.EmbeddedTransformer.v1", "bfloat16": bfloat16}),
    )
    examples = make_examples(nlp)
    nlp.initialize(lambda: examples)
    nlp.to_disk(folder)
    loaded = spacy.load(folder)
    hf = find_transformer(loaded.get_pipe("memcoref").model).transformer
    seen = []
    hf.encoder.register_forward_pre_hook(lambda module, args: seen.append(torch.is_autocast_enabled("cpu")))
    return loaded, examples, seen


def test_a_bfloat16_pipeline_runs_in_float32_after_loading(tmp_path):
    import spacy_memcoref

    loaded, examples, seen = _saved_and_loaded(tmp_path / "model", True)
    texts = [eg.reference.text for eg in examples]
    list(loaded.pipe(texts[:1]))
    assert spacy_memcoref.run_in_float32(loaded) == 1
    list(loaded.pipe(texts[:1]))
    assert seen[0] is True and seen[-1] is False


def test_a_float32_pipeline_runs_in_bfloat16_and_back(tmp_path):
    """run_in_bfloat16 turns autocast on for a pipeline trained in float32
    (vectors within bfloat16's precision of float32's), run_in_float32 turns
    it off again (float32's vectors exactly)."""
    import spacy_memcoref

    loaded, examples, seen = _saved_and_loaded(tmp_path / "model", False)
    pipe = loaded.get_pipe("memcoref")
    docs = [loaded.make_doc(eg.reference.text) for eg in examples[:2]]
    plain = pipe.token_vectors(docs)
    assert spacy_memcoref.run_in_bfloat16(loaded) == 1
    low = pipe.token_vectors(docs)
    assert spacy_memcoref.run_in_float32(loaded) == 1
    back = pipe.token_vectors(docs)
    assert seen[0] is False and True in seen and seen[-1] is False
    for a, b, c in zip(plain, low, back):
        assert b.dtype == numpy.float32 and not numpy.array_equal(a, b)
        numpy.testing.assert_allclose(a, b, atol=0.1)
        numpy.testing.assert_array_equal(a, c)


class _Recorder(torch.nn.Module):
    def __init__(self, seen):
        super().__init__()
        self.linear = torch.nn.Linear(4, 4)
        self.seen = seen

    def forward(self, x):
        self.seen.append(torch.is_autocast_enabled("cpu"))
        return self.linear(x)


def test_a_cpu_without_native_bfloat16_runs_float32_and_warns_once(monkeypatch):
    """On an AVX2-only CPU emulated bfloat16 is 5-10x slower: a bfloat16
    config runs float32 there, saying so once a process."""
    monkeypatch.setattr(bf16_autocast, "cpu_has_native_bfloat16", lambda: False)
    seen = []
    first, second = _Recorder(seen), _Recorder(seen)
    install(first)
    install(second)
    with pytest.warns(NoNativeBfloat16Warning, match="no native bfloat16.*run_in_bfloat16"):
        out = first(torch.ones(1, 4))
    with warnings.catch_warnings():
        warnings.simplefilter("error", NoNativeBfloat16Warning)
        second(torch.ones(1, 4))
        first(torch.ones(1, 4))
    assert seen == [False, False, False]
    assert out.dtype == torch.float32


def test_run_in_bfloat16_forces_autocast_without_native_bfloat16(tmp_path, monkeypatch):
    """run_in_bfloat16 is the user's explicit choice: it autocasts on any CPU,
    and run_in_float32 undoes it."""
    import spacy_memcoref

    monkeypatch.setattr(bf16_autocast, "cpu_has_native_bfloat16", lambda: False)
    loaded, examples, seen = _saved_and_loaded(tmp_path / "model", False)
    texts = [eg.reference.text for eg in examples[:1]]
    assert spacy_memcoref.run_in_bfloat16(loaded) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error", NoNativeBfloat16Warning)
        list(loaded.pipe(texts))
    assert seen == [True]
    spacy_memcoref.run_in_float32(loaded)
    list(loaded.pipe(texts))
    assert seen == [True, False]


def test_cpu_check_reads_the_cpu_flags(tmp_path):
    """The check on cpuinfo of the three CPU kinds we train on, and without the file."""
    kinds = {
        "amd_epyc_avx2": ("fpu sse sse2 avx avx2 fma avx512f", False),
        "amd_epyc_avx512_bf16": ("fpu avx2 avx512f avx512_vnni avx512_bf16", True),
        "intel_xeon_amx": ("fpu avx2 avx512f amx_bf16 amx_tile amx_int8", True),
    }
    for name, (flags, expected) in kinds.items():
        path = tmp_path / name
        path.write_text(f"processor\t: 0\nflags\t\t: {flags}\n")
        assert bf16_autocast.cpuinfo_has_native_bfloat16(path) is expected, name
    assert bf16_autocast.cpuinfo_has_native_bfloat16(tmp_path / "missing") is False
