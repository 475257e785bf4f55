"""The command line's user errors: bad options, bad files and outputs that
would overwrite an input get a clear one-line error (exit 1) instead of wrong
results or a traceback; long fields are cut in messages; and the top-level
help lists the commands in workflow order.

conftest's `models` (small s2e and PeTra pipelines, initialized, not trained)
stand in for real ones.
"""
import os
import re

import pytest
import torch
from spacy.tokens import DocBin
from typer.testing import CliRunner

from spacy_memcoref.cli import app
from spacy_memcoref.errors import DataFormatError
from spacy_memcoref.util import atomic_output

from conftest import CONLL, GAP_SAMPLE, assert_user_error

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
    result = runner.invoke(app, ["predict", str(models / "s2e"), str(models / "dev.spacy"), str(tmp_path / "o.spacy"), "--gpu-id", "0"])
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
    result = runner.invoke(app, ["predict", str(models / "s2e"), str(tmp_path / "missing.spacy"), str(tmp_path / "o.spacy")])
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
    listed = [line.split()[0] for line in result.output.split("Commands:")[1].splitlines() if line.startswith("  ") and not line.startswith("   ")]
    # the workflow, written out: data in, tune, predict at scale, inspect, ship
    assert listed == [
        "convert", "export", "score", "tune-link-threshold", "tune-gap-threshold",
        "predict", "annotate", "quantize", "visualize", "count-people", "info", "pretrained-build",
    ]
    assert "..." not in result.output.split("Commands:")[1]  # every one-line help fits
    # no Rich markup: brackets in help texts print as written
    result = CliRunner().invoke(app, ["tune-gap-threshold", "--help"], env={"COLUMNS": "100"})
    assert "(scale, shift)" in result.output and "╭" not in result.output
