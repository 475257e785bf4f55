"""Issue 12 (the rest): the coreference component itself, not only the CLI,
names a model file it cannot load, and refuses to pair Docs with a wrong
number of predictions.

A small CNN-tok2vec s2e pipeline (initialized on three examples, not
trained) stands in for a real one.
"""
import random
import shutil

import pytest
import spacy
import srsly
from thinc.api import Model
from typer.testing import CliRunner

from spacy_memcoref.cli import app, load_pipeline
from spacy_memcoref.pipeline.coref_component import CorefComponent
from test_s2e import make_examples
from tok2vec_config import cnn_tok2vec

CNN = cnn_tok2vec(width=16, depth=1, rows=[200, 50, 50, 50], maxout_pieces=2)
S2E = {"@architectures": "spacy_memcoref.S2E.v1", "hidden_size": 16, "dropout": 0.0, "tok2vec": CNN}
TEXTS = ["Alice met Bob . She said he was late .", "It rained ."]


pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A saved s2e pipeline and the pipeline it was saved from."""
    nlp = spacy.blank("en")
    nlp.add_pipe("memcoref", config={"model": S2E})
    examples = make_examples(nlp)
    nlp.initialize(lambda: examples)
    path = tmp_path_factory.mktemp("pipelines") / "s2e"
    nlp.to_disk(path)
    return path, nlp


def _copy(saved, tmp_path):
    model = tmp_path / "pipeline"
    shutil.copytree(saved[0], model)
    return model, model / "memcoref" / "model"


def _truncate(model_file):
    data = model_file.read_bytes()
    model_file.write_bytes(data[: len(data) // 2])


def _corrupt_weights(model_file):
    """Overwrite 64 bytes in the middle of the torch weights: the msgpack
    still reads, only the checksum can tell."""
    data = bytearray(model_file.read_bytes())
    msg = srsly.msgpack_loads(bytes(data))
    states = [srsly.msgpack_loads(b)["state"] for shims in msg["shims"] for b in shims]
    assert len(states) == 1
    start = bytes(data).find(states[0])
    at = start + 3 * len(states[0]) // 4
    rng = random.Random(0)
    data[at : at + 64] = bytes(rng.randrange(256) for _ in range(64))
    model_file.write_bytes(bytes(data))


# ----- 1. a model file that cannot be loaded is named -----------------------------------


def test_spacy_load_of_a_truncated_model_file_names_the_file(saved, tmp_path):
    model, model_file = _copy(saved, tmp_path)
    _truncate(model_file)
    with pytest.raises(ValueError) as info:
        spacy.load(model)
    message = str(info.value)
    assert message.startswith(f"{model_file}: cannot load the coreference model: "), message
    assert "incomplete input" in message
    # the original error stays chained for a traceback
    assert info.value.__cause__ is not None and "incomplete input" in str(info.value.__cause__)


def test_spacy_load_of_corrupt_weights_names_the_file_and_the_checksum(saved, tmp_path):
    model, model_file = _copy(saved, tmp_path)
    _corrupt_weights(model_file)
    with pytest.raises(ValueError, match="checksum") as info:
        spacy.load(model)
    assert str(info.value).startswith(f"{model_file}: cannot load the coreference model: "), str(info.value)
    assert isinstance(info.value.__cause__, ValueError) and "checksum" in str(info.value.__cause__)


def test_component_from_disk_names_the_file(saved, tmp_path):
    model, model_file = _copy(saved, tmp_path)
    _truncate(model_file)
    nlp = spacy.blank("en")
    pipe = nlp.add_pipe("memcoref", config={"model": S2E})
    with pytest.raises(ValueError, match="^" + str(model_file).replace("\\", "\\\\") + ": cannot load"):
        pipe.from_disk(model / "memcoref", exclude=["vocab"])  # as Language.from_disk calls it


def test_component_from_bytes_names_the_component(saved):
    _, nlp = saved
    msg = srsly.msgpack_loads(nlp.get_pipe("memcoref").to_bytes())
    msg["model"] = msg["model"][: len(msg["model"]) // 2]
    fresh = spacy.blank("en")
    pipe = fresh.add_pipe("memcoref", config={"model": S2E})
    with pytest.raises(ValueError) as info:
        pipe.from_bytes(srsly.msgpack_dumps(msg))
    message = str(info.value)
    assert "'memcoref'" in message and "cannot load the coreference model" in message and "incomplete input" in message
    assert info.value.__cause__ is not None


def test_cli_messages_keep_their_form(saved, tmp_path):
    """The CLI names the file once, as before the component named it too."""
    model, model_file = _copy(saved, tmp_path)
    _truncate(model_file)
    with pytest.raises(ValueError) as info:
        load_pipeline(str(model))
    assert str(info.value) == f"{model_file}: cannot load the pipeline {model}: Unpack failed: incomplete input"
    assert str(info.value).count(str(model_file)) == 1
    docs = tmp_path / "dev.spacy"
    result = CliRunner().invoke(app, ["predict", str(model), str(docs), str(tmp_path / "o.spacy")])
    assert result.exit_code == 1
    line = result.output.strip()
    assert line == f"error: {model_file}: cannot load the pipeline {model}: Unpack failed: incomplete input", line


def test_a_sound_pipeline_still_loads_and_predicts_the_same(saved):
    path, nlp = saved
    loaded = spacy.load(path)
    fresh = spacy.blank("en")
    fresh.add_pipe("memcoref", config={"model": S2E}).from_bytes(nlp.get_pipe("memcoref").to_bytes())
    expected = nlp.get_pipe("memcoref").predict([nlp.make_doc(t) for t in TEXTS])
    for other in (loaded, fresh):
        assert other.get_pipe("memcoref").predict([other.make_doc(t) for t in TEXTS]) == expected
    assert loaded.get_pipe("memcoref").cfg == nlp.get_pipe("memcoref").cfg


# ----- 2. one prediction a Doc -------------------------------------------------------------


def test_set_annotations_refuses_a_prediction_count_that_differs(saved):
    _, nlp = saved
    pipe = nlp.get_pipe("memcoref")
    docs = [nlp.make_doc(t) for t in TEXTS]
    predictions = pipe.predict(docs)
    assert len(predictions) == 2
    with pytest.raises(ValueError, match=r"1 prediction\(s\) for 2 Docs"):
        pipe.set_annotations(docs, predictions[:1])
    with pytest.raises(ValueError, match=r"3 prediction\(s\) for 2 Docs"):
        pipe.set_annotations(docs, predictions + predictions[:1])
    assert all(not doc.spans for doc in docs)  # nothing written half-way
    pipe.set_annotations(iter(docs), predictions)  # any iterable of Docs


def test_a_model_that_drops_a_prediction_stops_the_pipeline(saved, monkeypatch):
    _, nlp = saved
    pipe = nlp.get_pipe("memcoref")
    real = pipe.model

    def forward(model, X, is_train):
        loss, predictions = real.predict(X)
        return (loss, predictions[:-1]), lambda d_output: d_output

    # a stub model with the real one's hooks, one prediction short
    monkeypatch.setattr(pipe, "model", Model("dropping_s2e", forward, attrs=dict(real.attrs)))
    with pytest.raises(ValueError, match=r"'memcoref'.*1 prediction\(s\) for 2 Docs"):
        list(nlp.pipe(TEXTS, batch_size=2))
    with pytest.raises(ValueError, match=r"0 prediction\(s\) for 1 Docs"):
        nlp(TEXTS[0])
    assert isinstance(pipe, CorefComponent)
