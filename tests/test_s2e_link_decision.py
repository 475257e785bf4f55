"""s2e's link decision: link_threshold at inference; the options removed
after 0.1.0 (learn_link_bias among them) load at their defaults only."""

import pytest
import spacy
import torch

from spacy_memcoref.decoders.s2e import S2EDecoder, clusters_from_links
from spacy_memcoref.models.s2e.pytorch_s2e import S2EDocument, S2EHead
from spacy_memcoref.models.s2e.s2e_model import REMOVED_OPTIONS

from conftest import s2e_config, s2e_head_args


def _head_and_doc(**options):
    torch.manual_seed(0)
    head = S2EHead(
        **s2e_head_args(hidden_size=8, dropout=0.0, max_width=3, top_lambda=1.0, use_speakers=False, **options)
    )
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
    assert prediction.links == (starts.tolist(), ends.tolist(), best.tolist(), score.tolist())
    # the choices: best first, the best one the link's
    choices, choice_scores = prediction.choices
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


@pytest.mark.parametrize(
    "override,message",
    [({"link_threshold": "low"}, "link_threshold")],
)
def test_bad_link_options(override, message):
    nlp = spacy.blank("en")
    with pytest.raises(Exception, match=message):
        nlp.add_pipe("memcoref", config=s2e_config(**override))


def test_removed_options_load_at_their_defaults():
    # what every pipeline saved by 0.1.0 names in its config
    nlp = spacy.blank("en")
    nlp.add_pipe("memcoref", config=s2e_config(**REMOVED_OPTIONS))
    assert nlp.get_pipe("memcoref").model is not None
    assert set(REMOVED_OPTIONS) == {
        "learn_link_bias",
        "singletons_as_mentions",
        "entity_type_loss_weight",
        "infstat_loss_weight",
        "span_head_attention",
    }


@pytest.mark.parametrize(
    "override",
    [
        {"learn_link_bias": True},
        {"singletons_as_mentions": True},
        {"entity_type_loss_weight": 1.0},
        {"infstat_loss_weight": 0.5},
        {"span_head_attention": True},
    ],
)
def test_removed_options_are_refused_at_any_other_value(override):
    (name,) = override
    nlp = spacy.blank("en")
    with pytest.raises(ValueError, match=rf"{name} was removed after spacy-memcoref 0.1.0.*cannot build"):
        nlp.add_pipe("memcoref", config=s2e_config(**override))
