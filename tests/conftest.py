"""Shared fixtures and builders.

Fixtures: the shared folder (data, reference scorers; tests that need it
skip, saying why, when it is absent), one torch thread, a small random MPNet,
and small pipelines built once a session: an s2e pipeline overfit on TRAIN
(`trained_s2e`, saved; `trained_nlp` loads a copy for each test module) and
untrained s2e and PeTra pipelines with two DocBins (`models`).

Builders: plain functions and constants that test files import with
`from conftest import ...` (a test file never imports another one;
tests/test_layers.py checks): the small CNN tok2vec that stands in for the
transformer where the encoder does not matter, the torch modules' arguments
from their builders' defaults, the s2e and PeTra configs and their examples.
"""

import inspect
import os
import shutil
from pathlib import Path
from typing import Any, Callable, Dict, List, NamedTuple, Tuple

import pytest

REPO = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("MEMCOREF_SHARED", REPO.parent / "shared"))
DATA = Path(__file__).resolve().parent / "data"
GAP_SAMPLE = DATA / "gap_sample.tsv"


# ----- builders: the CNN tok2vec ------------------------------------------------------


def cnn_tok2vec(*, width: int, depth: int, rows, maxout_pieces: int) -> dict:
    """A small CNN tok2vec config that stands in for the transformer in fast tests."""
    return {
        "@architectures": "spacy.Tok2Vec.v2",
        "embed": {
            "@architectures": "spacy.MultiHashEmbed.v2",
            "width": width,
            "attrs": ["NORM", "PREFIX", "SUFFIX", "SHAPE"],
            "rows": list(rows),
            "include_static_vectors": False,
        },
        "encode": {
            "@architectures": "spacy.MaxoutWindowEncoder.v2",
            "width": width,
            "depth": depth,
            "window_size": 1,
            "maxout_pieces": maxout_pieces,
        },
    }


# ----- builders: the torch modules' arguments -----------------------------------------
# The builders' signatures are the one home of the defaults, and the modules
# take required arguments.

PETRA_ARGS: Tuple[str, ...] = (
    "hidden_size",
    "num_cells",
    "mlp_size",
    "usage_decay",
    "entity_loss_weight",
    "dropout",
    "learned_init",
    "fixed_key_size",
    "positive_weight",
    "negative_weight",
    "action_loss_weight",
)
S2E_HEAD_ARGS: Tuple[str, ...] = (
    "hidden_size",
    "dropout",
    "max_width",
    "top_lambda",
    "max_antecedents",
    "use_speakers",
    "chunk_size",
    "use_distance",
    "mention_loss_weight",
    "all_mentions_loss_weight",
    "memory_loss_cells",
    "memory_loss_mentions",
)


def builder_defaults(builder: Callable, names: Tuple[str, ...]) -> Dict[str, Any]:
    params = inspect.signature(builder).parameters
    return {name: params[name].default for name in names}


def petra_args(**overrides: Any) -> Dict[str, Any]:
    """pytorch_petra.PeTra's keyword arguments: build_petra's defaults, overridden."""
    from spacy_memcoref.models.petra.petra_model import build_petra

    return {**builder_defaults(build_petra, PETRA_ARGS), **overrides}


def s2e_head_args(**overrides: Any) -> Dict[str, Any]:
    """pytorch_s2e.S2EHead's keyword arguments: build_s2e's defaults, overridden."""
    from spacy_memcoref.models.s2e.s2e_model import build_s2e

    return {**builder_defaults(build_s2e, S2E_HEAD_ARGS), **overrides}


# ----- builders: s2e -----------------------------------------------------------------

S2E_CNN_TOK2VEC = cnn_tok2vec(width=64, depth=2, rows=[2000, 500, 500, 500], maxout_pieces=3)


def s2e_config(**model_overrides) -> dict:
    """The memcoref factory's config: a small s2e over S2E_CNN_TOK2VEC."""
    model = {
        "@architectures": "spacy_memcoref.S2E.v1",
        "hidden_size": 64,
        "dropout": 0.0,
        "max_width": 10,
        "top_lambda": 0.4,
        "max_antecedents": None,
        "use_speakers": True,
        "head_lr_scale": 1.0,
        "chunk_size": 512,
        "mention_loss_weight": 1.0,
        "tok2vec": S2E_CNN_TOK2VEC,
    }
    model.update(model_overrides)
    return {"model": model}


# (text, clusters of inclusive token spans)
TRAIN = [
    ("Alice met Bob . She said he was late .", [[(0, 0), (4, 4)], [(2, 2), (6, 6)]]),
    ("The company said its profits rose . It was happy .", [[(0, 1), (3, 3), (7, 7)]]),
    ("John saw Mary and waved to her . He smiled at her .", [[(0, 0), (8, 8)], [(2, 2), (6, 6), (11, 11)]]),
]


def make_examples(nlp) -> list:
    """The TRAIN documents as Examples (gold clusters on the reference)."""
    from spacy.tokens import Doc
    from spacy.training import Example

    examples = []
    for text, clusters in TRAIN:
        ref = Doc(nlp.vocab, words=text.split())
        for i, cluster in enumerate(clusters, start=1):
            ref.spans[f"coref_clusters_{i}"] = [ref[s : e + 1] for s, e in cluster]
        examples.append(Example(Doc(nlp.vocab, words=text.split()), ref))
    return examples


def conll_f1(nlp, examples) -> float:
    """nlp's CoNLL F1 on the Examples' reference clusters (the project's
    scorer), each text read from its words."""
    from spacy.tokens import Doc

    from spacy_memcoref.scoring.coref_metrics import CorefEvaluator

    evaluator = CorefEvaluator()
    for eg in examples:
        doc = nlp(Doc(nlp.vocab, words=[t.text for t in eg.reference]))
        key = [[(s.start, s.end - 1) for s in eg.reference.spans[k]] for k in eg.reference.spans]
        response = [[(s.start, s.end - 1) for s in doc.spans[k]] for k in doc.spans]
        evaluator.add_document(key, response)
    return evaluator.scores()["coref_conll_f"]


def spans_of(doc) -> dict:
    """A Doc's span groups as {key: [(start, end), ...]} (token offsets)."""
    return {key: [(s.start, s.end) for s in group] for key, group in doc.spans.items()}


def assert_disk_round_trip(nlp, texts, path):
    """Save nlp to path and load it back: the same spans on every text (and
    some spans at all). RETURNS the spans before, a list a text."""
    import spacy

    before = [spans_of(nlp(t)) for t in texts]
    assert any(before)
    nlp.to_disk(path)
    loaded = spacy.load(path)
    assert [spans_of(loaded(t)) for t in texts] == before
    return before


def assert_same_links(nlp, loaded, texts, name="memcoref"):
    """s2e's raw predictions (kept candidate spans, best antecedents and
    their float32 scores) are identical in two pipelines, and not empty: a
    check of the weights that empty cluster lists cannot pass by accident."""
    before = nlp.get_pipe(name).predict([nlp.make_doc(t) for t in texts])
    after = loaded.get_pipe(name).predict([loaded.make_doc(t) for t in texts])
    assert any(p.links and p.links[0] for p in before), before
    assert after == before


# ----- builders: PeTra ---------------------------------------------------------------

PETRA_CELLS = 4
PETRA_CNN_TOK2VEC = cnn_tok2vec(width=32, depth=1, rows=[1000, 200, 200, 200], maxout_pieces=2)


def petra_config(**model_overrides) -> dict:
    """The memcoref_petra factory's config: a small PeTra over PETRA_CNN_TOK2VEC."""
    model = {
        "@architectures": "spacy_memcoref.PeTra.v1",
        "hidden_size": 32,
        "num_cells": PETRA_CELLS,
        "mlp_size": 32,
        "dropout": 0.0,
        "temperature_halving_steps": 0,
        "encoder_layers": 1,
        "tok2vec": PETRA_CNN_TOK2VEC,
    }
    model.update(model_overrides)
    return {"model": model}


def gap_examples(nlp) -> list:
    """The GAP sample as Examples (GAP gold on the reference)."""
    from spacy.training import Example

    from spacy_memcoref.corpora.gap import read_gap

    docs = list(read_gap(GAP_SAMPLE, nlp))
    return [Example(nlp.make_doc(doc.text), doc) for doc in docs]


# ----- builders: the tiniest pipelines (initialized, never trained) --------------------

TINY_CNN = cnn_tok2vec(width=16, depth=1, rows=[200, 50, 50, 50], maxout_pieces=2)
TINY_S2E = {"@architectures": "spacy_memcoref.S2E.v1", "hidden_size": 16, "tok2vec": TINY_CNN}
TINY_PETRA = {
    "@architectures": "spacy_memcoref.PeTra.v1",
    "hidden_size": 16,
    "mlp_size": 16,
    "num_cells": 3,
    "encoder_layers": 1,
    "tok2vec": TINY_CNN,
}


# ----- builders: documents for the transformer tests -------------------------------

SAMPLE_TEXTS = [
    "Mary met John in Paris . She told him that the museum was closed on Mondays .",
    "The company said its profits rose . It was happy , and its chief said so too .",
    "Short one .",
]


def sample_docs(nlp) -> list:
    from spacy.tokens import Doc

    return [Doc(nlp.vocab, words=text.split()) for text in SAMPLE_TEXTS]


# ----- builders: the CLI's user errors ---------------------------------------------

# one CoNLL-2012 document: Alice ... She
CONLL = """#begin document (d1); part 000
d1\t0\t0\tAlice\t-\t-\t-\t-\t-\t-\t*\t(1)
d1\t0\t1\tleft\t-\t-\t-\t-\t-\t-\t*\t-
d1\t0\t2\t.\t-\t-\t-\t-\t-\t-\t*\t-

d1\t0\t0\tShe\t-\t-\t-\t-\t-\t-\t*\t(1)
d1\t0\t1\treturned\t-\t-\t-\t-\t-\t-\t*\t-
#end document
"""


def assert_user_error(result, *fragments) -> str:
    """Exit 1 through typer (no uncaught exception), one line, naming what is wrong."""
    assert result.exit_code == 1, result.output
    assert isinstance(result.exception, SystemExit), repr(result.exception)
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


# ----- fixtures: the shared folder ---------------------------------------------------


def load_script(name: str):
    """scripts/NAME.py as a module (scripts/ is no package)."""
    import importlib.util

    path = Path(__file__).resolve().parent.parent / "scripts" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"memcoref_script_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _require(path: Path, what: str) -> Path:
    if not path.exists():
        pytest.skip(f"{what} not found at {path} (set MEMCOREF_SHARED to the shared/ folder)")
    return path


@pytest.fixture(scope="session")
def default_model():
    """The default shipped model (spacy_memcoref.load()), when its encoder is
    on this machine ($SPACY_MEMCOREF_ENCODER or the Hugging Face cache; .ci/run
    fetches it from the package registry). Never downloaded by a test: the
    Hub is taken as offline while it loads; absent, the test skips with the
    loader's own one-line message."""
    import spacy_memcoref
    from spacy_memcoref.errors import EncoderNotFound

    before = os.environ.get("HF_HUB_OFFLINE")
    os.environ["HF_HUB_OFFLINE"] = "1"
    try:
        return spacy_memcoref.load()
    except EncoderNotFound as err:
        pytest.skip(f"the default model's encoder is not on this machine: {err}")
    finally:
        if before is None:
            os.environ.pop("HF_HUB_OFFLINE", None)
        else:
            os.environ["HF_HUB_OFFLINE"] = before


@pytest.fixture(scope="session")
def shared_data() -> Path:
    return _require(SHARED / "data", "shared data")


@pytest.fixture(scope="session")
def conll_scorer() -> Path:
    scorer = _require(SHARED / "tools" / "conll-scorer" / "scorer.pl", "CoNLL-2012 reference scorer")
    if shutil.which("perl") is None:
        pytest.skip("perl is not installed; the CoNLL-2012 reference scorer needs it")
    return scorer


@pytest.fixture(scope="session")
def gap_scorer() -> Path:
    return _require(SHARED / "tools" / "gap-scorer" / "gap_scorer.py", "official GAP scorer")


# ----- fixtures: threads, encoders, pipelines ------------------------------------------


@pytest.fixture(scope="module")
def one_torch_thread():
    """Tiny tensors: threads only add contention on a shared machine."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="session")
def tiny_mpnet(tmp_path_factory) -> Path:
    """A small random MPNet (4 layers, width 32) as a Hugging Face folder,
    with the embedded MiniLM's word-piece tokenizer: the base presets'
    architecture (relative position bias included) without a download."""
    import torch
    from transformers import MPNetConfig, MPNetModel

    from spacy_memcoref.models.encoder.encoder import embedded_encoder_path

    path = tmp_path_factory.mktemp("tiny_mpnet")
    source = Path(embedded_encoder_path())
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt"):
        shutil.copy(source / name, path / name)
    torch.manual_seed(0)
    config = MPNetConfig(
        vocab_size=30522,
        hidden_size=32,
        num_hidden_layers=4,
        num_attention_heads=4,
        intermediate_size=64,
        max_position_embeddings=514,
        pad_token_id=0,
    )
    MPNetModel(config).save_pretrained(path)
    return path


class TrainedS2E(NamedTuple):
    path: Path  # the saved pipeline: read it, never write into it
    losses: List[float]  # one a training step


TRAINED_S2E_STEPS = 80


def overfit_s2e(**model_overrides):
    """A small s2e (s2e_config with the overrides) trained TRAINED_S2E_STEPS
    updates on the three TRAIN documents, seed 0.
    RETURNS (nlp, examples, losses): losses one an update."""
    import spacy
    from thinc.api import Adam, fix_random_seed

    fix_random_seed(0)
    nlp = spacy.blank("en")
    nlp.add_pipe("memcoref", config=s2e_config(**model_overrides))
    examples = make_examples(nlp)
    nlp.initialize(lambda: examples)
    optimizer = Adam(0.003)
    losses = [nlp.update(examples, sgd=optimizer)["memcoref"] for _ in range(TRAINED_S2E_STEPS)]
    return nlp, examples, losses


@pytest.fixture(scope="session")
def trained_s2e(tmp_path_factory) -> TrainedS2E:
    """An s2e pipeline (s2e_config) overfit on the three TRAIN documents,
    trained once a session and saved. Tests that change a pipeline load
    their own copy (trained_nlp, or spacy.load(path))."""
    nlp, _, losses = overfit_s2e()
    path = tmp_path_factory.mktemp("trained_s2e") / "s2e"
    nlp.to_disk(path)
    return TrainedS2E(path, losses)


@pytest.fixture(scope="module")
def trained_nlp(trained_s2e):
    """(nlp, examples, losses): a copy of trained_s2e for this test module,
    with the TRAIN examples on its vocab and the training losses."""
    import spacy

    nlp = spacy.load(trained_s2e.path)
    return nlp, make_examples(nlp), list(trained_s2e.losses)


@pytest.fixture(scope="session")
def models(tmp_path_factory) -> Path:
    """A folder of small stand-ins, initialized, not trained: the pipelines
    s2e/ (TINY_S2E) and petra/ (TINY_PETRA), dev.spacy (two plain Docs) and
    gap.spacy (the GAP sample converted by the CLI). Read, never write."""
    import spacy
    from spacy.tokens import Doc, DocBin
    from typer.testing import CliRunner

    from spacy_memcoref.cli import app

    root = tmp_path_factory.mktemp("models")
    nlp = spacy.blank("en")
    nlp.add_pipe("memcoref", config={"model": TINY_S2E})
    nlp.initialize()
    nlp.to_disk(root / "s2e")
    petra = spacy.blank("en")
    petra.add_pipe("memcoref_petra", config={"model": TINY_PETRA})
    petra.initialize()
    petra.to_disk(root / "petra")
    docbin = DocBin(store_user_data=True)
    for text in ("Alice met Bob . She left .", "It rained ."):
        docbin.add(Doc(nlp.vocab, words=text.split()))
    docbin.to_disk(root / "dev.spacy")
    result = CliRunner().invoke(app, ["convert", "gap", str(GAP_SAMPLE), str(root / "gap.spacy")])
    assert result.exit_code == 0, result.output
    return root
