"""`python -m spacy_memcoref quantize`: an int8 copy of a trained pipeline
(dynamic quantization of the encoder's Linear layers) that spacy.load reads
back with the same safety (weights only, checksum), on CPU only."""

import numpy
import pytest
import spacy
import srsly
import torch
from thinc.api import Adam, fix_random_seed
from typer.testing import CliRunner

from spacy_memcoref.cli import app
from spacy_memcoref.models.encoder.int8 import (
    is_quantized_state,
    quantize_module,
    quantize_module_like,
    quantized_layer_count,
)
from spacy_memcoref.models.encoder.transformer_node import find_transformer

from conftest import assert_same_links, make_examples, s2e_config

MINILM = {"@architectures": "spacy_memcoref.EmbeddedTransformer.v1"}


def _clusters(nlp, texts):
    return [sorted(sorted(s.text for s in g) for g in d.spans.values()) for d in nlp.pipe(texts)]


def _hf(nlp):
    return find_transformer(nlp.get_pipe("memcoref").model).transformer


@pytest.fixture(scope="module")
def float_model(tmp_path_factory):
    """A small s2e pipeline on the embedded MiniLM, overfit on three documents, saved."""
    fix_random_seed(0)
    nlp = spacy.blank("en")
    nlp.add_pipe("memcoref", config=s2e_config(tok2vec=dict(MINILM, bfloat16=True)))
    examples = make_examples(nlp)
    nlp.initialize(lambda: examples)
    optimizer = Adam(0.001)
    for _ in range(12):
        nlp.update(examples, sgd=optimizer)
    path = tmp_path_factory.mktemp("float") / "model"
    nlp.to_disk(path)
    return path, [eg.reference.text for eg in examples]


@pytest.fixture(scope="module")
def int8_model(float_model, tmp_path_factory):
    path, _ = float_model
    out = tmp_path_factory.mktemp("int8") / "model"
    result = CliRunner().invoke(app, ["quantize", str(path), str(out)])
    assert result.exit_code == 0, result.output
    return out, result.output


def test_quantize_writes_an_int8_encoder_that_loads_back(float_model, int8_model):
    path, texts = float_model
    out, output = int8_model
    # MiniLM-L6: 6 layers x (4 attention + 2 feed-forward) + the pooler
    assert "memcoref: 37 Linear layers of the encoder in int8" in output
    assert "runs on CPU only" in output
    loaded = spacy.load(out)
    hf = _hf(loaded)
    assert quantized_layer_count([hf]) == 37
    assert loaded.meta["memcoref_int8"]["linear_layers"] == {"memcoref": 37}
    # the config still asks for bfloat16 (the structure must match the weights); autocast skips int8
    assert "bfloat16 = true" in (out / "config.cfg").read_text()
    list(loaded.pipe(texts))
    assert not getattr(hf, "_memcoref_bf16_autocast", False)
    # the head stays float32
    head = loaded.get_pipe("memcoref").model.layers[1].shims[0]._model
    assert quantized_layer_count([head]) == 0
    # smaller on disk: int8 Linear weights (the word embeddings, half of MiniLM, stay float32)
    weights = lambda p: sum(f.stat().st_size for f in (p / "memcoref").rglob("*"))  # noqa: E731
    assert weights(out) < 0.75 * weights(path)
    # saved again, it predicts what it predicted (a round trip of the int8 weights)
    first = _clusters(loaded, texts)
    loaded.to_disk(out.parent / "again")
    again = spacy.load(out.parent / "again")
    assert _clusters(again, texts) == first
    assert_same_links(loaded, again, texts)


def test_int8_vectors_stay_close_to_float32(float_model, int8_model):
    path, texts = float_model
    float_nlp, int8_nlp = spacy.load(path), spacy.load(int8_model[0])
    # compare the encoders in float32 (the float pipeline was trained under bfloat16 autocast)
    tok2vec_f = float_nlp.get_pipe("memcoref").model.layers[0]
    tok2vec_q = int8_nlp.get_pipe("memcoref").model.layers[0]
    docs = [float_nlp.make_doc(t) for t in texts]
    for a, b in zip(tok2vec_f.predict(docs), tok2vec_q.predict(docs)):
        a, b = numpy.asarray(a), numpy.asarray(b)
        assert not numpy.allclose(a, b)  # it really ran in int8
        cosine = (a * b).sum(1) / (numpy.linalg.norm(a, axis=1) * numpy.linalg.norm(b, axis=1))
        # measured 0.95-0.99 on MiniLM; per-tensor scales (torch's default) gave 0.92 on GAP texts
        assert cosine.mean() > 0.93, cosine


def test_int8_weights_keep_the_checksum(int8_model, tmp_path):
    import shutil

    out, _ = int8_model
    broken = tmp_path / "broken"
    shutil.copytree(out, broken)
    model_file = broken / "memcoref" / "model"
    msg = srsly.msgpack_loads(model_file.read_bytes())
    # the transformer's shim: the largest serialized shim; flip one byte in the middle of its weights
    node, index = max(
        ((n, i) for n, shims in enumerate(msg["shims"]) for i in range(len(shims))),
        key=lambda ni: len(msg["shims"][ni[0]][ni[1]]),
    )
    shim = srsly.msgpack_loads(msg["shims"][node][index])
    assert shim.get("state_sha256") and is_quantized_state(
        torch.load(__import__("io").BytesIO(shim["state"]), weights_only=True)
    )
    state = bytearray(shim["state"])
    state[len(state) // 2] ^= 0xFF
    shim["state"] = bytes(state)
    msg["shims"][node][index] = srsly.msgpack_dumps(shim)
    model_file.write_bytes(srsly.msgpack_dumps(msg))
    with pytest.raises(Exception) as err:
        spacy.load(broken)
    assert "checksum" in str(err.value) and "transformer encoder" in str(err.value)


def test_quantize_refuses_without_writing(float_model, tmp_path):
    path, _ = float_model
    runner = CliRunner()
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "file").write_text("x")
    result = runner.invoke(app, ["quantize", str(path), str(taken)])
    assert result.exit_code != 0 and "not an empty directory" in result.output
    # a pipeline without a memcoref transformer: refused, and no OUTPUT left behind
    blank = tmp_path / "blank"
    spacy.blank("en").to_disk(blank)
    result = runner.invoke(app, ["quantize", str(blank), str(tmp_path / "out")])
    assert result.exit_code != 0 and "nothing to quantize" in result.output
    assert not (tmp_path / "out").exists() and not list(tmp_path.glob(".out.*"))


def test_int8_is_refused_on_a_gpu_and_quantizing_is_all_or_nothing():
    module = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    state = {k: v.clone() for k, v in module.state_dict().items()}
    assert not is_quantized_state(state)
    assert quantize_module(module) == 2 and quantized_layer_count([module]) == 2
    qstate = module.state_dict()
    assert is_quantized_state(qstate)
    fresh = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    with pytest.raises(ValueError, match="CPU only"):
        quantize_module_like(fresh, qstate, "cuda")
    quantize_module_like(fresh, qstate, "cpu")
    fresh.load_state_dict(qstate)
    x = torch.randn(4, 8)
    assert torch.equal(fresh(x), module(x))


@pytest.fixture(scope="module")
def tiny_float_model(tiny_mpnet, tmp_path_factory):
    """An untrained s2e pipeline on a small random MPNet, saved: enough for
    the command's checks (quantize needs a transformer, not a good model)."""
    fix_random_seed(0)
    nlp = spacy.blank("en")
    nlp.add_pipe(
        "memcoref",
        config=s2e_config(tok2vec={"@architectures": "spacy_memcoref.EmbeddedTransformer.v1", "name": str(tiny_mpnet)}),
    )
    nlp.initialize(lambda: make_examples(nlp))
    path = tmp_path_factory.mktemp("tiny_float") / "model"
    nlp.to_disk(path)
    return path


def _error_line(result) -> str:
    """The command's one-line error (not a traceback)."""
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit), result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    return lines[0]


@pytest.fixture(scope="module")
def tiny_int8_model(tiny_float_model, tmp_path_factory):
    """`quantize` of the tiny pipeline under umask 022: (OUTPUT, its parent)."""
    import os

    parent = tmp_path_factory.mktemp("tiny_int8")
    before = os.umask(0o022)
    try:
        result = CliRunner().invoke(app, ["quantize", str(tiny_float_model), str(parent / "int8")])
    finally:
        os.umask(before)
    assert result.exit_code == 0, result.output
    return parent / "int8", parent


def test_quantize_gives_its_folder_the_umask_mode(tiny_int8_model):
    out, parent = tiny_int8_model
    # the mode of any folder the user makes (0755 under umask 022), not mkdtemp's private 0700
    assert out.stat().st_mode & 0o777 == 0o755
    assert not list(parent.glob(".int8.*"))


def test_quantize_refuses_an_int8_pipeline_by_name(tiny_int8_model):
    out, parent = tiny_int8_model
    message = _error_line(CliRunner().invoke(app, ["quantize", str(out), str(parent / "twice")]))
    assert f"{out} is already an int8 pipeline" in message and "float32 source" in message
    assert not (parent / "twice").exists()


def test_quantize_writes_over_its_own_earlier_output(tiny_float_model, tmp_path):
    """A pipeline folder (config.cfg, meta.json) may be written over, as the
    tuning commands write over theirs; it is replaced only once the new
    pipeline is complete."""
    runner = CliRunner()
    out = tmp_path / "int8"
    for _ in range(2):
        result = runner.invoke(app, ["quantize", str(tiny_float_model), str(out)])
        assert result.exit_code == 0, result.output
    assert spacy.load(out).meta["memcoref_int8"]["linear_layers"]["memcoref"] > 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["int8"]  # no temporary folder left


def test_quantize_refuses_to_write_into_its_source(tiny_float_model):
    runner = CliRunner()
    before = sorted(p.relative_to(tiny_float_model) for p in tiny_float_model.rglob("*"))
    for output in (tiny_float_model / "int8", tiny_float_model / "memcoref" / "int8", tiny_float_model):
        message = _error_line(runner.invoke(app, ["quantize", str(tiny_float_model), str(output)]))
        assert f"the input {tiny_float_model}" in message or f"the input folder {tiny_float_model}" in message, message
    assert sorted(p.relative_to(tiny_float_model) for p in tiny_float_model.rglob("*")) == before
