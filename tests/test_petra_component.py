"""PeTra in spaCy: the `memcoref_petra` component, its sparse GAP gold, the
memory log on Docs, serialization, the GAP scorer, and the CLI commands
tune-gap-threshold, count-people and visualize.

A small CNN tok2vec stands in for the transformer so the suite stays fast;
one test initializes the embedded MiniLM to check the last-four-layers
features.
"""

import math
import subprocess
import sys

import numpy
import pytest
import spacy
import srsly
import torch
from spacy.tokens import Doc, DocBin
from spacy.training import Example
from thinc.api import Adam, fix_random_seed
from typer.testing import CliRunner

from spacy_memcoref.cli import app
from spacy_memcoref.corpora.gap import read_gap
from spacy_memcoref.corpora.people import read_people_tsv
from spacy_memcoref.doc_helpers.memory_log import LOG_KEYS
from spacy_memcoref.doc_helpers.petra_gold import petra_sparse_target
from spacy_memcoref.errors import DataFormatError
from spacy_memcoref.scoring.calibration import CLASS_WEIGHT_SHIFT, calibrate
from spacy_memcoref.scoring.gap_decisions import (
    gap_decisions,
    gap_decisions_from_doc,
)
from spacy_memcoref.scoring.gap_spacy_scorer import score_gap_examples
from spacy_memcoref.tuning.gap import tune_gap_threshold
from spacy_memcoref.tuning.grid import PROBABILITY_GRID
from spacy_memcoref.tuning.people import choose_alpha

from conftest import GAP_SAMPLE, PETRA_CELLS, gap_examples, petra_config, spans_of

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def gap_docs(nlp):
    return list(read_gap(GAP_SAMPLE, nlp))


@pytest.fixture(scope="module")
def trained():
    """memcoref_petra (frozen CNN encoder, the default) overfit on the GAP sample."""
    fix_random_seed(0)
    nlp = spacy.blank("en")
    nlp.add_pipe("memcoref_petra", config=petra_config())
    examples = gap_examples(nlp)
    nlp.initialize(lambda: examples)
    optimizer = Adam(0.01)
    losses = [nlp.update(examples, sgd=optimizer)["memcoref_petra"] for _ in range(80)]
    return nlp, examples, losses


@pytest.fixture(scope="module")
def saved_model(trained, tmp_path_factory):
    nlp, _, _ = trained
    path = tmp_path_factory.mktemp("petra") / "model"
    nlp.to_disk(path)
    return path


@pytest.fixture(scope="module")
def gap_docbin(trained, tmp_path_factory):
    nlp, _, _ = trained
    path = tmp_path_factory.mktemp("gap") / "gap.spacy"
    docbin = DocBin(store_user_data=True)
    for doc in gap_docs(nlp):
        docbin.add(doc)
    docbin.to_disk(path)
    return path


def logs_of(docs):
    return [doc._.memory_log for doc in docs]


def assert_logs_equal(first, second, exact=True):
    assert len(first) == len(second)
    for a, b in zip(first, second):
        assert set(a) == set(b) == set(LOG_KEYS)
        for key in LOG_KEYS:
            assert a[key].dtype == b[key].dtype == numpy.float32
            if exact:
                assert numpy.array_equal(a[key], b[key]), key
            else:
                numpy.testing.assert_allclose(a[key], b[key], atol=1e-5, err_msg=key)


# ----- sparse gold ----------------------------------------------------------------


def test_gap_gold_spans_and_pairs():
    nlp = spacy.blank("en")
    by_id = {eg.reference.user_data["gap"]["id"]: eg for eg in gap_examples(nlp)}
    (spans, pairs), missed = petra_sparse_target(by_id["sample-1"], "coref_clusters")
    assert missed == 0
    # "Anna Kovač met Maria Núñez in Zürich before she left for Kraków."
    assert spans == [(0, 1), (3, 4), (8, 8)]
    assert pairs == [(0, 2, 1.0), (1, 2, 0.0), (0, 1, 0.0)]
    # both A and B corefer with the pronoun: A and B are one entity
    (_, pairs), _ = petra_sparse_target(by_id["sample-3"], "coref_clusters")
    assert pairs == [(0, 2, 1.0), (1, 2, 1.0), (0, 1, 1.0)]


def test_gap_gold_aligns_to_other_tokenization_by_expanding():
    nlp = spacy.blank("en")
    reference = next(d for d in gap_docs(nlp) if d.user_data["gap"]["id"] == "sample-2")
    # "Peter told John C. Smith that his car was ready." with "John C. Smith" one token
    words = ["Peter", "told", "John C. Smith", "that", "his", "car", "was", "ready", "."]
    spaces = [True] * 7 + [False, False]
    predicted = Doc(nlp.vocab, words=words, spaces=spaces)
    assert predicted.text == reference.text
    (spans, pairs), missed = petra_sparse_target(Example(predicted, reference), "coref_clusters")
    assert missed == 0
    assert spans == [(0, 0), (2, 2), (4, 4)]  # B "John C" expanded to the covering token
    assert pairs == [(0, 2, 0.0), (1, 2, 1.0), (0, 1, 0.0)]


def test_gold_from_full_clusters_and_none_without_annotation():
    nlp = spacy.blank("en")
    ref = Doc(nlp.vocab, words="Alice met Bob . She said he was late .".split())
    ref.spans["coref_clusters_1"] = [ref[0:1], ref[4:5]]
    ref.spans["coref_clusters_2"] = [ref[2:3], ref[6:7]]
    (spans, pairs), missed = petra_sparse_target(
        Example(Doc(nlp.vocab, words=[t.text for t in ref]), ref), "coref_clusters"
    )
    assert missed == 0 and spans == [(0, 0), (4, 4), (2, 2), (6, 6)]
    assert sorted(p for p in pairs if p[2] == 1.0) == [(0, 1, 1.0), (2, 3, 1.0)]
    assert len(pairs) == 6
    plain = Doc(nlp.vocab, words=["Hello", "."])
    assert petra_sparse_target(Example(plain, plain), "coref_clusters") == (None, 0)


# ----- training and prediction ------------------------------------------------------


def test_overfits_gap_docs_and_gets_links_right(trained):
    nlp, examples, losses = trained
    assert losses[-1] < 0.3 * losses[0]
    for doc in nlp.pipe(gap_docs(nlp)):
        gold = doc.user_data["gap"]
        probs = doc.user_data["gap_probs"]
        assert (probs["A"] >= 0.5, probs["B"] >= 0.5) == (gold["A-coref"], gold["B-coref"]), gold["id"]
        assert probs["threshold"] == 0.5
    scores = nlp.evaluate(examples)  # predicted Docs without GAP spans: the memory-log path
    assert scores["gap_f"] == 1.0


def test_frozen_encoder_gets_no_gradient():
    fix_random_seed(0)
    for freeze in (True, False):
        nlp = spacy.blank("en")
        pipe = nlp.add_pipe("memcoref_petra", config=petra_config(freeze_encoder=freeze))
        examples = gap_examples(nlp)
        nlp.initialize(lambda: examples)
        tok2vec = pipe.model.get_ref("tok2vec") if pipe.model.has_ref("tok2vec") else pipe.model.layers[0]
        embed = [node for node in tok2vec.walk() if node.name.startswith("hashembed")][0]
        before = embed.get_param("E").copy()
        nlp.update(examples, sgd=Adam(0.01))
        changed = not numpy.array_equal(before, embed.get_param("E"))
        assert changed is (not freeze)


def test_temperature_halves_on_schedule():
    fix_random_seed(0)
    nlp = spacy.blank("en")
    pipe = nlp.add_pipe("memcoref_petra", config=petra_config(temperature_halving_steps=2))
    examples = gap_examples(nlp)
    nlp.initialize(lambda: examples)
    head = pipe.model.layers[1].shims[0]._model
    taus = []
    for _ in range(5):
        nlp.update(examples, sgd=Adam(0.001))
        taus.append(head.petra.temperature)
    assert taus == [1.0, 1.0, 0.5, 0.5, 0.25]
    assert int(head.num_updates) == 5
    nlp("Prediction does not count as an update .")
    assert int(head.num_updates) == 5


def test_memory_log_shapes_and_token_usage(trained):
    nlp, _, _ = trained
    doc = nlp("Anna met Maria before she left .")
    log = doc._.memory_log
    assert log["entity"].shape == (len(doc),)
    for key in ("overwrite", "coref", "usage"):
        assert log[key].shape == (len(doc), PETRA_CELLS) and log[key].dtype == numpy.float32
    assert doc[3]._.memory_usage.shape == (PETRA_CELLS,)
    assert numpy.array_equal(doc[3]._.memory_usage, log["usage"][3])
    assert spacy.blank("en")("no log")[0]._.memory_usage is None
    assert "gap_probs" not in doc.user_data  # not a GAP Doc


def test_serialization_round_trip_gives_identical_logs(trained, saved_model):
    nlp, _, _ = trained
    texts = [doc.text for doc in gap_docs(nlp)]
    before = logs_of(nlp.pipe(texts))
    loaded = spacy.load(saved_model)
    assert_logs_equal(before, logs_of(loaded.pipe(texts)))
    from_bytes = spacy.blank("en")
    from_bytes.add_pipe("memcoref_petra", config=petra_config())
    from_bytes.from_bytes(nlp.to_bytes())
    assert_logs_equal(before, logs_of(from_bytes.pipe(texts)))
    assert [dict(d.spans).keys() for d in loaded.pipe(texts)] == [dict(d.spans).keys() for d in nlp.pipe(texts)]


def test_memory_log_survives_docbin_and_to_bytes(trained):
    nlp, _, _ = trained
    docs = list(nlp.pipe(gap_docs(nlp)))
    docbin = DocBin(store_user_data=True)
    for doc in docs:
        docbin.add(doc)
    restored = list(DocBin(store_user_data=True).from_bytes(docbin.to_bytes()).get_docs(nlp.vocab))
    assert_logs_equal(logs_of(docs), logs_of(restored))
    assert [d.user_data["gap_probs"] for d in restored] == [d.user_data["gap_probs"] for d in docs]
    assert restored[0][2]._.memory_usage.shape == (PETRA_CELLS,)
    copy = Doc(nlp.vocab).from_bytes(docs[0].to_bytes())
    assert_logs_equal(logs_of(docs[:1]), logs_of([copy]))
    # the arrays travel as typed numpy data, not lists
    raw = srsly.msgpack_loads(srsly.msgpack_dumps({"a": docs[0]._.memory_log["usage"]}))
    assert raw["a"].dtype == numpy.float32


def test_batch_equals_single(trained):
    nlp, _, _ = trained
    texts = [doc.text for doc in gap_docs(nlp)] + ["", "Hi", "She laughed and he left ."]
    single = [nlp(t) for t in texts]
    batched = list(nlp.pipe(texts, batch_size=4))
    assert_logs_equal(logs_of(single), logs_of(batched), exact=False)
    assert [spans_of(d) for d in single] == [spans_of(d) for d in batched]
    assert any(spans_of(d) for d in single)


def test_empty_and_one_token_docs(trained):
    nlp, _, _ = trained
    empty = nlp("")
    assert len(empty.spans) == 0
    assert empty._.memory_log["overwrite"].shape == (0, PETRA_CELLS)
    one = nlp("Hello")
    assert len(one.spans) == 0 and one._.memory_log["usage"].shape == (1, PETRA_CELLS)
    assert all(len(d) == 0 for d in nlp.pipe(["", ""]))
    # a one-token GAP Doc: A, B and the pronoun on the same token
    doc = Doc(nlp.vocab, words=["She"])
    doc.spans["gap"] = [doc.char_span(0, 3, label=label) for label in ("A", "B", "PRONOUN")]
    doc = nlp(doc)
    assert doc.user_data["gap_probs"]["A"] == 1.0
    # updating on empty docs works
    eg = Example(Doc(nlp.vocab), Doc(nlp.vocab))
    assert math.isfinite(nlp.get_pipe("memcoref_petra").update([eg])["memcoref_petra"])


def test_uninitialized_component_says_so():
    nlp = spacy.blank("en")
    nlp.add_pipe("memcoref_petra", config=petra_config())
    with pytest.raises(ValueError, match="not initialized"):
        nlp("Alice met Bob .")


@pytest.mark.parametrize(
    "override,message",
    [
        ({"hidden_size": 0}, "hidden_size"),
        ({"num_cells": 0}, "num_cells"),
        ({"mlp_size": -1}, "mlp_size"),
        ({"usage_decay": 0.0}, "usage_decay"),
        ({"usage_decay": 1.5}, "usage_decay"),
        ({"entity_loss_weight": -0.1}, "entity_loss_weight"),
        ({"dropout": 1.0}, "dropout"),
        ({"fixed_key_size": 32}, "fixed_key_size"),
        ({"temperature_halving_steps": -1}, "temperature_halving_steps"),
        ({"head_lr_scale": 0.0}, "head_lr_scale"),
        ({"entity_threshold": 0.0}, "entity_threshold"),
        ({"min_mentions": 0}, "min_mentions"),
        ({"encoder_layers": 0}, "encoder_layers"),
        ({"encoder_layers": 4}, "spacy-transformers encoder"),
        ({"encoder_layers": 4, "freeze_encoder": False}, "freeze_encoder"),
        ({"skip_top_layers": -1}, "skip_top_layers"),
        ({"skip_top_layers": 2}, "spacy-transformers encoder"),
        ({"skip_top_layers": 2, "freeze_encoder": False}, "freeze_encoder"),
    ],
)
def test_bad_config_values(override, message):
    nlp = spacy.blank("en")
    with pytest.raises(ValueError, match=message):
        nlp.add_pipe("memcoref_petra", config=petra_config(**override))


def test_bad_gap_threshold():
    nlp = spacy.blank("en")
    with pytest.raises(ValueError, match="gap_threshold"):
        nlp.add_pipe("memcoref_petra", config={**petra_config(), "gap_threshold": 1.5})


@pytest.mark.parametrize("value", [[1.0], [0.0, 1.0], [1.0, "x"]])
def test_bad_gap_calibration(value):
    nlp = spacy.blank("en")
    with pytest.raises(ValueError, match="gap_calibration"):
        nlp.add_pipe("memcoref_petra", config={**petra_config(), "gap_calibration": value})


def test_gap_probabilities_are_calibrated_and_the_log_path_agrees(trained):
    nlp, examples, _ = trained
    pipe = nlp.get_pipe("memcoref_petra")
    assert pipe.cfg["gap_calibration"] == [1.0, CLASS_WEIGHT_SHIFT]
    from_text = list(nlp.pipe([eg.predicted for eg in examples]))  # no GAP spans: the memory-log path
    with_spans = list(nlp.pipe(gap_docs(nlp)))  # GAP spans: stored gap_probs
    for doc_text, doc_gap, eg in zip(from_text, with_spans, examples):
        probs = doc_gap.user_data["gap_probs"]
        assert [probs["calibration_scale"], probs["calibration_shift"]] == pipe.cfg["gap_calibration"]
        for key in ("A", "B"):
            assert probs[key] == pytest.approx(calibrate(probs[f"{key}_raw"], pipe.cfg["gap_calibration"]))
        calibrated = (probs["A"], probs["B"])
        for t in (0.2, 0.5, 0.8):
            if min(abs(p - t) for p in calibrated) > 1e-4:
                assert gap_decisions(doc_text, eg.reference, threshold=t, calibration=pipe.cfg["gap_calibration"]) == (
                    gap_decisions(doc_gap, threshold=t)
                )


def test_memcoref_factory_takes_petra_model(trained):
    nlp = spacy.blank("en")
    pipe = nlp.add_pipe("memcoref", config=petra_config())
    nlp.initialize(lambda: gap_examples(nlp))
    doc = nlp("Anna met Maria before she left .")
    log = doc._.memory_log
    # PeTra's log through the s2e factory: the entity row [T], the rest [T, cells], probabilities
    assert set(log) == set(LOG_KEYS) and log["entity"].shape == (len(doc),)
    assert all(log[key].shape == (len(doc), PETRA_CELLS) for key in LOG_KEYS[1:])
    assert all(((log[key] >= 0) & (log[key] <= 1 + 1e-6)).all() for key in LOG_KEYS)
    assert "gap_threshold" not in pipe.cfg


# ----- GAP decisions, scorer, export -------------------------------------------------


def test_gap_decisions_use_probabilities_for_petra_and_clusters_for_s2e(trained):
    nlp, _, _ = trained
    doc = nlp(gap_docs(nlp)[0])  # sample-1: A TRUE, B FALSE
    assert gap_decisions_from_doc(doc) == (True, False)
    assert gap_decisions_from_doc(doc, threshold=0.0) == (True, True)
    doc.user_data["gap_probs"]["threshold"] = 1.01
    assert gap_decisions_from_doc(doc) == (False, False)
    s2e_like = gap_docs(nlp)[0]  # gold clusters, no probabilities: cluster overlap as before
    assert gap_decisions_from_doc(s2e_like) == (True, False)


def test_gap_scorer_paths_and_threshold(trained):
    nlp, examples, _ = trained
    predicted = list(nlp.pipe([eg.predicted for eg in examples]))
    annotated = [Example(p, eg.reference) for p, eg in zip(predicted, examples)]
    assert score_gap_examples(annotated)["gap_f"] == 1.0
    # threshold 0 links every candidate: precision drops
    assert score_gap_examples(annotated, threshold=0.0)["gap_p"] < 1.0
    # the component's cfg threshold reaches the scorer
    pipe = nlp.get_pipe("memcoref_petra")
    assert pipe.score(annotated, gap_threshold=0.0)["gap_p"] < 1.0
    # cluster fallback (s2e): gold clusters as predictions score 1.0
    gold_as_pred = [Example(eg.reference, eg.reference) for eg in examples]
    assert score_gap_examples(gold_as_pred)["gap_f"] == 1.0
    # no GAP annotation: GAP keys are None and coref metrics are reported
    ref = Doc(nlp.vocab, words="Alice met Bob . She smiled .".split())
    ref.spans["coref_clusters_1"] = [ref[0:1], ref[4:5]]
    scores = score_gap_examples([Example(ref, ref)])
    assert scores["gap_f"] is None and scores["coref_conll_f"] == 1.0


def test_tune_gap_threshold_picks_the_middle_of_the_best_run():
    gold = {"1": ("feminine", True, False), "2": ("masculine", False, True)}
    probs = {"1": (0.30, 0.10), "2": (0.05, 0.60)}
    best, table = tune_gap_threshold(gold, probs)
    assert len(table) == 100 and table[0][0] == 0.01 and table[-1][0] == 1.0
    # F1 = 1 for 0.11 <= t <= 0.30: the middle of the 20 tied thresholds
    assert best == 0.2
    assert dict(table)[best]["gap_f"] == 1.0


# ----- CLI ---------------------------------------------------------------------------

runner = CliRunner()


def test_tune_gap_threshold_command(saved_model, gap_docbin, tmp_path):
    out = tmp_path / "tuned"
    result = runner.invoke(app, ["tune-gap-threshold", str(saved_model), str(gap_docbin), "--output", str(out)])
    assert result.exit_code == 0, result.output
    summary = srsly.json_loads(result.output.strip().splitlines()[-1])
    assert summary["gap_f"] == 1.0
    assert "0.50" in result.output and "<- best" in result.output
    loaded = spacy.load(out)
    pipe = loaded.get_pipe("memcoref_petra")
    assert pipe.cfg["gap_threshold"] == summary["threshold"]
    assert loaded.config["components"]["memcoref_petra"]["gap_threshold"] == summary["threshold"]
    # Platt scaling was fitted and stored; the reliability tables count every candidate
    assert pipe.cfg["gap_calibration"] == summary["calibration"]
    assert loaded.config["components"]["memcoref_petra"]["gap_calibration"] == pytest.approx(summary["calibration"])
    assert summary["calibration"] != [1.0, CLASS_WEIGHT_SHIFT]
    n_candidates = 2 * len(gap_docs(loaded))
    for when in ("before", "after"):
        assert sum(row["n"] for row in summary["reliability"][when]["bins"]) == n_candidates
    assert summary["reliability"]["before"]["calibration"] == [1.0, CLASS_WEIGHT_SHIFT]
    doc = loaded(gap_docs(loaded)[0])
    assert doc.user_data["gap_probs"]["threshold"] == summary["threshold"]
    probs = doc.user_data["gap_probs"]
    assert [probs["calibration_scale"], probs["calibration_shift"]] == summary["calibration"]
    # --no-calibrate keeps the component's calibration
    kept = runner.invoke(
        app, ["tune-gap-threshold", str(saved_model), str(gap_docbin), "-o", str(tmp_path / "kept"), "--no-calibrate"]
    )
    assert kept.exit_code == 0, kept.output
    assert srsly.json_loads(kept.output.strip().splitlines()[-1])["calibration"] == [1.0, CLASS_WEIGHT_SHIFT]
    bad = runner.invoke(app, ["tune-gap-threshold", str(saved_model), str(tmp_path / "missing.spacy"), "-o", str(out)])
    assert bad.exit_code == 1 and "no such file" in bad.output


def _people_tsv(path, rows, header="ID\ttext\tcount"):
    path.write_text("\n".join([header] + rows) + "\n", encoding="utf-8")
    return path


def test_read_people_tsv_names_bad_lines(tmp_path):
    good = _people_tsv(tmp_path / "ok.tsv", ["a\tAnna met Maria .\t2", "b\tHe left .\t1"])
    assert [(r[1], r[3]) for r in read_people_tsv(good)] == [("a", 2), ("b", 1)]
    cases = [
        (["a\tAnna met Maria .\ttwo"], 2, "non-negative integer"),
        (["a\tAnna met Maria .\t2", "b\tonly two columns"], 3, "3 tab-separated columns"),
        (["a\tx\t1", "a\ty\t1"], 3, "duplicate ID"),
        (["\tx\t1"], 2, "ID is empty"),
    ]
    for rows, line, reason in cases:
        path = _people_tsv(tmp_path / "bad.tsv", rows)
        with pytest.raises(DataFormatError, match=reason) as info:
            read_people_tsv(path)
        assert info.value.line == line and info.value.path == str(path)
    (tmp_path / "empty.tsv").write_text("")
    with pytest.raises(DataFormatError, match="empty file"):
        read_people_tsv(tmp_path / "empty.tsv")


def test_choose_alpha_minimizes_wrong_counts():
    over = [numpy.array([[0.9, 0.0], [0.0, 0.35]]), numpy.array([[0.2, 0.0], [0.0, 0.0]])]
    alpha, table = choose_alpha(over, [2, 0])
    # 2 and 0 people: 0.21 <= alpha <= 0.35 counts both right
    assert 0.21 <= alpha <= 0.35 and dict((a, e) for a, e, _ in table)[alpha] == 0


def test_count_people_command(saved_model, tmp_path):
    rows = [
        ("p1", "Anna met Maria before she left .", 2),
        ("p2", "Peter told John that his car was ready .", 2),
        ("p3", "It rained .", 0),
    ]
    ids, texts, golds = zip(*rows)
    tsv = _people_tsv(tmp_path / "people.tsv", [f"{i}\t{text}\t{gold}" for i, text, gold in rows])
    result = runner.invoke(app, ["count-people", str(saved_model), str(tsv), "--alpha", "0.5"])
    assert result.exit_code == 0, result.output
    summary = srsly.json_loads(result.output.strip().splitlines()[-1])
    # the reference: the paper's count (tokens x cells with o >= alpha) on the
    # memory logs of the same pipeline, computed here with numpy
    overwrites = [numpy.asarray(doc._.memory_log["overwrite"]) for doc in spacy.load(saved_model).pipe(texts)]
    counts = [int((o >= 0.5).sum()) for o in overwrites]
    assert summary == {
        "alpha": 0.5,
        "docs": 3,
        "errors": sum(c != g for c, g in zip(counts, golds)),
        "mae": pytest.approx(sum(abs(c - g) for c, g in zip(counts, golds)) / 3),
    }
    for ex_id, gold, count in zip(ids, golds, counts):
        assert f"{ex_id:<20} {gold:5d} {count:5d} {count - gold:+5d}" in result.output
    out = tmp_path / "with_alpha"
    chosen = runner.invoke(app, ["count-people", str(saved_model), str(tsv), "--dev", str(tsv), "--output", str(out)])
    assert chosen.exit_code == 0, chosen.output
    alpha = srsly.json_loads(chosen.output.strip().splitlines()[-1])["alpha"]
    assert "chosen on 3 dev docs" in chosen.output
    # the chosen alpha: fewest wrong counts, then least absolute error, then the middle of the tied alphas
    counts_at = [[int((o >= a).sum()) for o in overwrites] for a in PROBABILITY_GRID]
    errors = [(sum(c != g for c, g in zip(at, golds)), sum(abs(c - g) for c, g in zip(at, golds))) for at in counts_at]
    tied = [a for a, e in zip(PROBABILITY_GRID, errors) if e == min(errors)]
    assert alpha == tied[(len(tied) - 1) // 2]
    stored = runner.invoke(app, ["count-people", str(out), str(tsv)])
    assert (
        "people_alpha" in stored.output and srsly.json_loads(stored.output.strip().splitlines()[-1])["alpha"] == alpha
    )
    bad = _people_tsv(tmp_path / "bad.tsv", ["p1\tAnna met Maria .\t2", "p2\tno count here"])
    failed = runner.invoke(app, ["count-people", str(saved_model), str(bad)])
    assert failed.exit_code == 1
    assert f"{bad}:3" in failed.output and "3 tab-separated columns" in failed.output


def test_visualize_command_writes_png_and_html(saved_model, gap_docbin, tmp_path):
    out = tmp_path / "viz"
    result = runner.invoke(
        app, ["visualize", str(saved_model), str(gap_docbin), str(out), "--limit", "2", "--wrap", "5"]
    )
    assert result.exit_code == 0, result.output
    pngs = sorted(out.glob("*.memory.png"))
    assert len(pngs) == 2
    assert pngs[0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    page = (out / "000_sample-1.html").read_text(encoding="utf-8")
    assert "OW 1" in page and "CR 4" in page and "sample-1" in page and "P(A, pronoun)" in page
    clusters = (out / "000_sample-1.clusters.html").read_text(encoding="utf-8")
    assert "cluster 1" in clusters and "Kova" in clusters
    assert (out / "index.html").exists()


def test_visualize_docs_without_memory_log_draws_clusters_only(tmp_path):
    from spacy_memcoref.visualize import visualize_docs

    nlp = spacy.blank("en")
    doc = Doc(nlp.vocab, words="Alice met Bob . She smiled at him .".split())
    doc.spans["coref_clusters_1"] = [doc[0:1], doc[4:5]]
    doc.spans["coref_clusters_2"] = [doc[2:3], doc[7:8]]
    doc.user_data["doc_id"] = "bc/cnn/00"
    written = visualize_docs([doc], tmp_path)
    assert not list(tmp_path.glob("*.png"))
    page = (tmp_path / "000_bc_cnn_00.clusters.html").read_text(encoding="utf-8")
    assert "cluster 1" in page and "cluster 2" in page
    assert tmp_path / "index.html" in written


# ----- registration, defaults, the real encoder ---------------------------------------


def test_entry_points_do_not_import_torch_modules():
    code = (
        "import sys, spacy_memcoref, spacy;"
        "spacy.registry.architectures.get('spacy_memcoref.PeTra.v1');"
        "spacy.registry.scorers.get('spacy_memcoref.gap_scorer.v1');"
        "import spacy_memcoref.pipeline.coref_component, spacy_memcoref.visualize;"
        "bad = [m for m in ('transformers', 'matplotlib', 'spacy_memcoref.models.petra.pytorch_petra',"
        " 'spacy_memcoref.models.thinc_glue') if m in sys.modules];"
        "print(bad); sys.exit(1 if bad else 0)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_default_petra_factory_uses_frozen_embedded_encoder_last_four_layers():
    nlp = spacy.blank("en")
    pipe = nlp.add_pipe("memcoref_petra")
    cfg = nlp.config["components"]["memcoref_petra"]
    assert cfg["model"]["@architectures"] == "spacy_memcoref.PeTra.v1"
    assert cfg["model"]["tok2vec"]["@architectures"] == "spacy_memcoref.EmbeddedTransformer.v1"
    assert cfg["model"]["encoder_layers"] == 4 and cfg["model"]["freeze_encoder"] is True
    assert cfg["scorer"]["@scorers"] == "spacy_memcoref.gap_scorer.v1"
    assert pipe.cfg["gap_threshold"] == 0.5


@pytest.mark.slow
def test_last_four_layers_of_the_embedded_encoder():
    """Initializes all-MiniLM-L6-v2 (a few seconds): the features are four
    layers wide and their last block is the encoder's own output."""
    nlp = spacy.blank("en")
    pipe = nlp.add_pipe("memcoref_petra")
    nlp.initialize()
    docs = [nlp.make_doc("Anna met Maria before she left ."), nlp.make_doc("Hi")]
    encoder = pipe.model.layers[0]
    four = encoder.predict(docs)
    encoder.attrs["encoder_layers"] = 1
    last = encoder.predict(docs)
    encoder.attrs["encoder_layers"] = 4
    assert [f.shape for f in four] == [(7, 4 * 384), (1, 4 * 384)]
    for f, g in zip(four, last):
        numpy.testing.assert_allclose(f[:, -384:], g, atol=1e-5)
    assert nlp(docs[0])._.memory_log["usage"].shape == (7, 10)


@pytest.mark.slow
def test_skip_top_layers_takes_the_layers_below_the_top():
    """encoder_layers = 2 with skip_top_layers = 3 are hidden states 2-3 of
    MiniLM's 7 (embeddings + 6 layers): the first two blocks of the last 5."""
    nlp = spacy.blank("en")
    pipe = nlp.add_pipe("memcoref_petra", config={"model": {"encoder_layers": 2, "skip_top_layers": 3}})
    nlp.initialize()
    docs = [nlp.make_doc("Anna met Maria before she left .")]
    encoder = pipe.model.layers[0]
    below = encoder.predict(docs)[0]
    encoder.attrs.update(encoder_layers=5, skip_top_layers=0)
    last_five = encoder.predict(docs)[0]
    with pytest.raises(ValueError, match="need 8 hidden states, but the transformer has only 7"):
        encoder.attrs.update(encoder_layers=3, skip_top_layers=5)
        encoder.predict(docs)
    assert below.shape == (7, 2 * 384)
    numpy.testing.assert_allclose(below, last_five[:, : 2 * 384], atol=1e-5)
    assert not numpy.allclose(below[:, -384:], last_five[:, -384:], atol=1e-3)


@pytest.mark.parametrize(
    "override, message",
    [({"layer_mix": True, "encoder_layers": 1}, "layer_mix"), ({"layer_mix": "yes"}, "layer_mix")],
)
def test_bad_layer_mix(override, message):
    nlp = spacy.blank("en")
    with pytest.raises(ValueError, match=message):
        nlp.add_pipe("memcoref_petra", config=petra_config(**override))


@pytest.mark.slow
def test_layer_mix_over_all_embedded_encoder_layers_learns_and_round_trips():
    """Initializes all-MiniLM-L6-v2: with layer_mix the GRU reads one
    384-wide mix of all 7 hidden states, whose weights learn, and the
    pipeline predicts the same after a round trip."""
    fix_random_seed(0)
    nlp = spacy.blank("en")
    nlp.add_pipe(
        "memcoref_petra", config={"model": {"encoder_layers": 7, "layer_mix": True, "hidden_size": 32, "mlp_size": 32}}
    )
    examples = gap_examples(nlp)
    nlp.initialize(lambda: examples)
    head = nlp.get_pipe("memcoref_petra").model.layers[1].shims[0]._model
    optimizer = Adam(0.01)
    for _ in range(3):
        nlp.update(examples, sgd=optimizer)
    assert head.petra.input_size == 384
    assert not torch.allclose(head.mix.weights.detach(), torch.zeros(7))
    docs = gap_docs(nlp)[:2]
    before = [nlp(doc.copy()) for doc in docs]
    restored = spacy.blank("en").from_config(nlp.config)
    restored.from_bytes(nlp.to_bytes())
    after = [restored(doc.copy()) for doc in docs]
    # close, not equal: the trained pipeline's frozen encoder reads these
    # texts from its cache, computed in training batches of other sizes
    # (the transformer's rounding depends on the batch, ~1e-7)
    assert_logs_equal(logs_of(before), logs_of(after), exact=False)
