"""The gender mirror (the memcoref component's `gender_mirror` setting): s2e
reads each Doc as it is and with its gendered words swapped, and decides by
the mean of the two readings' scores, so that a text and its mirror get the
same decisions."""

import pytest
import spacy
import torch
from conftest import s2e_config, s2e_head_args, spans_of
from spacy.tokens import Doc

from spacy_memcoref.corpora.gender_swap import gender_mirror_doc
from spacy_memcoref.models.s2e.pytorch_s2e import S2EDocument, S2EHead

# every swapped word here swaps back to itself (he <-> she, John <-> Patricia,
# father <-> mother), so the mirror's mirror is the text again
TEXT = "John told his mother that he would call her after the game ."
MIRROR = "Patricia told her father that she would call him after the game ."


def test_mirror_doc_swaps_words_and_keeps_tokens_spaces_and_sentences():
    vocab = spacy.blank("en").vocab
    words = TEXT.split()
    doc = Doc(
        vocab,
        words=words,
        spaces=[True] * (len(words) - 2) + [False, False],
        sent_starts=[True] + [False] * (len(words) - 1),
    )
    mirror = gender_mirror_doc(doc)
    assert [t.text for t in mirror] == MIRROR.split()
    assert [t.whitespace_ for t in mirror] == [t.whitespace_ for t in doc]
    assert [t.is_sent_start for t in mirror] == [t.is_sent_start for t in doc]
    assert [t.text for t in gender_mirror_doc(mirror)] == words
    assert not mirror.spans and not mirror.user_data


def _head_and_docs(seed: int = 0):
    torch.manual_seed(seed)
    head = S2EHead(**s2e_head_args(hidden_size=16, dropout=0.0, max_width=4, top_lambda=0.5))
    head.eval()
    a, b = torch.randn(12, 8), torch.randn(12, 8)
    head.prediction(S2EDocument(tokens=a))  # the lazy layers take their width
    return head, a, b


def _choices(head, tokens, mirror=None):
    prediction = head.prediction(S2EDocument(tokens=tokens, mirror=mirror))
    return prediction.links[:2], prediction.choices


def test_head_decides_the_same_for_a_reading_and_its_mirror():
    head, a, b = _head_and_docs()
    # without the mirror the two readings decide differently: the check below could fail
    assert _choices(head, a) != _choices(head, b)
    head.gender_mirror = True
    assert _choices(head, a, mirror=b) == _choices(head, b, mirror=a)


def test_head_scores_are_the_mean_of_the_two_readings():
    """An independent reference: with one candidate set (one-token spans and
    top_lambda 1 keep every span in every reading), each pair's score is the
    mean of the pair's scores in the two readings."""
    torch.manual_seed(1)
    head = S2EHead(**s2e_head_args(hidden_size=16, dropout=0.0, max_width=1, top_lambda=1.0))
    head.eval()
    a, b = torch.randn(6, 8), torch.randn(6, 8)
    _, _, choices_a, scores_a = head.document_choices(S2EDocument(tokens=a), k=200)
    _, _, choices_b, scores_b = head.document_choices(S2EDocument(tokens=b), k=200)
    head.gender_mirror = True
    _, _, choices_m, scores_m = head.document_choices(S2EDocument(tokens=a, mirror=b), k=200)

    def by_pair(choices, scores):
        return {
            (q, int(c)): float(s)
            for q, (row, row_scores) in enumerate(zip(choices, scores))
            for c, s in zip(row, row_scores)
            if c >= 0
        }

    pairs_a, pairs_b, pairs_m = by_pair(choices_a, scores_a), by_pair(choices_b, scores_b), by_pair(choices_m, scores_m)
    assert pairs_m and set(pairs_m) == set(pairs_a) == set(pairs_b)
    for pair, score in pairs_m.items():
        assert score == pytest.approx((pairs_a[pair] + pairs_b[pair]) / 2, abs=1e-4)


def test_head_off_ignores_a_mirror():
    head, a, b = _head_and_docs()
    assert _choices(head, a, mirror=b) == _choices(head, a)


def test_component_gives_a_text_and_its_mirror_the_same_clusters(trained_s2e):
    nlp = spacy.load(trained_s2e.path)
    pipe = nlp.get_pipe("memcoref")
    docs = [nlp.make_doc(TEXT), nlp.make_doc(MIRROR)]
    off = pipe.predict(docs)
    assert off[0].links != off[1].links or off[0].choices != off[1].choices
    pipe.gender_mirror = True
    on = pipe.predict(docs)
    assert on[0] == on[1]
    assert any(on[0].links[0])


def test_setting_round_trips_and_predicts_the_same(trained_s2e, tmp_path):
    runtime = spacy.load(trained_s2e.path)
    runtime.get_pipe("memcoref").gender_mirror = True
    built = spacy.blank("en")
    built.add_pipe("memcoref", config={**s2e_config(), "gender_mirror": True})
    built.from_disk(trained_s2e.path)
    built.to_disk(tmp_path / "mirror")
    loaded = spacy.load(tmp_path / "mirror")
    assert loaded.config["components"]["memcoref"]["gender_mirror"] is True
    assert loaded.get_pipe("memcoref").gender_mirror is True
    assert spans_of(loaded(TEXT)) == spans_of(runtime(TEXT))
    doc = nlp_doc = loaded.make_doc(TEXT)
    assert loaded.get_pipe("memcoref").predict([doc]) == runtime.get_pipe("memcoref").predict([nlp_doc])


@pytest.mark.parametrize("value", ["yes", 1, None])
def test_setting_must_be_a_bool(trained_s2e, value):
    from spacy_memcoref.pipeline.coref_component import CorefComponent

    model = spacy.load(trained_s2e.path).get_pipe("memcoref").model
    with pytest.raises(ValueError, match="gender_mirror must be true or false"):
        CorefComponent(spacy.blank("en").vocab, model, "memcoref", gender_mirror=value)


def test_a_doc_without_gendered_words_is_read_once(trained_s2e, monkeypatch):
    from spacy_memcoref.models import thinc_glue

    nlp = spacy.load(trained_s2e.path)
    pipe = nlp.get_pipe("memcoref")
    docs = [nlp.make_doc("The company said its profits rose . It was happy .")]
    off = pipe.predict(docs)
    calls = []
    encode = thinc_glue.encode_for_inference
    monkeypatch.setattr(
        thinc_glue, "encode_for_inference", lambda model, batch: calls.append(len(batch)) or encode(model, batch)
    )
    pipe.gender_mirror = True
    assert pipe.predict(docs) == off
    assert calls == [1]
    pipe.predict([nlp.make_doc(TEXT)])
    assert calls == [1, 1, 1]


def test_petra_gap_pair_takes_the_mean_of_the_two_readings():
    """PeTra reads a GAP text's mirror too: its pair's link probabilities are
    the mean of the text's and the mirror's, each read alone."""
    from conftest import gap_examples, petra_config

    from spacy_memcoref.corpora.gender_swap import gender_swapped_doc, swap_gender_words

    torch.manual_seed(0)
    nlp = spacy.blank("en")
    pipe = nlp.add_pipe("memcoref_petra", config=petra_config())
    examples = gap_examples(nlp)
    nlp.initialize(lambda: examples)
    doc = examples[0].reference.copy()
    words = swap_gender_words([t.text for t in doc], nouns=True, names=True)
    assert words != [t.text for t in doc]
    mirror = gender_swapped_doc(doc, words)  # keeps the GAP spans, so it reads as a GAP text of its own
    alone = pipe.predict([doc])[0].gap
    mirrored_alone = pipe.predict([mirror])[0].gap
    assert alone != mirrored_alone
    pipe.gender_mirror = True
    both = pipe.predict([doc])[0].gap
    assert both == pytest.approx(((alone[0] + mirrored_alone[0]) / 2, (alone[1] + mirrored_alone[1]) / 2), abs=1e-6)
    # a Doc with no GAP pair: nothing of the mirror is read, nor encoded
    from spacy_memcoref.models import thinc_glue

    plain = nlp.make_doc(doc.text)
    calls = []
    encode = thinc_glue.encode_for_inference
    thinc_glue.encode_for_inference = lambda model, batch: calls.append(len(batch)) or encode(model, batch)
    try:
        pipe.predict([plain])
    finally:
        thinc_glue.encode_for_inference = encode
    assert calls == [1]


def test_a_model_without_a_mirror_is_refused(trained_s2e):
    from spacy_memcoref.pipeline.coref_component import CorefComponent

    model = spacy.load(trained_s2e.path).get_pipe("memcoref").model
    model.layers[1].shims[0]._model.__dict__.pop("gender_mirror")  # a head of another kind
    with pytest.raises(ValueError, match="cannot read a gender mirror"):
        CorefComponent(spacy.blank("en").vocab, model, "memcoref", gender_mirror=True)


def test_a_wrapper_with_the_models_attrs_reads_no_mirror(trained_s2e):
    """A model of another form that took this model's hooks (as tests and
    wrappers do) has no head to tell: off is nothing, on is refused."""
    from thinc.api import Model

    real = spacy.load(trained_s2e.path).get_pipe("memcoref").model
    wrapper = Model("wrapper", lambda model, X, is_train: (real.predict(X), lambda d: d), attrs=dict(real.attrs))
    wrapper.attrs["set_gender_mirror"](wrapper, False)
    with pytest.raises(ValueError, match="cannot read a gender mirror"):
        wrapper.attrs["set_gender_mirror"](wrapper, True)
