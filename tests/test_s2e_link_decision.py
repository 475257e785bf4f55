"""s2e's link decision: link_threshold at inference, learn_link_bias in training."""
import pytest
import spacy
import torch
from thinc.api import Adam, fix_random_seed

from spacy_memcoref.decoders.s2e import S2EDecoder, clusters_from_links
from spacy_memcoref.models.s2e.pytorch_s2e import LINK_BIAS_SCALE, S2EDocument, S2EHead

from conftest import assert_same_links, make_examples, s2e_config, s2e_head_args


def _head_and_doc(**options):
    torch.manual_seed(0)
    head = S2EHead(**s2e_head_args(hidden_size=8, dropout=0.0, max_width=3, top_lambda=1.0, use_speakers=False, **options))
    doc = S2EDocument(tokens=torch.randn(12, 6))
    head.eval()
    head.document_links(doc)  # sizes the lazy layers
    return head, doc


def _n_linked(clusters):
    return sum(len(c) for c in clusters)


def test_threshold_zero_is_the_null_decision_and_lower_links_more():
    head, doc = _head_and_doc()
    starts, ends, best, score = head.document_links(doc)
    # the head predicts the links; the decoder decides
    _, predictions = head([doc])
    prediction = predictions[0]
    assert prediction["links"] == (starts.tolist(), ends.tolist(), best.tolist(), score.tolist())
    # the choices: best first, the best one the link's
    choices, choice_scores = prediction["choices"]
    assert [row[:1] for row in choices] == [[b] if b >= 0 else [] for b in best.tolist()]
    assert all(row == sorted(row, reverse=True) for row in choice_scores)
    # the paper's decision: best antecedent when it beats the null score 0
    chosen = [b if s > 0 else -1 for b, s in zip(best.tolist(), score.tolist())]
    decoder = S2EDecoder(0.0)
    assert decoder.clusters(prediction) == clusters_from_links(starts.tolist(), ends.tolist(), chosen)
    counts = [_n_linked(decoder.clusters(prediction, threshold=t)) for t in (1e3, 0.0, -1e3)]
    assert counts[0] == 0
    assert counts[0] <= counts[1] <= counts[2]
    # every candidate with a preceding candidate links at a very low threshold: one cluster
    assert len(decoder.clusters(prediction, threshold=-1e3)) == 1
    decoder.configure({"link_threshold": -1e3})
    assert decoder.clusters(prediction) == decoder.clusters(prediction, threshold=-1e3)


def test_learned_link_bias_shifts_every_pair_score():
    head, doc = _head_and_doc(learn_link_bias=True)
    _, _, best, before = head.document_links(doc)
    with torch.no_grad():
        head.link_bias.fill_(0.5)
    _, _, best_after, after = head.document_links(doc)
    valid = best >= 0
    assert torch.equal(best, best_after)
    torch.testing.assert_close(after[valid], before[valid] + 0.5 * LINK_BIAS_SCALE)
    assert "link_bias" in head.state_dict()
    assert "link_bias" not in _head_and_doc()[0].state_dict()  # old pipelines load unchanged


def test_learned_link_bias_trains_and_round_trips(tmp_path):
    fix_random_seed(0)
    nlp = spacy.blank("en")
    nlp.add_pipe("memcoref", config=s2e_config(learn_link_bias=True, link_threshold=-0.5))
    examples = make_examples(nlp)
    nlp.initialize(lambda: examples)
    head = nlp.get_pipe("memcoref").model.layers[1].shims[0]._model
    optimizer = Adam(0.003)
    for _ in range(5):
        nlp.update(examples, sgd=optimizer)
    assert float(head.link_bias) != 0.0
    texts = [eg.reference.text for eg in examples]
    predicted = [{k: [s.text for s in g] for k, g in d.spans.items()} for d in nlp.pipe(texts)]
    nlp.to_disk(tmp_path / "model")
    loaded = spacy.load(tmp_path / "model")
    loaded_head = loaded.get_pipe("memcoref").model.layers[1].shims[0]._model
    assert float(loaded_head.link_bias) == float(head.link_bias)
    assert loaded.get_pipe("memcoref").decoder.link_threshold == -0.5
    assert [{k: [s.text for s in g] for k, g in d.spans.items()} for d in loaded.pipe(texts)] == predicted
    assert_same_links(nlp, loaded, texts)


@pytest.mark.parametrize(
    "override,message",
    [({"link_threshold": "low"}, "link_threshold"), ({"learn_link_bias": 1}, "learn_link_bias")],
)
def test_bad_link_options(override, message):
    nlp = spacy.blank("en")
    with pytest.raises(Exception, match=message):
        nlp.add_pipe("memcoref", config=s2e_config(**override))
