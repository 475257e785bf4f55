"""spacy_memcoref.EntityGating.v1: closed gates give the wrapped tok2vec's
output exactly; the gradients match finite differences; it learns on a
tiny batch what only the entity vectors tell; it trains inside a spaCy
pipeline behind a frozen, annotating coreference component."""

import numpy
import pytest
import spacy
from spacy.tokens import Doc
from thinc.api import Adam, Model, Softmax, chain, with_array

from spacy_memcoref.doc_helpers.entity_vectors import set_entity_vectors
from spacy_memcoref.models.entity_gating import build_entity_gating

from conftest import TINY_CNN

E_WIDTH = 6


def tok2vec():
    from spacy.util import registry

    return registry.resolve({"t": TINY_CNN})["t"]


def docs_with_entities(nlp, seed=0):
    """Two Docs of the same words, each with the same two clusters (Pat's,
    Sam's), whose entity vectors are +1 / -1 in one dimension, the other way
    round in the second Doc: the vectors are all that tells them apart."""
    rng = numpy.random.default_rng(seed)
    docs = []
    for sign in (1.0, -1.0):
        doc = Doc(nlp.vocab, words="Pat met Sam and Pat thanked Sam .".split())
        doc.spans["coref_clusters_1"] = [doc[0:1], doc[4:5]]
        doc.spans["coref_clusters_2"] = [doc[2:3], doc[6:7]]
        vectors = rng.normal(0, 0.1, (2, E_WIDTH)).astype("float32")
        vectors[0, 0], vectors[1, 0] = sign, -sign
        set_entity_vectors(doc, [1, 2], vectors, "test")
        docs.append(doc)
    return docs


def labels_of(docs):
    """Token labels (one-hot): 1 in a mention whose entity vector is + in
    its first dimension, 2 when -, 0 outside mentions."""
    out = []
    for doc in docs:
        y = numpy.zeros((len(doc), 3), dtype="float32")
        y[:, 0] = 1
        for row, number in enumerate(doc._.entity_vectors["clusters"]):
            label = 1 if doc._.entity_vectors["vectors"][row, 0] > 0 else 2
            for span in doc.spans[f"coref_clusters_{number}"]:
                y[span.start, :] = 0
                y[span.start, label] = 1
        out.append(y)
    return out


@pytest.fixture
def nlp():
    return spacy.blank("en")


def test_closed_gates_give_the_wrapped_tok2vec_exactly(nlp):
    docs = docs_with_entities(nlp)
    inner = tok2vec()
    gated = build_entity_gating(inner, entity_width=E_WIDTH, init_gate_bias=-1e4)
    gated.initialize(X=docs)
    out = gated.predict(docs)
    expected = inner.predict(docs)
    for a, b in zip(out, expected):
        numpy.testing.assert_array_equal(a, b)
    # open gates change the tokens in mentions, and only those
    gated.set_param("b", gated.ops.asarray1f(numpy.full(gated.get_dim("nO"), 3.0, dtype="float32")))
    changed = gated.predict(docs)[0] != expected[0]
    in_mention = {s.start for k in ("coref_clusters_1", "coref_clusters_2") for s in docs[0].spans[k]}
    assert {i for i in range(len(docs[0])) if changed[i].any()} == in_mention


def test_the_gradients_match_finite_differences(nlp):
    docs = docs_with_entities(nlp)
    gated = build_entity_gating(tok2vec(), entity_width=E_WIDTH, init_gate_bias=0.0)
    gated.initialize(X=docs)
    rng = numpy.random.default_rng(1)
    gated.set_param("G", gated.ops.asarray2f(rng.normal(0, 0.3, gated.get_param("G").shape).astype("float32")))
    weights = [rng.normal(size=h.shape).astype("float32") for h in gated.predict(docs)]

    def loss():
        return float(sum((h * w).sum() for h, w in zip(gated.predict(docs), weights)))

    outputs, backprop = gated.begin_update(docs)
    backprop(weights)
    for name in ("W", "G", "b"):
        param = gated.get_param(name).copy()
        grad = gated.get_grad(name).copy()
        for index in [tuple(rng.integers(0, n) for n in param.shape) for _ in range(4)]:
            step = 1e-2
            for sign in (1, -1):
                moved = param.copy()
                moved[index] += sign * step
                gated.set_param(name, moved)
                if sign == 1:
                    up = loss()
                else:
                    down = loss()
            gated.set_param(name, param)
            numpy.testing.assert_allclose(
                grad[index], (up - down) / (2 * step), rtol=2e-2, atol=2e-3, err_msg=f"{name}{index}"
            )


def test_it_learns_what_only_the_entity_vectors_tell(nlp):
    docs = docs_with_entities(nlp)
    truth = labels_of(docs)

    def train(gate_bias):
        numpy.random.seed(0)
        model: Model = chain(
            build_entity_gating(tok2vec(), entity_width=E_WIDTH, init_gate_bias=gate_bias), with_array(Softmax(3))
        )
        model.initialize(X=docs, Y=truth)
        optimizer = Adam(0.01)
        losses = []
        for _ in range(60):
            guesses, backprop = model.begin_update(docs)
            d = [g - y for g, y in zip(guesses, truth)]
            losses.append(float(sum(-(y * numpy.log(g + 1e-8)).sum() for g, y in zip(guesses, truth))))
            backprop(d)
            model.finish_update(optimizer)
        return losses

    losses = train(-2.0)
    assert losses[-1] < 0.2 * losses[0]
    # the two Docs have the same words and opposite labels: with closed
    # gates the model cannot do better than a coin for the mention tokens
    closed = train(-1e4)
    assert closed[-1] > 8 * 0.6  # 8 mention tokens, ln 2 = 0.69 each at best
    assert losses[-1] < 0.1 * closed[-1]


def test_a_width_that_is_not_the_vectors_says_so(nlp):
    docs = docs_with_entities(nlp)
    gated = build_entity_gating(tok2vec(), entity_width=E_WIDTH + 1)
    gated.initialize(X=docs)
    with pytest.raises(ValueError, match="entity_width is 7"):
        gated.predict(docs)
    with pytest.raises(ValueError, match="entity_width must be a positive integer"):
        build_entity_gating(tok2vec(), entity_width=0)


def test_a_tagger_trains_on_it_behind_a_frozen_annotating_coreference_component():
    """As `[training] frozen_components` and `annotating_components` run it:
    the shipped s2e writes the entity vectors on the predicted Docs, a
    tagger over EntityGating.v1 learns; the coreference weights stay."""
    import spacy_memcoref
    from spacy.training import Example

    nlp = spacy_memcoref.load("s2e-ontogum")
    tagger_model = {
        "@architectures": "spacy.Tagger.v2",
        "tok2vec": {"@architectures": "spacy_memcoref.EntityGating.v1", "tok2vec": TINY_CNN, "entity_width": 1024},
    }
    nlp.add_pipe("tagger", config={"model": tagger_model})
    texts = ["Alice met Bob . She thanked him .", "Bob called Alice and he asked her to come ."]
    examples = []
    for text in texts:
        words = text.split()
        tags = [
            "PRON" if w.lower() in {"she", "him", "he", "her"} else "PROPN" if w[0].isupper() else "X" for w in words
        ]
        examples.append(Example.from_dict(nlp.make_doc(text), {"words": words, "tags": tags}))
    before = nlp.get_pipe("memcoref").to_bytes()
    nlp.get_pipe("tagger").initialize(lambda: examples, nlp=nlp)
    optimizer = Adam(0.01)
    losses = []
    for _ in range(15):
        step = {}
        nlp.update(examples, sgd=optimizer, losses=step, exclude=["memcoref"], annotates=["memcoref"])
        losses.append(step["tagger"])
    assert losses[-1] < 0.5 * losses[0]
    assert nlp.get_pipe("memcoref").to_bytes() == before
    doc = nlp(texts[0])
    assert doc._.entity_vectors is not None and [t.tag_ for t in doc][:2] == ["PROPN", "X"]
