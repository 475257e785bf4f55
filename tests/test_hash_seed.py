"""The same text gives the same clusters whatever Python's hash seed.

String hashes change from one interpreter to the next (PYTHONHASHSEED), and
with them the order of a set of words; CI once failed because a test walked
the decoding rules' pronoun list in that order. Here two interpreters with
different seeds run the shipped offline models (their decoding rules, the
chat and letter rules included) over the everyday texts and must write the
same spans."""

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

# every text of the everyday set as written (line breaks kept: the letter and
# chat rules find their lines), through both offline model families
_SCRIPT = """
import json, sys
from pathlib import Path
import spacy
import spacy_memcoref
repo = Path(sys.argv[1])
sys.path.insert(0, str(repo / "benchmarks"))
import everyday
vocab = spacy.blank("en").vocab
sources = [repo / "tests" / "data" / "everyday" / f"{name}.txt" for name in ("everyday", "fresh")]
texts = [ref.text for source in sources for ref in everyday.written_refs(source, vocab)]
out = {}
for model in ("s2e-ontogum", "petra-ontogum"):
    nlp = spacy_memcoref.load(model)
    out[model] = [{key: [[s.start, s.end] for s in doc.spans[key]] for key in sorted(doc.spans)} for doc in nlp.pipe(texts)]
print(json.dumps(out))
"""


def test_two_hash_seeds_write_the_same_clusters():
    runs = []
    for seed in ("1", "2"):
        env = dict(os.environ, PYTHONHASHSEED=seed, OMP_NUM_THREADS="1")
        runs.append(
            subprocess.Popen(
                [sys.executable, "-c", _SCRIPT, str(REPO)],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    outputs = []
    for run in runs:
        stdout, stderr = run.communicate(timeout=600)
        assert run.returncode == 0, stderr
        outputs.append(json.loads(stdout.strip().splitlines()[-1]))
    first, second = outputs
    for model in first:
        assert len(first[model]) >= 60, model  # the everyday and fresh texts
        # the models find clusters on these texts: an empty output would compare equal too
        assert sum(any(key.startswith("coref_clusters") for key in doc) for doc in first[model]) >= 40, model
        for n, (a, b) in enumerate(zip(first[model], second[model])):
            assert a == b, f"{model}, text {n}: the spans differ between hash seeds 1 and 2"
