"""s2e's optional span content (span_head_attention): an attention-weighted
average of each candidate's tokens enters the antecedent score.

Checked against a hand computation token by token; the antecedent score is
the four endpoint terms plus the head-to-head term; chunking the candidates
changes nothing; a pipeline with it overfits the three training documents
and round-trips through disk; off, the head has none of its parameters (so
pipelines saved without it load as before).
"""
import pytest
import spacy
import torch
from spacy.tokens import Doc

from spacy_memcoref.models.s2e.pytorch_s2e import S2EDocument, S2EHead

from conftest import TRAIN, assert_disk_round_trip, overfit_s2e, s2e_config, s2e_head_args

pytestmark = pytest.mark.usefixtures("one_torch_thread")

X = torch.tensor([[1.0, -1.0], [0.5, 2.0], [-1.5, 0.25], [0.3, 0.7], [2.0, -0.5]])


def _head(**options) -> S2EHead:
    torch.manual_seed(0)
    args = s2e_head_args(hidden_size=3, dropout=0.0, max_width=3, top_lambda=1.0, use_speakers=False, use_distance=False)
    args.update(options)
    head = S2EHead(**args)
    head([S2EDocument(torch.zeros(4, 2))], None)  # materialize the lazy layers
    with torch.no_grad():
        for p in head.parameters():
            p.copy_(torch.randn_like(p) * 0.5)
    return head.eval()


def _gelu_linear(seq, v):
    lin = seq[0]
    return torch.nn.functional.gelu(v @ lin.weight.T + lin.bias)


@torch.no_grad()
def test_span_content_is_the_attention_average_of_its_tokens():
    head = _head(span_head_attention=True)
    starts, ends = torch.tensor([0, 1, 2, 4]), torch.tensor([0, 3, 4, 4])
    got = head._span_heads(X, starts, ends)
    w, b = head.head_attention.weight[0], head.head_attention.bias[0]
    for k, (s, e) in enumerate(zip(starts.tolist(), ends.tolist())):
        logits = [float(X[t] @ w + b) for t in range(s, e + 1)]
        z = sum(torch.exp(torch.tensor(v)) for v in logits)
        expected = sum(float(torch.exp(torch.tensor(v)) / z) * _gelu_linear(head.antecedent_head, X[t])
                       for v, t in zip(logits, range(s, e + 1)))
        assert torch.allclose(got[k], expected, atol=1e-5), (s, e)
    # a one-token span is that token's projection
    assert torch.allclose(got[0], _gelu_linear(head.antecedent_head, X[0]), atol=1e-6)


def test_antecedent_score_adds_the_head_to_head_term():
    head = _head(span_head_attention=True)
    starts, ends = torch.tensor([0, 1, 3]), torch.tensor([0, 2, 4])
    queries, keys = head._antecedent_inputs(X, starts, ends)
    scores, _ = head._antecedent_chunk(queries, keys, torch.zeros(3), None, 0, 3)
    a_s = _gelu_linear(head.antecedent_start, X)[starts]
    a_e = _gelu_linear(head.antecedent_end, X)[ends]
    a_h = head._span_heads(X, starts, ends)

    def bil(layer, q, c):
        return float((layer.weight @ q + layer.bias) @ c)

    q, c = 2, 1
    expected = (
        bil(head.antecedent_s2s, a_s[q], a_s[c]) + bil(head.antecedent_e2e, a_e[q], a_e[c])
        + bil(head.antecedent_s2e, a_s[q], a_e[c]) + bil(head.antecedent_e2s, a_e[q], a_s[c])
        + bil(head.antecedent_h2h, a_h[q], a_h[c])
    )
    assert float(scores[q, c]) == pytest.approx(expected, abs=1e-5)


def test_the_attention_and_both_projections_get_gradients():
    head = _head(span_head_attention=True).train()
    starts, ends = torch.tensor([0, 1, 3]), torch.tensor([0, 2, 4])
    queries, keys = head._antecedent_inputs(X, starts, ends)
    scores, _ = head._antecedent_chunk(queries, keys, torch.zeros(3), None, 0, 3)
    scores[scores > -1e29].sum().backward()
    for name in ("head_attention", "antecedent_head", "antecedent_h2h"):
        grads = [p.grad for p in getattr(head, name).parameters()]
        assert all(g is not None and float(g.abs().sum()) > 0 for g in grads), name


def test_chunks_of_candidates_give_the_same_content():
    head = _head(span_head_attention=True)
    torch.manual_seed(3)
    x = torch.randn(40, 2)
    starts = torch.arange(0, 38)
    ends = torch.minimum(starts + torch.arange(38) % 3, torch.tensor(39))
    whole = head._span_heads(x, starts, ends)
    head.chunk_size = 7
    assert torch.allclose(head._span_heads(x, starts, ends), whole, atol=1e-6)
    assert head._span_heads(x, starts[:0], ends[:0]).shape == (0, 3)


def test_off_builds_none_of_its_parameters():
    plain = _head()
    assert plain.antecedent_head is None and plain.head_attention is None and plain.antecedent_h2h is None
    assert not any("head_attention" in k or "antecedent_h2h" in k for k in plain.state_dict())
    assert any("antecedent_h2h" in k for k in _head(span_head_attention=True).state_dict())


@pytest.fixture(scope="module")
def trained_with_span_heads():
    """(nlp, examples, losses): trained as conftest's trained_s2e, with span content."""
    return overfit_s2e(span_head_attention=True)


def test_a_pipeline_with_span_content_overfits_three_documents(trained_with_span_heads):
    nlp, examples, losses = trained_with_span_heads
    assert losses[-1] < 0.1 * losses[0], (losses[0], losses[-1])
    for eg, (_, gold) in zip(examples, TRAIN):
        doc = nlp(Doc(nlp.vocab, words=[t.text for t in eg.reference]))
        predicted = sorted(sorted((s.start, s.end - 1) for s in group) for group in doc.spans.values())
        assert predicted == sorted(sorted(c) for c in gold), eg.reference.text


def test_a_pipeline_with_span_content_round_trips(trained_with_span_heads, tmp_path):
    nlp, examples, _ = trained_with_span_heads
    assert_disk_round_trip(nlp, [eg.reference.text for eg in examples], tmp_path / "pipeline")


@pytest.mark.parametrize("value", ["yes", 1.5])
def test_span_head_attention_must_be_a_boolean(value):
    nlp = spacy.blank("en")
    with pytest.raises(ValueError, match="span_head_attention"):
        nlp.add_pipe("memcoref", config=s2e_config(span_head_attention=value))
