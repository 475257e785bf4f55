"""Make the saved pipelines that tests/test_saved_pipelines.py loads: a tiny
s2e and a tiny PeTra pipeline, trained a few updates and tuned as the tuning
commands store their settings, saved by the code of the commit named in
README.md, with what they predicted then (expected.json).

    python tests/data/saved_pipelines/make.py

Run it only to add a pipeline saved by a new version (in a new folder):
the point of these files is that they were written by older code.
"""

import json
import sys
from pathlib import Path

import numpy
import spacy
from thinc.api import Adam, fix_random_seed

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))  # tests/: conftest's builders

from conftest import GAP_SAMPLE, TINY_CNN, make_examples, gap_examples  # noqa: E402

TEXTS = [
    "Alice met Bob . She said he was late .",
    "John saw Mary and waved to her . He smiled at her .",
    "The company said its profits rose . It was happy .",
]


def _trained(factory: str, model: dict, examples_of, steps: int, rate: float):
    fix_random_seed(0)
    nlp = spacy.blank("en")
    nlp.add_pipe(factory, config={"model": model})
    examples = examples_of(nlp)
    nlp.initialize(lambda: examples)
    optimizer = Adam(rate)
    for _ in range(steps):
        nlp.update(examples, sgd=optimizer)
    return nlp


def _plain(value):
    """JSON-able: numpy scalars and arrays as floats and lists."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if hasattr(value, "tolist"):
        return value.tolist()
    return value


def _predictions(nlp, texts):
    from spacy_memcoref import resolve

    out = []
    for doc in nlp.pipe(texts):
        clusters = sorted(
            sorted([s.start, s.end] for s in group)
            for key, group in doc.spans.items()
            if key.startswith("coref_clusters")
        )
        item = {"clusters": clusters, "resolved": resolve(doc).text}
        if doc.has_extension("memory_log") and doc._.memory_log is not None:
            item["memory_log"] = {key: numpy.asarray(value).tolist() for key, value in doc._.memory_log.items()}
        if "gap_probs" in doc.user_data:
            item["gap_probs"] = _plain(doc.user_data["gap_probs"])
        out.append(item)
    return out


def main(folder: str) -> None:
    from spacy_memcoref.corpora.gap import read_gap
    from spacy_memcoref.tuning.save import save_with_settings

    out = HERE / folder
    out.mkdir(parents=True, exist_ok=True)
    s2e_model = {
        "@architectures": "spacy_memcoref.S2E.v1",
        "hidden_size": 32,
        "max_width": 10,
        "dropout": 0.0,
        "head_lr_scale": 1.0,
        "tok2vec": TINY_CNN,
    }
    s2e = _trained("memcoref", s2e_model, make_examples, steps=80, rate=0.003)
    # as tune-link-threshold stores it
    save_with_settings(s2e, "memcoref", {"link_threshold": -0.5}, out / "s2e")
    petra_model = {
        "@architectures": "spacy_memcoref.PeTra.v1",
        "hidden_size": 16,
        "mlp_size": 16,
        "num_cells": 3,
        "encoder_layers": 1,
        "tok2vec": TINY_CNN,
    }
    petra = _trained("memcoref_petra", petra_model, gap_examples, steps=10, rate=0.01)
    # as tune-gap-threshold and count-people --output store them
    save_with_settings(
        petra,
        "memcoref_petra",
        {"gap_threshold": 0.45, "gap_calibration": [1.5, 0.5], "people_alpha": 0.3},
        out / "petra",
    )
    expected = {
        "s2e": _predictions(spacy.load(out / "s2e"), TEXTS),
        "petra": _predictions(spacy.load(out / "petra"), TEXTS),
        "petra_gap": _predictions(spacy.load(out / "petra"), list(read_gap(GAP_SAMPLE, spacy.load(out / "petra")))[:4]),
    }
    (out / "expected.json").write_text(json.dumps(expected, indent=1, sort_keys=True) + "\n", encoding="utf8")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "v0.1")
