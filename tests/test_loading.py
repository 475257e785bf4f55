"""Issue 35: one loader (spacy_memcoref.loading.load_pipeline) for the CLI and
the annotate workers, one errors module, LOG_KEYS in one place, and annotate's
cluster names without a possessive marker.

A small CNN-tok2vec s2e pipeline (initialized on two examples, not trained)
stands in for a real one.
"""

import ast
import configparser
import importlib
import json
import shutil
from pathlib import Path

import pytest
import spacy
from spacy.tokens import Doc
from spacy.training import Example
from typer.testing import CliRunner

from spacy_memcoref import loading, pretrained
from spacy_memcoref.annotate import doc_record, local
from spacy_memcoref.annotate.output import model_identity
from spacy_memcoref.annotate.runner import check_model
from spacy_memcoref.cli import app
from spacy_memcoref.entities import entities

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "spacy_memcoref"

CNN = {
    "@architectures": "spacy.Tok2Vec.v2",
    "embed": {
        "@architectures": "spacy.MultiHashEmbed.v2",
        "width": 16,
        "attrs": ["NORM", "PREFIX", "SUFFIX", "SHAPE"],
        "rows": [200, 50, 50, 50],
        "include_static_vectors": False,
    },
    "encode": {
        "@architectures": "spacy.MaxoutWindowEncoder.v2",
        "width": 16,
        "depth": 1,
        "window_size": 1,
        "maxout_pieces": 2,
    },
}
S2E = {"@architectures": "spacy_memcoref.S2E.v1", "hidden_size": 16, "dropout": 0.0, "tok2vec": CNN}
TRAIN = [
    ("Alice met Bob . She said he was late .", [[(0, 0), (4, 4)], [(2, 2), (6, 6)]]),
    ("The dog barked because it was hungry .", [[(0, 1), (4, 4)]]),
]

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _examples(nlp):
    examples = []
    for text, clusters in TRAIN:
        reference = Doc(nlp.vocab, words=text.split())
        for i, cluster in enumerate(clusters, start=1):
            reference.spans[f"coref_clusters_{i}"] = [reference[s : e + 1] for s, e in cluster]
        examples.append(Example(Doc(nlp.vocab, words=text.split()), reference))
    return examples


@pytest.fixture(scope="module")
def saved(tmp_path_factory) -> Path:
    nlp = spacy.blank("en")
    nlp.add_pipe("memcoref", config={"model": S2E})
    examples = _examples(nlp)
    nlp.initialize(lambda: examples)
    path = tmp_path_factory.mktemp("pipelines") / "s2e"
    nlp.to_disk(path)
    return path


@pytest.fixture
def corrupt(saved, tmp_path):
    """(pipeline folder, its truncated model file, the loader's message)."""
    model = tmp_path / "pipeline"
    shutil.copytree(saved, model)
    model_file = model / "memcoref" / "model"
    data = model_file.read_bytes()
    model_file.write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError) as info:
        loading.load_pipeline(str(model))
    return model, model_file, str(info.value)


def _jsonl(path: Path, texts) -> Path:
    path.write_text(
        "".join(json.dumps({"id": f"d{i}", "text": t}) + "\n" for i, t in enumerate(texts)), encoding="utf8"
    )
    return path


def _one_error_line(result) -> str:
    assert result.exit_code == 1, result.output
    assert isinstance(result.exception, SystemExit), repr(result.exception)
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    return lines[0]


# ----- one loader ---------------------------------------------------------------------


def test_the_loader_names_the_corrupt_file_once_on_one_line(corrupt):
    model, model_file, message = corrupt
    assert message == f"{model_file}: cannot load the pipeline {model}: Unpack failed: incomplete input", message
    assert "\n" not in message and message.count(str(model_file)) == 1


def test_annotate_workers_give_the_cli_message_for_a_corrupt_pipeline(corrupt, tmp_path):
    model, _, message = corrupt
    corpus = _jsonl(tmp_path / "corpus.jsonl", ["Alice met Bob.", "It rained."])
    runner = CliRunner()
    predicted = _one_error_line(
        runner.invoke(app, ["predict", str(model), str(tmp_path / "none.spacy"), str(tmp_path / "o.spacy")])
    )
    assert predicted == f"error: {message}"
    # annotate in this process (the local engine's inline worker)
    annotated = _one_error_line(runner.invoke(app, ["annotate", str(model), str(corpus), str(tmp_path / "out1")]))
    assert annotated == predicted
    # the worker code itself: the inline worker, and a pool worker's
    # initializer and first shard (run here, without spawning a process)
    with pytest.raises(ValueError) as info:
        next(local.run_inline(iter([]), str(model), {}))
    assert str(info.value) == message
    saved_state = dict(local._WORKER)
    try:
        local._init_worker(str(model), -1, None, {})
        with pytest.raises(ValueError) as info:
            local._work({})
        assert str(info.value) == message
    finally:
        local._WORKER.clear()
        local._WORKER.update(saved_state)


def test_a_pool_worker_that_cannot_load_gives_the_message_not_a_broken_pool(corrupt, tmp_path):
    """Before, each worker's initializer died, the pool was restarted three
    times, and the user read "a worker process died 4 times (out of memory?)"."""
    model, _, message = corrupt
    corpus = _jsonl(tmp_path / "corpus.jsonl", ["Alice met Bob.", "It rained.", "Bob left."])
    result = CliRunner().invoke(
        app, ["annotate", str(model), str(corpus), str(tmp_path / "out"), "--n-process", "2", "--shard-size", "1"]
    )
    assert _one_error_line(result) == f"error: {message}"


def test_the_cli_and_the_workers_use_the_one_loader():
    from spacy_memcoref import cli
    from spacy_memcoref.annotate import ray_engine, worker

    assert cli.load_pipeline is local.load_pipeline is ray_engine.load_pipeline is loading.load_pipeline
    assert not hasattr(worker, "load_pipeline")
    defined = [
        str(path.relative_to(REPO))
        for path in sorted(PACKAGE.rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf8")))
        if isinstance(node, ast.FunctionDef) and node.name == "load_pipeline"
    ]
    assert defined == ["spacy_memcoref/loading.py"], defined


def test_a_sound_pipeline_loads_with_threads(saved):
    import torch

    before = torch.get_num_threads()
    try:
        nlp = loading.load_pipeline(str(saved), threads=1)
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)
    assert nlp.pipe_names == ["memcoref"]
    assert loading.load_pipeline(str(saved), None).pipe_names == ["memcoref"]  # gpu_id None: the CPU


def test_no_such_pipeline_keeps_spacys_message(tmp_path):
    with pytest.raises(OSError, match="E050"):
        loading.load_pipeline(str(tmp_path / "nope"))


@pytest.fixture
def shipped(tmp_path, monkeypatch):
    """A fake shipped model "tiny-shipped" (its files, not a loadable model)."""
    folder = tmp_path / "pretrained_models"
    model = folder / "tiny-shipped"
    model.mkdir(parents=True)
    (model / "meta.json").write_text(json.dumps({"name": "tiny-shipped", "version": "0.0.1"}), encoding="utf8")
    (model / "config.cfg").write_text('[nlp]\nlang = "en"\npipeline = []\n', encoding="utf8")
    monkeypatch.setattr(pretrained, "PRETRAINED_DIR", folder)
    monkeypatch.chdir(tmp_path)
    return model


def test_a_shipped_name_loads_the_shipped_model_and_a_path_of_that_name_wins(shipped, monkeypatch):
    calls = []
    monkeypatch.setattr(pretrained, "load_stored", lambda folder, meta: calls.append(folder) or "the shipped pipeline")
    resolved = loading.resolve_model("tiny-shipped")
    assert resolved.shipped and resolved.folder == shipped.resolve() and not resolved.given_path
    assert loading.load_pipeline("tiny-shipped") == "the shipped pipeline" and calls == [shipped.resolve()]
    assert not loading.resolve_model("en_core_web_nope").shipped
    # annotate finds it too (it used to refuse every name that was not a folder or package)
    check_model(resolved)
    identity = model_identity(resolved)
    assert identity["model"] == "tiny-shipped" and len(identity["fingerprint"]) == 40
    # a folder of that name in the working directory is what the user means
    Path("tiny-shipped").mkdir()
    assert not loading.resolve_model("tiny-shipped").shipped
    with pytest.raises(ValueError):
        loading.load_pipeline("tiny-shipped")
    assert calls == [shipped.resolve()]


@pytest.mark.filterwarnings("ignore::spacy_memcoref.pipeline.coref_component.UntrainedWarning")
def test_a_model_is_worked_out_once_and_handed_on(saved, monkeypatch, tmp_path):
    """Issue 64, item 1: annotate resolves the model once (resolve_model's
    record: folder, meta, identity, span prefixes) and hands the record to
    its output identity and its workers; load_pipeline takes the record
    without working it out again."""
    import pickle

    from spacy_memcoref.annotate import runner

    resolved = loading.resolve_model(str(saved))
    assert resolved.folder == saved.resolve() and resolved.given_path and not resolved.shipped
    assert resolved.span_prefixes == ("coref_clusters",) and resolved.identity == str(saved.resolve())
    assert loading.resolve_model(resolved) is resolved
    assert pickle.loads(pickle.dumps(resolved)) == resolved  # for the pool's and Ray's workers
    calls = []
    real = loading.resolve_model
    monkeypatch.setattr(loading, "resolve_model", lambda model: calls.append(model) or real(model))
    monkeypatch.setattr(runner, "resolve_model", loading.resolve_model)
    corpus = _jsonl(tmp_path / "corpus.jsonl", ["Alice met Bob.", "It rained."])
    runner.annotate_corpus(str(saved), corpus, tmp_path / "out", progress=False)
    assert calls == [str(saved), resolved]  # the runner's, then the worker's load_pipeline handed the record
    # no folder, no pipeline: a clear error, before anything is made
    with pytest.raises(ValueError, match="cannot find the pipeline 'no-such-pipeline'"):
        check_model(real("no-such-pipeline"))
    with pytest.raises(ValueError, match="is not a spaCy pipeline folder"):
        check_model(real(str(corpus)))


# ----- one errors module, one LOG_KEYS, registered names that resolve --------------------


def test_one_errors_module():
    import spacy_memcoref.annotate as annotate
    from spacy_memcoref import errors

    assert annotate.AnnotateError is errors.AnnotateError and annotate.Terminated is errors.Terminated
    assert issubclass(errors.Terminated, errors.AnnotateError) and issubclass(errors.AnnotateError, RuntimeError)
    assert importlib.util.find_spec("spacy_memcoref.annotate.errors") is None
    assert sorted(str(p.relative_to(REPO)) for p in PACKAGE.rglob("errors.py")) == ["spacy_memcoref/errors.py"]


def test_log_keys_have_one_home():
    from spacy_memcoref import doc_helpers
    from spacy_memcoref.doc_helpers import memory_log
    from spacy_memcoref.models.petra import pytorch_petra, pytorch_petra_head

    assert doc_helpers.LOG_KEYS == ("entity", "overwrite", "coref", "usage")
    assert memory_log.LOG_KEYS is pytorch_petra.LOG_KEYS is pytorch_petra_head.LOG_KEYS is doc_helpers.LOG_KEYS
    assigned = [
        str(path.relative_to(REPO))
        for path in sorted(PACKAGE.rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf8")))
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "LOG_KEYS" for t in node.targets)
    ]
    assert assigned == ["spacy_memcoref/doc_helpers/__init__.py"], assigned


def test_every_entry_point_in_setup_cfg_resolves():
    """A name left in setup.cfg after its function is gone would break
    whoever asks the registry for it (and registry.get_all())."""
    parser = configparser.ConfigParser()
    parser.read(REPO / "setup.cfg")
    targets = [
        line.split("=", 1)[1].strip()
        for group, block in parser["options.entry_points"].items()
        for line in block.strip().splitlines()
        if group != "console_scripts" and "=" in line
    ]
    assert targets
    for target in targets:
        module, attr = target.split(":")
        assert callable(getattr(importlib.import_module(module), attr)), target
    assert "torch_threads" not in (REPO / "setup.cfg").read_text(encoding="utf8")


# ----- annotate's cluster names ---------------------------------------------------------


def test_annotate_names_a_cluster_without_the_possessive_marker():
    nlp = spacy.blank("en")
    doc = nlp("Mary's dog barked. She laughed at her dog.")
    marys, she, her = doc[0:2], doc[5:6], doc[8:9]
    assert marys.text == "Mary's"
    doc.spans["coref_clusters_1"] = [marys, she]
    doc.spans["coref_clusters_2"] = [doc[0:3], doc[8:10]]  # "Mary's dog", "her dog"
    record = doc_record("d", doc)
    assert [c["name"] for c in record["clusters"]] == ["Mary", "Mary's dog"]
    assert record["clusters"][0]["mentions"][0]["text"] == "Mary's"  # mentions keep their text
    # the same name as the entity records give
    assert [c["name"] for c in record["clusters"]] == [e.name for e in entities(doc)]
    # a marker glued to the word (a Doc made from words), and a plural's
    words = Doc(nlp.vocab, words=["Mary's", "dog", "barked", ".", "The", "kids'", "mother", "came", "."])
    words.spans["coref_clusters_1"] = [words[0:1]]
    words.spans["coref_clusters_2"] = [words[4:6]]
    assert [c["name"] for c in doc_record("w", words)["clusters"]] == ["Mary", "The kids"]
    # pronouns only: no name (null), as entities gives it
    doc.spans["coref_clusters_1"] = [she, her]
    del doc.spans["coref_clusters_2"]
    assert [c["name"] for c in doc_record("d", doc)["clusters"]] == [None] == [e.name for e in entities(doc)]
