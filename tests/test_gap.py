"""GAP: reader, DocBin converter, system-file export, and metrics checked
against the official scorer (../shared/tools/gap-scorer/gap_scorer.py)."""

import math
import random
import re
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import pytest
import spacy
from spacy.tokens import Doc, DocBin, SpanGroup
from typer.testing import CliRunner

from spacy_memcoref.cli import app
from spacy_memcoref.corpora.gap import (
    GAP_COLUMNS,
    GapStats,
    gap_to_docbin,
    read_gap,
    read_gap_rows,
)
from spacy_memcoref.errors import DataFormatError
from spacy_memcoref.scoring.gap_decisions import gap_decisions, gap_gold
from spacy_memcoref.corpora.gap import write_gap_system_rows
from spacy_memcoref.scoring.gap_export import docbin_to_gap_system, gap_system_rows
from spacy_memcoref.scoring.gap_metrics import (
    gap_counts,
    gap_scores,
    gap_table,
    read_gap_gold,
    read_gap_system,
    score_gap_files,
)

DATA = Path(__file__).parent / "data"
SAMPLE = DATA / "gap_sample.tsv"
HEADER = "\t".join(GAP_COLUMNS)
# Expansions to token boundaries with spaCy 3.8's English tokenizer:
# development 9 spans (9 rows), validation 2 spans (2 rows).
EXPECTED_EXPANSIONS = {"gap-development.tsv": 9, "gap-validation.tsv": 2}
EXPECTED_ROWS = {"gap-development.tsv": 2000, "gap-validation.tsv": 454}

# Largest |ours - official| seen over all comparisons (percent points), printed at the end.
MAX_DIFF: List[float] = [0.0]


@pytest.fixture(scope="module")
def nlp():
    return spacy.blank("en")


# --------------------------------------------------------------------------- the official scorer


def run_official(scorer: Path, gold: Path, system: Path) -> Dict[str, object]:
    """Run gap_scorer.py and parse its scorecard."""
    proc = subprocess.run(
        [sys.executable, scorer.name, "--gold_tsv", str(gold), "--system_tsv", str(system)],
        cwd=scorer.parent,
        capture_output=True,
        text=True,
        check=True,
    )
    out = proc.stdout
    parsed: Dict[str, object] = {}
    for name, r, p, f, tp, fp, fn, tn in re.findall(
        r"(Overall|Masculine|Feminine) recall: (\S+) precision: (\S+) f1: (\S+)\n"
        r"\t\ttp (\d+)\tfp (\d+)\n\t\tfn (\d+)\ttn (\d+)",
        out,
    ):
        parsed[name] = {"r": r, "p": p, "f": f, "tp": int(tp), "fp": int(fp), "fn": int(fn), "tn": int(tn)}
    match = re.search(r"Bias \(F/M\): (\S+)", out)
    assert match and len(parsed) == 3, out
    parsed["bias"] = match.group(1)
    return parsed


def assert_same_as_official(scorer: Path, gold: Path, system: Path) -> Dict[str, float]:
    official = run_official(scorer, gold, system)
    scores, rows = score_gap_files(gold, system)
    counts, _ = gap_counts(read_gap_gold(gold), read_gap_system(system))
    for name, key, suffix in (
        ("Overall", None, ""),
        ("Masculine", "masculine", "_masc"),
        ("Feminine", "feminine", "_fem"),
    ):
        off = official[name]
        c = counts[key]
        assert (c.tp, c.fp, c.fn, c.tn) == (off["tp"], off["fp"], off["fn"], off["tn"]), name
        for metric, ours_pct in (("p", c.precision_pct()), ("r", c.recall_pct()), ("f", c.f1_pct())):
            # the printed table uses the same rounding as the official scorecard
            assert f"{ours_pct:.1f}" == off[metric], (name, metric)
            frac = scores[f"gap_{metric}{suffix}"]
            diff = abs(frac * 100.0 - float(off[metric]))
            MAX_DIFF[0] = max(MAX_DIFF[0], diff)
            assert diff <= 0.05 + 1e-9, (name, metric, frac, off[metric])
        table_row = next(row for row in rows if row.startswith(name))
        assert table_row.split()[1:4] == [off["p"], off["r"], off["f"]]
    if official["bias"] == "-":
        assert math.isnan(scores["gap_bias"])
    else:
        assert f"{scores['gap_bias']:.2f}" == official["bias"]
        assert abs(scores["gap_bias"] - float(official["bias"])) <= 0.005 + 1e-9
    assert f"Bias (F/M): {official['bias']}" in rows
    return scores


def gold_rows(path: Path) -> List[Tuple[str, str, bool, bool]]:
    return [(r.id, r.pronoun, r.a_coref, r.b_coref) for r in read_gap_rows(path)]


def write_system(path: Path, lines: List[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def tf(value: bool, style: str = "TRUE") -> str:
    word = "true" if value else "false"
    return {"TRUE": word.upper(), "true": word, "True": word.capitalize()}[style]


# --------------------------------------------------------------------------- sample (no ../shared)


def test_read_sample(nlp):
    stats = GapStats()
    docs = list(read_gap(SAMPLE, nlp, stats=stats))
    assert [d.user_data["gap"]["id"] for d in docs] == ["sample-1", "sample-2", "sample-3", "sample-4"]
    assert stats.rows == 4 and stats.expansions == 1 and stats.expanded_rows == 1
    assert stats.expanded == [("sample-2", "B", "John C", "John C.")]
    d1, d2, d3, d4 = docs
    spans = {s.label_: s.text for s in d1.spans["gap"]}
    assert spans == {"A": "Anna Kovač", "B": "Maria Núñez", "PRONOUN": "she"}
    assert [s.label_ for s in d1.spans["gap"]] == ["A", "B", "PRONOUN"]
    assert d1.user_data["gap"] == {
        "id": "sample-1",
        "A-coref": True,
        "B-coref": False,
        "url": "http://example.org/sample-1",
    }
    assert [s.text for s in d1.spans["coref_clusters_1"]] == ["Anna Kovač", "she"]
    assert {s.label_: s.text for s in d2.spans["gap"]}["B"] == "John C."  # expanded, not dropped
    assert [s.text for s in d2.spans["coref_clusters_1"]] == ["John C.", "his"]
    # A and B both TRUE: one cluster with all three (labels in any case, as the official scorer reads them)
    assert d3.user_data["gap"]["A-coref"] is True and d3.user_data["gap"]["B-coref"] is True
    assert [s.text for s in d3.spans["coref_clusters_1"]] == ["Mary Smith", "Mary", "She"]
    # both FALSE: no cluster
    assert "coref_clusters_1" not in d4.spans
    assert gap_gold(d3) == ("sample-3", "feminine", True, True)
    assert gap_gold(d4) == ("sample-4", "masculine", False, False)
    # default tokenizer and a bare tokenizer give the same tokens
    assert (
        [len(d) for d in read_gap(SAMPLE)]
        == [len(d) for d in read_gap(SAMPLE, nlp.tokenizer)]
        == [len(d) for d in docs]
    )


def test_sample_docbin_roundtrip_and_export(tmp_path, nlp):
    out = tmp_path / "sample.spacy"
    stats = gap_to_docbin(SAMPLE, out)
    docs = list(DocBin().from_disk(out).get_docs(nlp.vocab))
    originals = list(read_gap(SAMPLE, nlp))
    tokens = sum(len(d) for d in docs)  # what the DocBin holds
    assert stats == {"rows": 4, "docs": 4, "expansions": 1, "expanded_rows": 1, "tokens": tokens, "links": 4}
    for doc, orig in zip(docs, originals):
        assert doc.user_data["gap"] == orig.user_data["gap"]
        assert [(s.start, s.end, s.label_) for s in doc.spans["gap"]] == [
            (s.start, s.end, s.label_) for s in orig.spans["gap"]
        ]
    system = tmp_path / "sample.sys.tsv"
    assert docbin_to_gap_system(out, system) == 4
    assert system.read_text(encoding="utf-8") == (
        "sample-1\tTRUE\tFALSE\nsample-2\tFALSE\tTRUE\nsample-3\tTRUE\tTRUE\nsample-4\tFALSE\tFALSE\n"
    )
    scores, rows = score_gap_files(SAMPLE, system)
    assert scores["gap_f"] == scores["gap_p"] == scores["gap_r"] == 1.0
    assert scores["gap_bias"] == 1.0
    # in-memory scoring agrees
    gold = {i: (g, a, b) for i, g, a, b in (gap_gold(d) for d in docs)}
    assert gap_scores(gold, {d.user_data["gap"]["id"]: gap_decisions(d) for d in docs}) == scores


def _gap_doc(nlp, clusters: Dict[str, List[Tuple[int, int]]]) -> Doc:
    #                  0     1    2    3     4    5   6     7     8   9
    doc = nlp.make_doc("Anna Lee met Mary Jones and she smiled at them")
    doc.spans["gap"] = SpanGroup(
        doc,
        name="gap",
        spans=[
            doc.char_span(0, 8, label="A"),
            doc.char_span(13, 23, label="B"),
            doc.char_span(28, 31, label="PRONOUN"),
        ],
    )
    doc.user_data["gap"] = {"id": "x", "A-coref": False, "B-coref": False, "url": ""}
    for key, mentions in clusters.items():
        doc.spans[key] = [doc[s:e] for s, e in mentions]
    return doc


@pytest.mark.parametrize(
    "clusters,prefix,expected",
    [
        ({}, "coref_clusters", (False, False)),
        ({"coref_clusters_1": [(0, 2), (6, 7)]}, "coref_clusters", (True, False)),
        ({"coref_clusters_1": [(1, 2), (6, 7)]}, "coref_clusters", (True, False)),  # partial overlap with A
        (
            {"coref_clusters_1": [(0, 2), (3, 5)], "coref_clusters_2": [(6, 7), (9, 10)]},
            "coref_clusters",
            (False, False),
        ),
        (
            {"coref_clusters_1": [(0, 2), (9, 10)], "coref_clusters_3": [(3, 4), (6, 7)]},
            "coref_clusters",
            (False, True),
        ),
        ({"coref_clusters_1": [(0, 2), (3, 5), (6, 7)]}, "coref_clusters", (True, True)),
        ({"coref_clusters_1": [(6, 7)]}, "coref_clusters", (False, False)),  # the pronoun alone
        ({"coref_clusters_1": [(0, 2), (6, 7)], "pred_2": [(3, 5), (6, 7)]}, "pred", (False, True)),
        ({"coref_clusters_1": [(0, 2), (6, 7)], "coref_clusters_x": [(3, 5), (6, 7)]}, "coref_clusters", (True, False)),
    ],
)
def test_gap_decisions_from_clusters(nlp, clusters, prefix, expected):
    assert gap_decisions(_gap_doc(nlp, clusters), prefix=prefix) == expected


def test_system_file_reading_like_official(tmp_path):
    path = write_system(tmp_path / "s.tsv", ["ID\tA-coref\tB-coref", "a\ttrue\tFALSE", "", "b\tFalse\tTRUE"])
    assert read_gap_system(path) == {"a": (True, False), "b": (False, True)}


def test_gap_scores_missing_and_extra():
    gold = {"m1": ("masculine", True, False), "f1": ("feminine", False, True), "f2": ("feminine", False, False)}
    counts, missing = gap_counts(gold, {"m1": (True, False), "zz": (True, True)})
    assert missing == 2
    # a missing row gives 2 false negatives whatever the gold labels (official behaviour)
    assert (counts[None].tp, counts[None].fp, counts[None].fn, counts[None].tn) == (1, 0, 4, 1)
    scores = gap_scores(gold, {"m1": (True, False)})
    assert scores["gap_f_fem"] == 0.0 and math.isnan(scores["gap_bias"])
    assert scores["gap_p"] == 1.0 and scores["gap_r"] == 0.2
    assert any(row.startswith("Missing system rows: 2") for row in gap_table(counts, missing=2, extra=1))
    with pytest.raises(ValueError):
        gap_scores({"x": (None, True, False)}, {})


# --------------------------------------------------------------------------- bad input

GOOD_ROW = "r1\tAnna met Mary. She left.\tShe\t15\tAnna\t0\tTRUE\tMary\t9\tFALSE\thttp://x"
GOOD_ROW2 = GOOD_ROW.replace("r1", "r2", 1)


def _row(**changes: str) -> str:
    fields = dict(zip(GAP_COLUMNS, GOOD_ROW.split("\t")))
    fields.update(changes)
    return "\t".join(fields[c] for c in GAP_COLUMNS)


BAD_GOLD = [
    ("empty", b"", None, "empty file"),
    ("blank_lines_only", b"\n\n", 1, "unexpected header"),
    ("header_only", (HEADER + "\n").encode(), 1, "no data rows"),
    ("missing_header", (GOOD_ROW + "\n" + GOOD_ROW2 + "\n").encode(), 1, "missing header"),
    ("wrong_header", (HEADER.replace("URL", "Link") + "\n" + GOOD_ROW + "\n").encode(), 1, "unexpected header"),
    ("extra_column", (HEADER + "\n" + GOOD_ROW + "\textra\n").encode(), 2, "found 12"),
    ("missing_column", (HEADER + "\n" + GOOD_ROW.rsplit("\t", 1)[0] + "\n").encode(), 2, "found 10"),
    ("bad_coref", (HEADER + "\n" + _row(**{"A-coref": "yes"}) + "\n").encode(), 2, "A-coref must be TRUE or FALSE"),
    (
        "coref_space",
        (HEADER + "\n" + _row(**{"B-coref": "FALSE "}) + "\n").encode(),
        2,
        "B-coref must be TRUE or FALSE",
    ),
    (
        "offset_not_int",
        (HEADER + "\n" + _row(**{"A-offset": "x1"}) + "\n").encode(),
        2,
        "A-offset must be a non-negative integer",
    ),
    (
        "offset_negative",
        (HEADER + "\n" + _row(**{"B-offset": "-1"}) + "\n").encode(),
        2,
        "B-offset must be a non-negative integer",
    ),
    ("offset_outside", (HEADER + "\n" + _row(**{"Pronoun-offset": "99"}) + "\n").encode(), 2, "outside the text"),
    ("text_mismatch", (HEADER + "\n" + _row(**{"A-offset": "1"}) + "\n").encode(), 2, "not the A column"),
    ("pronoun_mismatch", (HEADER + "\n" + _row(Pronoun="she") + "\n").encode(), 2, "not the Pronoun column"),
    ("empty_mention", (HEADER + "\n" + _row(B="") + "\n").encode(), 2, "column B is empty"),
    ("empty_id", (HEADER + "\n" + _row(ID="") + "\n").encode(), 2, "column ID is empty"),
    (
        "duplicate_id",
        (HEADER + "\n" + GOOD_ROW + "\n" + GOOD_ROW + "\n").encode(),
        3,
        "duplicate ID 'r1' (first on line 2)",
    ),
    (
        "bad_utf8",
        (HEADER + "\n").encode() + GOOD_ROW.encode().replace(b"Anna met", b"Ann\xff met") + b"\n",
        2,
        "not valid UTF-8",
    ),
]


def _check_error(err: DataFormatError, path: Path, line: Optional[int], reason: str) -> None:
    assert err.path == str(path)
    assert err.line == line
    assert reason in err.reason
    where = f"{path}:{line}" if line is not None else str(path)
    assert str(err).startswith(where + ": ")


def _leftovers(folder: Path) -> List[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


@pytest.mark.parametrize("name,content,line,reason", BAD_GOLD, ids=[c[0] for c in BAD_GOLD])
def test_bad_gold(tmp_path, name, content, line, reason):
    path = tmp_path / f"{name}.tsv"
    path.write_bytes(content)
    with pytest.raises(DataFormatError) as exc:
        list(read_gap(path))
    _check_error(exc.value, path, line, reason)
    out = tmp_path / "out" / "gap.spacy"
    with pytest.raises(DataFormatError) as exc:
        gap_to_docbin(path, out)
    _check_error(exc.value, path, line, reason)
    assert not out.exists()
    with pytest.raises(DataFormatError) as exc:
        score_gap_files(path, SAMPLE)  # as the gold file of the scorer
    _check_error(exc.value, path, line, reason)
    # the CLI: non-zero exit, error names file and line, no output file
    result = CliRunner().invoke(app, ["convert", "gap", str(path), str(out)])
    assert result.exit_code != 0
    assert str(path) in result.output and reason in result.output
    assert not out.exists()
    assert not out.parent.exists() or _leftovers(out.parent) == []


def test_gold_pronoun_without_gender(tmp_path):
    path = tmp_path / "they.tsv"
    path.write_text(
        HEADER + "\n" + GOOD_ROW.replace("She\t15", "They\t15").replace("Mary. She", "Mary. They") + "\n",
        encoding="utf-8",
    )
    assert len(list(read_gap(path))) == 1  # fine for conversion
    with pytest.raises(DataFormatError) as exc:
        score_gap_files(path, write_system(tmp_path / "s.tsv", ["r1\tTRUE\tFALSE"]))
    _check_error(exc.value, path, 2, "no gender")


BAD_SYSTEM = [
    ("empty", [], None, "empty system file"),
    ("blank_only", ["", ""], None, "empty system file"),
    ("two_columns", ["sample-1\tTRUE"], 1, "found 2"),
    ("four_columns", ["sample-1\tTRUE\tFALSE\t0.9"], 1, "found 4"),
    ("bad_label", ["sample-1\tTRUE\tFALSE", "sample-2\tyes\tFALSE"], 2, "A-coref must be TRUE or FALSE"),
    ("bad_label_b", ["sample-1\tTRUE\t1"], 1, "B-coref must be TRUE or FALSE"),
    ("empty_id", ["\tTRUE\tFALSE"], 1, "column ID is empty"),
    ("duplicate", ["sample-1\tTRUE\tFALSE", "sample-2\tTRUE\tFALSE", "sample-1\tFALSE\tFALSE"], 3, "duplicate ID"),
    ("header_late", ["sample-1\tTRUE\tFALSE", "ID\tA-coref\tB-coref"], 2, "A-coref must be TRUE or FALSE"),
]


@pytest.mark.parametrize("name,lines,line,reason", BAD_SYSTEM, ids=[c[0] for c in BAD_SYSTEM])
def test_bad_system(tmp_path, name, lines, line, reason):
    path = write_system(tmp_path / f"{name}.tsv", lines)
    with pytest.raises(DataFormatError) as exc:
        score_gap_files(SAMPLE, path)
    _check_error(exc.value, path, line, reason)
    result = CliRunner().invoke(app, ["score", "gap", str(SAMPLE), str(path)])
    assert result.exit_code != 0
    assert str(path) in result.output and reason in result.output


def _bad_docbins(tmp_path: Path, nlp) -> List[Tuple[str, Path, str]]:
    docs = list(read_gap(SAMPLE, nlp))
    no_spans = docs[1].copy()
    del no_spans.spans["gap"]
    no_id = docs[1].copy()
    no_id.user_data["gap"] = {"A-coref": True, "B-coref": False, "url": ""}
    no_label = docs[1].copy()
    no_label.spans["gap"] = [s for s in no_label.spans["gap"] if s.label_ != "PRONOUN"]
    cases = []
    for name, bad in (
        ("no_gap_spans", no_spans),
        ("no_gap_id", no_id),
        ("no_pronoun", no_label),
        ("duplicate_id", docs[0]),
    ):
        path = tmp_path / f"{name}.spacy"
        DocBin(store_user_data=True, docs=[docs[0], bad]).to_disk(path)
        cases.append((name, path, _reason_of(name)))
    not_docbin = tmp_path / "not_docbin.spacy"
    not_docbin.write_bytes(b"this is not a DocBin")
    cases.append(("not_docbin", not_docbin, "not a DocBin"))
    empty = tmp_path / "empty.spacy"
    DocBin(store_user_data=True).to_disk(empty)
    cases.append(("empty", empty, "holds no Docs"))
    return cases


def _reason_of(name: str) -> str:
    return {
        "no_gap_spans": 'doc 1 (0-based): no doc.spans["gap"]',
        "no_gap_id": 'doc 1 (0-based): no doc.user_data["gap"]["id"]',
        "no_pronoun": 'doc 1 (0-based): doc.spans["gap"] has no span labelled PRONOUN',
        "duplicate_id": "doc 1 (0-based): duplicate GAP ID 'sample-1'",
    }[name]


def test_bad_export(tmp_path, nlp):
    for name, path, reason in _bad_docbins(tmp_path, nlp):
        out = tmp_path / "out" / f"{name}.tsv"
        with pytest.raises(DataFormatError) as exc:
            docbin_to_gap_system(path, out)
        _check_error(exc.value, path, None, reason)
        assert not out.exists(), name
        result = CliRunner().invoke(app, ["export", "gap", str(path), str(out)])
        assert result.exit_code != 0, name
        assert str(path) in result.output and reason in result.output, name
        assert not out.exists(), name
        assert not out.parent.exists() or _leftovers(out.parent) == [], name
    docs = list(read_gap(SAMPLE, nlp))
    del docs[2].spans["gap"]
    with pytest.raises(DataFormatError, match=r"doc 2 \(0-based\)"):
        write_gap_system_rows(gap_system_rows(docs), tmp_path / "w.tsv")
    assert not (tmp_path / "w.tsv").exists()


def test_cli_happy_path(tmp_path):
    runner = CliRunner()
    out = tmp_path / "s.spacy"
    result = runner.invoke(app, ["convert", "gap", str(SAMPLE), str(out)])
    assert result.exit_code == 0, result.output
    assert "'expansions': 1" in result.output
    system = tmp_path / "s.sys.tsv"
    result = runner.invoke(app, ["export", "gap", str(out), str(system)])
    assert result.exit_code == 0, result.output
    result = runner.invoke(app, ["score", "gap", str(SAMPLE), str(system)])
    assert result.exit_code == 0, result.output
    assert result.output.strip().splitlines()[-1].startswith("{") and '"gap_f": 1.0' in result.output


# --------------------------------------------------------------------------- shared data and the official scorer


@pytest.fixture(scope="module")
def gap_dir(shared_data) -> Path:
    path = shared_data / "gap"
    if not path.exists():
        pytest.skip(f"GAP data not found at {path}")
    return path


@pytest.mark.shared_data
@pytest.mark.parametrize("name", sorted(EXPECTED_ROWS))
def test_shared_gap_converts(gap_dir, tmp_path, nlp, name):
    source = gap_dir / name
    rows = list(read_gap_rows(source))
    assert len(rows) == EXPECTED_ROWS[name]
    for row in rows:  # before expansion the offsets give exactly the TSV strings
        for string, offset in ((row.pronoun, row.pronoun_offset), (row.a, row.a_offset), (row.b, row.b_offset)):
            assert row.text[offset : offset + len(string)] == string
    stats = GapStats()
    docs = list(read_gap(source, nlp, stats=stats))
    print(f"\n{name}: {stats.rows} rows, {stats.expansions} spans expanded to token boundaries: {stats.expanded}")
    assert stats.expansions == EXPECTED_EXPANSIONS[name]
    assert stats.expanded_rows == EXPECTED_EXPANSIONS[name]
    n_expanded = 0
    for row, doc in zip(rows, docs):
        spans = {s.label_: s for s in doc.spans["gap"]}
        for label, string, offset in (
            ("A", row.a, row.a_offset),
            ("B", row.b, row.b_offset),
            ("PRONOUN", row.pronoun, row.pronoun_offset),
        ):
            span = spans[label]
            assert span.start_char <= offset and offset + len(string) <= span.end_char
            if span.text != string:
                n_expanded += 1
                assert string in span.text
        assert doc.user_data["gap"]["id"] == row.id
        assert doc.user_data["gap"]["A-coref"] is row.a_coref and doc.user_data["gap"]["B-coref"] is row.b_coref
    assert n_expanded == EXPECTED_EXPANSIONS[name]
    # the converter (GAP has no row with A and B both TRUE)
    out = tmp_path / "gap.spacy"
    stats = gap_to_docbin(source, out)
    assert stats["rows"] == stats["docs"] == EXPECTED_ROWS[name]
    assert stats["expansions"] == EXPECTED_EXPANSIONS[name]
    assert stats["links"] == sum(r.a_coref + r.b_coref for r in rows)


@pytest.mark.shared_data
def test_shared_gold_export_scores_100(gap_dir, gap_scorer, tmp_path, nlp):
    # validation: through the DocBin file; development: in-memory Docs
    gold = gap_dir / "gap-validation.tsv"
    docbin = tmp_path / "val.spacy"
    gap_to_docbin(gold, docbin)
    system = tmp_path / "val.sys.tsv"
    assert docbin_to_gap_system(docbin, system) == 454
    scores = assert_same_as_official(gap_scorer, gold, system)
    assert scores["gap_f"] == scores["gap_f_masc"] == scores["gap_f_fem"] == 1.0
    official = run_official(gap_scorer, gold, system)
    assert official["Overall"]["f"] == "100.0"

    gold = gap_dir / "gap-development.tsv"
    system = tmp_path / "dev.sys.tsv"
    assert write_gap_system_rows(gap_system_rows(read_gap(gold, nlp)), system) == 2000
    scores = assert_same_as_official(gap_scorer, gold, system)
    assert scores["gap_f"] == scores["gap_p"] == scores["gap_r"] == 1.0


def _system_cases(rows, tmp_path: Path) -> List[Tuple[str, Path, Path]]:
    """(name, gold, system) pairs: seeded random and adversarial."""
    cases = []
    ids = [r[0] for r in rows]
    for seed in range(5):
        rng = random.Random(seed)
        lines = []
        for ex_id, _, _, _ in rows:
            if rng.random() < 0.05 * seed:  # seed 0: no missing rows
                continue
            style = rng.choice(["TRUE", "true", "True"])
            lines.append(f"{ex_id}\t{tf(rng.random() < 0.4, style)}\t{tf(rng.random() < 0.45, style)}")
        rng.shuffle(lines)
        if seed == 3:
            lines += [f"not-in-gold-{i}\tTRUE\tTRUE" for i in range(3)]
        cases.append((f"random{seed}", lines))
    # a noisy copy of gold (realistic scores), with a header line
    rng = random.Random(42)
    noisy = ["ID\tA-coref\tB-coref"] + [
        f"{i}\t{tf(a != (rng.random() < 0.2))}\t{tf(b != (rng.random() < 0.2))}" for i, _, a, b in rows
    ]
    cases.append(("noisy_gold", noisy))
    cases.append(("all_true", [f"{i}\tTRUE\tTRUE" for i in ids]))
    cases.append(("all_false", [f"{i}\tFALSE\tFALSE" for i in ids]))
    cases.append(("system_is_gold", [f"{i}\t{tf(a)}\t{tf(b)}" for i, _, a, b in rows]))
    cases.append(("one_row_only", [f"{ids[0]}\tTRUE\tFALSE"]))
    cases.append(("half_missing", [f"{i}\t{tf(a)}\t{tf(b)}" for i, _, a, b in rows[::2]]))
    cases.append(("only_extra_ids", ["zzz\tTRUE\tTRUE"]))
    # masculine right, feminine all wrong: bias undefined ("-")
    from spacy_memcoref.scoring.gap_metrics import pronoun_gender

    cases.append(
        (
            "fem_zero",
            [
                f"{i}\t{tf(a if pronoun_gender(p) == 'masculine' else False)}\t{tf(b if pronoun_gender(p) == 'masculine' else False)}"
                for i, p, a, b in rows
            ],
        )
    )
    cases.append(
        (
            "masc_zero",
            [
                f"{i}\t{tf(a if pronoun_gender(p) == 'feminine' else not a)}\t{tf(b if pronoun_gender(p) == 'feminine' else False)}"
                for i, p, a, b in rows
            ],
        )
    )
    return [(name, write_system(tmp_path / f"{name}.tsv", lines)) for name, lines in cases]


@pytest.mark.shared_data
def test_scores_equal_official(gap_dir, gap_scorer, tmp_path):
    gold = gap_dir / "gap-validation.tsv"
    rows = gold_rows(gold)
    for name, system in _system_cases(rows, tmp_path):
        assert_same_as_official(gap_scorer, gold, system)
    # a gold file with one gender only (masculine F1 = 0, bias "-")
    fem_gold = tmp_path / "fem_gold.tsv"
    lines = (gold).read_text(encoding="utf-8").splitlines()
    fem_gold.write_text(
        "\n".join([lines[0]] + [l for l in lines[1:] if l.split("\t")[2].lower() in ("she", "her", "hers")]) + "\n",
        encoding="utf-8",
    )
    fem_rows = gold_rows(fem_gold)
    rng = random.Random(7)
    fem_system = write_system(
        tmp_path / "fem_sys.tsv", [f"{i}\t{tf(rng.random() < 0.5)}\t{tf(b)}" for i, _, _, b in fem_rows]
    )
    scores = assert_same_as_official(gap_scorer, fem_gold, fem_system)
    assert scores["gap_f_masc"] == 0.0 and math.isnan(scores["gap_bias"])
    # development, one random system
    dev = gap_dir / "gap-development.tsv"
    rng = random.Random(11)
    dev_system = write_system(
        tmp_path / "dev_sys.tsv",
        [f"{i}\t{tf(rng.random() < 0.5)}\t{tf(rng.random() < 0.5)}" for i, _, _, _ in gold_rows(dev)],
    )
    assert_same_as_official(gap_scorer, dev, dev_system)
    print(f"\nmax |ours - official| over all GAP comparisons: {MAX_DIFF[0]:.4f} percent points")
