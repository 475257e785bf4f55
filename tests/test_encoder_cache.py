"""The frozen encoder's cache (encoder_cache.EncoderCache): least recently
used out within its byte bound; a cached Doc gets the same vectors as no
cache; nothing is kept before training starts. And the partly frozen
transformer on MPNet (relative position bias), the base presets' encoder."""

import numpy
import pytest
import spacy
from spacy.tokens import Doc

from spacy_memcoref.models.encoder.encoder import build_embedded_transformer
from spacy_memcoref.models.encoder.encoder_cache import EncoderCache, words_key
from spacy_memcoref.models.encoder.frozen_encoder import frozen_cache, frozen_encoder
from spacy_memcoref.models.encoder.transformer_node import find_transformer

pytestmark = pytest.mark.usefixtures("one_torch_thread")

TEXTS = [
    "Mary met John in Paris . She told him that the museum was closed on Mondays .",
    "The company said its profits rose . It was happy , and its chief said so too .",
    "Short one .",
]


def _array(n_bytes):
    return numpy.zeros(n_bytes // 4, dtype="float32")


def test_cache_evicts_least_recently_used_within_its_bound():
    cache = EncoderCache(100)
    for key in "abc":
        cache.put(key, _array(32))
    assert cache.used == 96 and len(cache) == 3
    assert cache.get("a") is not None  # a is now the most recently used
    cache.put("d", _array(32))  # over the bound: b (least recent) goes
    assert "b" not in cache and all(k in cache for k in "acd")
    assert cache.used == 96 <= cache.limit
    cache.put("e", _array(64))  # needs two out: c, then a
    assert set(k for k in "abcde" if k in cache) == {"d", "e"}
    assert cache.used == 96
    cache.put("huge", _array(128))  # larger than the whole bound: not kept
    assert "huge" not in cache and cache.used == 96
    cache.put("d", _array(16))  # replacing a key frees its old size
    assert cache.used == 80
    assert (cache.hits, cache.misses) == (1, 0)
    assert cache.get("zzz") is None and cache.misses == 1


def test_cache_bound_zero_and_bad_bounds():
    cache = EncoderCache(0)
    cache.put("a", _array(4))
    assert len(cache) == 0 and cache.used == 0
    for bad in (-1, 1.5, True, "10"):
        with pytest.raises(ValueError, match="cache bound"):
            EncoderCache(bad)


def test_words_key_tells_words_and_spaces_apart():
    assert words_key(["a", "b"], [True, False]) == words_key(["a", "b"], [True, False])
    assert words_key(["a", "b"], [True, False]) != words_key(["a", "b"], [False, False])
    assert words_key(["ab"], [False]) != words_key(["a", "b"], [False, False])
    assert words_key(["a b"], [False]) != words_key(["a", "b"], [True, False])
    assert len(words_key(["x"] * 1000, [True] * 1000)) == 16


def _docs(nlp, texts=TEXTS):
    return [Doc(nlp.vocab, words=text.split()) for text in texts]


def test_frozen_cache_gives_the_same_vectors_as_no_cache():
    nlp = spacy.blank("en")
    docs = _docs(nlp)
    plain = frozen_encoder(build_embedded_transformer(), encoder_layers=4, cache_mb=0)
    cached = frozen_encoder(build_embedded_transformer(), encoder_layers=4, cache_mb=64)
    plain.initialize(X=docs)
    cached.initialize(X=docs)
    cache = frozen_cache(cached)
    expected = plain.predict(docs)
    cached.predict(docs)
    assert len(cache) == 0, "a model that only predicts keeps nothing"
    first, _ = cached(docs, is_train=True)
    assert len(cache) == 3 and cache.misses == 3 and cache.hits == 0
    # the second pass (another order, and a new Doc among them) reads the cache
    again = _docs(nlp, [TEXTS[2], "A new text .", TEXTS[0], TEXTS[1]])
    second = cached.predict(again)
    assert cache.hits == 3 and len(cache) == 4
    for got, want in zip(first, expected):
        numpy.testing.assert_allclose(got, want, atol=1e-6)
    for got, want in zip([second[2], second[3], second[0]], expected):
        numpy.testing.assert_allclose(got, want, atol=1e-6)
    numpy.testing.assert_allclose(second[1], plain.predict([again[1]])[0], atol=1e-6)
    assert first[0].shape == (len(docs[0]), 4 * 384)


def test_frozen_cache_stays_within_its_bound():
    nlp = spacy.blank("en")
    texts = [f"Text number {i} says that she met him there , and then they left ." for i in range(40)]
    docs = _docs(nlp, texts)
    model = frozen_encoder(build_embedded_transformer(), encoder_layers=4, cache_mb=1)
    model.initialize(X=docs[:2])
    for start in range(0, len(docs), 8):
        model(docs[start : start + 8], is_train=True)
        cache = frozen_cache(model)
        assert cache.used <= 2**20
    per_doc = len(docs[0]) * 4 * 384 * 4
    assert len(cache) == 2**20 // per_doc < len(docs)
    # the most recent texts are the ones kept
    hits = cache.hits
    model.predict(docs[-len(cache) :])
    assert cache.hits == hits + len(cache)


def test_bad_frozen_cache_mb():
    with pytest.raises(ValueError, match="frozen_cache_mb"):
        frozen_encoder(build_embedded_transformer(), cache_mb=-1)


def test_frozen_cache_mb_has_one_default_and_one_check():
    """The three builders default `frozen_cache_mb` to one constant; the
    frozen encoder and the partly frozen transformer check it with one
    function, the only place that words the error."""
    import inspect
    from pathlib import Path

    from spacy_memcoref.models.encoder.encoder_cache import DEFAULT_FROZEN_CACHE_MB, check_frozen_cache_mb
    from spacy_memcoref.models.petra.petra_model import build_petra
    from spacy_memcoref.models.s2e.s2e_model import build_s2e

    for builder in (build_embedded_transformer, build_s2e, build_petra):
        assert inspect.signature(builder).parameters["frozen_cache_mb"].default == DEFAULT_FROZEN_CACHE_MB
    assert check_frozen_cache_mb(0) == 0 and check_frozen_cache_mb(64) == 64
    for bad in (-1, True, 1.5, "64", None):
        with pytest.raises(ValueError, match="frozen_cache_mb must be an integer >= 0"):
            check_frozen_cache_mb(bad)
    with pytest.raises(ValueError, match="frozen_cache_mb must be an integer >= 0, got -1"):
        build_embedded_transformer(trainable_layers=1, frozen_cache_mb=-1)
    source = Path(__file__).resolve().parent.parent / "spacy_memcoref"
    wording = [
        str(p.relative_to(source))
        for p in sorted(source.rglob("*.py"))
        if "frozen_cache_mb must be" in p.read_text(encoding="utf8")
    ]
    assert wording == ["models/encoder/encoder_cache.py"], wording


def test_partly_frozen_mpnet_equals_the_full_encoder(tiny_mpnet):
    """MPNet adds a relative position bias in every layer: the frozen bottom
    layers must get it too, or their output is another function."""
    nlp = spacy.blank("en")
    docs = _docs(nlp)
    full = build_embedded_transformer(str(tiny_mpnet))
    part = build_embedded_transformer(str(tiny_mpnet), trainable_layers=2)
    full.initialize(X=docs)
    part.initialize(X=docs)
    for a, b in zip(full.predict(docs), part.predict(docs)):
        numpy.testing.assert_allclose(a, b, atol=1e-5)
    hf = find_transformer(part).transformer
    assert not any(p.requires_grad for p in hf.encoder.relative_attention_bias.parameters())
    assert all(p.requires_grad for p in hf.encoder.layer[3].parameters())


def test_disk_cache_serves_a_later_run_and_only_the_same_encoder(tmp_path, monkeypatch):
    import torch

    from spacy_memcoref.models.encoder import frozen_encoder as module

    nlp = spacy.blank("en")
    docs = _docs(nlp)
    folder = str(tmp_path / "vectors")
    first = frozen_encoder(build_embedded_transformer(), encoder_layers=4, cache_mb=64, cache_dir=folder)
    first.initialize(X=docs)
    expected, _ = first(docs, is_train=True)
    written = list((tmp_path / "vectors").rglob("*.npy"))
    assert len(written) == 3 and len({p.parent for p in written}) == 1
    # a new run with the same encoder reads them instead of encoding
    second = frozen_encoder(build_embedded_transformer(), encoder_layers=4, cache_mb=64, cache_dir=folder)
    second.initialize(X=docs)
    encode = module._encode
    with monkeypatch.context() as patch:
        patch.setattr(module, "_encode", lambda *args: pytest.fail("the encoder ran"))
        got, _ = second(docs, is_train=True)
    assert module._encode is encode
    for a, b in zip(got, expected):
        numpy.testing.assert_array_equal(a, b)
    # other settings, or other weights: another fingerprint, another folder
    other = frozen_encoder(build_embedded_transformer(), encoder_layers=2, cache_mb=64, cache_dir=folder)
    other.initialize(X=docs)
    other(docs[:1], is_train=True)
    lower = frozen_encoder(
        build_embedded_transformer(), encoder_layers=4, skip_top_layers=1, cache_mb=64, cache_dir=folder
    )
    lower.initialize(X=docs)
    lower(docs[:1], is_train=True)
    changed = frozen_encoder(build_embedded_transformer(), encoder_layers=4, cache_mb=64, cache_dir=folder)
    changed.initialize(X=docs)
    hf = find_transformer(changed).transformer
    with torch.no_grad():
        next(hf.parameters()).add_(1.0)
    changed(docs[:1], is_train=True)
    assert len({p.parent for p in (tmp_path / "vectors").rglob("*.npy")}) == 4
    # nothing half-written is left
    assert not list((tmp_path / "vectors").rglob("*.tmp"))
    with pytest.raises(ValueError, match="frozen_cache_dir"):
        frozen_encoder(build_embedded_transformer(), cache_dir="")
