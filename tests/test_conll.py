"""CoNLL-2012 reader, DocBin converter and writer (spacy_memcoref.corpora.conll)."""

import re
import subprocess
import time
import warnings
from pathlib import Path
from typing import Dict, List

import pytest
import spacy
from spacy.tokens import Doc, DocBin
from typer.testing import CliRunner

from spacy_memcoref.cli import app
from spacy_memcoref.corpora.conll import (
    ConllStats,
    _iter_raw_docs,
    conll_to_docbin,
    docbin_to_conll,
    find_conll_files,
    read_conll_clusters,
    read_conll_docs,
    write_conll,
)
from spacy_memcoref.errors import DataFormatError

from conftest import CONLL


def _conll(rows: List[str]) -> str:
    """Rows written with spaces between columns -> tab-separated lines."""
    return "\n".join("\t".join(r.split()) if r and not r.startswith("#") else r for r in rows) + "\n"


# Document 1, part 000: 2 sentences, speakers Ann then Bob.
#  0 John (0 (1)       cluster 0 = John Smith [0,1]; cluster 1 = John [0,0]
#  1 Smith 0)
#  2 said -
#  3 that -
#  4 the (2|(3|(3     cluster 2 = [4,7] "the big house 's roof" ; cluster 3 = [4,5] and [4,6]
#  5 big 3)
#  6 house 3)
#  7 roof 2)
#  -- sentence --
#  8 He (0)             cluster 0 again, one-token
#  9 saw -
# 10 it (2)
# 11 a|b (4             token with `|`; cluster 4 = [11,12] containing [12,12] of cluster 4 (nested same cluster)
# 12 z (4)|4)
DOC1_P0 = [
    "#begin document (test/doc1); part 000",
    "test/doc1 0 0 John NNP - - - - Ann * (0|(1)",
    "test/doc1 0 1 Smith NNP - - - - Ann * 0)",
    "test/doc1 0 2 said VBD - - - - Ann * -",
    "test/doc1 0 3 that IN - - - - Ann * -",
    "test/doc1 0 4 the DT - - - - Ann * (2|(3|(3",
    "test/doc1 0 5 big JJ - - - - Ann * 3)",
    "test/doc1 0 6 house NN - - - - Ann * 3)",
    "test/doc1 0 7 roof NN - - - - Ann * 2)",
    "",
    "test/doc1 0 0 He PRP - - - - Bob * (0)",
    "test/doc1 0 1 saw VBD - - - - Bob * -",
    "test/doc1 0 2 it PRP - - - - Bob * (2)",
    "test/doc1 0 3 a|b NN - - - - Bob * (4",
    "test/doc1 0 4 z NN - - - - Bob * (4)|4)",
    "",
    "#end document",
]
DOC1_P1 = [
    "#begin document (test/doc1); part 001",
    "test/doc1 1 0 Mary NNP - - - - - * (7)",
    "test/doc1 1 1 left VBD - - - - - * -",
    "",
    "test/doc1 1 0 She PRP - - - - Carl * (7)",
    "",
    "#end document",
]
EXPECTED_CLUSTERS = {
    ("test/doc1", "000"): (
        13,
        [[(0, 1), (8, 8)], [(0, 0)], [(4, 7), (10, 10)], [(4, 5), (4, 6)], [(11, 12), (12, 12)]],
    ),
    ("test/doc1", "001"): (3, [[(0, 0), (2, 2)]]),
}


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf8")
    return path


@pytest.fixture
def small_conll(tmp_path) -> Path:
    return _write(tmp_path, "small.v4_gold_conll", _conll(DOC1_P0 + DOC1_P1))


def _spans(doc: Doc) -> Dict[str, List[tuple]]:
    return {k: [(s.start, s.end, s.label_) for s in g] for k, g in doc.spans.items()}


# --------------------------------------------------------------------------- #
# Small hand-written files
# --------------------------------------------------------------------------- #


def test_read_conll_clusters_small(small_conll):
    result = read_conll_clusters(small_conll)
    assert result == EXPECTED_CLUSTERS
    assert list(result) == [("test/doc1", "000"), ("test/doc1", "001")]  # file order


def test_convert_small_exact_spans(small_conll, tmp_path):
    out = tmp_path / "small.spacy"
    stats = conll_to_docbin(small_conll, out)
    assert isinstance(stats, ConllStats)
    assert (stats.files, stats.docs, stats.tokens, stats.mentions, stats.clusters) == (1, 2, 16, 11, 6)
    assert "2 docs" in str(stats)
    docs = list(DocBin().from_disk(out).get_docs(spacy.blank("en").vocab))
    assert len(docs) == 2
    d0, d1 = docs
    assert [t.text for t in d0] == "John Smith said that the big house roof He saw it a|b z".split()
    assert d0.text == "John Smith said that the big house roof He saw it a|b z"
    assert [t.is_sent_start for t in d0] == [True] + [False] * 7 + [True] + [False] * 4
    assert [t.is_sent_start for t in d1] == [True, False, True]
    assert d0.user_data["doc_id"] == "test/doc1" and d0.user_data["part"] == "000"
    assert d1.user_data["part"] == "001"
    assert _spans(d0) == {
        "coref_clusters_1": [(0, 2, ""), (8, 9, "")],
        "coref_clusters_2": [(0, 1, "")],
        "coref_clusters_3": [(4, 8, ""), (10, 11, "")],
        "coref_clusters_4": [(4, 6, ""), (4, 7, "")],
        "coref_clusters_5": [(11, 13, ""), (12, 13, "")],
        "speakers": [(0, 8, "Ann"), (8, 13, "Bob")],
    }
    assert _spans(d1) == {
        "coref_clusters_1": [(0, 1, ""), (2, 3, "")],
        "speakers": [(2, 3, "Carl")],
    }


def test_round_trip_small(small_conll, tmp_path):
    out = tmp_path / "small.spacy"
    conll_to_docbin(small_conll, out)
    back = tmp_path / "back.conll"
    assert docbin_to_conll(out, back) == 2
    text = back.read_text(encoding="utf8")
    assert text.startswith("#begin document (test/doc1); part 000\n")
    assert "#begin document (test/doc1); part 001\n" in text
    assert text.count("#end document") == 2
    assert read_conll_clusters(back) == EXPECTED_CLUSTERS
    raw_in = list(_iter_raw_docs(small_conll, full=True))
    raw_out = list(_iter_raw_docs(back, full=True))
    for a, b in zip(raw_in, raw_out):
        assert (a.words, a.sent_starts, a.speakers) == (b.words, b.sent_starts, b.speakers)
    # coref column is last, tab separated, 12 columns
    first = text.splitlines()[1].split("\t")
    assert len(first) == 12 and first[-1] == "(1|(2)" and first[1] == "0" and first[2] == "0"


def test_read_conll_docs_and_whitespace_and_litbank_layouts(tmp_path):
    # whitespace-aligned (no tabs), like the original OntoNotes *_gold_conll files
    spaced = "\n".join(r if r.startswith("#") else r.replace(" ", "   ") for r in DOC1_P0) + "\n"
    p1 = _write(tmp_path, "a/spaced_gold_conll", spaced)
    # LitBank layout: 12 columns, coref in a 13th, a trailing tab when empty; CRLF ends
    lit = [
        "#begin document (lit); part 0",
        "lit\t0\t0\tI\t_\t_\t_\t_\t_\t_\t_\t_\t(0)",
        "lit\t0\t1\tam\t_\t_\t_\t_\t_\t_\t_\t_\t",
        "",
        "lit\t0\t0\tme\t_\t_\t_\t_\t_\t_\t_\t_\t(0)",
        "",
        "#end document",
    ]
    p2 = _write(tmp_path, "b/lit.conll", "\r\n".join(lit) + "\r\n")
    _write(tmp_path, "b/ignored.txt", "not conll")
    assert find_conll_files(tmp_path) == [p1, p2]
    assert read_conll_clusters(p1)[("test/doc1", "000")] == EXPECTED_CLUSTERS[("test/doc1", "000")]
    assert read_conll_clusters(p2) == {("lit", "0"): (3, [[(0, 0), (2, 2)]])}
    docs = list(read_conll_docs(tmp_path, spacy.blank("en").vocab))
    assert [d.user_data["part"] for d in docs] == ["000", "0"]
    assert "speakers" not in docs[1].spans  # `_` is no speaker
    out = tmp_path / "x.conll"
    assert write_conll(docs, out) == 2
    assert read_conll_clusters(out) == {**read_conll_clusters(p1), **read_conll_clusters(p2)}
    assert "#begin document (lit); part 0\n" in out.read_text()


def test_odd_tokens_and_names(tmp_path):
    # a word with a space (tab-separated file), odd document name, empty document
    rows = [
        "#begin document odd name",
        "odd\t0\t0\tNew York\t-\t(0",
        "odd\t0\t1\t|\t-\t0)",
        "#end document",
        "#begin document (empty); part 2",
        "#end document",
    ]
    path = _write(tmp_path, "odd.conll", "\n".join(rows) + "\n")
    docs = list(read_conll_docs(path, spacy.blank("en").vocab))
    assert [t.text for t in docs[0]] == ["New York", "|"]
    assert docs[0].user_data == {"doc_id": "odd name", "part": ""}
    assert len(docs[1]) == 0
    out = tmp_path / "odd_out.conll"
    write_conll(docs, out)
    text = out.read_text()
    assert "#begin document odd name\n" in text and "#begin document (empty); part 2\n" in text
    # the space is replaced in the word column only; columns stay intact
    lines = [line.split("\t") for line in text.splitlines() if line and not line.startswith("#")]
    assert [line[3] for line in lines] == ["New_York", "|"]
    assert {len(line) for line in lines} == {12}
    assert read_conll_clusters(out) == read_conll_clusters(path)


def test_write_docs_made_in_python(tmp_path):
    nlp = spacy.blank("en")
    doc = nlp("Alice met Bob . \n She liked him .")
    doc.spans["coref_clusters_1"] = [doc[0:1], doc[6:7]]
    doc.spans["coref_clusters_2"] = [doc[2:3], doc[8:9]]
    doc.spans["coref_clusters_1_heads"] = [doc[1:2]]  # not a cluster group: ignored
    doc.spans["other"] = [doc[3:4]]
    doc2 = nlp("x")  # no clusters at all
    out = tmp_path / "py.conll"
    assert write_conll([doc, doc2], out) == 2
    text = out.read_text()
    assert "#begin document (doc_0); part 0" in text and "#begin document (doc_1); part 0" in text
    assert read_conll_clusters(out) == {
        ("doc_0", "0"): (len(doc), [[(0, 0), (6, 6)], [(2, 2), (8, 8)]]),
        ("doc_1", "0"): (1, []),
    }
    # the whitespace token "\n" must not break the columns
    assert all(len(line.split("\t")) == 12 for line in text.splitlines() if line and line[0] != "#")
    # a custom prefix
    doc.spans["pred_1"] = [doc[0:3]]
    write_conll([doc], out, prefix="pred")
    assert read_conll_clusters(out)[("doc_0", "0")][1] == [[(0, 2)]]


def test_write_warns_on_unwritable_overlap(tmp_path):
    nlp = spacy.blank("en")
    doc = nlp("a b c d e")
    doc.spans["coref_clusters_1"] = [doc[0:3], doc[2:5]]  # same cluster, crossing
    with pytest.warns(UserWarning, match="overlap"):
        write_conll([doc], tmp_path / "w.conll")
    # nested / same-start / same-end mentions of one cluster are fine: no warning
    doc.spans["coref_clusters_1"] = [doc[0:5], doc[0:2], doc[3:5], doc[4:5]]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        write_conll([doc], tmp_path / "w.conll")
    assert read_conll_clusters(tmp_path / "w.conll")[("doc_0", "0")][1] == [[(0, 1), (0, 4), (3, 4), (4, 4)]]


def test_conll_with_a_byte_order_mark_reads(tmp_path):
    path = tmp_path / "bom.conll"
    path.write_bytes(b"\xef\xbb\xbf" + CONLL.encode("utf8"))
    assert read_conll_clusters(path) == {("d1", "000"): (5, [[(0, 0), (3, 3)]])}
    stats = conll_to_docbin(path, tmp_path / "bom.spacy")
    assert stats.docs == 1


# --------------------------------------------------------------------------- #
# Bad input
# --------------------------------------------------------------------------- #

_GOOD = "d\t0\t0\tw\t-"

BAD_CASES = {
    # name: (file text, expected line or None, reason regex)
    "inconsistent_columns": (
        "#begin document (d); part 0\nd\t0\t0\tw\t-\nd\t0\t1\tw\t-\t(1)\n#end document\n",
        3,
        "6 columns.*line 2.*5",
    ),
    "too_few_columns": ("#begin document (d); part 0\nd\t0\tw\t(1)\n#end document\n", 2, "4 columns"),
    "never_closed": (
        f"#begin document (d); part 0\n{_GOOD}\nd\t0\t1\tw\t(3\nd\t0\t2\tw\t-\n#end document\n",
        3,
        "cluster 3 .*never closed",
    ),
    "close_without_open": (
        f"#begin document (d); part 0\n{_GOOD}\n\nd\t0\t0\tw\t4)\n#end document\n",
        4,
        r"'4\)' with no open",
    ),
    "not_integer": (
        f"#begin document (d); part 0\n{_GOOD}\nd\t0\t1\tw\t(a)\n#end document\n",
        3,
        "bad coreference cell",
    ),
    "no_end": (f"\n#begin document (d); part 0\n{_GOOD}\n", 2, "never ends"),
    "end_without_begin": (
        f"#begin document (d); part 0\n{_GOOD}\n#end document\n\n#end document\n",
        5,
        "without a '#begin",
    ),
    "begin_inside_document": (
        f"#begin document (d); part 0\n{_GOOD}\n#begin document (e); part 0\n#end document\n",
        3,
        "inside document",
    ),
    "token_outside_document": (f"{_GOOD}\n", 1, "outside a document"),
    "empty_file": ("", None, "empty"),
    "blank_file": ("\n \n", None, "empty"),
    "no_documents": ("# just a comment\n", None, "no '#begin document'"),
    "duplicate_document": (
        f"#begin document (d); part 0\n{_GOOD}\n#end document\n#begin document (d); part 0\n{_GOOD}\n#end document\n",
        4,
        "appears twice",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_CASES))
def test_bad_input(case, tmp_path):
    text, line, reason = BAD_CASES[case]
    path = _write(tmp_path, f"{case}.conll", text)
    with pytest.raises(DataFormatError) as info:
        read_conll_clusters(path)
    err = info.value
    assert err.path == str(path) and err.line == line and re.search(reason, err.reason), err
    where = f"{path}:{line}" if line is not None else str(path)
    assert str(err).startswith(where + ": ")
    # the converter gives the same error and writes nothing
    out = tmp_path / "out" / "x.spacy"
    with pytest.raises(DataFormatError) as info2:
        conll_to_docbin(path, out)
    assert (info2.value.path, info2.value.line) == (err.path, err.line)
    assert not out.exists()
    assert not out.parent.exists() or list(out.parent.iterdir()) == []


def test_bad_paths(tmp_path):
    (tmp_path / "empty_dir").mkdir()
    _write(tmp_path, "empty_dir/readme.txt", "x")
    with pytest.raises(DataFormatError, match="no CoNLL files") as info:
        conll_to_docbin(tmp_path / "empty_dir", tmp_path / "o.spacy")
    assert info.value.path == str(tmp_path / "empty_dir") and info.value.line is None
    with pytest.raises(DataFormatError, match="no such file"):
        conll_to_docbin(tmp_path / "missing.conll", tmp_path / "o.spacy")
    with pytest.raises(DataFormatError, match="cannot read"):
        read_conll_clusters(tmp_path / "missing.conll")
    bad_utf8 = tmp_path / "latin1.conll"
    bad_utf8.write_bytes(b"#begin document (d); part 0\nd\t0\t0\t\xe9\t-\n#end document\n")
    with pytest.raises(DataFormatError, match="UTF-8") as info:
        read_conll_clusters(bad_utf8)
    assert info.value.line == 2
    # a bad file among good ones in a directory: no output at all
    _write(tmp_path, "dir/a.conll", _conll(DOC1_P0))
    _write(tmp_path, "dir/b.conll", _conll(DOC1_P0))  # same document again, in another file
    with pytest.raises(DataFormatError, match="also in") as info:
        conll_to_docbin(tmp_path / "dir", tmp_path / "o.spacy")
    assert info.value.path == str(tmp_path / "dir" / "b.conll") and info.value.line == 1
    assert not (tmp_path / "o.spacy").exists()
    with pytest.raises(DataFormatError, match="unknown language"):
        conll_to_docbin(tmp_path / "dir" / "a.conll", tmp_path / "o.spacy", lang="not-a-lang")
    assert not (tmp_path / "o.spacy").exists()
    # export: not a DocBin
    with pytest.raises(DataFormatError):
        docbin_to_conll(tmp_path / "latin1.conll", tmp_path / "o.conll")
    with pytest.raises(DataFormatError):
        docbin_to_conll(tmp_path / "nothing.spacy", tmp_path / "o.conll")
    assert not (tmp_path / "o.conll").exists()


@pytest.mark.parametrize("case", ["never_closed", "not_integer", "empty_file", "no_end"])
def test_cli_bad_input(case, tmp_path):
    text, line, _ = BAD_CASES[case]
    path = _write(tmp_path, f"{case}.conll", text)
    out = tmp_path / "out.spacy"
    result = CliRunner().invoke(app, ["convert", "conll", str(path), str(out)])
    assert result.exit_code != 0
    assert isinstance(result.exception, SystemExit)  # a clean exit, no traceback
    where = f"{path}:{line}" if line is not None else str(path)
    assert where in result.output.replace("\n", "")
    assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]  # no temp file left either


def test_cli_round_trip(small_conll, tmp_path):
    runner = CliRunner()
    spacy_path = tmp_path / "s.spacy"
    result = runner.invoke(app, ["convert", "conll", str(small_conll), str(spacy_path)])
    assert result.exit_code == 0, result.output
    assert "2 docs" in result.output and "11 mentions" in result.output
    back = tmp_path / "b.conll"
    result = runner.invoke(app, ["export", "conll", str(spacy_path), str(back)])
    assert result.exit_code == 0, result.output
    assert read_conll_clusters(back) == EXPECTED_CLUSTERS
    result = runner.invoke(app, ["export", "conll", str(tmp_path / "nope.spacy"), str(tmp_path / "n.conll")])
    assert result.exit_code != 0 and not (tmp_path / "n.conll").exists()


# --------------------------------------------------------------------------- #
# Every shared file, scored by the reference scorer
# --------------------------------------------------------------------------- #

_SCORE_RE = re.compile(
    r"Coreference: Recall: \((\d+(?:\.\d+)?) / (\d+(?:\.\d+)?)\) [\d.]+%\tPrecision: "
    r"\((\d+(?:\.\d+)?) / (\d+(?:\.\d+)?)\) [\d.]+%\tF1: ([\d.]+)%"
)


def _perl_score(scorer: Path, metric: str, key: Path, response: Path) -> tuple:
    proc = subprocess.run(
        ["perl", str(scorer), metric, str(key), str(response), "none"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    matches = _SCORE_RE.findall(proc.stdout)
    assert len(matches) == 1, f"no score line for {metric}:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
    r_num, r_den, p_num, p_den, f1 = (float(x) for x in matches[0])
    return r_num, r_den, p_num, p_den, f1


@pytest.mark.shared_data
@pytest.mark.parametrize("corpus", ["ontogum", "litbank"])
def test_shared_corpus_round_trip_scores_100(corpus, shared_data, conll_scorer, tmp_path):
    source = shared_data / corpus
    files = find_conll_files(source)
    assert len(files) >= (148 if corpus == "ontogum" else 90)
    t0 = time.perf_counter()
    spacy_path = tmp_path / f"{corpus}.spacy"
    stats = conll_to_docbin(source, spacy_path)
    t1 = time.perf_counter()
    response = tmp_path / f"{corpus}.response.conll"
    n_docs = docbin_to_conll(spacy_path, response)
    t2 = time.perf_counter()
    assert stats.files == len(files) and n_docs == stats.docs
    key = tmp_path / f"{corpus}.key.conll"
    with open(key, "wb") as f:
        for file in files:
            data = file.read_bytes()
            f.write(data if data.endswith(b"\n") else data + b"\n")
    # our own reading of both files agrees document by document
    key_clusters = read_conll_clusters(key)
    assert len(key_clusters) == stats.docs
    assert read_conll_clusters(response) == key_clusters
    for a, b in zip(_iter_raw_docs(key, full=True), _iter_raw_docs(response, full=True)):
        assert (a.doc_id, a.part, a.sent_starts, a.speakers) == (b.doc_id, b.part, b.sent_starts, b.speakers)
        assert [w.replace(" ", "_") for w in a.words] == b.words
    # the reference scorer: 100 recall and precision on MUC, B3, CEAFe
    expected_dens = {"bcub": stats.mentions, "ceafe": stats.clusters}
    results = {}
    for metric in ("muc", "bcub", "ceafe"):
        r_num, r_den, p_num, p_den, f1 = _perl_score(conll_scorer, metric, key, response)
        results[metric] = (r_num, r_den, p_num, p_den, f1)
        assert r_den > 0 and p_den > 0
        assert r_num == r_den and p_num == p_den and f1 == 100, (metric, results[metric])
        if metric in expected_dens:
            assert r_den == expected_dens[metric], (metric, r_den, expected_dens[metric])
    t3 = time.perf_counter()
    print(f"\n{corpus}: {stats}; convert {t1 - t0:.1f}s, export {t2 - t1:.1f}s, perl scorer {t3 - t2:.1f}s; {results}")


# --------------------------------------------------------------------------- #
# Masked documents (GUM's Reddit text), outputs inside the input
# --------------------------------------------------------------------------- #


def _conll_2012(doc_id: str, words: List[str], corefs: List[str]) -> str:
    """One document in OntoGUM's CoNLL-2012 form (12 columns, part 000)."""
    rows = [f"#begin document ({doc_id}); part 000"]
    rows += [f"{doc_id}\t0\t{i}\t{w}\tX\t-\t-\t-\t-\t-\t*\t{c}" for i, (w, c) in enumerate(zip(words, corefs))]
    return "\n".join(rows + ["#end document", ""])


TEXT = "Why did she throw it ? She said it slipped .".split()
COREF = ["-", "-", "(1)", "-", "(2)", "-", "(1)", "-", "(2)", "-", "-"]


def _one_line(result) -> str:
    """The CLI's output, checked to be one line (an error, not a traceback)."""
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    return lines[0]


def test_masked_documents_are_skipped_and_counted(tmp_path):
    # GUM masks every character: "Why" -> "___", lengths kept
    masked = ["_" * len(w) for w in TEXT]
    path = _write(
        tmp_path, "in/mixed.conll", _conll_2012("GUM_reddit_x", masked, COREF) + _conll_2012("GUM_news_y", TEXT, COREF)
    )
    stats = conll_to_docbin(path, tmp_path / "out.spacy")
    assert stats.docs == 1 and stats.masked == ["GUM_reddit_x"]
    assert "1 docs" in str(stats) and "1 masked documents skipped (GUM_reddit_x)" in str(stats)
    docs = list(DocBin().from_disk(tmp_path / "out.spacy").get_docs(spacy.blank("en").vocab))
    assert [d.user_data["doc_id"] for d in docs] == ["GUM_news_y"]
    # a real text with a few "_" words is no masked document
    blanks = ["_" if i in (1, 7) else w for i, w in enumerate(TEXT)]
    path = _write(tmp_path, "in/blanks.conll", _conll_2012("GUM_news_z", blanks, COREF))
    assert conll_to_docbin(path, tmp_path / "blanks.spacy").docs == 1
    # only masked documents: refused in one line, nothing written
    path = _write(tmp_path, "in/masked.conll", _conll_2012("GUM_reddit_x", masked, COREF))
    result = CliRunner().invoke(app, ["convert", "conll", str(path), str(tmp_path / "m.spacy")])
    assert result.exit_code == 1 and "all 1 documents are masked" in _one_line(result)
    assert not (tmp_path / "m.spacy").exists()
    # most words masked, not all: refused (a document restored in part)
    partly = masked[:-2] + TEXT[-2:]
    path = _write(tmp_path, "in/partly.conll", _conll_2012("GUM_reddit_p", partly, COREF))
    with pytest.raises(DataFormatError, match=r"partly.conll:1: 9 of 11 words are only underscores"):
        conll_to_docbin(path, tmp_path / "p.spacy")


@pytest.mark.shared_data
def test_real_masked_documents_are_never_written(shared_data, tmp_path):
    """GUM's own masked Reddit documents, as CoNLL-2012 files (their words and
    brackets in 12 columns), and as GUM's three-column files."""
    masked = shared_data / "ontogum_masked" / "conll"
    names = sorted(p.stem for p in masked.glob("*.conll"))
    for name in names:
        lines = [line.split("\t") for line in (masked / f"{name}.conll").read_text(encoding="utf8").splitlines()]
        words, corefs = zip(*[(f[1], f[2]) for f in lines if len(f) == 3])
        _write(
            tmp_path, f"in/{name}.v4_gold_conll", _conll_2012(name, list(words), [c.replace("_", "-") for c in corefs])
        )
    out = tmp_path / "out.spacy"
    result = CliRunner().invoke(app, ["convert", "conll", str(tmp_path / "in"), str(out)])
    assert result.exit_code == 1 and "all 4 documents are masked" in _one_line(result)
    assert all(name in result.output for name in names) and not out.exists()
    # GUM's native three-column file: not CoNLL-2012, and the error says which converter reads it
    result = CliRunner().invoke(app, ["convert", "conll", str(masked / f"{names[0]}.conll"), str(out)])
    assert result.exit_code == 1 and "3 columns" in _one_line(result)
    assert "with `convert ontogum`" in result.output and not out.exists()


def test_output_inside_the_input_folder_is_refused(tmp_path):
    _write(tmp_path, "corpus/a.conll", _conll_2012("doc_a", TEXT, COREF))
    corpus = tmp_path / "corpus"
    runner = CliRunner()
    for output in (corpus / "a.spacy", corpus / "sub" / "a.spacy", corpus, corpus / "a.conll"):
        result = runner.invoke(app, ["convert", "conll", str(corpus), str(output)])
        assert result.exit_code == 1 and isinstance(result.exception, SystemExit), output
        assert "the output is" in _one_line(result) and "give another output path" in result.output
    assert sorted(p.name for p in corpus.rglob("*")) == ["a.conll"]
    assert runner.invoke(app, ["convert", "conll", str(corpus), str(tmp_path / "a.spacy")]).exit_code == 0
