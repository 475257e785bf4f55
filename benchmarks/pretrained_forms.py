"""Size, score and speed of the forms a shipped model can be stored in, side
by side in one run: the trained pipeline as `spacy.load` saves it (every
weight in float32), and `pretrained-build`'s form (only what training
changed, relative to the base encoder) in float32, float16 and bfloat16,
and the tuned encoder matrices in the smaller forms (spacy_memcoref/
weight_forms.py: int8, lowrank:RANK).

    python benchmarks/pretrained_forms.py TRAINED_PIPELINE DEV.spacy [--dtypes bfloat16,float32]
    python benchmarks/pretrained_forms.py TRAINED_PIPELINE DEV.spacy --dtypes bfloat16 \
        --forms full,int8,lowrank:32,lowrank:64 --encoder sentence-transformers/all-mpnet-base-v2

--encoder: the Hugging Face name of a base pipeline's encoder (its config
names a local folder of it; load() finds the same folder through
$SPACY_MEMCOREF_ENCODER, which this script sets).

TRAINED_PIPELINE: e.g. training/pretrained/s2e-ontogum/model-tuned.
DEV.spacy: the dev Docs the score is taken on (OntoGUM dev: CoNLL F1; GAP
validation: GAP F1 at the tuned threshold). Tokens/s: the scoring pass
itself (the pipeline over the dev texts, then the scorers), after a warm-up
document.
"""

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import machine_line, quiet, set_threads  # noqa: E402


def dir_mb(path: Path) -> float:
    return sum(p.stat().st_size for p in Path(path).rglob("*") if p.is_file()) / 2**20


def measure(nlp, gold) -> dict:
    """The dev score, and tokens/s of that same pass (nlp.evaluate: the
    pipeline over the raw texts, then the scorers, which take well under a
    second), after a warm-up document."""
    from spacy.training import Example

    list(nlp.pipe([gold[0].text]))
    examples = [Example(nlp.make_doc(doc.text), doc) for doc in gold]
    start = time.perf_counter()
    scores = nlp.evaluate(examples)
    seconds = time.perf_counter() - start
    key = "coref_conll_f" if "coref_conll_f" in scores and "gap_f" not in scores else "gap_f"
    return {
        "metric": key,
        "score": 100 * scores[key],
        "tokens_per_s": sum(len(eg.predicted) for eg in examples) / seconds,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pipeline", type=Path)
    parser.add_argument("dev", type=Path)
    parser.add_argument("--dtypes", default="bfloat16,float16,float32")
    parser.add_argument("--forms", default="full", help="comma-separated: full, int8, lowrank:RANK")
    parser.add_argument(
        "--encoder", default=None, help="the Hugging Face name of the pipeline's encoder, when not the embedded MiniLM"
    )
    parser.add_argument(
        "--skip-full-load",
        action="store_true",
        help="leave out the spacy.load row (it scores the same weights as full, float32)",
    )
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args()
    quiet()
    threads = set_threads(args.threads)
    import spacy

    from spacy_memcoref import pretrained
    from spacy_memcoref.corpora.docbin import read_docbin

    print(machine_line(threads))
    full = spacy.load(args.pipeline)
    gold = read_docbin(args.dev, full.vocab)
    rows = []
    if args.encoder:
        import os

        from spacy_memcoref import encoder_source

        name = full.config.interpolate()["components"][full.pipe_names[0]]["model"]["tok2vec"]["name"]
        os.environ[encoder_source.ENV_VAR] = str(name)
    if not args.skip_full_load:
        rows.append(("spacy.load (every weight, float32)", dir_mb(args.pipeline), measure(full, gold)))
    del full
    with tempfile.TemporaryDirectory() as tmp:
        for dtype in args.dtypes.split(","):
            for spec in args.forms.split(","):
                form, _, rank = spec.partition(":")
                out = Path(tmp) / f"{dtype}-{form}-{rank}"
                pretrained.build(
                    args.pipeline,
                    out,
                    name="benchmark",
                    dtype=dtype,
                    form=form,
                    rank=int(rank or 64),
                    encoder=args.encoder,
                )
                label = f"pretrained-build, {dtype}" + ("" if spec == "full" else f", {spec}")
                rows.append((label, dir_mb(out), measure(pretrained.load(out), gold)))
                print(f"  {label}: {rows[-1][1]:.1f} MB, {rows[-1][2]['score']:.2f}", flush=True)
    print(f"| form | MB on disk | {rows[0][2]['metric']} (dev) | tokens/s |")
    print("| --- | --: | --: | --: |")
    for name, size, result in rows:
        print(f"| {name} | {size:.1f} | {result['score']:.2f} | {result['tokens_per_s']:,.0f} |")


if __name__ == "__main__":
    main()
