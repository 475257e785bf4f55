"""`interpolate` (tuning/interpolate.py): a fine-tuned pipeline moved part of
the way back to its source, every trained weight (Thinc's and torch's) set
to (1 - w) * source + w * fine-tuned; checked against the two pipelines'
own weights read independently, at both ends, and on bad input."""

import numpy
import pytest
import spacy
import torch
from conftest import TRAIN, assert_same_links, assert_user_error, make_examples, s2e_config
from thinc.api import Adam, fix_random_seed
from typer.testing import CliRunner

from spacy_memcoref.cli import app

TEXTS = [text for text, _ in TRAIN] + ["Mary met John . She thanked him ."]


def weights_of(nlp) -> dict:
    """Every weight of the memcoref component as float64 numpy arrays, read
    the plain way: Thinc's parameters by node, torch's state_dict by module."""
    found = {}
    for index, node in enumerate(nlp.get_pipe("memcoref").model.walk()):
        for name in node.param_names:
            if node.has_param(name):
                found[("thinc", index, name)] = numpy.asarray(node.get_param(name), dtype="float64")
        for shim in node.shims:
            for name, tensor in shim._model.state_dict().items():
                if torch.is_floating_point(tensor):
                    found[("torch", index, name)] = tensor.detach().double().numpy()
    return found


@pytest.fixture(scope="module")
def source_and_finetuned(trained_s2e, tmp_path_factory):
    """The session's trained s2e, and a copy of it fine-tuned 5 more updates
    at a higher rate on the TRAIN documents, saved."""
    root = tmp_path_factory.mktemp("interpolate")
    fix_random_seed(1)
    nlp = spacy.load(trained_s2e.path)
    examples = make_examples(nlp)
    optimizer = Adam(0.01)
    for _ in range(5):
        nlp.update(examples, sgd=optimizer)
    nlp.to_disk(root / "finetuned")
    return trained_s2e.path, root / "finetuned", root


def run(*args):
    return CliRunner().invoke(app, ["interpolate", *map(str, args)])


def test_each_weight_is_the_weighted_mean_of_the_two(source_and_finetuned):
    source, finetuned, root = source_and_finetuned
    result = run(source, finetuned, root / "mid", "--weight", "0.25")
    assert result.exit_code == 0, result.output
    a, b, mid = (weights_of(spacy.load(path)) for path in (source, finetuned, root / "mid"))
    assert a.keys() == b.keys() == mid.keys()
    kinds = {key[0] for key in a}
    assert kinds == {"thinc", "torch"}  # the CNN tok2vec's and the head's weights both
    moved = [key for key in a if not numpy.array_equal(a[key], b[key])]
    assert len(moved) >= 10
    for key in a:
        numpy.testing.assert_allclose(mid[key], 0.75 * a[key] + 0.25 * b[key], rtol=1e-5, atol=1e-6, err_msg=str(key))
    assert f"{len(moved)} weight tensors differed" in result.output


@pytest.mark.parametrize("weight,end", [("0", 0), ("1", 1)])
def test_the_ends_are_the_two_pipelines(source_and_finetuned, weight, end):
    source, finetuned, root = source_and_finetuned
    result = run(source, finetuned, root / f"end{weight}", "--weight", weight)
    assert result.exit_code == 0, result.output
    same_as = spacy.load((source, finetuned)[end])
    written = spacy.load(root / f"end{weight}")
    expected, got = weights_of(same_as), weights_of(written)
    assert all(numpy.array_equal(expected[key], got[key]) for key in expected)
    assert_same_links(same_as, written, TEXTS)


def test_pipelines_of_two_architectures_are_refused_naming_the_weight(source_and_finetuned, tmp_path):
    source, _, _ = source_and_finetuned
    nlp = spacy.blank("en")
    nlp.add_pipe("memcoref", config=s2e_config(hidden_size=32))
    nlp.initialize(lambda: make_examples(nlp))
    nlp.to_disk(tmp_path / "narrow")
    result = run(source, tmp_path / "narrow", tmp_path / "out")
    assert_user_error(result, "shape", "in the source", "in the fine-tuned pipeline")
    assert not (tmp_path / "out").exists()


def test_bad_weights_and_outputs_are_refused(source_and_finetuned, tmp_path):
    source, finetuned, _ = source_and_finetuned
    assert_user_error(run(source, finetuned, tmp_path / "out", "--weight", "1.5"), "1.5", "[0, 1]")
    assert not (tmp_path / "out").exists()
    before = sorted(p.name for p in finetuned.iterdir())
    assert run(source, finetuned, finetuned).exit_code != 0  # never over its input
    assert sorted(p.name for p in finetuned.iterdir()) == before
