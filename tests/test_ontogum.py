"""OntoGUM's native form (conll/DOC.conll + conllu/DOC.conllu) to Docs:
the same Docs as OntoGUM's CoNLL-2012 files (checked on the 148 shared
documents), masked Reddit documents skipped and counted, splits.md, and bad
input named by file and line."""

import shutil
from pathlib import Path

import pytest
import spacy
from spacy.tokens import DocBin
from typer.testing import CliRunner

from spacy_memcoref.cli import app
from spacy_memcoref.corpora.conll import is_masked, read_conll_docs
from spacy_memcoref.corpora.ontogum import (
    _read_sentences,
    _read_three_columns,
    ontogum_to_docbin,
    read_ontogum_doc,
    read_splits,
)
from spacy_memcoref.doc_helpers.clusters import token_clusters
from spacy_memcoref.errors import DataFormatError

NLP = spacy.blank("en")
REPO = Path(__file__).resolve().parent.parent


def _one_line(result) -> str:
    """The CLI's output, checked to be one line (an error, not a traceback)."""
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    return lines[0]


CONLL = """# begin document
0\tAlice\t(1)
1\tmet\t_
2\tthe\t(2
3\tdoctor\t2)
4\t.\t_
5\tShe\t(1)
6\tthanked\t_
7\ther\t(2)
8\t.\t_
# end document
"""


def _conllu(sentences, doc_id="GUM_test_doc", speakers=None):
    lines = [f"# newdoc id = {doc_id}"]
    for k, words in enumerate(sentences):
        lines.append(f"# sent_id = {doc_id}-{k + 1}")
        if speakers and speakers[k]:
            lines.append(f"# speaker = {speakers[k]}")
        for i, word in enumerate(words, 1):
            lines.append("\t".join([str(i), word, word.lower(), "X", "X", "_", "0", "dep", "_", "_"]))
        lines.append("")
    return "\n".join(lines) + "\n"


def _corpus(root: Path, docs):
    """docs: name -> (conll text, conllu text)."""
    (root / "conll").mkdir(parents=True, exist_ok=True)
    (root / "conllu").mkdir(parents=True, exist_ok=True)
    for name, (conll, conllu) in docs.items():
        (root / "conll" / f"{name}.conll").write_text(conll, encoding="utf8")
        (root / "conllu" / f"{name}.conllu").write_text(conllu.replace("GUM_test_doc", name), encoding="utf8")
    return root


SENTENCES = [["Alice", "met", "the", "doctor", "."], ["She", "thanked", "her", "."]]


def test_join_gives_words_sentences_speakers_clusters(tmp_path):
    root = _corpus(tmp_path, {"GUM_test_doc": (CONLL, _conllu(SENTENCES, speakers=["Ann", None]))})
    doc = read_ontogum_doc(root / "conll" / "GUM_test_doc.conll", root / "conllu" / "GUM_test_doc.conllu", NLP.vocab)
    assert [t.text for t in doc] == "Alice met the doctor . She thanked her .".split()
    assert [t.i for t in doc if t.is_sent_start] == [0, 5]
    assert token_clusters(doc) == [[(0, 0), (5, 5)], [(2, 3), (7, 7)]]
    # a sentence without "# speaker" keeps the speaker before it
    assert [(s.start, s.end, s.label_) for s in doc.spans["speakers"]] == [(0, 9, "Ann")]
    assert doc.user_data == {"doc_id": "GUM_test_doc", "part": "000"}


def test_multiword_ranges_and_empty_nodes_are_not_tokens(tmp_path):
    conllu = _conllu(SENTENCES).replace("1\tAlice", "1-2\tAlicemet\t_\t_\t_\t_\t_\t_\t_\t_\n1\tAlice", 1)
    conllu = conllu.replace("3\tthe", "2.1\tmet\t_\t_\t_\t_\t_\t_\t_\t_\n3\tthe", 1)
    root = _corpus(tmp_path, {"GUM_test_doc": (CONLL, conllu)})
    doc = read_ontogum_doc(root / "conll" / "GUM_test_doc.conll", root / "conllu" / "GUM_test_doc.conllu", NLP.vocab)
    assert [t.text for t in doc] == "Alice met the doctor . She thanked her .".split()
    assert [t.i for t in doc if t.is_sent_start] == [0, 5]
    assert token_clusters(doc) == [[(0, 0), (5, 5)], [(2, 3), (7, 7)]]


def _mask(word: str) -> str:
    """GUM's masking of Reddit text: every character an underscore, the length kept."""
    return "_" * len(word)


def _masked_conll(conll: str) -> str:
    return "".join(
        line
        if line.startswith("#")
        else "\t".join([line.split("\t")[0], _mask(line.split("\t")[1]), line.split("\t")[2]])
        for line in conll.splitlines(keepends=True)
    )


def _masked_conllu(sentences, doc_id="GUM_test_doc") -> str:
    """FORM masked character by character, LEMMA not (as GUM ships them)."""
    text = _conllu(sentences, doc_id)
    return "\n".join(
        "\t".join([f[0], _mask(f[1]), *f[2:]]) if len(f) == 10 else line
        for line, f in ((line, line.split("\t")) for line in text.split("\n"))
    )


def test_masked_documents_are_skipped_and_counted(tmp_path):
    assert _masked_conll(CONLL).splitlines()[1] == "0\t_____\t(1)"  # "Alice": five underscores, as GUM masks it
    root = _corpus(
        tmp_path / "og",
        {"GUM_reddit_x": (_masked_conll(CONLL), _masked_conllu(SENTENCES)), "GUM_news_y": (CONLL, _conllu(SENTENCES))},
    )
    out = tmp_path / "out.spacy"
    result = CliRunner().invoke(app, ["convert", "ontogum", str(root), str(out)])
    assert result.exit_code == 0, result.output
    assert "1 docs" in result.output and "1 masked documents skipped (GUM_reddit_x)" in result.output
    docs = list(DocBin().from_disk(out).get_docs(NLP.vocab))
    assert [d.user_data["doc_id"] for d in docs] == ["GUM_news_y"]


def test_a_few_underscore_words_do_not_make_a_document_masked(tmp_path):
    # a real text may hold "_" tokens (a blank to fill in, a line); it is converted as it is
    conll = CONLL.replace("2\tthe\t(2", "2\t_\t(2").replace("6\tthanked", "6\t___")
    sentences = [["Alice", "met", "_", "doctor", "."], ["She", "___", "her", "."]]
    root = _corpus(tmp_path, {"GUM_test_doc": (conll, _conllu(sentences))})
    doc = read_ontogum_doc(root / "conll" / "GUM_test_doc.conll", root / "conllu" / "GUM_test_doc.conllu", NLP.vocab)
    assert [t.text for t in doc] == "Alice met _ doctor . She ___ her .".split()
    # most words masked but not all: a document restored in part is refused, not trained on
    partly = _masked_conll(CONLL).replace("0\t_____", "0\tAlice")
    root = _corpus(tmp_path / "p", {"GUM_test_doc": (partly, _conllu(SENTENCES))})
    with pytest.raises(DataFormatError, match=r"GUM_test_doc\.conll:1: 8 of 9 words are only underscores"):
        ontogum_to_docbin(root, tmp_path / "out.spacy")
    assert not (tmp_path / "out.spacy").exists()


def test_the_demo_has_a_masked_document_in_gum_form(tmp_path):
    demo = REPO / "assets" / "demo" / "ontogum"
    conll = [
        line.split("\t")
        for line in (demo / "conll" / "GUM_reddit_demo.conll").read_text().splitlines()
        if line[:1].isdigit()
    ]
    conllu = [
        line.split("\t")
        for line in (demo / "conllu" / "GUM_reddit_demo.conllu").read_text().splitlines()
        if line[:1].isdigit()
    ]
    # every character masked (lengths kept, so not all one "_"), LEMMA not masked
    assert all(set(f[1]) == {"_"} for f in conll + conllu) and any(len(f[1]) > 1 for f in conll)
    assert [f[1] for f in conll] == [f[1] for f in conllu] and all(
        len(f[2]) == len(f[1]) and "_" not in f[2] for f in conllu
    )
    result = CliRunner().invoke(app, ["convert", "ontogum", str(demo), str(tmp_path / "demo.spacy")])
    assert result.exit_code == 0, result.output
    assert "10 docs" in result.output and "1 masked documents skipped (GUM_reddit_demo)" in result.output


@pytest.mark.shared_data
def test_real_masked_documents_are_recognised_and_no_real_text_is(shared_data):
    """GUM's own masked Reddit documents are masked in conll and conllu; none
    of the 148 unmasked documents is taken for one."""
    masked, raw = shared_data / "ontogum_masked", shared_data / "ontogum_raw"
    names = sorted(p.stem for p in (masked / "conll").glob("*.conll"))
    assert len(names) == 4
    for name in names:
        assert is_masked(_read_three_columns(masked / "conll" / f"{name}.conll").words), name
        assert is_masked(_read_sentences(masked / "conllu" / f"{name}.conllu", name)[0]), name
    raw_names = sorted(p.stem for p in (raw / "conll").glob("*.conll"))
    assert len(raw_names) == 148
    flagged = [n for n in raw_names if is_masked(_read_three_columns(raw / "conll" / f"{n}.conll").words)]
    flagged += [n for n in raw_names if is_masked(_read_sentences(raw / "conllu" / f"{n}.conllu", n)[0])]
    assert flagged == []


@pytest.mark.shared_data
def test_real_masked_documents_are_skipped_and_never_written(shared_data, tmp_path):
    masked, raw = shared_data / "ontogum_masked", shared_data / "ontogum_raw"
    mixed = tmp_path / "mixed"
    for sub, suffix in (("conll", ".conll"), ("conllu", ".conllu")):
        (mixed / sub).mkdir(parents=True)
        for source in [*sorted((masked / sub).glob(f"*{suffix}")), raw / sub / f"GUM_news_iodine{suffix}"]:
            shutil.copy(source, mixed / sub / source.name)
    stats = ontogum_to_docbin(mixed, tmp_path / "mixed.spacy")
    assert stats.docs == 1 and len(stats.masked) == 4
    assert "1 docs" in str(
        stats
    ) and "4 masked documents skipped (GUM_reddit_callout, GUM_reddit_macroeconomics, " in str(stats)
    docs = list(DocBin().from_disk(tmp_path / "mixed.spacy").get_docs(NLP.vocab))
    assert [d.user_data["doc_id"] for d in docs] == ["GUM_news_iodine"]
    # only masked documents: refused in one line that says so, nothing written
    out = tmp_path / "masked.spacy"
    result = CliRunner().invoke(app, ["convert", "ontogum", str(masked), str(out)])
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit)
    assert _one_line(result).startswith("error: ") and "all 4 documents are masked" in result.output
    assert "GUM_reddit_steak" in result.output and not out.exists()


def test_splits(tmp_path):
    splits = tmp_path / "splits.md"
    splits.write_text(
        "# Splits\n\nSome text.\n\n## dev\n\n  * GUM_news_y\n\n## train\n\n  * GUM_a\n  * GUM_b\n", encoding="utf8"
    )
    assert read_splits(splits) == {"dev": ["GUM_news_y"], "train": ["GUM_a", "GUM_b"]}
    root = _corpus(
        tmp_path / "og", {"GUM_news_y": (CONLL, _conllu(SENTENCES)), "GUM_news_z": (CONLL, _conllu(SENTENCES))}
    )
    stats = ontogum_to_docbin(root, tmp_path / "dev.spacy", split="dev", splits_path=splits)
    assert stats.docs == 1
    with pytest.raises(DataFormatError, match=r"GUM_a\.conll: no such file"):
        ontogum_to_docbin(root, tmp_path / "train.spacy", split="train", splits_path=splits)
    assert not (tmp_path / "train.spacy").exists()
    with pytest.raises(ValueError, match="split 'test' is not in"):
        ontogum_to_docbin(root, tmp_path / "x.spacy", split="test", splits_path=splits)
    bad = tmp_path / "bad.md"
    bad.write_text("## dev\n  * A\nwhat is this\n", encoding="utf8")
    with pytest.raises(DataFormatError, match=r"bad\.md:3: expected"):
        read_splits(bad)
    bad.write_text("## dev\n  * A\n## train\n  * A\n", encoding="utf8")
    with pytest.raises(DataFormatError, match=r"bad\.md:4: document 'A' is already in split 'dev'"):
        read_splits(bad)


@pytest.mark.parametrize(
    "edit, where, message",
    [
        (lambda c: c.replace("1\tmet\t_", "1\tmet\t_\textra"), "conll:3", "4 tab-separated columns"),
        (lambda c: c.replace("1\tmet", "7\tmet"), "conll:3", "token number '7', expected 1"),
        (lambda c: c.replace("3\tdoctor\t2)", "3\tdoctor\t2"), "conll:5", "bad coreference cell"),
        (lambda c: c.replace("3\tdoctor\t2)", "3\tdoctor\t_"), "conll:4", "never closed"),
        (lambda c: c.replace("0\tAlice\t(1)", "0\tAlice\t1)"), "conll:2", "closing bracket"),
        (lambda c: c.replace("# end document\n", ""), "conll:1", "never ends"),
        (lambda c: c + "0\tmore\t_\n", "conll:12", "after '# end document'"),
        (lambda c: "", "conll", "the file is empty"),
    ],
)
def test_bad_conll_lines_name_file_and_line(tmp_path, edit, where, message):
    root = _corpus(tmp_path, {"GUM_test_doc": (edit(CONLL), _conllu(SENTENCES))})
    with pytest.raises(DataFormatError) as err:
        ontogum_to_docbin(root, tmp_path / "out.spacy")
    assert f"GUM_test_doc.{where}" in str(err.value) and message in str(err.value)
    assert not (tmp_path / "out.spacy").exists()


def test_bad_conllu_is_named(tmp_path):
    root = _corpus(tmp_path, {"GUM_test_doc": (CONLL, _conllu([["Alice", "met", "a", "doctor", "."], SENTENCES[1]]))})
    with pytest.raises(
        DataFormatError, match=r"GUM_test_doc\.conllu: token 2 is 'a', but GUM_test_doc\.conll has 'the'"
    ):
        ontogum_to_docbin(root, tmp_path / "out.spacy")
    root = _corpus(tmp_path / "b", {"GUM_test_doc": (CONLL, _conllu([SENTENCES[0]]))})
    with pytest.raises(DataFormatError, match="5 tokens, but GUM_test_doc.conll has 9"):
        ontogum_to_docbin(root, tmp_path / "out.spacy")
    root = _corpus(tmp_path / "c", {"GUM_test_doc": (CONLL, _conllu(SENTENCES).replace("\tX\tX", "\tX"))})
    with pytest.raises(DataFormatError, match=r"conllu:3: 9 tab-separated columns"):
        ontogum_to_docbin(root, tmp_path / "out.spacy")
    with pytest.raises(DataFormatError, match="must hold conll/ and conllu/"):
        ontogum_to_docbin(tmp_path / "nowhere", tmp_path / "out.spacy")


def _duplicate_span_mentions(doc):
    """Mentions whose span is also a mention of another cluster."""
    seen = {}
    for n, cluster in enumerate(token_clusters(doc)):
        for mention in cluster:
            seen.setdefault(mention, set()).add(n)
    return {m for m, ns in seen.items() if len(ns) > 1}


def test_equals_the_shared_conll_2012_files(shared_data, tmp_path):
    """Words, sentence starts, speakers and clusters equal OntoGUM's
    CoNLL-2012 files for every shared document, but for one thing the
    CoNLL-2012 files get wrong: a span that the native files put in two
    clusters ("(14(15 ... 15)14)", "(46)(47)") is kept in one of them only
    there. Those mentions are the whole difference: 6 mentions in 6 documents."""
    raw = shared_data / "ontogum_raw"
    out = tmp_path / "all.spacy"
    stats = ontogum_to_docbin(raw, out)
    assert stats.docs == 148 and not stats.masked
    mine = {d.user_data["doc_id"]: d for d in DocBin().from_disk(out).get_docs(NLP.vocab)}
    dropped = {}
    n_docs = 0
    for split in ("train", "dev"):
        for gold in read_conll_docs(shared_data / "ontogum" / split, NLP.vocab):
            doc = mine[gold.user_data["doc_id"]]
            n_docs += 1
            assert doc.user_data == gold.user_data
            assert [t.text for t in doc] == [t.text for t in gold]
            assert [t.is_sent_start for t in doc] == [t.is_sent_start for t in gold]
            speakers = [(s.start, s.end, s.label_) for s in gold.spans.get("speakers", [])]
            assert [(s.start, s.end, s.label_) for s in doc.spans.get("speakers", [])] == speakers
            ours = {tuple(c) for c in token_clusters(doc)}
            theirs = {tuple(c) for c in token_clusters(gold)}
            if ours != theirs:
                duplicates = _duplicate_span_mentions(doc)
                ours_less = {tuple(m for m in c if m not in duplicates) for c in ours}
                theirs_less = {tuple(m for m in c if m not in duplicates) for c in theirs}
                assert ours_less == theirs_less, gold.user_data["doc_id"]
                n_ours = sum(len(c) for c in ours)
                dropped[gold.user_data["doc_id"]] = n_ours - sum(len(c) for c in theirs)
    assert n_docs == 148
    assert dropped == {
        "GUM_bio_emperor": 1,
        "GUM_bio_galois": 1,
        "GUM_bio_moreau": 1,
        "GUM_conversation_zero": 1,
        "GUM_court_property": 1,
        "GUM_interview_chomsky": 1,
    }


def test_output_inside_the_input_is_refused(tmp_path):
    root = _corpus(tmp_path / "og", {"GUM_test_doc": (CONLL, _conllu(SENTENCES))})
    conllu = root / "conllu" / "GUM_test_doc.conllu"
    before = conllu.read_bytes()
    splits = tmp_path / "splits.md"
    splits.write_text("## dev\n  * GUM_test_doc\n", encoding="utf8")
    runner = CliRunner()
    result = runner.invoke(app, ["convert", "ontogum", str(root), str(conllu)])
    assert result.exit_code == 1 and "is inside the input folder" in _one_line(result)
    assert conllu.read_bytes() == before
    result = runner.invoke(app, ["convert", "ontogum", str(root), str(root)])
    assert result.exit_code == 1 and "the output is a folder that holds the input" in _one_line(result)
    assert "Errno" not in result.output
    result = runner.invoke(
        app, ["convert", "ontogum", str(root), str(splits), "--split", "dev", "--splits", str(splits)]
    )
    assert result.exit_code == 1 and "the output is also the input" in _one_line(result)
    assert splits.read_text() == "## dev\n  * GUM_test_doc\n"
    assert sorted(p.name for p in root.rglob("*")) == ["GUM_test_doc.conll", "GUM_test_doc.conllu", "conll", "conllu"]
    # beside conll/ and conllu/ is not inside what is read: allowed
    result = runner.invoke(app, ["convert", "ontogum", str(root), str(root / "all.spacy")])
    assert result.exit_code == 0, result.output


def test_an_unknown_language_is_a_one_line_error(tmp_path):
    root = _corpus(tmp_path / "og", {"GUM_test_doc": (CONLL, _conllu(SENTENCES))})
    out = tmp_path / "out.spacy"
    runner = CliRunner()
    result = runner.invoke(app, ["convert", "ontogum", str(root), str(out), "--lang", "zz"])
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit)
    assert "unknown language code 'zz' (--lang)" in _one_line(result)
    assert not out.exists()


def test_splits_without_a_split_is_refused(tmp_path):
    # --splits without --split would silently convert every document
    root = _corpus(tmp_path / "og", {"GUM_test_doc": (CONLL, _conllu(SENTENCES))})
    out = tmp_path / "out.spacy"
    runner = CliRunner()
    splits = tmp_path / "splits.md"
    splits.write_text("## dev\n  * GUM_test_doc\n", encoding="utf8")
    result = runner.invoke(app, ["convert", "ontogum", str(root), str(out), "--splits", str(splits)])
    assert result.exit_code == 1 and "needs --split" in _one_line(result)
    assert not out.exists()
