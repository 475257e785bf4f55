"""s2e: the scoring maths by hand, training, serialization, edge cases.

A small CNN tok2vec stands in for the transformer so the suite stays fast;
the transformer path is exercised by the training smoke test and benchmarks.
"""

import math
import subprocess
import sys

import numpy
import pytest
import spacy
import torch
from spacy.tokens import Doc
from spacy.training import Example
from thinc.api import Adam, fix_random_seed

from spacy_memcoref.decoders.s2e import clusters_from_links
from spacy_memcoref.models.s2e.pytorch_s2e import S2EDocument, S2EHead

from conftest import assert_disk_round_trip, conll_f1, make_examples, s2e_config, s2e_head_args, spans_of

# trained_nlp (conftest): the pipeline overfit on the three TRAIN documents


# ----- the maths, by hand -------------------------------------------------------


def _small_head(hidden=2, max_width=2, top_lambda=1.0):
    torch.manual_seed(0)
    head = S2EHead(
        **s2e_head_args(hidden_size=hidden, dropout=0.0, max_width=max_width, top_lambda=top_lambda, use_speakers=False)
    )
    head(([S2EDocument(torch.zeros(3, 2))]), None)  # materialize the lazy layers
    with torch.no_grad():
        for p in head.parameters():
            p.copy_(torch.randn_like(p) * 0.5)
    return head.eval()


def test_mention_scores_match_hand_computation():
    head = _small_head()
    x = torch.tensor([[1.0, -1.0], [0.5, 2.0], [-1.5, 0.25]])
    starts, ends, scores = head.score_mentions(x, None)
    gelu = torch.nn.functional.gelu

    def proj(seq, v):
        lin = seq[0]
        return gelu(v @ lin.weight.T + lin.bias)

    ms, me = proj(head.mention_start, x), proj(head.mention_end, x)
    vs, ve, bm = head.mention_start_score, head.mention_end_score, head.mention_bilinear
    expected = {}
    for s in range(3):
        for e in range(s, min(3, s + 2)):
            # f_m = v_s.m_s + v_e.m_e + m_s^T B_m m_e (B_m's bias acts on m_e)
            f = (ms[s] @ vs.weight[0] + vs.bias[0]) + (me[e] @ ve.weight[0] + ve.bias[0])
            f = f + (bm.weight @ ms[s] + bm.bias) @ me[e]
            expected[(s, e)] = float(f.detach())
    got = {(int(s), int(e)): float(v) for s, e, v in zip(starts, ends, scores.detach())}
    assert set(got) == {(0, 0), (1, 1), (2, 2), (0, 1), (1, 2)}  # width <= 2 only
    for span, value in expected.items():
        assert got[span] == pytest.approx(value, abs=1e-5)


def test_antecedent_score_is_sum_of_four_bilinear_terms():
    head = _small_head(top_lambda=1.0)
    x = torch.tensor([[1.0, -1.0], [0.5, 2.0], [-1.5, 0.25]])
    starts = torch.tensor([0, 1, 2])
    ends = torch.tensor([0, 2, 2])
    queries, keys = head._antecedent_inputs(x, starts, ends)
    mention_scores = torch.tensor([0.1, -0.2, 0.3])
    scores, lo = head._antecedent_chunk(queries, keys, mention_scores, None, 0, 3)
    gelu = torch.nn.functional.gelu
    a_s = gelu(x @ head.antecedent_start[0].weight.T + head.antecedent_start[0].bias)[starts]
    a_e = gelu(x @ head.antecedent_end[0].weight.T + head.antecedent_end[0].bias)[ends]

    def bil(layer, q, c):
        return float((layer.weight @ q + layer.bias) @ c)

    q, c = 2, 0
    f_a = (
        bil(head.antecedent_s2s, a_s[q], a_s[c])
        + bil(head.antecedent_e2e, a_e[q], a_e[c])
        + bil(head.antecedent_s2e, a_s[q], a_e[c])
        + bil(head.antecedent_e2s, a_e[q], a_s[c])
    )
    assert lo == 0
    assert float(scores[q, c]) == pytest.approx(0.3 + 0.1 + f_a, abs=1e-5)
    # c must come before q: the diagonal and above are masked
    assert float(scores[0, 0]) < -1e29 and float(scores[1, 2]) < -1e29


def test_candidates_grow_with_width_not_length_squared():
    head = _small_head(max_width=5)
    for n in (1, 4, 50):
        starts, ends, _ = head.score_mentions(torch.randn(n, 2), None)
        w = min(5, n)
        assert len(starts) == n * w - w * (w - 1) // 2
        assert bool(((ends - starts) < 5).all())


def test_sentence_ids_keep_mentions_inside_sentences():
    head = _small_head(max_width=3)
    sent_ids = torch.tensor([0, 0, 1, 1, 1])
    starts, ends, _ = head.score_mentions(torch.randn(5, 2), sent_ids)
    assert all(int(sent_ids[s]) == int(sent_ids[e]) for s, e in zip(starts, ends))


def test_antecedent_window_bounds_the_columns():
    head = _small_head(top_lambda=1.0)
    head.max_antecedents = 2
    q = torch.randn(6, 8)
    scores, lo = head._antecedent_chunk(q, q, torch.zeros(6), None, 4, 6)
    assert lo == 2 and scores.shape == (2, 4)
    # query 4 may link to candidates 2 and 3 only; query 5 to 3 and 4
    valid = scores > -1e29
    assert valid.tolist() == [[True, True, False, False], [False, True, True, False]]


def test_loss_matches_marginal_likelihood_by_hand():
    head = _small_head(top_lambda=1.0)
    head.mention_loss_weight = 0.0
    x = torch.tensor([[1.0, -1.0], [0.5, 2.0], [-1.5, 0.25]])
    doc = S2EDocument(x)
    gold = [[(0, 0), (2, 2)]]
    loss = float(head.document_loss(doc, gold))
    (starts, ends, m, queries, keys, _), _, _ = head._candidates(doc)
    scores, _ = head._antecedent_chunk(queries, keys, m, None, 0, len(starts), starts, ends)
    expected = 0.0
    spans = list(zip(starts.tolist(), ends.tolist()))
    for qi, span in enumerate(spans):
        row = [float(scores[qi, ci]) for ci in range(qi)] + [0.0]
        gold_cols = [ci for ci in range(qi) if span == (2, 2) and spans[ci] == (0, 0)]
        if not gold_cols:
            gold_cols = [qi]  # null, the last entry
        lse = math.log(sum(math.exp(v) for v in row))
        gold_lse = math.log(sum(math.exp(row[c]) for c in gold_cols))
        expected += lse - gold_lse
    assert loss == pytest.approx(expected, rel=1e-5)


def test_clusters_from_links():
    starts, ends = [0, 2, 4, 6], [0, 3, 4, 6]
    assert clusters_from_links(starts, ends, [-1, -1, 0, 1]) == [[(0, 0), (4, 4)], [(2, 3), (6, 6)]]
    assert clusters_from_links(starts, ends, [-1, -1, -1, -1]) == []
    # a chain (3 -> 2 -> 1 -> 0) is one cluster of four
    assert clusters_from_links(starts, ends, [-1, 0, 1, 2]) == [[(0, 0), (2, 3), (4, 4), (6, 6)]]
    # several mentions choosing one antecedent join it
    assert clusters_from_links(starts, ends, [-1, 0, 0, 0]) == [[(0, 0), (2, 3), (4, 4), (6, 6)]]
    # two interleaved chains stay apart: each mention joins the cluster of its one antecedent
    starts6, ends6 = [0, 1, 2, 3, 4, 5], [0, 1, 2, 3, 4, 5]
    assert clusters_from_links(starts6, ends6, [-1, -1, 0, 1, 2, 4]) == [
        [(0, 0), (2, 2), (4, 4), (5, 5)],
        [(1, 1), (3, 3)],
    ]
    assert clusters_from_links(starts6, ends6, [-1, -1, 0, 1, 3, 2]) == [
        [(0, 0), (2, 2), (5, 5)],
        [(1, 1), (3, 3), (4, 4)],
    ]
    # clusters come in the order of their first mention, mentions sorted within
    assert clusters_from_links([5, 0, 7, 2], [5, 0, 7, 2], [-1, -1, 0, 1]) == [[(0, 0), (2, 2)], [(5, 5), (7, 7)]]


# ----- the component ------------------------------------------------------------


def test_loss_falls_and_overfits_three_documents(trained_nlp):
    nlp, examples, losses = trained_nlp
    assert losses[-1] < 0.1 * losses[0]
    assert conll_f1(nlp, examples) >= 0.95


def test_serialization_round_trip(trained_nlp, tmp_path):
    nlp, examples, _ = trained_nlp
    texts = [eg.reference.text for eg in examples]
    before = assert_disk_round_trip(nlp, texts, tmp_path / "pipeline")
    from_bytes = spacy.blank("en")
    from_bytes.add_pipe("memcoref", config=s2e_config())
    from_bytes.from_bytes(nlp.to_bytes())
    assert [spans_of(from_bytes(t)) for t in texts] == before


def test_batch_equals_single(trained_nlp):
    nlp, examples, _ = trained_nlp
    texts = [eg.reference.text for eg in examples] + ["", "Hi", "She laughed and he left ."]
    single = [spans_of(nlp(t)) for t in texts]
    batched = [spans_of(d) for d in nlp.pipe(texts, batch_size=4)]
    assert batched == single


def test_edge_cases(trained_nlp):
    nlp, _, _ = trained_nlp
    assert len(nlp("").spans) == 0
    assert len(nlp("Hello").spans) == 0
    doc = nlp("1 2 3 4 5 6 7 8 9")
    assert all(len(group) >= 2 for group in doc.spans.values())
    # re-running replaces the clusters instead of adding to them
    doc = nlp("Alice met Bob . She said he was late .")
    n_groups = len(doc.spans)
    doc = nlp.get_pipe("memcoref")(doc)
    assert len(doc.spans) == n_groups


def test_long_document(trained_nlp):
    nlp, _, _ = trained_nlp
    words = ("Alice met Bob . She said he was late . " * 2000).split()
    assert len(words) == 20000
    doc = nlp(Doc(nlp.vocab, words=words))
    spans = [s for group in doc.spans.values() for s in group]
    assert spans, "a 20k-token document of repeated sentences should get clusters"
    assert max(s.end for s in spans) > 15000  # the end of the document is not dropped


def test_update_with_differently_tokenized_gold_warns_once():
    nlp = spacy.blank("en")
    nlp.add_pipe("memcoref", config=s2e_config())
    ref = Doc(nlp.vocab, words=["Alice", "met", "Bob", ".", "She", "smiled", "."])
    ref.spans["coref_clusters_1"] = [ref[0:1], ref[4:5]]
    # predicted tokens merge "Alice met": the gold mention "Alice" cannot align
    pred = Doc(nlp.vocab, words=["Alice met", "Bob", ".", "She", "smiled", "."])
    eg = Example(pred, ref)
    nlp.initialize(lambda: [eg])
    with pytest.warns(UserWarning, match="do not align"):
        nlp.update([eg], sgd=Adam(0.001))
    losses = nlp.update([eg], sgd=Adam(0.001))
    assert math.isfinite(losses["memcoref"])


def test_uninitialized_component_says_so():
    nlp = spacy.blank("en")
    nlp.add_pipe("memcoref", config=s2e_config())
    with pytest.raises(ValueError, match="not initialized"):
        nlp("Alice met Bob .")


@pytest.mark.parametrize(
    "override,message",
    [
        ({"hidden_size": 0}, "hidden_size"),
        ({"dropout": 1.5}, "dropout"),
        ({"max_width": 0}, "max_width"),
        ({"top_lambda": 0.0}, "top_lambda"),
        ({"max_antecedents": 0}, "max_antecedents"),
        ({"head_lr_scale": -1.0}, "head_lr_scale"),
        ({"mention_loss_weight": -1.0}, "mention_loss_weight"),
        ({"encoder_layers": 0}, "encoder_layers"),
        ({"encoder_layers": 4}, "freeze_encoder"),
        ({"encoder_layers": 4, "freeze_encoder": True}, "spacy-transformers encoder"),
    ],
)
def test_bad_config_values(override, message):
    nlp = spacy.blank("en")
    with pytest.raises(ValueError, match=message):
        nlp.add_pipe("memcoref", config=s2e_config(**override))


def test_entry_points_import_neither_torch_modules_nor_transformers():
    code = (
        "import sys, spacy_memcoref, spacy;"
        "spacy.registry.architectures.get('spacy_memcoref.S2E.v1');"
        "spacy.registry.scorers.get('spacy_memcoref.coref_scorer.v1');"
        "import spacy_memcoref.pipeline.coref_component;"
        "bad = [m for m in ('transformers', 'spacy_memcoref.models.s2e.pytorch_s2e', 'spacy_memcoref.models.thinc_glue') if m in sys.modules];"
        "print(bad); sys.exit(1 if bad else 0)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_default_factory_config_uses_embedded_encoder():
    from spacy_memcoref.models.encoder.encoder import embedded_encoder_path

    nlp = spacy.blank("en")
    pipe = nlp.add_pipe("memcoref")
    cfg = nlp.config["components"]["memcoref"]["model"]
    assert cfg["@architectures"] == "spacy_memcoref.S2E.v1"
    assert cfg["tok2vec"]["@architectures"] == "spacy_memcoref.EmbeddedTransformer.v1"
    assert pipe.prefix == "coref_clusters"
    assert embedded_encoder_path().endswith("model")


def test_distance_bias_by_bucket():
    head = _small_head(top_lambda=1.0)
    with torch.no_grad():
        head.distance_bias.copy_(torch.arange(len(head.distance_bias), dtype=torch.float32))
    q = torch.zeros(4, 8)  # zero queries: only mention scores and distance remain
    starts = torch.tensor([0, 2, 9, 300])
    ends = torch.tensor([1, 3, 9, 301])
    scores, _ = head._antecedent_chunk(q, q, torch.zeros(4), None, 0, 4, starts, ends)
    # distance = start(q) - end(c), clamped at 0; buckets 0,1,2,3,4,5-7,8-15,16-31,...,256+
    assert float(scores[1, 0]) == 1.0  # 2 - 1 = 1 -> bucket 1
    assert float(scores[2, 1]) == 5.0  # 9 - 3 = 6 -> bucket 5-7, index 5
    assert float(scores[3, 2]) == 11.0  # 300 - 9 = 291 -> 256+ (last bucket)
    head.use_distance = False
    plain, _ = head._antecedent_chunk(q, q, torch.zeros(4), None, 0, 4, starts, ends)
    assert float(plain[3, 2]) == 0.0


def test_segment_bounds_cover_every_window_of_the_core():
    from spacy_memcoref.models.encoder.encoder import segment_bounds

    # window 128, stride 96: windows start at 0, 96, 192, ...; a core
    # [192, 384) is touched by the windows at 96..288, i.e. tokens 96..415
    assert segment_bounds(1000, 128, 96, 192) == [
        (0, 0, 192, 224),
        (96, 192, 384, 416),
        (288, 384, 576, 608),
        (480, 576, 768, 800),
        (672, 768, 960, 992),
        (864, 960, 1000, 1000),
    ]
    assert segment_bounds(100, 128, 96, 192) == [(0, 0, 100, 100)]
    # window = stride: no overlap, no context
    assert segment_bounds(10, 4, 4, 4) == [(0, 0, 4, 4), (4, 4, 8, 8), (8, 8, 10, 10)]


def test_segmented_encoding_equals_one_pass():
    """The embedded MiniLM on a 700-token document: segments of 192 tokens
    give the vectors of one pass (the windows each token sees are the same)."""
    from spacy_memcoref.models.encoder.encoder import SEGMENT_ATTR, build_embedded_transformer, encode_for_inference

    nlp = spacy.blank("en")
    words = [f"w{i % 37}" if i % 11 else "." for i in range(700)]
    doc = Doc(nlp.vocab, words=["Mary", "met", "John", "."] + words)
    short = Doc(nlp.vocab, words=["She", "smiled", "."])
    tok2vec = build_embedded_transformer(segment_tokens=192)
    tok2vec.initialize([doc])
    assert tok2vec.attrs[SEGMENT_ATTR] == (128, 96, 192)
    one_pass = tok2vec.predict([doc, short])
    segmented = encode_for_inference(tok2vec, [doc, short])
    assert segmented[0].shape == one_pass[0].shape == (len(doc), 384)
    numpy.testing.assert_allclose(segmented[0], one_pass[0], atol=2e-4)
    numpy.testing.assert_allclose(segmented[1], one_pass[1], atol=2e-4)
    # segmenting does change vectors if the context were cut at the core
    # boundary: check that the test could fail
    cut = tok2vec.predict([Doc(nlp.vocab, words=[t.text for t in doc[192:384]])])[0]
    assert numpy.abs(cut - one_pass[0][192:384]).max() > 1e-2


def test_bad_segment_tokens():
    from spacy_memcoref.models.encoder.encoder import build_embedded_transformer

    with pytest.raises(ValueError, match="segment_tokens"):
        build_embedded_transformer(segment_tokens=-5)


def test_frozen_encoder_trains_the_head_only():
    fix_random_seed(0)
    nlp = spacy.blank("en")
    nlp.add_pipe("memcoref", config=s2e_config(freeze_encoder=True))
    examples = make_examples(nlp)
    nlp.initialize(lambda: examples)
    model = nlp.get_pipe("memcoref").model
    tok2vec = model.layers[0]
    assert tok2vec.name == "frozen_encoder"
    encoder_before = [
        node.get_param(n).copy() for node in tok2vec.walk() for n in node.param_names if node.has_param(n)
    ]
    head = model.layers[1].shims[0]._model
    head_before = {k: v.detach().clone() for k, v in head.state_dict().items()}
    optimizer = Adam(0.003)
    losses = [nlp.update(examples, sgd=optimizer)["memcoref"] for _ in range(15)]
    encoder_after = [node.get_param(n) for node in tok2vec.walk() for n in node.param_names if node.has_param(n)]
    assert encoder_before and all(numpy.array_equal(a, b) for a, b in zip(encoder_before, encoder_after))
    assert any(not torch.equal(head_before[k], v) for k, v in head.state_dict().items())
    assert losses[-1] < losses[0]


def test_use_averages_reaches_the_torch_head():
    """`use_averages = true`: spaCy evaluates and saves inside
    nlp.use_params(optimizer.averages); the torch head must run with the
    averaged parameters there and with the trained ones again after."""
    fix_random_seed(0)
    nlp = spacy.blank("en")
    nlp.add_pipe("memcoref", config=s2e_config())
    examples = make_examples(nlp)
    nlp.initialize(lambda: examples)
    optimizer = Adam(0.003, use_averages=True)
    for _ in range(6):
        nlp.update(examples, sgd=optimizer)
    shim = nlp.get_pipe("memcoref").model.layers[1].shims[0]
    head = shim._model
    trained = {name: p.detach().clone() for name, p in head.named_parameters()}
    averages = {name: optimizer.averages[(shim.id, name)] for name in trained if (shim.id, name) in optimizer.averages}
    assert len(averages) >= len(trained) - 2, "most head parameters should have an average"
    assert any(not numpy.allclose(averages[name], trained[name].numpy()) for name in averages)
    with nlp.use_params(optimizer.averages):
        current = dict(head.named_parameters())
        for name, average in averages.items():
            numpy.testing.assert_array_equal(current[name].detach().numpy(), average)
        saved = nlp.to_bytes()
    for name, p in head.named_parameters():
        assert torch.equal(p.detach(), trained[name]), f"{name} was not restored"
    reloaded = spacy.blank("en")
    reloaded.add_pipe("memcoref", config=s2e_config())
    reloaded.initialize(lambda: examples)
    reloaded.from_bytes(saved)
    loaded = dict(reloaded.get_pipe("memcoref").model.layers[1].shims[0]._model.named_parameters())
    for name, average in averages.items():
        numpy.testing.assert_array_equal(loaded[name].detach().numpy(), average)


def test_segmented_last_layers_equal_one_pass():
    """PeTra's frozen encoder (last 4 layers concatenated) segments long
    documents the same way, with the same vectors as one pass."""
    from spacy_memcoref.models.encoder.encoder import SEGMENT_ATTR, build_embedded_transformer
    from spacy_memcoref.models.encoder.frozen_encoder import frozen_encoder

    nlp = spacy.blank("en")
    words = [f"v{i % 29}" if i % 13 else "." for i in range(500)]
    doc = Doc(nlp.vocab, words=words)
    frozen = frozen_encoder(build_embedded_transformer(segment_tokens=192), encoder_layers=4)
    frozen.initialize([doc])
    segmented = frozen.predict([doc])[0]
    frozen.layers[0].attrs[SEGMENT_ATTR] = None  # one pass
    one_pass = frozen.predict([doc])[0]
    assert segmented.shape == one_pass.shape == (len(doc), 4 * 384)
    numpy.testing.assert_allclose(segmented, one_pass, atol=2e-4)
