"""s2e's auxiliary supervision from GUM's entity layer: the all-mentions
scorer, a training-only span scorer for every GUM mention.

Its loss overfits a tiny batch to ~0; a pipeline trained with it predicts
exactly what the same weights without it predict; on training Docs without
GUM's layer it learns their cluster mentions, with a warning; the gold is
aligned by characters when the tokens differ; on the shared OntoGUM train
files the gold carries every GUM mention.
"""

import itertools

import pytest
import spacy
import torch
from spacy.tokens import Doc, Span, SpanGroup
from spacy.training import Example
from thinc.api import Adam, fix_random_seed

from spacy_memcoref.doc_helpers.gold import GUM_INFSTAT_KEY, GUM_MENTIONS_KEY, MentionGold, gold_with_gum_mentions
from spacy_memcoref.models.s2e.pytorch_s2e import S2EDocument, S2EHead

from conftest import make_examples, s2e_config, s2e_head_args

# tiny tensors: one thread is several times faster than two fighting over them
pytestmark = pytest.mark.usefixtures("one_torch_thread")

# GUM-style mentions for conftest's TRAIN texts: (start, end, type, infstat);
# "late" and "profits" are singletons (in no cluster)
GUM_MENTIONS = [
    [(0, 0, "person", "new"), (2, 2, "person", "new"), (4, 4, "person", "giv:act"), (6, 6, "person", "giv:act")],
    [
        (0, 1, "organization", "new"),
        (3, 3, "organization", "giv:act"),
        (3, 4, "abstract", "new"),
        (7, 7, "organization", "giv:act"),
    ],
    [
        (0, 0, "person", "new"),
        (2, 2, "person", "new"),
        (6, 6, "person", "giv:act"),
        (8, 8, "person", "giv:act"),
        (11, 11, "person", "giv:act"),
    ],
]


def _with_gum_layer(examples):
    for eg, mentions in zip(examples, GUM_MENTIONS):
        ref = eg.reference
        spans = [Span(ref, s, e + 1, label=t) for s, e, t, _ in mentions]
        ref.spans[GUM_MENTIONS_KEY] = SpanGroup(ref, name=GUM_MENTIONS_KEY, spans=spans)
        statuses = [Span(ref, s, e + 1, label=i) for s, e, _, i in mentions]
        ref.spans[GUM_INFSTAT_KEY] = SpanGroup(ref, name=GUM_INFSTAT_KEY, spans=statuses)
    return examples


def _head(**options) -> S2EHead:
    torch.manual_seed(0)
    args = s2e_head_args(hidden_size=16, dropout=0.0, max_width=4, top_lambda=1.0, use_speakers=False)
    args.update(options)
    return S2EHead(**args)


def _tiny_gold():
    torch.manual_seed(1)
    doc = S2EDocument(torch.randn(8, 6))
    gold = MentionGold(clusters=[[(0, 0), (5, 5)]], mentions=[(0, 0), (2, 3), (5, 5), (7, 7)])
    return doc, gold


def _overfit(head: S2EHead, loss_fn, steps: int = 200) -> float:
    loss_fn()  # materialize the lazy layers before the optimizer sees them
    optimizer = torch.optim.Adam(head.parameters(), lr=0.02)
    for _ in range(steps):
        optimizer.zero_grad()
        loss = loss_fn()
        loss.backward()
        optimizer.step()
    return float(loss_fn())


def test_the_all_mentions_scorer_learns_every_gum_mention_apart_from_the_mention_score():
    doc, gold = _tiny_gold()
    plain = _head(mention_loss_weight=1.0)
    with_scorer = _head(mention_loss_weight=1.0, all_mentions_loss_weight=1.0)
    plain([doc], None)
    with_scorer([doc], None)
    shared = {k: v for k, v in plain.state_dict().items()}
    with_scorer.load_state_dict(shared, strict=False)
    # the mention score, the candidates and the pair scores are the plain head's
    for a, b in zip(plain.score_mentions(doc.tokens, None), with_scorer.score_mentions(doc.tokens, None)):
        assert torch.equal(a, b)
    # the loss adds exactly the separate scorer's cross-entropy against every GUM mention
    extra = float(with_scorer.document_loss(doc, gold)) - float(plain.document_loss(doc, gold.clusters))
    assert extra == pytest.approx(float(_all_mentions_bce(with_scorer, doc, gold)), rel=1e-4)
    # and that cross-entropy goes to ~0 on the tiny batch
    _overfit(with_scorer, lambda: with_scorer.document_loss(doc, gold), steps=300)
    assert float(_all_mentions_bce(with_scorer, doc, gold)) < 0.05


def _all_mentions_bce(head: S2EHead, doc: S2EDocument, gold: MentionGold) -> torch.Tensor:
    """The separate scorer's loss, span by span: v_s.m^s + v_e.m^e + (B m^s).m^e
    against "is a GUM mention", over spans of width <= max_width (4), / max_width."""
    scorer = head.all_mentions_scorer
    m_start, m_end = head._score_mentions(doc.tokens, None)[1]
    n = doc.tokens.shape[0]
    scores, targets = [], []
    for s in range(n):
        for e in range(s, min(n, s + 4)):
            scores.append(
                scorer["start"](m_start[s])[0]
                + scorer["end"](m_end[e])[0]
                + (scorer["bilinear"](m_start[s]) * m_end[e]).sum()
            )
            targets.append(float((s, e) in gold.mentions))
    bce = torch.nn.functional.binary_cross_entropy_with_logits(
        torch.stack(scores), torch.tensor(targets), reduction="sum"
    )
    return bce.detach() / 4


def test_the_all_mentions_scorer_learns_the_cluster_mentions_where_there_is_no_gum_layer():
    doc, gold = _tiny_gold()
    head = _head(mention_loss_weight=1.0, all_mentions_loss_weight=1.0)
    assert head.reads_gum_layer
    clusters_only = MentionGold(gold.clusters)  # what the gold hook gives a Doc without the layer
    # clusters alone and an empty GUM layer are the same gold: every mention is a cluster mention
    assert float(head.document_loss(doc, gold.clusters)) == pytest.approx(float(head.document_loss(doc, clusters_only)))
    _overfit(head, lambda: head.document_loss(doc, gold.clusters), steps=300)
    targets = MentionGold(gold.clusters, mentions=[span for cluster in gold.clusters for span in cluster])
    assert float(_all_mentions_bce(head, doc, targets)) < 0.05


def test_training_docs_without_the_gum_layer_train_the_all_mentions_scorer_with_one_warning():
    from spacy_memcoref.doc_helpers.gold import NoGumLayerWarning

    nlp = spacy.blank("en")
    nlp.add_pipe("memcoref", config=s2e_config(all_mentions_loss_weight=1.0))
    examples = make_examples(nlp)  # clusters, no GUM layer
    nlp.initialize(lambda: examples)
    with pytest.warns(NoGumLayerWarning, match=r"without doc.spans\['gum_mentions'\].*--gum-entities") as caught:
        losses = nlp.update(examples)
    assert losses["memcoref"] > 0
    # one message for the whole batch: it names no document, so the default filter shows it once
    assert len({str(w.message) for w in caught if issubclass(w.category, NoGumLayerWarning)}) == 1


# ----- the pipeline -------------------------------------------------------------------

AUX = {"all_mentions_loss_weight": 1.0}


def _trained(options, steps=12):
    fix_random_seed(0)
    nlp = spacy.blank("en")
    nlp.add_pipe("memcoref", config=s2e_config(**options))
    examples = _with_gum_layer(make_examples(nlp))
    optimizer = Adam(0.01)
    nlp.initialize(lambda: examples)
    for _ in range(steps):
        nlp.update(examples, sgd=optimizer)
    return nlp, examples


def test_a_pipeline_trained_with_the_scorer_predicts_as_one_without_it(tmp_path):
    nlp, examples = _trained(AUX)
    head = _head_module(nlp)
    assert head.all_mentions_scorer is not None
    texts = [eg.reference.text for eg in examples] + ["Mary saw her brother . He waved at her ."]
    predicted = [_clusters(doc) for doc in nlp.pipe(texts)]
    assert any(predicted), "the tiny pipeline should predict some clusters"
    # it survives a save and load, auxiliary weights and all
    nlp.to_disk(tmp_path / "aux")
    assert [_clusters(doc) for doc in spacy.load(tmp_path / "aux").pipe(texts)] == predicted
    # the same weights without the scorer predict the same clusters
    head.all_mentions_scorer = None
    assert not head.reads_gum_layer
    assert [_clusters(doc) for doc in nlp.pipe(texts)] == predicted


def _head_module(nlp) -> S2EHead:
    for node in nlp.get_pipe("memcoref").model.walk():
        for shim in node.shims:
            if isinstance(getattr(shim, "_model", None), S2EHead):
                return shim._model
    raise AssertionError("no S2EHead in the model")


def _clusters(doc: Doc):
    return sorted(
        sorted((s.start, s.end) for s in group) for key, group in doc.spans.items() if key.startswith("coref_clusters")
    )


@pytest.mark.parametrize(
    "options, message",
    [
        ({"all_mentions_loss_weight": -0.5}, "all_mentions_loss_weight must be >= 0"),
    ],
)
def test_bad_options_are_refused(options, message):
    nlp = spacy.blank("en")
    with pytest.raises(Exception, match=message):
        nlp.add_pipe("memcoref", config=s2e_config(**options))


# ----- the gold -----------------------------------------------------------------------


def test_gold_is_aligned_by_characters_when_the_tokens_differ():
    nlp = spacy.blank("en")
    ref = Doc(nlp.vocab, words=["Mary", "'s", "dog", "barked", "."], spaces=[False, True, True, False, False])
    ref.spans["coref_clusters_1"] = [ref[0:1], ref[0:3]]
    ref.spans[GUM_MENTIONS_KEY] = SpanGroup(
        ref, name=GUM_MENTIONS_KEY, spans=[Span(ref, 0, 1, label="person"), Span(ref, 0, 3, label="animal")]
    )
    ref.spans[GUM_INFSTAT_KEY] = SpanGroup(
        ref, name=GUM_INFSTAT_KEY, spans=[Span(ref, 0, 1, label="new"), Span(ref, 0, 3, label="new")]
    )
    predicted = Doc(nlp.vocab, words=["Mary's", "dog", "barked."], spaces=[True, True, False])
    gold, missed = gold_with_gum_mentions(Example(predicted, ref), "coref_clusters")
    # "Mary" alone is not a predicted token: left out and counted, in the clusters and the mentions
    assert missed == 2
    assert gold.mentions == [(0, 1)]
    assert gold.clusters == [[(0, 1)]]


def test_the_gold_on_the_shared_ontogum_train_files_carries_every_gum_mention(shared_data):
    from spacy_memcoref.corpora.conll import read_conll_docs
    from spacy_memcoref.corpora.gum_entities import attach_gum_entities, read_gum_entities

    gum = read_gum_entities(shared_data / "gum_dep")
    nlp = spacy.blank("en")
    docs = list(itertools.islice(read_conll_docs(shared_data / "ontogum" / "train", nlp.vocab), 5))
    docs = attach_gum_entities(docs, gum)
    for doc in docs:
        gold, missed = gold_with_gum_mentions(
            Example(Doc(nlp.vocab, words=[t.text for t in doc], spaces=[bool(t.whitespace_) for t in doc]), doc),
            "coref_clusters",
        )
        gum_doc = gum[doc.user_data["doc_id"]]
        assert missed == 0
        assert gold.mentions == [(m.start, m.end - 1) for m in gum_doc.mentions]
        n_singletons = len(gum_doc.singletons())
        assert 0 < n_singletons < len(gold.mentions)
