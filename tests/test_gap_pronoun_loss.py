"""s2e on GAP's sparse labels: a GAP Doc's gold is its pronoun, the name it
refers to and the one it does not (nothing else: rows whose pronoun refers
to neither or both give none); the loss is softplus of the wrong pair's
antecedent score minus the right one's, checked against the paper's four
bilinear terms by hand (mention scores left out); it trains the head; a
pipeline trained on OntoGUM-style Docs and GAP Docs in one batch learns
both."""

import pytest
import torch
from spacy.tokens import Doc
from spacy.training import Example

from spacy_memcoref.doc_helpers.gold import PronounGold, gap_pronoun_gold
from spacy_memcoref.models.thinc_glue import _head_module
from spacy_memcoref.models.s2e.pytorch_s2e import DISTANCE_BUCKET_EDGES, S2EDocument, S2EHead

from conftest import conll_f1, gap_examples, make_examples, s2e_config, s2e_head_args


def test_the_gold_of_each_sample_row():
    import spacy

    nlp = spacy.blank("en")
    golds = [gap_pronoun_gold(eg) for eg in gap_examples(nlp)]
    # "Anna Kovač met Maria Núñez in Zürich before she left": A is right
    assert golds[0] == (PronounGold(pronoun=(8, 8), right=(0, 1), wrong=(3, 4)), 0)
    # "Peter told John C. Smith that his car": B ("John C", expanded to the token "C.") is right
    assert golds[1] == (PronounGold(pronoun=(6, 6), right=(2, 3), wrong=(0, 0)), 0)
    # both candidates right (one person), neither right: nothing to choose between
    assert golds[2] == (None, 0) and golds[3] == (None, 0)


def test_other_tokens_align_by_characters():
    import spacy

    nlp = spacy.blank("en")
    eg = gap_examples(nlp)[0]
    # another tokenizer's tokens: "Kovač" in two, "in Zürich before" one token
    words = ["Anna", "Kova", "č", "met", "Maria", "Núñez", "in Zürich before", "she", "left for Kraków."]
    spaces = [True, False] + [True] * 6 + [False]
    predicted = Doc(nlp.vocab, words=words, spaces=spaces)
    assert predicted.text == eg.reference.text
    gold, missed = gap_pronoun_gold(Example(predicted, eg.reference))
    assert missed == 0 and gold == PronounGold(pronoun=(7, 7), right=(0, 2), wrong=(4, 5))


def _head() -> S2EHead:
    torch.manual_seed(0)
    head = S2EHead(**s2e_head_args(hidden_size=8, dropout=0.0, max_width=3, top_lambda=1.0, use_speakers=False))
    head(([S2EDocument(torch.zeros(3, 6))]), None)  # materialize the lazy layers
    return head


def _pair_by_hand(head: S2EHead, tokens: torch.Tensor, c: tuple, q: tuple) -> float:
    """f_a(c, q) of Kirstain et al. (2021), eq. 4, plus the distance bias: the
    four bilinear terms one by one (the head folds them into one product)."""
    a_s = head.antecedent_start(tokens)
    a_e = head.antecedent_end(tokens)
    cs, ce, qs, qe = a_s[c[0]], a_e[c[1]], a_s[q[0]], a_e[q[1]]
    score = (
        head.antecedent_s2s(qs) @ cs
        + head.antecedent_e2e(qe) @ ce
        + head.antecedent_s2e(qs) @ ce
        + head.antecedent_e2s(qe) @ cs
    )
    distance = max(0, q[0] - c[1])
    bucket = sum(1 for edge in DISTANCE_BUCKET_EDGES if distance > edge)
    return float(score + head.distance_bias[bucket])


@pytest.mark.parametrize(
    "gold",
    [
        PronounGold(pronoun=(9, 9), right=(0, 1), wrong=(4, 5)),  # both names before the pronoun
        PronounGold(pronoun=(3, 3), right=(6, 7), wrong=(0, 0)),  # the right one after it (cataphora)
        PronounGold(pronoun=(0, 0), right=(11, 11), wrong=(2, 4)),  # both after it
    ],
)
def test_loss_by_hand(gold):
    head = _head()
    tokens = torch.randn(12, 6, generator=torch.Generator().manual_seed(3))
    loss = float(head.document_loss(S2EDocument(tokens), gold))

    def f(span):
        first, second = sorted([span, gold.pronoun])
        return _pair_by_hand(head, tokens, first, second)

    right, wrong = f(gold.right), f(gold.wrong)
    expected = float(torch.nn.functional.softplus(torch.tensor(wrong - right)))
    assert loss == pytest.approx(expected, rel=1e-5, abs=1e-6)


def test_the_loss_trains_the_pair_scores_not_the_mention_scores():
    head = _head()
    tokens = torch.randn(12, 6, generator=torch.Generator().manual_seed(3))
    gold = PronounGold(pronoun=(9, 9), right=(4, 5), wrong=(0, 1))
    optimizer = torch.optim.Adam(head.parameters(), lr=0.01)
    losses = []
    for _ in range(60):
        optimizer.zero_grad()
        loss = head.document_loss(S2EDocument(tokens), gold)
        loss.backward()
        assert (
            head.mention_start_score.weight.grad is None or float(head.mention_start_score.weight.grad.abs().sum()) == 0
        )
        optimizer.step()
        losses.append(float(loss))
    assert losses[0] > 0.3 and losses[-1] < 0.05


def test_a_batch_of_cluster_docs_and_gap_docs_trains_both():
    """One pipeline, one batch: three Docs with clusters and the GAP sample
    (two rows with a choice, two without). The GAP rows' pair scores move
    to the right name, the cluster Docs still overfit."""
    import spacy
    from thinc.api import Adam, fix_random_seed

    fix_random_seed(0)
    nlp = spacy.blank("en")
    nlp.add_pipe("memcoref", config=s2e_config())
    examples = make_examples(nlp)
    gap = gap_examples(nlp)
    nlp.initialize(lambda: examples)
    model = nlp.get_pipe("memcoref").model
    head, make_gold = _head_module(model), model.attrs["make_gold"]

    def gap_margins():
        margins = []
        for eg in gap[:2]:
            gold, _ = make_gold(eg, "coref_clusters")
            with torch.no_grad():
                tokens = torch.from_numpy(model.layers[0].predict([eg.predicted])[0])
                margins.append(float(head.pronoun_loss(S2EDocument(tokens), gold)))
        return margins

    before = gap_margins()
    optimizer = Adam(0.003)
    for _ in range(40):
        losses = nlp.update(examples + gap, sgd=optimizer)
    after = gap_margins()
    assert all(b > 0.3 for b in before) and all(a < 0.05 for a in after), (before, after)
    assert losses["memcoref"] > 0
    assert conll_f1(nlp, examples) >= 0.95


def test_a_batch_with_nothing_to_learn_updates_nothing():
    """The sample's rows whose pronoun refers to both names or to neither:
    a loss of 0 and no weight moves."""
    import spacy
    from thinc.api import Adam, fix_random_seed

    fix_random_seed(0)
    nlp = spacy.blank("en")
    nlp.add_pipe("memcoref", config=s2e_config())
    nlp.initialize(lambda: make_examples(nlp))
    head = _head_module(nlp.get_pipe("memcoref").model)
    before = {name: p.detach().clone() for name, p in head.named_parameters()}
    losses = nlp.update(gap_examples(nlp)[2:], sgd=Adam(0.003))
    assert losses["memcoref"] == 0.0
    assert all(torch.equal(before[name], p) for name, p in head.named_parameters())
