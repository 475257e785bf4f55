"""`annotate`: corpus in, shards of clusters out; resume, bad input, engines.

A small CNN-tok2vec s2e pipeline, overfit for a few seconds so that it finds
clusters, stands in for a trained model. The Ray tests share one local
cluster (num_cpus=2) and skip when the `ray` extra is not installed.
"""

import inspect
import json
import os
import pickle
import signal
import subprocess
import sys
import time
from concurrent.futures import Future
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

import pytest
import spacy
from spacy.tokens import Doc, DocBin
from typer.testing import CliRunner

from spacy_memcoref.annotate import annotate_corpus, doc_record
from spacy_memcoref.annotate.output import OutputMismatch
from spacy_memcoref.annotate.results import ShardResult
from spacy_memcoref.annotate import _faults
from spacy_memcoref.annotate._faults import DieOnce, InjectedFailure
from spacy_memcoref.annotate.runner import BadInput
from spacy_memcoref.cli import app

REPO = Path(__file__).resolve().parent.parent

TEXTS = [
    "Alice met Bob. She said he was late.",
    "The company said its profits rose. It was happy.",
    "John saw Mary and waved to her. He smiled at her.",
    "Hello.",
    "",
    "Alice met Bob. She said he was late. John saw Mary and waved to her.",
    "The company said its profits rose.\nIt was happy, said Alice.",
]


def corpus_texts(n: int):
    return [TEXTS[i % len(TEXTS)] + ("" if i < len(TEXTS) else f" Number {i}.") for i in range(n)]


@pytest.fixture(scope="module")
def model_dir(trained_s2e) -> str:
    """An s2e pipeline (CNN tok2vec) overfit on three documents, on disk
    (conftest's trained_s2e: read, never written)."""
    return str(trained_s2e.path)


def write_jsonl(path: Path, texts, ids=None) -> Path:
    ids = ids or [f"doc{i}" for i in range(len(texts))]
    path.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in zip(ids, texts)), encoding="utf8")
    return path


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    """23 documents in one JSONL file."""
    return write_jsonl(tmp_path_factory.mktemp("annotate_corpus") / "corpus.jsonl", corpus_texts(23))


@pytest.fixture(scope="module")
def reference(model_dir, corpus, tmp_path_factory) -> Path:
    """The corpus annotated by the local engine in this process (jsonl + spacy)."""
    import torch

    out = tmp_path_factory.mktemp("annotate_reference") / "out"
    threads = torch.get_num_threads()
    try:  # one torch thread, as in the workers of the other engines
        annotate_corpus(
            model_dir, corpus, out, formats="jsonl,spacy", shard_size=5, batch_size=4, threads=1, progress=False
        )
    finally:
        torch.set_num_threads(threads)
    return out


def read_records(out: Path):
    records = []
    for shard in sorted(out.glob("shard-*.jsonl")):
        if shard.name.endswith(".errors.jsonl"):
            continue
        records.extend(json.loads(line) for line in shard.read_text(encoding="utf8").splitlines())
    return records


def read_errors(out: Path):
    return [
        json.loads(line)
        for shard in sorted(out.glob("shard-*.errors.jsonl"))
        for line in shard.read_text(encoding="utf8").splitlines()
    ]


def shard_bytes(out: Path):
    return {p.name: p.read_bytes() for p in sorted(out.iterdir()) if p.name.startswith("shard-")}


def assert_same_shards(out: Path, expected: Path) -> None:
    """The same shards: JSONL byte for byte; DocBin shards with the same
    Docs byte for byte but for the entity vectors, which are floats whose
    last bits follow the BLAS threads (the engines' workers run one thread,
    a CLI run torch's default): those equal to float32 rounding."""
    import numpy
    import spacy
    from spacy.tokens import DocBin

    got, want = shard_bytes(out), shard_bytes(expected)
    assert sorted(got) == sorted(want)
    vocab = spacy.blank("en").vocab
    for name in sorted(want):
        if not name.endswith(".spacy"):
            assert got[name] == want[name], name
            continue
        docs = [list(DocBin().from_bytes(data).get_docs(vocab)) for data in (got[name], want[name])]
        assert len(docs[0]) == len(docs[1]), name
        for a, b in zip(*docs):
            va, vb = a._.entity_vectors, b._.entity_vectors
            assert (va is None) == (vb is None), name
            if va is not None:
                numpy.testing.assert_array_equal(va["clusters"], vb["clusters"])
                numpy.testing.assert_allclose(va["vectors"], vb["vectors"], rtol=1e-4, atol=1e-5)
                a._.entity_vectors = b._.entity_vectors = None
            assert a.to_bytes() == b.to_bytes(), name


def manifest(out: Path):
    return json.loads((out / "manifest.json").read_text(encoding="utf8"))


# ----- records ------------------------------------------------------------------


def cluster_names(doc, *clusters):
    """The names annotate's record gives the clusters, set by hand."""
    for key in [k for k in doc.spans if k.startswith("coref_clusters")]:
        del doc.spans[key]
    for number, spans in enumerate(clusters, start=1):
        doc.spans[f"coref_clusters_{number}"] = list(spans)
    return [c["name"] for c in doc_record("d", doc)["clusters"]]


def test_a_record_names_a_cluster_by_its_representative_else_null():
    """A record's clusters are entities(doc)'s records: the name is the
    first proper-noun mention, else the first non-pronoun one, else (pronouns
    only) null; mentions in text order, by first token, the longer of two
    that start together first."""
    nlp = spacy.blank("en")
    doc = nlp("She said the tall woman, Alice Smith, was late. Alice laughed.")
    she, woman, alice_smith, alice = doc[0:1], doc[2:5], doc[6:8], doc[12:13]
    assert cluster_names(doc, [she, woman, alice_smith, alice]) == ["Alice Smith"]
    assert cluster_names(doc, [alice, she]) == ["Alice"]
    assert cluster_names(doc, [she, woman]) == ["the tall woman"]
    assert cluster_names(doc, [she]) == [None]  # pronouns only: no name (resolve leaves it alone)
    doc.spans["coref_clusters_1"] = [alice_smith, she, alice]
    doc.spans["coref_clusters_2"] = []  # an empty group is no cluster
    record = doc_record("d1", doc)
    assert record == {
        "id": "d1",
        "n_tokens": len(doc),
        "clusters": [
            {
                "name": "Alice Smith",
                "mentions": [
                    {"start": 0, "end": 3, "text": "She"},
                    {"start": 25, "end": 36, "text": "Alice Smith"},
                    {"start": 48, "end": 53, "text": "Alice"},
                ],
            }
        ],
    }
    # two mentions that start together: the longer first, and it names the cluster
    doc.spans["coref_clusters_1"] = [doc[6:7], alice_smith]
    (cluster,) = doc_record("d1", doc)["clusters"]
    assert [m["text"] for m in cluster["mentions"]] == ["Alice Smith", "Alice"] and cluster["name"] == "Alice Smith"
    # with part-of-speech tags, PROPN decides
    tagged = Doc(
        nlp.vocab,
        words=["The", "Boss", "left", ".", "Ann", "smiled"],
        pos=["DET", "NOUN", "VERB", "PUNCT", "PROPN", "VERB"],
    )
    assert cluster_names(tagged, [tagged[0:2], tagged[4:5]]) == ["Ann"]


def test_fault_hooks_are_private_and_shard_results_pickle():
    assert not [name for name in inspect.signature(annotate_corpus).parameters if name.startswith("_")]
    assert _faults.active() == _faults.NONE
    with pytest.raises(KeyError), _faults.inject(fail_after_shards=1) as plan:
        assert _faults.active() is plan and plan.fail_after_shards == 1
        raise KeyError("the plan is reset however the block ends")
    assert _faults.active() == _faults.NONE
    die_once = DieOnce(shard=1, marker="/nonexistent/died")
    assert pickle.loads(pickle.dumps(die_once)) == die_once
    die_once.strike(0)  # another shard: nothing happens
    result = ShardResult(
        index=3,
        digest="abc",
        n_items=3,
        n_docs=2,
        n_errors=1,
        n_tokens=9,
        n_clusters=1,
        files={"jsonl": b"{}\n"},
        ids=["a", "b"],
        pid=7,
    )
    assert pickle.loads(pickle.dumps(result)) == result
    assert result.manifest_entry() == {
        "n_items": 3,
        "n_docs": 2,
        "n_errors": 1,
        "n_tokens": 9,
        "n_clusters": 1,
        "digest": "abc",
    }


# ----- the local engine ---------------------------------------------------------


def test_local_jsonl_shards_manifest_and_records(reference, corpus):
    texts = [json.loads(line)["text"] for line in corpus.read_text(encoding="utf8").splitlines()]
    records = read_records(reference)
    # shard k = documents [5k, 5k + 5): 5 shards, input order, every id once
    assert [p.name for p in sorted(reference.glob("shard-*.jsonl"))] == [f"shard-{k:06d}.jsonl" for k in range(5)]
    assert [r["id"] for r in records] == [f"doc{i}" for i in range(23)]
    n_mentions = 0
    for record, text in zip(records, texts):
        for cluster in record["clusters"]:
            assert cluster["name"] is None or cluster["name"] in [m["text"] for m in cluster["mentions"]]
            for mention in cluster["mentions"]:
                assert text[mention["start"] : mention["end"]] == mention["text"]
                n_mentions += 1
    assert n_mentions > 10, "the overfit pipeline should find clusters"
    assert records[0]["clusters"], records[0]
    m = manifest(reference)
    assert m["complete"] and m["n_shards"] == 5
    assert m["totals"]["n_docs"] == 23 and m["totals"]["n_errors"] == 0
    assert m["totals"]["n_clusters"] == sum(len(r["clusters"]) for r in records)
    # the DocBins hold the same clusters, and the ids
    nlp = spacy.blank("en")
    docs = [d for p in sorted(reference.glob("shard-*.spacy")) for d in DocBin().from_disk(p).get_docs(nlp.vocab)]
    assert [d.user_data["doc_id"] for d in docs] == [r["id"] for r in records]
    assert [doc_record(d.user_data["doc_id"], d) for d in docs] == records


def test_txt_folder_and_docbin_inputs(model_dir, reference, tmp_path):
    records = read_records(reference)
    books = tmp_path / "books"
    (books / "b").mkdir(parents=True)
    (books / "a.txt").write_text(TEXTS[0], encoding="utf8")
    (books / "b" / "c.txt").write_text(TEXTS[2], encoding="utf8")
    (books / "README").write_text("not a document", encoding="utf8")
    out = tmp_path / "out_txt"
    summary = annotate_corpus(model_dir, books, out, shard_size=1, progress=False)
    got = read_records(out)
    assert [r["id"] for r in got] == ["a.txt", "b/c.txt"]
    assert [r["clusters"] for r in got] == [records[0]["clusters"], records[2]["clusters"]]
    assert summary.documents == 2 and summary.shards == 2

    nlp = spacy.blank("en")
    docbin = DocBin(store_user_data=True)
    for i, text in enumerate(TEXTS[:3]):
        doc = nlp(text)
        doc.user_data["doc_id"] = f"d{i}"
        doc.spans["coref_clusters_1"] = [doc[0:1], doc[1:2]]  # gold: dropped before predicting
        docbin.add(doc)
    docbin.to_disk(tmp_path / "docs.spacy")
    out = tmp_path / "out_spacy"
    annotate_corpus(model_dir, tmp_path / "docs.spacy", out, formats="spacy,jsonl", shard_size=2, progress=False)
    assert [r["id"] for r in read_records(out)] == ["d0", "d1", "d2"]
    assert [r["clusters"] for r in read_records(out)] == [r["clusters"] for r in records[:3]]
    assert sorted(p.name for p in out.glob("shard-*.spacy")) == ["shard-000000.spacy", "shard-000001.spacy"]


def test_output_folder_inside_the_input_folder_is_not_input(model_dir, tmp_path):
    folder = tmp_path / "news"
    folder.mkdir()
    write_jsonl(folder / "a.jsonl", TEXTS[:3])
    out = folder / "coref"
    assert annotate_corpus(model_dir, folder, out, progress=False).documents == 3
    again = annotate_corpus(model_dir, folder, out, progress=False)  # its shards are not read as input
    assert again.documents == 0 and again.skipped_shards == 1 and again.totals["n_docs"] == 3


def test_cli_annotate_and_rerun_of_finished_output(model_dir, corpus, reference, tmp_path):
    out = tmp_path / "out"
    args = [
        "annotate",
        model_dir,
        str(corpus),
        str(out),
        "--shard-size",
        "5",
        "--batch-size",
        "4",
        "--format",
        "jsonl,spacy",
        "--no-progress",
    ]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["documents"] == 23 and summary["errors"] == 0 and summary["shards"] == 5
    assert summary["tokens"] > 0 and summary["clusters"] > 0 and summary["complete"]
    assert_same_shards(out, reference)
    # a rerun finds everything done and changes nothing
    before = {p.name: p.stat().st_mtime_ns for p in out.iterdir()}
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["shards"] == 0 and summary["skipped_shards"] == 5 and summary["totals"]["n_docs"] == 23
    assert {p.name: p.stat().st_mtime_ns for p in out.iterdir() if p.name.startswith("shard-")} == {
        k: v for k, v in before.items() if k.startswith("shard-")
    }


def test_resume_after_an_interrupted_run(model_dir, corpus, reference, tmp_path):
    out = tmp_path / "out"
    with pytest.raises(InjectedFailure), _faults.inject(fail_after_shards=3):
        # killed after shard 2's files were written but before the manifest recorded it
        annotate_corpus(model_dir, corpus, out, formats="jsonl,spacy", shard_size=5, batch_size=4, progress=False)
    assert sorted(manifest(out)["shards"]) == ["0", "1"] and not manifest(out)["complete"]
    assert (out / "shard-000002.jsonl").exists()  # an orphan shard the rerun must replace, not duplicate
    (out / ".shard-000003.jsonl.abc123.tmp").write_text('{"id": "half a line', encoding="utf8")  # a half-written temp
    summary = annotate_corpus(model_dir, corpus, out, formats="jsonl,spacy", shard_size=5, batch_size=4, progress=False)
    assert summary.skipped_shards == 2 and summary.shards == 3 and summary.documents == 13
    ids = [r["id"] for r in read_records(out)]
    assert ids == [f"doc{i}" for i in range(23)]  # each exactly once, in order
    assert_same_shards(out, reference)
    assert not list(out.glob(".*.tmp"))
    assert manifest(out)["complete"]


def test_refuses_another_runs_output_unless_overwrite(model_dir, corpus, tmp_path):
    out = tmp_path / "out"
    annotate_corpus(model_dir, corpus, out, shard_size=10, progress=False)
    with pytest.raises(OutputMismatch, match="shard_size"):
        annotate_corpus(model_dir, corpus, out, shard_size=5, progress=False)
    other = write_jsonl(tmp_path / "other.jsonl", ["Bob left."])
    with pytest.raises(OutputMismatch, match="input"):
        annotate_corpus(model_dir, other, out, shard_size=10, progress=False)
    summary = annotate_corpus(model_dir, other, out, shard_size=10, progress=False, overwrite=True)
    assert summary.documents == 1 and [r["id"] for r in read_records(out)] == ["doc0"]
    # the same file, edited: the digest of a finished shard no longer matches
    write_jsonl(other, ["Bob left.", "Ann came."], ids=["x", "y"])
    with pytest.raises(OutputMismatch, match="changed"):
        annotate_corpus(model_dir, other, out, shard_size=10, progress=False)


def test_clear_errors_for_missing_model_input_and_options(model_dir, corpus, tmp_path):
    runner = CliRunner()
    cases = [
        (["annotate", str(tmp_path / "nope"), str(corpus), str(tmp_path / "o1")], "cannot find the pipeline"),
        (
            ["annotate", model_dir, str(tmp_path / "missing.jsonl"), str(tmp_path / "o2")],
            "missing.jsonl: no such file or folder",
        ),
        (
            ["annotate", model_dir, str(corpus), str(tmp_path / "o3"), "--workers", "2"],
            "--workers does not apply to --engine local",
        ),
        (["annotate", model_dir, str(corpus), str(tmp_path / "o4"), "--format", "csv"], "--format must be"),
        (
            ["annotate", model_dir, str(corpus), str(tmp_path / "o5"), "--shard-size", "0"],
            "--shard-size must be a positive integer",
        ),
    ]
    for args, message in cases:
        result = runner.invoke(app, args)
        assert result.exit_code == 1, (args, result.output)
        assert message in result.output, (args, result.output)


def test_prefix_the_pipeline_does_not_write_is_refused(model_dir, tmp_path):
    """--prefix naming no span key of the pipeline used to give every record
    "clusters": [] and exit 0."""
    small = write_jsonl(tmp_path / "small.jsonl", TEXTS[:2])
    result = CliRunner().invoke(
        app, ["annotate", model_dir, str(small), str(tmp_path / "out"), "--prefix", "coref_clusterz"]
    )
    assert result.exit_code == 1, result.output
    (line,) = result.output.strip().splitlines()
    assert (
        line.startswith("error: --prefix 'coref_clusterz': the pipeline ")
        and "writes no clusters under that prefix" in line
    )
    assert "its coreference component writes them under 'coref_clusters'" in line, line
    assert not (tmp_path / "out").exists(), "refused before any document"
    from spacy_memcoref.annotate import MemcorefPredictor
    from spacy_memcoref.annotate.runner import choose_prefix

    with pytest.raises(ValueError, match="writes no clusters under that prefix"):
        MemcorefPredictor(model_dir, prefix="coref_clusterz")
    assert MemcorefPredictor(model_dir).prefix == "coref_clusters"
    # the prefix the pipeline writes is taken, given or not
    summary = annotate_corpus(model_dir, small, tmp_path / "out2", prefix="coref_clusters", progress=False)
    assert summary.documents == 2 and summary.clusters > 0
    # several components: each one's prefix is named; no memcoref component: nothing known, any prefix
    with pytest.raises(ValueError, match=r"components write them under the prefixes 'a', 'b' \(doc\.spans\['a_1'\]"):
        choose_prefix("c", ["a", "b"], "model")
    assert choose_prefix(None, ["b", "a"], "model") == "b" and choose_prefix("b", ["a", "b"], "model") == "b"
    assert choose_prefix("mine", [], "model") == "mine" and choose_prefix(None, None, "model") == "coref_clusters"


def test_annotate_writes_the_entity_records_of_a_shipped_model(tmp_path, monkeypatch):
    """On real text, the JSONL record annotate writes holds entities(doc)'s
    records (the same names, mentions and order), for the Docs it writes to
    the DocBin and for a Doc of spacy_memcoref.load's pipeline alike;
    pronoun-only clusters included (named null by both)."""
    import spacy_memcoref
    from spacy_memcoref import entities

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    texts = [
        "Alice met Bob at the station. She thanked him. I think they were happy, and I told them so.",
        "Mary's dog barked at the mailman. She laughed, and the mailman smiled at her dog.",
    ]
    corpus = write_jsonl(tmp_path / "paragraphs.jsonl", texts)
    annotate_corpus("s2e-ontogum", corpus, tmp_path / "out", formats="jsonl,spacy", n_process=1, progress=False)
    records = read_records(tmp_path / "out")
    written = [
        d
        for p in sorted((tmp_path / "out").glob("shard-*.spacy"))
        for d in DocBin().from_disk(p).get_docs(spacy.blank("en").vocab)
    ]
    nlp = spacy_memcoref.load("s2e-ontogum")
    assert len(records) == len(written) == len(texts)
    for record, doc_written, text in zip(records, written, texts):
        for doc in (doc_written, nlp(text)):
            assert record["clusters"] == [entity.to_cluster_record() for entity in entities(doc)]
            assert [c["name"] for c in record["clusters"]] == [e.name for e in entities(doc)]
            assert [[(m["start"], m["end"], m["text"]) for m in c["mentions"]] for c in record["clusters"]] == [
                [(m.start_char, m.end_char, m.text) for m in e.mentions] for e in entities(doc)
            ]
    clusters = [c for record in records for c in record["clusters"]]
    assert any(c["name"] is None for c in clusters), clusters  # "I", "I": pronouns only
    assert any(c["name"] == "Alice" for c in clusters), clusters


def test_a_shipped_models_folder_is_the_model_its_name_is(tmp_path, monkeypatch):
    """annotate on spacy_memcoref/pretrained_models/s2e-ontogum (the stored
    form: config.cfg, weights.safetensors, meta.json) used to fail with
    spaCy's "[E054] No valid 'lang' setting"; it is the model that the
    name s2e-ontogum is, for annotate, load_pipeline and spacy_memcoref.load."""
    import spacy_memcoref
    from spacy_memcoref import pretrained
    from spacy_memcoref.loading import load_pipeline

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    folder = pretrained.PRETRAINED_DIR / "s2e-ontogum"
    corpus = write_jsonl(tmp_path / "small.jsonl", TEXTS[:3])
    outputs = {}
    for model in ("s2e-ontogum", str(folder)):
        out = tmp_path / ("by_path" if model == str(folder) else "by_name")
        result = CliRunner().invoke(
            app, ["annotate", model, str(corpus), str(out), "--n-process", "1", "--no-progress"]
        )
        assert result.exit_code == 0, result.output
        outputs[model] = out
    by_name, by_path = read_records(outputs["s2e-ontogum"]), read_records(outputs[str(folder)])
    assert [r["id"] for r in by_path] == ["doc0", "doc1", "doc2"] and any(r["clusters"] for r in by_path)
    assert by_path == by_name
    # one model, one identity: a run by name is resumed by path
    assert manifest(outputs[str(folder)])["identity"]["model"] == manifest(outputs["s2e-ontogum"])["identity"]["model"]
    from spacy_memcoref.loading import resolve_model  # the one rule they share

    resolved = resolve_model(str(folder))
    assert resolved.shipped and resolved.name == "s2e-ontogum" and resolved.folder == folder.resolve()
    named = resolve_model("s2e-ontogum")
    assert (named.folder, named.shipped, named.name, named.identity) == (
        resolved.folder,
        True,
        "s2e-ontogum",
        resolved.identity,
    )
    assert named.span_prefixes == resolved.span_prefixes == ("coref_clusters",)
    # the loaders take the path too, and give the same clusters
    texts = TEXTS[:1]
    for nlp in (load_pipeline(str(folder)), spacy_memcoref.load(str(folder))):
        assert nlp.pipe_names == ["memcoref"]
        docs = list(nlp.pipe(texts))
        assert [doc_record("doc0", doc)["clusters"] for doc in docs] == [by_name[0]["clusters"]]


def test_annotate_options_are_one_dataclass(tmp_path):
    """Issue 64, item 5: annotate_corpus takes one AnnotateOptions (the
    command's options, with its defaults), options by name on top of it;
    a name that is no option is refused, naming it, before any work."""
    import dataclasses
    import inspect

    from spacy_memcoref import cli
    from spacy_memcoref.annotate import AnnotateOptions

    assert list(inspect.signature(annotate_corpus).parameters) == [
        "model",
        "input_path",
        "output_dir",
        "options",
        "log",
        "changes",
    ]
    command = inspect.signature(cli.annotate_cmd).parameters
    for option in dataclasses.fields(AnnotateOptions):
        default = command["output_format" if option.name == "formats" else option.name].default.default
        assert default == ("jsonl" if option.name == "formats" else option.default), option.name
    out = tmp_path / "out"
    with pytest.raises(
        TypeError, match=r"unknown option\(s\) 'shard_sise': the options of AnnotateOptions are .*shard_size"
    ):
        annotate_corpus("no-such-model", tmp_path / "in.jsonl", out, shard_sise=5)
    with pytest.raises(TypeError, match="options must be AnnotateOptions, got dict"):
        annotate_corpus("no-such-model", tmp_path / "in.jsonl", out, {"shard_size": 5})
    with pytest.raises(ValueError, match="--shard-size must be a positive integer, got 0"):
        annotate_corpus("no-such-model", tmp_path / "in.jsonl", out, AnnotateOptions(shard_size=0))
    with pytest.raises(ValueError, match="--workers does not apply to --engine local"):
        annotate_corpus("no-such-model", tmp_path / "in.jsonl", out, AnnotateOptions(shard_size=3), workers=2)
    assert not out.exists()
    assert AnnotateOptions.of(AnnotateOptions(n_process=2), {"shard_size": 5}) == AnnotateOptions(
        n_process=2, shard_size=5
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        AnnotateOptions().shard_size = 5


def test_ray_engine_without_ray_says_how_to_install(model_dir, corpus, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError
    result = CliRunner().invoke(app, ["annotate", model_dir, str(corpus), str(tmp_path / "o"), "--engine", "ray"])
    assert result.exit_code == 1
    assert 'pip install "spacy-memcoref[ray]"' in result.output
    assert not (tmp_path / "o").exists()


# ----- bad input ------------------------------------------------------------------


def bad_corpus(path: Path) -> Path:
    lines = [
        json.dumps({"id": "a", "text": "Alice met Bob. She said he was late."}).encode(),
        b"",  # a blank line is no document
        b'{"id": "b", "text": "unterminated',
        json.dumps({"id": "c", "body": "no text field"}).encode(),
        json.dumps({"id": "d", "text": "Bad bytes: "}).encode()[:-2] + b"\xff\xfe" + b'"}',
        json.dumps({"id": "e", "text": "John saw Mary and waved to her."}).encode(),
        json.dumps(["not", "an", "object"]).encode(),
        json.dumps({"text": "No id: the default is file:line."}).encode(),
    ]
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def test_bad_line_stops_with_file_line_reason(model_dir, tmp_path):
    corpus = bad_corpus(tmp_path / "bad.jsonl")
    with pytest.raises(BadInput, match=rf"{corpus}:3: malformed JSON"):
        annotate_corpus(model_dir, corpus, tmp_path / "out", shard_size=100, progress=False)
    assert not list((tmp_path / "out").glob("shard-*"))
    result = CliRunner().invoke(app, ["annotate", model_dir, str(corpus), str(tmp_path / "out")])
    assert result.exit_code == 1
    assert f"{corpus}:3: malformed JSON" in result.output and "--skip-errors" in result.output


def test_a_parallel_engine_names_the_first_bad_line_whatever_order_its_shards_finish_in(
    model_dir, tmp_path, monkeypatch
):
    # shards of 3 lines: 0 holds line 3 (malformed JSON), 1 lines 4-5, 2 line 7;
    # a process pool that hands them back last first, as a busy machine may
    from spacy_memcoref.annotate import local

    run_inline = local.run_inline

    def last_first_pool(plans, model, options, *, n_process, gpu_id=-1, threads=None):
        yield from reversed(list(run_inline(list(plans), model, options, gpu_id=gpu_id, threads=threads)))

    monkeypatch.setattr(local, "run_pool", last_first_pool)
    corpus = bad_corpus(tmp_path / "bad.jsonl")
    with pytest.raises(BadInput, match=rf"{corpus}:3: malformed JSON"):
        annotate_corpus(model_dir, corpus, tmp_path / "out", shard_size=3, n_process=2, progress=False)


def test_skip_errors_records_bad_lines_and_counts_add_up(model_dir, tmp_path):
    corpus = bad_corpus(tmp_path / "bad.jsonl")
    out = tmp_path / "out"
    summary = annotate_corpus(model_dir, corpus, out, shard_size=3, skip_errors=True, progress=False)
    records, errors = read_records(out), read_errors(out)
    assert [r["id"] for r in records] == ["a", "e", "bad.jsonl:8"]
    assert [(e["line"], e.get("id")) for e in errors] == [(3, None), (4, "c"), (5, None), (7, None)]
    reasons = [e["reason"] for e in errors]
    assert reasons[0].startswith("malformed JSON")
    assert reasons[1] == "missing text field 'text'"
    assert reasons[2].startswith("undecodable bytes")
    assert reasons[3] == "expected a JSON object, found list"
    assert all(e["file"] == str(corpus) for e in errors)
    # documents in = documents out + documents reported as errors
    assert summary.documents + summary.errors == 7 == summary.totals["n_items"]
    assert summary.errors == 4
    # --text-field
    alt = tmp_path / "alt.jsonl"
    alt.write_text(json.dumps({"id": 1, "body": "Alice met Bob."}) + "\n", encoding="utf8")
    summary = annotate_corpus(model_dir, alt, tmp_path / "alt_out", text_field="body", progress=False)
    assert summary.documents == 1 and read_records(tmp_path / "alt_out")[0]["id"] == "1"  # ids are strings


def test_undecodable_txt_file(model_dir, tmp_path):
    books = tmp_path / "books"
    books.mkdir()
    (books / "good.txt").write_text(TEXTS[0], encoding="utf8")
    (books / "latin1.txt").write_bytes("Line one.\nCaf\xe9 au lait.".encode("latin-1"))
    with pytest.raises(BadInput, match=r"latin1.txt:2: undecodable bytes"):
        annotate_corpus(model_dir, books, tmp_path / "out", progress=False)
    summary = annotate_corpus(model_dir, books, tmp_path / "out2", skip_errors=True, progress=False)
    assert summary.documents == 1 and summary.errors == 1
    summary = annotate_corpus(model_dir, books, tmp_path / "out3", encoding="latin-1", progress=False)
    assert summary.documents == 2


# ----- bad files: one bad file never blocks a corpus ---------------------------------


def test_symlink_loop_in_a_txt_folder_is_one_bad_input(model_dir, tmp_path):
    books = tmp_path / "books"
    (books / "sub").mkdir(parents=True)
    (books / "a.txt").write_text(TEXTS[0], encoding="utf8")
    (books / "sub" / "c.txt").write_text(TEXTS[2], encoding="utf8")
    (books / "loop").symlink_to("loop")  # resolves to itself (ELOOP)
    (books / "sub" / "back").symlink_to("..")  # a folder link back to the input folder
    # without --skip-errors: the first bad input stops the run, nothing is written
    out = tmp_path / "out"
    with pytest.raises(BadInput, match=rf"{books / 'loop'}: a symbolic link loop"):
        annotate_corpus(model_dir, books, out, progress=False)
    assert not out.exists()
    result = CliRunner().invoke(app, ["annotate", model_dir, str(books), str(out), "--no-progress"])
    assert result.exit_code == 1
    assert f"{books / 'loop'}: a symbolic link loop" in result.output and "--skip-errors" in result.output
    assert "Traceback" not in result.output and not out.exists()
    # with --skip-errors: each loop is one error, every file is annotated once (no walk round the loop)
    summary = annotate_corpus(model_dir, books, out, shard_size=1, skip_errors=True, progress=False)
    records, errors = read_records(out), read_errors(out)
    assert [r["id"] for r in records] == ["a.txt", "sub/c.txt"]
    assert records[0]["clusters"] and all(r["n_tokens"] > 0 for r in records)
    assert [(e["file"], e["line"]) for e in errors] == [
        (str(books / "loop"), None),
        (str(books / "sub" / "back"), None),
    ]
    assert all("symbolic link loop" in e["reason"] and "not followed" in e["reason"] for e in errors)
    assert str(books) in errors[1]["reason"]  # where the loop leads
    assert summary.documents == 2 and summary.errors == 2
    assert summary.documents + summary.errors == summary.totals["n_items"] == 4
    assert manifest(out)["complete"] and manifest(out)["totals"]["n_errors"] == 2
    # a rerun finds the same shards (the bad entries are planned the same way)
    again = annotate_corpus(model_dir, books, out, shard_size=1, skip_errors=True, progress=False)
    assert again.shards == 0 and again.skipped_shards == 4


def write_docbin(path: Path, texts, ids) -> bytes:
    nlp = spacy.blank("en")
    docs = [nlp(t) for t in texts]
    for doc, doc_id in zip(docs, ids):
        doc.user_data["doc_id"] = doc_id
    data = DocBin(docs=docs, store_user_data=True).to_bytes()
    path.write_bytes(data)
    return data


def test_truncated_docbin_among_good_ones(model_dir, tmp_path):
    folder = tmp_path / "bins"
    folder.mkdir()
    write_docbin(folder / "a.spacy", TEXTS[:3], ["a0", "a1", "a2"])
    whole_b = write_docbin(folder / "b.spacy", TEXTS[:3], ["b0", "b1", "b2"])
    (folder / "b.spacy").write_bytes(whole_b[: len(whole_b) // 2])
    write_docbin(folder / "c.spacy", TEXTS[:3], [1, 2, 3])  # numeric ids: written as strings
    # with --skip-errors: the truncated file is one error, the good files' documents are all there
    out = tmp_path / "out"
    result = CliRunner().invoke(
        app, ["annotate", model_dir, str(folder), str(out), "--skip-errors", "--shard-size", "2", "--no-progress"]
    )
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    records = read_records(out)
    assert [r["id"] for r in records] == ["a0", "a1", "a2", "1", "2", "3"]
    assert [r["clusters"] for r in records[:3]] == [r["clusters"] for r in records[3:]]
    (error,) = read_errors(out)
    assert error["file"] == str(folder / "b.spacy") and error["line"] is None
    assert "truncated or corrupt" in error["reason"]
    assert summary["documents"] == 6 and summary["errors"] == 1 and summary["duplicate_ids"] == 0
    assert summary["documents"] + summary["errors"] == summary["totals"]["n_items"] == 7
    # without --skip-errors: the run stops at the shard that holds the bad file, with file: reason;
    # the shards before it are whole and recorded, nothing of its own is written
    out2 = tmp_path / "out2"
    with pytest.raises(BadInput, match=rf"{folder / 'b.spacy'}: a truncated or corrupt DocBin"):
        annotate_corpus(model_dir, folder, out2, shard_size=2, progress=False)
    assert sorted(manifest(out2)["shards"]) == ["0"] and not manifest(out2)["complete"]
    assert sorted(p.name for p in out2.iterdir() if not p.name.startswith(".annotate")) == [
        "manifest.json",
        "shard-000000.jsonl",
    ]
    assert [r["id"] for r in read_records(out2)] == ["a0", "a1"]
    result = CliRunner().invoke(app, ["annotate", model_dir, str(folder), str(tmp_path / "out3"), "--no-progress"])
    assert result.exit_code == 1
    assert f"{folder / 'b.spacy'}: a truncated or corrupt DocBin" in result.output and "Traceback" not in result.output
    assert not (tmp_path / "out3").exists()
    # the file mended, a rerun resumes after the shards already done
    (folder / "b.spacy").write_bytes(whole_b)
    summary = annotate_corpus(model_dir, folder, out2, shard_size=2, progress=False)
    assert summary.skipped_shards == 1 and summary.errors == 0 and summary.complete
    assert [r["id"] for r in read_records(out2)] == ["a0", "a1", "a2", "b0", "b1", "b2", "1", "2", "3"]


# ----- document ids ---------------------------------------------------------------------


def test_duplicate_ids_are_warned_once_and_counted(model_dir, tmp_path):
    corpus = write_jsonl(tmp_path / "dups.jsonl", TEXTS[:6], ids=[7, "a", "b", "7", "a", 8])
    out = tmp_path / "out"
    result = CliRunner().invoke(
        app, ["annotate", model_dir, str(corpus), str(out), "--shard-size", "2", "--no-progress"]
    )
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    # every document is annotated, ids written as strings (7 and "7" are one id)
    records = read_records(out)
    assert [r["id"] for r in records] == ["7", "a", "b", "7", "a", "8"]
    assert all(isinstance(r["id"], str) for r in records)
    assert '"id": "7"' in (out / "shard-000000.jsonl").read_text(encoding="utf8")
    assert summary["documents"] == 6 and summary["errors"] == 0 and summary["duplicate_ids"] == 2
    warnings = [line for line in result.stderr.splitlines() if "duplicate document ids" in line]
    assert len(warnings) == 1, result.stderr
    assert "2 documents" in warnings[0] and "'7'" in warnings[0] and "'a'" in warnings[0]
    # the count covers the whole output when a stopped run is resumed (shard 0 done before)
    out2 = tmp_path / "out2"
    with pytest.raises(InjectedFailure), _faults.inject(fail_after_shards=2):
        annotate_corpus(model_dir, corpus, out2, shard_size=2, progress=False)
    messages = []
    resumed = annotate_corpus(model_dir, corpus, out2, shard_size=2, progress=False, log=messages.append)
    assert resumed.skipped_shards == 1 and resumed.documents == 4 and resumed.duplicate_ids == 2
    assert len([m for m in messages if "duplicate document ids" in m]) == 1
    assert_same_shards(out2, out)
    # the API without a log warns with `warnings`; unique ids: no warning, a count of 0
    with pytest.warns(UserWarning, match="duplicate document ids") as caught:
        finished = annotate_corpus(model_dir, corpus, out2, shard_size=2, progress=False)
    assert [w.filename for w in caught if "duplicate" in str(w.message)] == [__file__]  # points at the caller
    assert finished.shards == 0 and finished.duplicate_ids == 2
    unique = write_jsonl(tmp_path / "unique.jsonl", TEXTS[:3], ids=[1, 2, "3"])
    messages = []
    summary = annotate_corpus(model_dir, unique, tmp_path / "out3", progress=False, log=messages.append)
    assert summary.duplicate_ids == 0 and not [m for m in messages if "duplicate" in m]
    assert [r["id"] for r in read_records(tmp_path / "out3")] == ["1", "2", "3"]


def test_input_of_no_documents_is_refused_like_predict(model_dir, tmp_path):
    """An empty or blank-only input used to "succeed" with a complete manifest
    of 0 documents, while `convert` and `predict` refuse an empty input."""
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n  \n\n", encoding="utf8")
    with pytest.raises(
        ValueError, match=r"empty\.jsonl: the file holds no documents: it is empty or holds only blank lines"
    ):
        annotate_corpus(model_dir, empty, tmp_path / "out", progress=False)
    assert not (tmp_path / "out").exists(), "no manifest, no folder"
    result = CliRunner().invoke(app, ["annotate", model_dir, str(empty), str(tmp_path / "out")])
    assert result.exit_code == 1
    assert (
        result.output.strip()
        == f"error: {empty.resolve()}: the file holds no documents: it is empty or holds only blank lines"
    )
    assert not (tmp_path / "out").exists()
    # an existing OUTPUT_DIR is left as it was
    existing = tmp_path / "existing"
    existing.mkdir()
    (tmp_path / "zero.jsonl").write_bytes(b"")
    with pytest.raises(ValueError, match="holds no documents"):
        annotate_corpus(model_dir, tmp_path / "zero.jsonl", existing, progress=False)
    assert not list(existing.iterdir())
    # a DocBin of no Docs: the words of `predict`
    nothing = tmp_path / "nothing.spacy"
    DocBin().to_disk(nothing)
    runner = CliRunner()
    predicted = runner.invoke(app, ["predict", model_dir, str(nothing), str(tmp_path / "p.spacy")])
    annotated = runner.invoke(app, ["annotate", model_dir, str(nothing), str(tmp_path / "out2")])
    assert predicted.exit_code == annotated.exit_code == 1
    assert "nothing.spacy: the DocBin holds no Docs" in predicted.output, predicted.output
    assert "nothing.spacy: the DocBin holds no Docs" in annotated.output, annotated.output
    assert not (tmp_path / "out2").exists()
    # a folder of blank JSONL files
    folder = tmp_path / "blank"
    folder.mkdir()
    (folder / "a.jsonl").write_text("\n", encoding="utf8")
    (folder / "b.jsonl").write_text("", encoding="utf8")
    with pytest.raises(ValueError, match=r"blank: the folder holds no documents"):
        annotate_corpus(model_dir, folder, tmp_path / "out3", progress=False)
    (tmp_path / "nothing").mkdir()
    with pytest.raises(ValueError, match="no input files"):
        annotate_corpus(model_dir, tmp_path / "nothing", tmp_path / "out4", progress=False)
    # one bad line is an input (a bad item), not an empty one
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n{oops\n", encoding="utf8")
    with pytest.raises(BadInput, match=r"bad\.jsonl:2: malformed JSON"):
        annotate_corpus(model_dir, bad, tmp_path / "out5", progress=False)


def test_document_of_20k_tokens(model_dir, tmp_path):
    book = tmp_path / "book.txt"
    text = "Alice met Bob. She said he was late. " * 2000  # 20,000 tokens
    book.write_text(text, encoding="utf8")
    summary = annotate_corpus(model_dir, book, tmp_path / "out", progress=False)
    (record,) = read_records(tmp_path / "out")
    assert record["n_tokens"] == 20000 and summary.tokens == 20000
    mentions = [m for c in record["clusters"] for m in c["mentions"]]
    assert mentions and max(m["end"] for m in mentions) > 0.75 * len(text)  # the end is not dropped
    assert all(text[m["start"] : m["end"]] == m["text"] for m in mentions)


# ----- several processes ------------------------------------------------------------


def test_two_processes_equal_one_and_survive_a_worker_death(model_dir, corpus, reference, tmp_path):
    out = tmp_path / "out"
    marker = tmp_path / "died"
    with _faults.inject(die_once=DieOnce(shard=1, marker=str(marker))):
        summary = annotate_corpus(
            model_dir, corpus, out, formats="jsonl,spacy", shard_size=5, batch_size=4, n_process=2, progress=False
        )
    assert marker.exists(), "the worker annotating shard 1 should have died once"
    assert summary.documents == 23 and summary.shards == 5
    assert [r["id"] for r in read_records(out)] == [f"doc{i}" for i in range(23)]
    assert_same_shards(out, reference)


class _PoolThatBreaksOnSubmit:
    """Stands in for ProcessPoolExecutor: runs each shard at once, and on the
    run's `break_at`-th submit raises BrokenProcessPool as a real pool does
    when a worker died after wait() had returned (a race seen on loaded
    cores). Every later submit to that pool raises too."""

    break_at = 0
    submits = 0
    pools = 0

    def __init__(self, *args, **kwargs):
        type(self).pools += 1
        self.broken = False

    def submit(self, fn, *args):
        type(self).submits += 1
        if self.broken or type(self).submits == self.break_at:
            self.broken = True
            raise BrokenProcessPool("A child process terminated abruptly")
        future = Future()
        future.set_result(fn(*args))
        return future

    def shutdown(self, wait=True, cancel_futures=False):
        pass


@pytest.mark.parametrize("break_at", [1, 3, 5, 6])
def test_pool_found_broken_at_submit_redoes_its_shards(monkeypatch, break_at):
    from spacy_memcoref.annotate import local
    from spacy_memcoref.annotate.inputs import ShardPlan

    monkeypatch.setattr(_PoolThatBreaksOnSubmit, "break_at", break_at)
    monkeypatch.setattr(_PoolThatBreaksOnSubmit, "submits", 0)
    monkeypatch.setattr(_PoolThatBreaksOnSubmit, "pools", 0)
    monkeypatch.setattr(local, "ProcessPoolExecutor", _PoolThatBreaksOnSubmit)
    monkeypatch.setattr(local, "_work", lambda plan: ("annotated", plan["index"]))
    plans = [ShardPlan(index=i, kind="txt", root="/corpus", parts=[[f"{i}.txt"]], n_items=1) for i in range(7)]
    results = list(local.run_pool(plans, "model", {}, n_process=2))
    assert sorted(results) == [("annotated", i) for i in range(7)], "each shard once, none lost"
    assert _PoolThatBreaksOnSubmit.pools == 2, "one restart"


# ----- a killed or stopped run: no orphaned workers -------------------------------------

# `annotate --n-process 2` in a process of its own, hanging (annotate._faults.Stall)
# in shard argv[1] and after, so that shards 0 .. argv[1]-1 are written and the
# workers are busy when the test kills it
_STALLED_ANNOTATE = """
import sys
from spacy_memcoref.annotate import _faults
from spacy_memcoref.cli import app
with _faults.inject(stall=_faults.Stall(shard=int(sys.argv[1]))):
    app(sys.argv[2:], prog_name="spacy_memcoref")
"""

needs_proc = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="lists processes with /proc (Linux)")


def _proc_stat(pid: int):
    """(state, parent pid) of a process, or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return fields[0], int(fields[1])


def _alive(pid: int) -> bool:
    stat = _proc_stat(pid)
    return stat is not None and stat[0] not in ("Z", "X")  # a zombie waits for its new parent to reap it


def _children(pid: int):
    """{pid: command line} of the live child processes of `pid`."""
    found = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            stat = _proc_stat(int(name))
            if stat is not None and stat[1] == pid and _alive(int(name)):
                try:
                    with open(f"/proc/{name}/cmdline", "rb") as cmdline:
                        found[int(name)] = cmdline.read().replace(b"\0", b" ").decode("utf-8", "replace")
                except OSError:
                    pass
    return found


def _start_stalled_annotate(model_dir, corpus, out: Path, log: Path, *, stall_at: int = 2):
    """Start the run and wait until shards 0 .. stall_at-1 are recorded (both
    workers have then loaded the pipeline). RETURNS (process, its children)."""
    args = [sys.executable, "-c", _STALLED_ANNOTATE, str(stall_at), "annotate", model_dir, str(corpus), str(out)]
    args += ["--n-process", "2", "--threads", "1", "--shard-size", "2", "--batch-size", "4", "--no-progress"]
    with open(log, "wb") as log_file:
        proc = subprocess.Popen(args, stdout=log_file, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.time() + 300
    while time.time() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"annotate ended early ({proc.returncode}): {log.read_text(errors='replace')[-3000:]}")
        try:
            if len(manifest(out)["shards"]) >= stall_at:
                break
        except (OSError, ValueError):
            pass
        time.sleep(0.2)
    else:
        proc.kill()
        pytest.fail(f"annotate wrote no {stall_at} shards in time: {log.read_text(errors='replace')[-3000:]}")
    children = _children(proc.pid)
    workers = [pid for pid, cmd in children.items() if "spawn_main" in cmd]
    assert len(workers) == 2, children
    return proc, children


def _wait_gone(pids, seconds: float):
    deadline = time.time() + seconds
    while time.time() < deadline and any(_alive(pid) for pid in pids):
        time.sleep(0.1)
    return {pid for pid in pids if _alive(pid)}


def _cleanup(proc, pids) -> None:
    """Kill what a failed test left (the processes this test started, by pid)."""
    if proc.poll() is None:
        proc.kill()
        proc.wait()
    for pid in pids:
        if _alive(pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass


@pytest.mark.slow
@needs_proc
def test_workers_die_with_a_killed_parent(model_dir, corpus, tmp_path):
    """kill -9 of `annotate --n-process 2` used to leave both workers (~700 MB
    each) and the resource tracker running, with parent 1."""
    proc, children = _start_stalled_annotate(model_dir, corpus, tmp_path / "out", tmp_path / "log")
    try:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        left = _wait_gone(children, 10)
        assert not left, f"orphaned: {[children[pid] for pid in left]}"
    finally:
        _cleanup(proc, children)


@pytest.mark.slow
@needs_proc
def test_sigterm_stops_the_workers_and_a_rerun_resumes(model_dir, corpus, reference, tmp_path):
    """SIGTERM used to kill the parent alone (its workers ran on, orphaned)."""
    out = tmp_path / "out"
    log = tmp_path / "log"
    proc, children = _start_stalled_annotate(model_dir, corpus, out, log)
    try:
        os.kill(proc.pid, signal.SIGTERM)
        assert proc.wait(timeout=60) == 1
        left = _wait_gone(children, 10)
        assert not left, f"still running: {[children[pid] for pid in left]}"
    finally:
        _cleanup(proc, children)
    errors = [line for line in log.read_text(errors="replace").splitlines() if line.startswith("error:")]
    assert errors == [
        f"error: stopped by SIGTERM: {out} keeps the 2 finished shards (2 of them written by this run): rerun the same command to resume"
    ], log.read_text(errors="replace")[-3000:]
    m = manifest(out)
    assert sorted(m["shards"]) == ["0", "1"] and not m["complete"]
    assert not (out / "shard-000002.jsonl").exists()
    summary = annotate_corpus(model_dir, corpus, out, shard_size=2, batch_size=4, progress=False)
    assert summary.skipped_shards == 2 and summary.shards == 10 and summary.complete
    assert manifest(out)["complete"] and manifest(out)["totals"]["n_docs"] == 23
    assert read_records(out) == read_records(reference)


_MIDDLE = """
import subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", sys.argv[1], str(__import__("os").getpid())])
print(child.pid, flush=True)
time.sleep(600)
"""

_ORPHAN = """
import sys, time
from spacy_memcoref.annotate import local
local._set_parent_death_signal = lambda signum: False  # the watcher thread alone, as where there is no prctl
local.die_with_parent(int(sys.argv[1]), poll_s=0.1)
print("ready", flush=True)
time.sleep(600)
"""


@needs_proc
def test_parent_watcher_ends_a_worker_without_the_death_signal(tmp_path):
    """The portable fallback of PR_SET_PDEATHSIG: a thread that sees the
    parent go (os.getppid() changes) ends the worker."""
    import select

    def readline(seconds: float = 60) -> bytes:
        ready, _, _ = select.select([proc.stdout], [], [], seconds)
        return proc.stdout.readline() if ready else b"(nothing in time)"

    proc = subprocess.Popen(
        [sys.executable, "-c", _MIDDLE, _ORPHAN], stdout=subprocess.PIPE, bufsize=0, start_new_session=True
    )
    child = None
    try:
        child = int(readline())
        assert readline().strip() == b"ready"
        assert _alive(child)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        assert not _wait_gone([child], 5), "the orphan should have ended itself"
    finally:
        _cleanup(proc, [child] if child else [])
        proc.stdout.close()


# ----- Ray ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def ray_cluster():
    ray = pytest.importorskip("ray", reason='the ray extra is not installed (pip install "spacy-memcoref[ray]")')
    pytest.importorskip("ray.data", reason="ray[data] is not installed")
    started = not ray.is_initialized()
    if started:
        ray.init(
            num_cpus=2,
            include_dashboard=False,
            log_to_driver=False,
            runtime_env={"env_vars": {"PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}},
        )
    yield ray
    if started:
        ray.shutdown()


def test_ray_equals_local_and_survives_an_actor_death(ray_cluster, model_dir, corpus, reference, tmp_path):
    out = tmp_path / "out"
    marker = tmp_path / "died"
    with _faults.inject(die_once=DieOnce(shard=2, marker=str(marker))):
        summary = annotate_corpus(
            model_dir,
            corpus,
            out,
            engine="ray",
            workers=2,
            formats="jsonl,spacy",
            shard_size=5,
            batch_size=4,
            progress=False,
        )
    assert marker.exists(), "the actor annotating shard 2 should have died once"
    assert summary.documents == 23 and summary.shards == 5 and summary.errors == 0
    assert [r["id"] for r in read_records(out)] == [f"doc{i}" for i in range(23)]
    assert_same_shards(out, reference)
    assert manifest(out) == manifest(reference)


def test_ray_resumes_a_local_run_and_skips_errors(ray_cluster, model_dir, corpus, reference, tmp_path):
    out = tmp_path / "out"
    with pytest.raises(InjectedFailure), _faults.inject(fail_after_shards=2):
        annotate_corpus(model_dir, corpus, out, formats="jsonl,spacy", shard_size=5, batch_size=4, progress=False)
    summary = annotate_corpus(
        model_dir,
        corpus,
        out,
        engine="ray",
        workers=2,
        formats="jsonl,spacy",
        shard_size=5,
        batch_size=4,
        progress=False,
    )
    assert summary.skipped_shards == 1 and summary.shards == 4
    assert_same_shards(out, reference)
    # bad lines: the same errors files as the local engine
    bad = bad_corpus(tmp_path / "bad.jsonl")
    local_out, ray_out = tmp_path / "bad_local", tmp_path / "bad_ray"
    annotate_corpus(model_dir, bad, local_out, shard_size=3, skip_errors=True, progress=False)
    annotate_corpus(model_dir, bad, ray_out, engine="ray", workers=2, shard_size=3, skip_errors=True, progress=False)
    assert_same_shards(ray_out, local_out)
    with pytest.raises(BadInput, match=rf"{bad}:3: malformed JSON"):
        annotate_corpus(model_dir, bad, tmp_path / "bad_stop", engine="ray", workers=2, shard_size=3, progress=False)


def test_memcoref_predictor_on_a_dataset_of_ones_own(ray_cluster, model_dir, corpus, reference):
    from spacy_memcoref.annotate import MemcorefPredictor, annotate_dataset

    rows = [json.loads(line) for line in corpus.read_text(encoding="utf8").splitlines()]
    ds = ray_cluster.data.from_items(rows, override_num_blocks=2)
    got = sorted(annotate_dataset(ds, model_dir, workers=2, batch_size=4).take_all(), key=lambda r: int(r["id"][3:]))
    expected = read_records(reference)
    assert [r["id"] for r in got] == [r["id"] for r in expected]
    assert [r["clusters"] for r in got] == [r["clusters"] for r in expected]
    assert [r["n_tokens"] for r in got] == [r["n_tokens"] for r in expected]
    # the class directly, as in the README, with pandas batches
    ds = ray_cluster.data.from_items(rows[:4]).map_batches(
        MemcorefPredictor,
        fn_constructor_kwargs={"model": model_dir},
        batch_size=2,
        batch_format="pandas",
        compute=ray_cluster.data.ActorPoolStrategy(size=1),
    )
    got = sorted(ds.take_all(), key=lambda r: int(r["id"][3:]))
    # rows may come back with arrays for lists (pandas blocks): compare as plain values
    assert [_plain(r["clusters"]) for r in got] == [r["clusters"] for r in expected[:4]]
    assert any(r["clusters"] for r in expected[:4])


def _plain(value):
    """Nested numpy arrays, lists and dicts as plain Python values."""
    if hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return [_plain(v) for v in value] if isinstance(value, (list, tuple)) else value


# ----- resolved text ------------------------------------------------------------------


def test_resolved_records_match_resolve_and_predict_option(model_dir, reference, corpus, tmp_path):
    from spacy_memcoref import resolve

    out = tmp_path / "out_resolved"
    annotate_corpus(
        model_dir,
        corpus,
        out,
        formats="jsonl,spacy",
        shard_size=5,
        batch_size=4,
        threads=1,
        resolved=True,
        progress=False,
    )
    plain = read_records(reference)
    got = read_records(out)
    assert [{k: v for k, v in r.items() if k not in ("resolved", "edits")} for r in got] == plain
    nlp = spacy.blank("en")
    docs = [d for p in sorted(out.glob("shard-*.spacy")) for d in DocBin().from_disk(p).get_docs(nlp.vocab)]
    n_edits = 0
    for record, doc in zip(got, docs):
        result = resolve(doc)
        assert record["resolved"] == result.text == doc._.coref_resolved
        assert record["edits"] == [
            {"source": list(e.source), "target": list(e.target), "text": e.text} for e in result.edits
        ]
        for edit in record["edits"]:
            assert record["resolved"][edit["target"][0] : edit["target"][1]] == edit["text"]
        n_edits += len(record["edits"])
    assert n_edits > 0, "the overfit pipeline's clusters hold pronouns"
    # resolved output is another output: a plain run's folder is not reused for it
    with pytest.raises(OutputMismatch):
        annotate_corpus(
            model_dir,
            corpus,
            reference,
            formats="jsonl,spacy",
            shard_size=5,
            batch_size=4,
            threads=1,
            resolved=True,
            progress=False,
        )
    # predict --resolved stores the same in user_data
    source = tmp_path / "in.spacy"
    DocBin(docs=[nlp(t) for t in TEXTS[:3]]).to_disk(source)
    predicted = tmp_path / "pred.spacy"
    result = CliRunner().invoke(app, ["predict", model_dir, str(source), str(predicted), "--resolved"])
    assert result.exit_code == 0, result.output
    for doc in DocBin().from_disk(predicted).get_docs(nlp.vocab):
        assert doc.user_data["resolved"]["text"] == resolve(doc).text


def test_resolved_text_is_stored_in_the_docbin_as_predict_stores_it(model_dir, tmp_path):
    """annotate --resolved --format spacy computed the resolved text and
    dropped it from the DocBin."""
    small = write_jsonl(tmp_path / "small.jsonl", TEXTS[:3])
    out = tmp_path / "out"
    args = ["annotate", model_dir, str(small), str(out), "--format", "jsonl,spacy", "--resolved", "--no-progress"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    records = read_records(out)
    nlp = spacy.blank("en")
    docs = list(DocBin().from_disk(out / "shard-000000.spacy").get_docs(nlp.vocab))
    assert [d.user_data["doc_id"] for d in docs] == ["doc0", "doc1", "doc2"]
    for record, doc in zip(records, docs):
        stored = json.loads(json.dumps(doc.user_data["resolved"]))  # a DocBin gives tuples back for lists
        assert stored == {"text": record["resolved"], "edits": record["edits"]}
    assert any(r["edits"] for r in records), "the overfit pipeline's clusters hold pronouns"
    # the same place and the same values as `predict --resolved` (run over the same Docs)
    predicted = tmp_path / "pred.spacy"
    result = CliRunner().invoke(
        app, ["predict", model_dir, str(out / "shard-000000.spacy"), str(predicted), "--resolved"]
    )
    assert result.exit_code == 0, result.output
    again = list(DocBin().from_disk(predicted).get_docs(nlp.vocab))
    assert [d.user_data["resolved"] for d in again] == [d.user_data["resolved"] for d in docs]
    # without --resolved, nothing is stored
    annotate_corpus(model_dir, small, tmp_path / "plain", formats="spacy", progress=False)
    plain = list(DocBin().from_disk(tmp_path / "plain" / "shard-000000.spacy").get_docs(nlp.vocab))
    assert not any("resolved" in d.user_data for d in plain)


def test_text_longer_than_max_length_is_a_bad_document(model_dir, tmp_path):
    """spaCy's E088 used to stop the whole shard, even with --skip-errors,
    naming no file, line or id; every rerun stopped there again."""
    corpus = tmp_path / "long.jsonl"
    long_text = "word " * 200_001  # 1,000,005 characters: over spaCy's default max_length
    write_jsonl(corpus, [TEXTS[0], long_text, TEXTS[1]], ids=["a", "huge", "b"])
    with pytest.raises(
        BadInput,
        match=r"long\.jsonl:2: text of 1,000,005 characters is longer than the pipeline's nlp\.max_length \(1,000,000",
    ):
        annotate_corpus(model_dir, corpus, tmp_path / "out", progress=False)
    # a failed first run leaves nothing behind (it used to leave .annotate.lock)
    assert not (tmp_path / "out").exists()
    existing = tmp_path / "existing"
    existing.mkdir()
    with pytest.raises(BadInput):
        annotate_corpus(model_dir, corpus, existing, progress=False)
    assert existing.is_dir() and not list(existing.iterdir())
    summary = annotate_corpus(model_dir, corpus, tmp_path / "out2", skip_errors=True, progress=False)
    assert [r["id"] for r in read_records(tmp_path / "out2")] == ["a", "b"]
    (error,) = read_errors(tmp_path / "out2")
    assert error["id"] == "huge" and error["line"] == 2 and "E088" in error["reason"]
    assert summary.documents + summary.errors == 3


def test_truncated_docbin_is_called_truncated_everywhere(model_dir, tmp_path):
    nlp = spacy.blank("en")
    whole = DocBin(docs=[nlp(t) for t in TEXTS[:3]]).to_bytes()
    folder = tmp_path / "bins"
    folder.mkdir()
    (folder / "a.spacy").write_bytes(whole)
    (folder / "b.spacy").write_bytes(whole[: len(whole) // 2])
    with pytest.raises(BadInput, match=r"b\.spacy: a truncated or corrupt DocBin"):
        annotate_corpus(model_dir, folder, tmp_path / "out", progress=False)
    runner = CliRunner()
    for args in (
        ["predict", model_dir, str(folder / "b.spacy"), str(tmp_path / "p.spacy")],
        ["export", "conll", str(folder / "b.spacy"), str(tmp_path / "e.conll")],
    ):
        result = runner.invoke(app, args)
        assert result.exit_code == 1
        assert "truncated or corrupt DocBin" in result.output and "v2" not in result.output, result.output
