"""The command line's user errors: bad options, bad files and outputs that
would overwrite an input get a clear one-line error (exit 1) instead of wrong
results or a traceback; long fields are cut in messages; and the top-level
help lists the commands in workflow order.

conftest's `models` (small s2e and PeTra pipelines, initialized, not trained)
stand in for real ones.
"""

import json
import os
import re
from typing import List

import pytest
import torch
from spacy.tokens import DocBin
from typer.testing import CliRunner

from spacy_memcoref.cli import app
from spacy_memcoref.errors import DataFormatError
from spacy_memcoref.util import atomic_output

from conftest import CONLL, GAP_SAMPLE, assert_user_error, make_examples

PEOPLE = "ID\ttext\tcount\np1\tAnna met Maria before she left .\t2\np2\tIt rained .\t0\n"

runner = CliRunner()


pytestmark = pytest.mark.usefixtures("one_torch_thread")


# ----- count options -----------------------------------------------------------------------


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
        result = runner.invoke(
            app, ["visualize", str(models / "petra"), str(models / "gap.spacy"), str(tmp_path / "v"), option, "0"]
        )
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
    result = runner.invoke(
        app, ["tune-gap-threshold", str(models / "petra"), str(models / "gap.spacy"), "-o", str(tmp_path / "t")]
    )
    assert_user_error(result, "Docs for")


# ----- output = input ----------------------------------------------------------------------


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


# ----- where a pipeline is written ---------------------------------------------------------


def _listing(folder):
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


@pytest.fixture
def s2e_and_dev(trained_s2e, tmp_path):
    """A copy of the trained s2e pipeline (a command may try to write it) and
    its TRAIN documents' gold Docs as a dev DocBin."""
    import shutil

    import spacy

    model = tmp_path / "s2e"
    shutil.copytree(trained_s2e.path, model)
    dev = tmp_path / "dev.spacy"
    DocBin(docs=[eg.reference for eg in make_examples(spacy.blank("en"))]).to_disk(dev)
    return model, dev


@pytest.fixture
def nothing_computed(monkeypatch):
    """Loading a pipeline or building a shipped model fails the test: a
    refused output must be refused before either."""

    def computed(*args, **kwargs):
        raise AssertionError("the command computed before it checked its output")

    monkeypatch.setattr("spacy_memcoref.cli.load_pipeline", computed)
    monkeypatch.setattr("spacy_memcoref.pretrained.build", computed)


def _pipeline_writers(models, s2e, dev, people, out):
    """Each command that writes a pipeline, writing it to `out`."""
    return [
        ["tune-link-threshold", str(s2e), str(dev), "-o", str(out)],
        ["tune-gap-threshold", str(models / "petra"), str(models / "gap.spacy"), "-o", str(out)],
        ["count-people", str(models / "petra"), str(people), "--alpha", "0.5", "-o", str(out)],
        ["quantize", str(s2e), str(out)],
        ["pretrained-build", str(s2e), str(out), "--name", "test-model"],
    ]


def test_every_pipeline_writer_refuses_an_existing_file_at_once(models, s2e_and_dev, tmp_path, nothing_computed):
    """It used to tune first, then fail with "[Errno 20] Not a directory"."""
    s2e, dev = s2e_and_dev
    people = tmp_path / "people.tsv"
    people.write_text(PEOPLE, encoding="utf8")
    notes = tmp_path / "notes.txt"
    notes.write_text("the user's own notes\n", encoding="utf8")
    for args in _pipeline_writers(models, s2e, dev, people, notes):
        assert_user_error(runner.invoke(app, args), str(notes), "is a file")
        # a path below a file is refused the same way
        below = [str(notes / "tuned") if a == str(notes) else a for a in args]
        assert_user_error(runner.invoke(app, below), str(notes), "is a file")
    assert notes.read_text(encoding="utf8") == "the user's own notes\n"


def test_every_pipeline_writer_refuses_its_own_inputs(models, s2e_and_dev, tmp_path, nothing_computed):
    s2e, dev = s2e_and_dev
    people = tmp_path / "people.tsv"
    people.write_text(PEOPLE, encoding="utf8")
    meta = tmp_path / "meta.json"
    meta.write_text("{}", encoding="utf8")
    petra = models / "petra"
    calls = [
        ["tune-link-threshold", str(s2e), str(dev), "-o", str(dev)],  # the data file
        ["tune-link-threshold", str(s2e), str(dev), "-o", str(s2e)],  # the model folder, named
        ["tune-link-threshold", str(s2e), str(dev), "-o", str(tmp_path / "." / "s2e")],  # ... another way
        ["tune-gap-threshold", str(petra), str(models / "gap.spacy"), "-o", str(models / "gap.spacy")],
        ["tune-gap-threshold", str(petra), str(models / "gap.spacy"), "-o", str(petra)],
        ["count-people", str(petra), str(people), "--alpha", "0.5", "-o", str(people)],
        ["count-people", str(petra), str(people), "--alpha", "0.5", "-o", str(petra)],
        ["quantize", str(s2e), str(s2e)],
        ["pretrained-build", str(s2e), str(s2e), "--name", "test-model"],
        ["pretrained-build", str(s2e), str(meta), "--name", "test-model", "--meta", str(meta)],
        ["pretrained-build", str(s2e), str(dev), "--name", "test-model", "--dev", str(dev)],
    ]
    files = (dev, people, meta, models / "gap.spacy")
    before = {path: path.read_bytes() for path in files}
    folders = {folder: _listing(folder) for folder in (s2e, petra)}
    for args in calls:
        assert_user_error(runner.invoke(app, args), "is also the input")
    assert {path: path.read_bytes() for path in files} == before
    assert {folder: _listing(folder) for folder in folders} == folders


def test_every_pipeline_writer_refuses_a_folder_of_the_users_files(models, s2e_and_dev, tmp_path, nothing_computed):
    s2e, dev = s2e_and_dev
    people = tmp_path / "people.tsv"
    people.write_text(PEOPLE, encoding="utf8")
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "thesis.tex").write_text("chapter one\n", encoding="utf8")
    for args in _pipeline_writers(models, s2e, dev, people, mine):
        assert_user_error(runner.invoke(app, args), str(mine), "not an empty directory or a pipeline folder")
    assert _listing(mine) == ["thesis.tex"] and (mine / "thesis.tex").read_text(encoding="utf8") == "chapter one\n"


def test_tune_link_threshold_checks_its_output_before_tuning(s2e_and_dev, tmp_path, monkeypatch):
    """A real trained pipeline: refused outputs before any tuning (no table
    printed, the tuner never called, nothing written); a new folder and
    the command's own earlier output are written."""
    import spacy

    from spacy_memcoref.tuning import link_threshold

    s2e, dev = s2e_and_dev
    notes = tmp_path / "notes.txt"
    notes.write_text("mine\n", encoding="utf8")
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "data.csv").write_text("a,b\n", encoding="utf8")
    model_files = _listing(s2e)
    dev_bytes = dev.read_bytes()
    tuned_calls = []
    real_tune = link_threshold.tune_link_threshold
    with monkeypatch.context() as patch:
        patch.setattr(
            link_threshold, "tune_link_threshold", lambda *a, **k: tuned_calls.append(a) or real_tune(*a, **k)
        )
        for out, reason in (
            (notes, "is a file"),
            (dev, "is also the input"),
            (s2e, "is also the input"),
            (mine, "not an empty directory"),
        ):
            result = runner.invoke(app, ["tune-link-threshold", str(s2e), str(dev), "-o", str(out)])
            assert_user_error(result, str(out), reason)
        assert tuned_calls == []
    assert notes.read_text(encoding="utf8") == "mine\n" and dev.read_bytes() == dev_bytes
    assert _listing(mine) == ["data.csv"] and _listing(s2e) == model_files
    # allowed: a new folder, then the same folder again (an earlier output of ours)
    tuned = tmp_path / "tuned"
    for _ in range(2):
        result = runner.invoke(app, ["tune-link-threshold", str(s2e), str(dev), "-o", str(tuned)])
        assert result.exit_code == 0, result.output
        threshold = json.loads(result.stdout.strip().splitlines()[-1])["threshold"]
        assert spacy.load(tuned).get_pipe("memcoref").decoder.link_threshold == threshold


def test_tuning_never_saves_into_a_shipped_models_folder(models, tmp_path, nothing_computed):
    """MODEL in place is a pipeline folder; a shipped model's stored form is
    not one: saving a tuned pipeline there would wreck it."""
    import shutil

    from spacy_memcoref import pretrained

    shipped = tmp_path / "s2e-ontogum"
    shipped.mkdir()
    for name in (pretrained.CONFIG_FILE, pretrained.META_FILE):  # its weights are not read
        shutil.copy(pretrained.PRETRAINED_DIR / "s2e-ontogum" / name, shipped / name)
    before = _listing(shipped)
    result = runner.invoke(app, ["tune-link-threshold", str(shipped), str(models / "dev.spacy")])
    assert_user_error(result, str(shipped), "shipped model", "--output")
    assert _listing(shipped) == before


# ----- user errors, one line ---------------------------------------------------------------


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
    result = runner.invoke(
        app, ["predict", str(models / "s2e"), str(models / "dev.spacy"), str(tmp_path / "o.spacy"), "--gpu-id", "0"]
    )
    assert_user_error(result, "--gpu-id 0")
    people = tmp_path / "people.tsv"
    people.write_text(PEOPLE, encoding="utf8")
    result = runner.invoke(app, ["count-people", str(models / "petra"), str(people), "--gpu-id", "0"])
    assert_user_error(result, "--gpu-id 0")


# ----- huge input in messages --------------------------------------------------------------


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


# ----- bad and empty DocBins ---------------------------------------------------------------


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


def test_predict_names_a_bad_docbin(models, tmp_path):
    bad = tmp_path / "bad.spacy"
    bad.write_bytes(b"this is not a DocBin")
    result = runner.invoke(app, ["predict", str(models / "s2e"), str(bad), str(tmp_path / "o.spacy")])
    assert_user_error(result, str(bad))
    result = runner.invoke(
        app, ["predict", str(models / "s2e"), str(tmp_path / "missing.spacy"), str(tmp_path / "o.spacy")]
    )
    assert_user_error(result, str(tmp_path / "missing.spacy"))


# ----- write errors ------------------------------------------------------------------------


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


# ----- help --------------------------------------------------------------------------------


def test_top_level_help_lists_commands_in_workflow_order_as_plain_text():
    from typer.testing import CliRunner

    from spacy_memcoref.cli import app

    result = CliRunner().invoke(app, ["--help"], env={"COLUMNS": "100"})
    assert result.exit_code == 0
    listed = [
        line.split()[0]
        for line in result.output.split("Commands:")[1].splitlines()
        if line.startswith("  ") and not line.startswith("   ")
    ]
    # the workflow, written out: data in, tune, predict at scale, inspect, ship
    assert listed == [
        "convert",
        "export",
        "score",
        "train",
        "interpolate",
        "tune-link-threshold",
        "tune-gap-threshold",
        "resolve",
        "predict",
        "annotate",
        "quantize",
        "visualize",
        "count-people",
        "info",
        "pretrained-build",
    ]
    assert "..." not in result.output.split("Commands:")[1]  # every one-line help fits
    # no Rich markup: brackets in help texts print as written
    result = CliRunner().invoke(app, ["tune-gap-threshold", "--help"], env={"COLUMNS": "100"})
    assert "(scale, shift)" in result.output and "╭" not in result.output


# ----- resolve: one text, and the console script -------------------------------------------

ALICE = "Alice met Bob. She thanked him."
ALICE_CLUSTERS = ["1: Alice | She", "2: Bob | him"]
ALICE_RESOLVED = "Alice met Bob. Alice thanked Bob."  # as the README shows


@pytest.fixture(scope="module")
def s2e_shipped():
    import spacy_memcoref

    return spacy_memcoref.load("s2e-ontogum")


@pytest.fixture
def loads(monkeypatch, s2e_shipped):
    """resolve's load_pipeline records the model asked for and returns the
    shipped s2e loaded once (one load for the module, not one a test)."""
    import spacy_memcoref.cli as cli

    asked = []

    def load(model, gpu_id=-1, **kwargs):
        asked.append(model)
        return s2e_shipped

    monkeypatch.setattr(cli, "load_pipeline", load)
    return asked


def _resolve_output(result) -> List[str]:
    assert result.exit_code == 0, result.output
    return result.stdout.splitlines()


def test_resolve_prints_the_clusters_then_the_resolved_text():
    """The real path: the shipped model loaded by name through load_pipeline."""
    result = runner.invoke(app, ["resolve", ALICE, "--model", "s2e-ontogum"])
    assert _resolve_output(result) == [*ALICE_CLUSTERS, "", ALICE_RESOLVED]


@pytest.mark.parametrize("args", [[], ["-"]])
def test_resolve_reads_standard_input(loads, args):
    result = runner.invoke(app, ["resolve", *args, "--model", "s2e-ontogum"], input=ALICE + "\n")
    assert _resolve_output(result) == [*ALICE_CLUSTERS, "", ALICE_RESOLVED]
    assert loads == ["s2e-ontogum"]


def test_resolve_reads_a_utf8_file(loads, tmp_path):
    path = tmp_path / "text.txt"
    path.write_text(ALICE, encoding="utf8")
    result = runner.invoke(app, ["resolve", "--file", str(path), "--model", "s2e-ontogum"])
    assert _resolve_output(result) == [*ALICE_CLUSTERS, "", ALICE_RESOLVED]


def test_resolve_json_is_one_object_with_character_offsets(loads):
    result = runner.invoke(app, ["resolve", ALICE, "--model", "s2e-ontogum", "--json"])
    lines = _resolve_output(result)
    assert len(lines) == 1
    record = json.loads(lines[0])
    assert record["resolved"] == ALICE_RESOLVED
    assert [[m["text"] for m in cluster] for cluster in record["clusters"]] == [["Alice", "She"], ["Bob", "him"]]
    for cluster in record["clusters"]:
        for mention in cluster:
            assert set(mention) == {"start", "end", "text"}
            assert ALICE[mention["start"] : mention["end"]] == mention["text"]


def test_resolve_model_defaults_to_the_default_shipped_model(loads):
    from spacy_memcoref import pretrained

    result = runner.invoke(app, ["resolve", ALICE])
    assert result.exit_code == 0, result.output
    assert loads == [pretrained.DEFAULT_MODEL]


@pytest.mark.parametrize("args, text", [([], ""), ([], " \n\t"), (["-"], "\n"), (["  "], None)])
def test_resolve_empty_input_is_one_line(loads, args, text):
    result = runner.invoke(app, ["resolve", *args, "--model", "s2e-ontogum"], input=text)
    assert_user_error(result, "no text to resolve", "empty")
    assert loads == []  # refused before any model is loaded


def test_resolve_file_errors_are_one_line_naming_the_file(loads, tmp_path):
    missing = tmp_path / "missing.txt"
    assert_user_error(runner.invoke(app, ["resolve", "--file", str(missing)]), str(missing), "no such file")
    assert_user_error(runner.invoke(app, ["resolve", "--file", str(tmp_path)]), str(tmp_path), "not a file")
    latin1 = tmp_path / "latin1.txt"
    latin1.write_bytes("Zoë met Bob.".encode("latin-1"))
    assert_user_error(runner.invoke(app, ["resolve", "--file", str(latin1)]), str(latin1), "not UTF-8", "0xeb")
    empty = tmp_path / "empty.txt"
    empty.write_text("", encoding="utf8")
    assert_user_error(runner.invoke(app, ["resolve", "--file", str(empty)]), str(empty), "empty")
    assert_user_error(runner.invoke(app, ["resolve", ALICE, "--file", str(empty)]), "not both")
    assert loads == []


def test_resolve_loading_errors_are_one_line(monkeypatch):
    import spacy_memcoref.cli as cli
    from spacy_memcoref.errors import EncoderNotFound

    result = runner.invoke(app, ["resolve", ALICE, "--model", "no-such-model-anywhere"])
    assert_user_error(result, "no-such-model-anywhere")

    def not_found(model, gpu_id=-1, **kwargs):
        raise EncoderNotFound("the base encoder of s2e-x is not installed: pip install it")

    monkeypatch.setattr(cli, "load_pipeline", not_found)
    assert_user_error(runner.invoke(app, ["resolve", ALICE]), "base encoder of s2e-x")


def test_the_memcoref_console_script_points_at_a_function():
    """`pip install .` installs a `memcoref` command: setup.cfg's console
    script (the package's metadata lives in setup.cfg; pyproject.toml holds the
    build system only), and its target exists."""
    import configparser
    import importlib
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    config = configparser.ConfigParser()
    config.read(root / "setup.cfg", encoding="utf8")
    scripts = dict(
        (name.strip(), target.strip())
        for name, _, target in (
            line.partition("=") for line in config["options.entry_points"]["console_scripts"].strip().splitlines()
        )
    )
    module, _, function = scripts["memcoref"].partition(":")
    assert callable(getattr(importlib.import_module(module), function))
    assert "[project" not in (root / "pyproject.toml").read_text(encoding="utf8")  # one place for the metadata


# ----- a thin CLI: the tuning commands print what tuning/ returns (issue 64, item 5) -------


@pytest.mark.filterwarnings("ignore::spacy_memcoref.pipeline.coref_component.UntrainedWarning")
def test_the_tuning_commands_print_what_the_tuning_functions_return(models, tmp_path):
    import dataclasses

    from spacy_memcoref.loading import load_pipeline
    from spacy_memcoref.tuning.gap import GapThresholdResult, tune_pipeline_gap_threshold
    from spacy_memcoref.tuning.link_threshold import LinkThresholdResult, tune_pipeline_link_threshold
    from spacy_memcoref.tuning.people import PeopleCountResult, count_pipeline_people, read_people_rows

    def printed(args) -> List[str]:
        result = runner.invoke(app, args)
        assert result.exit_code == 0, result.output
        return result.stdout.splitlines()

    s2e, petra, dev, gap = str(models / "s2e"), str(models / "petra"), models / "dev.spacy", models / "gap.spacy"
    linked = tune_pipeline_link_threshold(load_pipeline(s2e), dev, model=s2e)
    assert isinstance(linked, LinkThresholdResult) and dataclasses.is_dataclass(linked)
    out = tmp_path / "link"
    lines = [*linked.table_lines(), linked.stored_line(out), json.dumps(linked.summary(), sort_keys=True)]
    assert printed(["tune-link-threshold", s2e, str(dev), "-o", str(out)]) == lines
    tuned = tune_pipeline_gap_threshold(load_pipeline(petra), gap, calibrate=False, batch_size=3)
    assert isinstance(tuned, GapThresholdResult) and tuned.component == "memcoref_petra"
    out = tmp_path / "gap"
    lines = [*tuned.table_lines(), tuned.stored_line(out), json.dumps(tuned.summary(), sort_keys=True)]
    assert (
        printed(["tune-gap-threshold", petra, str(gap), "-o", str(out), "--no-calibrate", "--batch-size", "3"]) == lines
    )
    people = tmp_path / "people.tsv"
    people.write_text(PEOPLE, encoding="utf8")
    data = read_people_rows(people, dev_fraction=0.5)
    assert (len(data.dev_rows), len(data.rows), data.dev_option) == (1, 1, "--dev-fraction")
    counted = count_pipeline_people(load_pipeline(petra), data)
    assert isinstance(counted, PeopleCountResult) and counted.alpha_source == "chosen on 1 dev docs (--dev-fraction)"
    out = tmp_path / "people"
    lines = [*counted.table_lines(), counted.stored_line(out), json.dumps(counted.summary(), sort_keys=True)]
    assert printed(["count-people", petra, str(people), "--dev-fraction", "0.5", "-o", str(out)]) == lines
    # the functions save nothing: the commands do, with the result's save
    assert sorted(p.name for p in tmp_path.iterdir()) == ["gap", "link", "people", "people.tsv"]
