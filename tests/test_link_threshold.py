"""tune-link-threshold: s2e's link threshold chosen on dev data."""

import json

import spacy
from spacy.tokens import DocBin
from typer.testing import CliRunner

from spacy_memcoref.cli import app
from spacy_memcoref.tuning.link_threshold import best_threshold, predict_each, scores_by_threshold
from spacy_memcoref.scoring.spacy_scorer import score_coref_examples

from conftest import assert_user_error


def _saved_with_dev(nlp, examples, tmp_path):
    """The pipeline saved to tmp_path/trained and its examples' gold Docs as tmp_path/dev.spacy."""
    trained = tmp_path / "trained"
    nlp.to_disk(trained)
    dev = tmp_path / "dev.spacy"
    DocBin(docs=[eg.reference for eg in examples]).to_disk(dev)
    return trained, dev


def test_each_threshold_scores_as_the_pipeline_would_predict(trained_nlp):
    nlp, examples, _ = trained_nlp
    pipe = nlp.get_pipe("memcoref")
    predictions = predict_each(pipe, [eg.predicted for eg in examples])
    table = scores_by_threshold(pipe, examples, predictions, [-1e3, 0.0, 1e3])
    for threshold in (-1e3, 0.0, 1e3):
        pipe.decoder.configure({"link_threshold": threshold})
        predicted = [eg.predicted.copy() for eg in examples]
        for doc in nlp.get_pipe("memcoref").pipe(predicted):
            pass
        from spacy.training import Example

        again = score_coref_examples([Example(p, eg.reference) for p, eg in zip(predicted, examples)])
        assert abs(again["coref_conll_f"] - table[threshold]["coref_conll_f"]) < 1e-9
    pipe.decoder.configure({"link_threshold": 0.0})
    assert table[1e3]["coref_conll_f"] == 0.0  # nothing links
    assert table[0.0]["coref_conll_f"] > 0.9  # the overfit model at the paper's decision


def test_best_threshold_prefers_the_score_then_zero():
    def row(f):
        return {"coref_conll_f": f}

    assert best_threshold({-2.0: row(0.5), -1.0: row(0.6), 0.0: row(0.4)}) == -1.0
    assert best_threshold({-1.0: row(0.6), 0.0: row(0.6), 1.0: row(0.6)}) == 0.0
    assert best_threshold({-2.0: row(0.6), -0.5: row(0.6), 1.0: row(0.1)}) == -0.5


def test_cli_stores_the_best_threshold(trained_nlp, tmp_path):
    nlp, examples, _ = trained_nlp
    model, dev = _saved_with_dev(nlp, examples, tmp_path)
    result = CliRunner().invoke(app, ["tune-link-threshold", str(model), str(dev), "--output", str(tmp_path / "tuned")])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output.strip().splitlines()[-1])
    assert summary["coref_conll_f"] > 0.9
    tuned = spacy.load(tmp_path / "tuned")
    assert tuned.config["components"]["memcoref"]["link_threshold"] == summary["threshold"]
    assert tuned.get_pipe("memcoref").decoder.link_threshold == summary["threshold"]


def test_cli_refuses_an_empty_docbin(tmp_path, trained_nlp):
    nlp, _, _ = trained_nlp
    model = tmp_path / "model"
    nlp.to_disk(model)
    empty = tmp_path / "empty.spacy"
    DocBin().to_disk(empty)
    result = CliRunner().invoke(app, ["tune-link-threshold", str(model), str(empty), "--output", str(tmp_path / "out")])
    assert result.exit_code == 1 and "holds no Docs" in result.output
    assert not (tmp_path / "out").exists()


def test_cli_also_saves_the_checkpoint_best_once_tuned(trained_nlp, models, tmp_path):
    nlp, examples, _ = trained_nlp
    trained, dev = _saved_with_dev(nlp, examples, tmp_path)
    untrained = models / "s2e"  # initialized, never trained: given first, it must lose
    out = tmp_path / "tuned"
    result = CliRunner().invoke(
        app, ["tune-link-threshold", str(untrained), str(dev), "--also", str(trained), "--output", str(out)]
    )
    assert result.exit_code == 0, result.output
    lines = result.output.strip().splitlines()
    per_checkpoint = {
        line.split(": ")[0]: float(line.rsplit(" ", 1)[1]) for line in lines if ": best threshold" in line
    }
    assert set(per_checkpoint) == {str(untrained), str(trained)}
    assert per_checkpoint[str(trained)] > 90.0 > per_checkpoint[str(untrained)]
    summary = json.loads(lines[-1])
    assert summary["model"] == str(trained)
    assert abs(100 * summary["coref_conll_f"] - per_checkpoint[str(trained)]) < 0.01
    tuned = spacy.load(out)
    assert tuned.config["components"]["memcoref"]["link_threshold"] == summary["threshold"]
    assert tuned.get_pipe("memcoref").model.to_bytes() == nlp.get_pipe("memcoref").model.to_bytes()


def test_cli_also_needs_an_output_apart_from_the_checkpoints(trained_nlp, models, tmp_path):
    nlp, examples, _ = trained_nlp
    trained, dev = _saved_with_dev(nlp, examples, tmp_path)
    before = sorted(p.name for p in trained.iterdir())
    for extra in ([], ["--output", str(trained)]):
        result = CliRunner().invoke(
            app, ["tune-link-threshold", str(models / "s2e"), str(dev), "--also", str(trained), *extra]
        )
        assert_user_error(result, "--also" if not extra else "one of the checkpoints compared")
    assert sorted(p.name for p in trained.iterdir()) == before
