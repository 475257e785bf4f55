"""PeTra on GAP: several trained pipelines (seeds of one recipe) read as one,
by averaging their link probabilities, against each of them alone.

Each pipeline reads the GAP validation Docs once; its raw link probabilities
(the ones `tune-gap-threshold` starts from) are calibrated by a Platt fit of
its own on those Docs, as `tune-gap-threshold` does. The ensemble's
probability of a link is the mean of the members' calibrated ones (each
member's scale differs, so raw probabilities are not averaged); its
threshold is then chosen on the same Docs, as a member's is. Every figure is
therefore the tuned validation F1 that RESULTS.md reports for single runs,
optimistic in the same way.

    python benchmarks/gap_ensemble.py RUN_A/model-best RUN_B/model-best [...] \
        --dev corpus/gap/validation.spacy [--probs-dir runs/gap_probs] [--threads 2] [--gender-mirror]

--probs-dir keeps each member's raw probabilities (one JSON a pipeline), so
that other combinations of the same members read nothing again.
"""

import argparse
import itertools
import json
import re
import time
from pathlib import Path
from typing import Dict, List, Sequence, Tuple

from _common import machine_line, quiet, set_threads, table

Probabilities = Dict[str, Tuple[float, float]]


def member_probabilities(
    model: str, dev: str, batch_size: int, cache: Path = None, gender_mirror: bool = False
) -> Tuple[dict, Probabilities]:
    """(gold, raw probabilities) of one pipeline on the GAP Docs, read from
    `cache` when it holds them for this pipeline, file and mirror setting."""
    from spacy_memcoref.corpora.docbin import read_docbin
    from spacy_memcoref.loading import load_pipeline
    from spacy_memcoref.tuning.gap import gap_gold_and_probabilities
    from spacy_memcoref.tuning.run import annotate_docs, petra_component

    key = {"model": str(Path(model).resolve()), "dev": str(Path(dev).resolve()), "gender_mirror": gender_mirror}
    if cache is not None and cache.exists():
        saved = json.loads(cache.read_text())
        if saved.get("key") == key:
            return {k: tuple(v) for k, v in saved["gold"].items()}, {k: tuple(v) for k, v in saved["raw"].items()}
    nlp = load_pipeline(model)
    name, pipe = petra_component(nlp, None)
    pipe.gender_mirror = gender_mirror
    docs = read_docbin(dev, nlp.vocab)
    annotated = annotate_docs(nlp, docs, batch_size, pipe.prefix)
    gold, raw = gap_gold_and_probabilities(annotated, source=dev, component=name)
    if cache is not None:
        cache.parent.mkdir(parents=True, exist_ok=True)
        cache.write_text(json.dumps({"key": key, "gold": gold, "raw": raw}))
    return gold, raw


def calibrated(gold: dict, raw: Probabilities) -> Probabilities:
    """Each probability through the Platt fit on these Docs (tune_gap_decisions')."""
    from spacy_memcoref.decoders.calibration import calibrate
    from spacy_memcoref.scoring.calibration import fit_platt

    keys = sorted(gold)
    fit = fit_platt([p for k in keys for p in raw[k]], [g for k in keys for g in gold[k][1:]])
    return {k: (calibrate(raw[k][0], fit), calibrate(raw[k][1], fit)) for k in keys}


def tuned_scores(gold: dict, probs: Probabilities) -> Tuple[float, Dict[str, float]]:
    """(threshold, gap_scores at it): the best overall F1 on these Docs."""
    from spacy_memcoref.tuning.gap import tune_gap_threshold

    best, table_ = tune_gap_threshold(gold, probs)
    return best, dict(table_)[best]


def mean_of(members: Sequence[Probabilities]) -> Probabilities:
    keys = members[0].keys()
    return {k: tuple(sum(m[k][i] for m in members) / len(members) for i in (0, 1)) for k in keys}


def main(argv: List[str] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("models", nargs="+", help="trained PeTra pipelines (directories or shipped names)")
    parser.add_argument("--dev", required=True, help="GAP validation DocBin (convert gap)")
    parser.add_argument("--probs-dir", default=None, help="keep each member's raw probabilities here")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument(
        "--gender-mirror", action="store_true", help="each member reads each text's gender mirror too (gender_mirror)"
    )
    args = parser.parse_args(argv)
    if len(args.models) < 2:
        parser.error("an ensemble needs two pipelines or more")
    quiet()
    threads = set_threads(args.threads)
    print(machine_line(threads))
    golds, members = [], []
    for model in args.models:
        slug = re.sub(r"[^A-Za-z0-9]+", "-", model).strip("-")
        slug += "-mirror" if args.gender_mirror else ""
        cache = Path(args.probs_dir) / f"{slug}.json" if args.probs_dir else None
        start = time.perf_counter()
        gold, raw = member_probabilities(model, args.dev, args.batch_size, cache, args.gender_mirror)
        print(f"{model}: {len(gold)} texts read in {time.perf_counter() - start:.0f} s")
        golds.append(gold)
        members.append(calibrated(gold, raw))
    gold = golds[0]
    if any(g != gold for g in golds[1:]):
        raise SystemExit("the pipelines read different GAP texts or labels: not the same --dev")
    rows = []
    groups = [(m,) for m in range(len(members))]
    groups += [c for size in range(2, len(members) + 1) for c in itertools.combinations(range(len(members)), size)]
    for group in groups:
        threshold, s = tuned_scores(gold, mean_of([members[i] for i in group]))
        label = " + ".join(args.models[i] for i in group)
        rows.append(
            [label, len(group), 100 * s["gap_f"], threshold, 100 * s["gap_f_masc"], 100 * s["gap_f_fem"], s["gap_bias"]]
        )
    print(table(["pipelines", "members", "tuned GAP F1", "threshold", "M F1", "F F1", "bias F/M"], rows))
    singles = [r[2] for r in rows if r[1] == 1]
    print(f"members alone: mean {sum(singles) / len(singles):.2f}; all {len(members)} together: {rows[-1][2]:.2f}")


if __name__ == "__main__":
    main()
