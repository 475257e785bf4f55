"""Fine-tuning only the top transformer layers (EmbeddedTransformer.v1
trainable_layers), its cache of frozen-layer outputs, and [training] dropout."""

from pathlib import Path

import numpy
import pytest
import spacy
import torch
from thinc.api import Adam, fix_random_seed

from spacy_memcoref.models.encoder.encoder import build_embedded_transformer
from spacy_memcoref.models.encoder.frozen_encoder import find_transformer

from conftest import assert_same_links, make_examples, s2e_config, sample_docs


def _no_dropout(tok2vec):
    for module in find_transformer(tok2vec).transformer.modules():
        if isinstance(module, torch.nn.Dropout):
            module.p = 0.0
        if hasattr(module, "dropout_prob"):  # attention dropout of the SDPA path
            module.dropout_prob = 0.0


def test_top_layers_train_and_vectors_equal_the_full_encoder():
    nlp = spacy.blank("en")
    docs = sample_docs(nlp)
    full = build_embedded_transformer()
    part = build_embedded_transformer(trainable_layers=2)
    full.initialize(X=docs)
    part.initialize(X=docs)
    for a, b in zip(full.predict(docs), part.predict(docs)):
        numpy.testing.assert_allclose(a, b, atol=1e-5)
    _no_dropout(full)
    _no_dropout(part)
    expected, _ = full(docs, is_train=True)
    hf = find_transformer(part).transformer
    cache = hf._memcoref_bottom_cache
    for epoch in range(2):  # computed, then read from the cache
        vectors, backprop = part(docs, is_train=True)
        for a, b in zip(expected, vectors):
            numpy.testing.assert_allclose(a, b, atol=1e-5)
        used = cache.used
        assert used > 0
        backprop([numpy.ones_like(v) for v in vectors])
    assert cache.used == used  # the second epoch added nothing
    bottom, top = hf.encoder.layer[3], hf.encoder.layer[4]
    assert all(p.grad is None and not p.requires_grad for p in bottom.parameters())
    assert all(p.grad is None for p in hf.embeddings.parameters())
    assert all(p.grad is not None for p in top.parameters())


def test_cache_budget_zero_caches_nothing():
    nlp = spacy.blank("en")
    docs = sample_docs(nlp)
    part = build_embedded_transformer(trainable_layers=1, frozen_cache_mb=0)
    part.initialize(X=docs)
    part(docs, is_train=True)
    assert find_transformer(part).transformer._memcoref_bottom_cache.used == 0


def _top_layer_pipeline():
    """An s2e pipeline whose MiniLM fine-tunes its top layer only, initialized on TRAIN."""
    fix_random_seed(0)
    nlp = spacy.blank("en")
    config = s2e_config(tok2vec={"@architectures": "spacy_memcoref.EmbeddedTransformer.v1", "trainable_layers": 1})
    nlp.add_pipe("memcoref", config=config)
    examples = make_examples(nlp)
    nlp.initialize(lambda: examples)
    return nlp, examples


def test_partially_frozen_pipeline_trains_top_only_and_round_trips(tmp_path):
    nlp, examples = _top_layer_pipeline()
    hf = find_transformer(nlp.get_pipe("memcoref").model).transformer
    before = {k: v.clone() for k, v in hf.state_dict().items()}
    optimizer = Adam(0.001)
    for _ in range(3):
        nlp.update(examples, sgd=optimizer)
    after = hf.state_dict()
    changed = {k for k in before if not torch.equal(before[k], after[k])}
    assert changed and all(k.startswith("encoder.layer.5.") for k in changed), sorted(changed)[:5]
    texts = [" ".join(t for t in eg.reference.text.split()) for eg in examples]
    predicted = [[[s.text for s in g] for k, g in d.spans.items()] for d in nlp.pipe(texts)]
    nlp.to_disk(tmp_path / "model")
    loaded = spacy.load(tmp_path / "model")
    again = [[[s.text for s in g] for k, g in d.spans.items()] for d in loaded.pipe(texts)]
    assert again == predicted
    assert_same_links(nlp, loaded, texts)
    hf_loaded = find_transformer(loaded.get_pipe("memcoref").model).transformer
    assert not any(p.requires_grad for p in hf_loaded.encoder.layer[0].parameters())  # freeze re-installed


def test_use_averages_reach_the_fine_tuned_layers():
    """`use_averages = true`: inside nlp.use_params(optimizer.averages) the
    fine-tuned top layer holds the optimizer's averages, the frozen layers are
    untouched, and the trained weights come back after."""
    from spacy_memcoref.models.encoder.weights_only_hf_shim import WeightsOnlyHFShim

    nlp, examples = _top_layer_pipeline()
    model = nlp.get_pipe("memcoref").model
    (shim,) = [s for node in model.walk() for s in node.shims if isinstance(s, WeightsOnlyHFShim)]
    optimizer = Adam(0.001, use_averages=True)
    for _ in range(4):
        nlp.update(examples, sgd=optimizer)
    trained = {name: p.detach().clone() for name, p in shim._model.named_parameters()}
    averaged = {name for name in trained if (shim.id, name) in optimizer.averages}
    assert averaged and all(".layer.5." in name for name in averaged), sorted(averaged)[:3]
    with nlp.use_params(optimizer.averages):
        for name, p in shim._model.named_parameters():
            if name in averaged:
                numpy.testing.assert_array_equal(p.detach().numpy(), optimizer.averages[(shim.id, name)])
            else:
                assert torch.equal(p.detach(), trained[name]), f"frozen {name} changed"
        assert any(not torch.equal(p.detach(), trained[n]) for n, p in shim._model.named_parameters())
    for name, p in shim._model.named_parameters():
        assert torch.equal(p.detach(), trained[name]), f"{name} was not restored"


@pytest.mark.parametrize("value", [0, -1, True, 1.5])
def test_bad_trainable_layers(value):
    with pytest.raises(ValueError, match="trainable_layers"):
        build_embedded_transformer(trainable_layers=value)


def test_more_trainable_layers_than_the_transformer_has():
    nlp = spacy.blank("en")
    part = build_embedded_transformer(trainable_layers=7)
    with pytest.raises(ValueError, match="between 1 and 6"):
        part.initialize(X=sample_docs(nlp))


def test_training_dropout_reaches_the_token_vectors():
    """[training] dropout (nlp.update's drop) drops token vectors before the
    head: the same update gives another loss with it, and none without."""

    def first_loss(drop):
        fix_random_seed(0)
        nlp = spacy.blank("en")
        nlp.add_pipe("memcoref", config=s2e_config())
        examples = make_examples(nlp)
        nlp.initialize(lambda: examples)
        losses = nlp.update(examples, drop=drop, sgd=None)
        model = nlp.get_pipe("memcoref").model
        return losses["memcoref"], model.layers[2].attrs["dropout_rate"]

    plain, rates_plain = first_loss(0.0)
    again, _ = first_loss(0.0)
    dropped, rates_dropped = first_loss(0.5)
    assert plain == again
    assert dropped != plain
    assert rates_plain == 0.0 and rates_dropped == 0.5


def test_partially_frozen_petra_trains_top_only_and_keeps_frozen_vectors(tiny_mpnet):
    """PeTra with trainable_layers (the shipped petra-gap's recipe): the
    frozen layers give the vectors the whole encoder gives (to 1e-6), and
    training moves the top layers and the head only."""
    from spacy.training import Example

    from spacy_memcoref.corpora.gap import read_gap

    fix_random_seed(0)
    nlp = spacy.blank("en")
    encoder = {
        "@architectures": "spacy_memcoref.EmbeddedTransformer.v1",
        "name": str(tiny_mpnet),
        "trainable_layers": 2,
    }
    model = {
        "@architectures": "spacy_memcoref.PeTra.v1",
        "hidden_size": 16,
        "num_cells": 3,
        "mlp_size": 16,
        "dropout": 0.0,
        "freeze_encoder": False,
        "encoder_layers": 1,
        "temperature_halving_steps": 0,
        "tok2vec": encoder,
    }
    nlp.add_pipe("memcoref_petra", config={"model": model})
    docs = list(read_gap(Path(__file__).parent / "data" / "gap_sample.tsv", nlp))[:4]
    examples = [Example(nlp.make_doc(doc.text), doc) for doc in docs]
    nlp.initialize(lambda: examples)
    tok2vec = nlp.get_pipe("memcoref_petra").model.layers[0]
    full = build_embedded_transformer(name=str(tiny_mpnet))
    full.initialize(X=[eg.predicted for eg in examples])
    hf = find_transformer(tok2vec).transformer
    find_transformer(full).transformer.load_state_dict(hf.state_dict())
    predicted = [eg.predicted for eg in examples]
    for a, b in zip(full.predict(predicted), tok2vec.predict(predicted)):
        numpy.testing.assert_allclose(a, b, atol=1e-6)
    before = {k: v.clone() for k, v in hf.state_dict().items()}
    optimizer = Adam(0.01)
    for _ in range(3):
        nlp.update(examples, sgd=optimizer)
    after = hf.state_dict()
    changed = {k for k in before if not torch.equal(before[k], after[k])}
    assert changed and all(k.startswith(("encoder.layer.2.", "encoder.layer.3.")) for k in changed), sorted(changed)[:5]
