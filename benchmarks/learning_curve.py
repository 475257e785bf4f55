"""Learning curve of a training config for a wall-clock budget: dev CoNLL F1
(and mention recall / precision) at fixed minutes of training.

    python benchmarks/learning_curve.py configs/s2e.cfg runs/base \
        --train corpus/ontonotes/train.spacy --dev corpus/ontonotes/dev.spacy \
        --minutes 10,20,40,60 [--threads 2] [--pin 0] [--any.spacy.override value ...]

Training runs through spaCy's own loop (`train_while_improving`, the batches,
shuffling, dropout, optimizer and schedules of the config), with no dev
evaluation inside the budget: at each minute mark the pipeline is saved, with
the clock paused, and the snapshots are scored on dev after the budget is
spent. So the minutes are training minutes; `spacy train` adds its own
evaluations (about a minute each on OntoGUM dev on 2 cores) on top.

Each snapshot is also decoded at other link thresholds (the pair scores are
computed once): "best threshold" shows how much of the score a
better-calibrated link decision would add, so a change that improves the
antecedent ranking shows even while the default decision links too little.
Prints one table row a snapshot and writes OUTPUT/curve.json. Extra
`--section.key value` arguments are config overrides, as for `spacy train`.
"""

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Dict, List

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's package, not an installed copy
import _common  # noqa: E402


class BudgetSpent(Exception):
    pass


def parse_overrides(extra: List[str]) -> Dict[str, Any]:
    from spacy.cli._util import parse_config_overrides

    return parse_config_overrides(list(extra))  # it consumes the list it is given


def train_for_budget(
    config_path: Path, output: Path, minutes: List[float], overrides: Dict[str, Any], log
) -> List[Dict[str, Any]]:
    """Train until the last minute mark (or the config's max_steps), saving
    the pipeline at each mark. RETURNS one record a snapshot."""
    from spacy.schemas import ConfigSchemaTraining
    from spacy.training.initialize import init_nlp
    from spacy.training.loop import create_train_batches, train_while_improving
    from spacy.util import fix_random_seed, load_config, registry, resolve_dot_names

    config = load_config(config_path, overrides=overrides, interpolate=False)
    nlp = init_nlp(config, use_gpu=-1)
    config = nlp.config.interpolate()
    if config["training"]["seed"] is not None:
        fix_random_seed(config["training"]["seed"])
    T = registry.resolve(config["training"], schema=ConfigSchemaTraining)
    (train_corpus,) = resolve_dot_names(config, [T["train_corpus"]])

    def no_evaluation():
        return 0.0, {}

    steps = train_while_improving(
        nlp,
        T["optimizer"],
        create_train_batches(nlp, train_corpus, T["batcher"], T["max_epochs"]),
        no_evaluation,
        dropout=T["dropout"],
        accumulate_gradient=T["accumulate_gradient"],
        patience=0,
        max_steps=T["max_steps"],
        eval_frequency=10**9,
        exclude=T["frozen_components"],
        annotating_components=T["annotating_components"],
        before_update=T["before_update"],
    )
    marks = sorted(minutes)
    records: List[Dict[str, Any]] = []
    trained = 0.0  # seconds of training, snapshots excluded
    last = time.perf_counter()
    try:
        for batch, info, _ in steps:
            now = time.perf_counter()
            trained += now - last
            while marks and trained >= marks[0] * 60:
                minute = marks.pop(0)
                path = output / f"min{minute:g}"
                nlp.to_disk(path)
                records.append(
                    {
                        "minute": minute,
                        "step": info["step"] + 1,
                        "epoch": info["epoch"],
                        "words": info["words"],
                        "loss_total": sum(info["losses"].values()),
                        "seconds": round(trained, 1),
                        "path": str(path),
                    }
                )
                log(
                    f"  {minute:g} min: step {info['step'] + 1}, epoch {info['epoch']}, {info['words']:,} words, loss since step 1 {records[-1]['loss_total']:.0f}"
                )
            if not marks:
                raise BudgetSpent
            last = time.perf_counter()
    except BudgetSpent:
        pass
    else:
        # max_steps reached before the budget: the end is one more snapshot
        path = output / "end"
        nlp.to_disk(path)
        records.append(
            {"minute": round(trained / 60, 1), "step": T["max_steps"], "seconds": round(trained, 1), "path": str(path)}
        )
        log(f"  max_steps reached after {trained / 60:.1f} min")
    return records


THRESHOLDS = (-4.0, -3.0, -2.0, -1.5, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0)


def score_snapshot(path: str, dev_path: Path) -> Dict[str, Any]:
    """Dev scores of a saved s2e pipeline at its own link threshold, and at
    the best of THRESHOLDS (how much a better-calibrated link decision would
    give: the antecedent ranking is scored apart from the decision), as
    `tune-link-threshold` computes them."""
    import spacy
    from spacy.training import Corpus

    from spacy_memcoref.tuning.link_threshold import predict_each, s2e_decoder, scores_by_threshold

    nlp = spacy.load(path)
    pipe = nlp.get_pipe("memcoref")
    own_threshold = s2e_decoder(pipe).link_threshold
    examples = list(Corpus(str(dev_path), max_length=0)(nlp))
    predictions = predict_each(pipe, [eg.predicted for eg in examples])
    table = scores_by_threshold(pipe, examples, predictions, sorted(set(THRESHOLDS) | {own_threshold}))
    by_threshold = {t: {k: round(100 * v, 2) for k, v in scores.items()} for t, scores in table.items()}
    own = by_threshold[own_threshold]
    best = max(by_threshold, key=lambda t: by_threshold[t]["coref_conll_f"])
    return {
        **own,
        "best_threshold": best,
        "best_conll_f": by_threshold[best]["coref_conll_f"],
        "best_mentions_r": by_threshold[best]["coref_mentions_r"],
        "by_threshold": {str(t): v for t, v in by_threshold.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("config", type=Path)
    parser.add_argument("output", type=Path, help="folder for the snapshots and curve.json")
    parser.add_argument("--train", type=Path, default=Path("corpus/ontonotes/train.spacy"))
    parser.add_argument("--dev", type=Path, default=Path("corpus/ontonotes/dev.spacy"))
    parser.add_argument("--minutes", default="10,20,40,60", help="comma-separated minute marks (training time)")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: all cores)")
    parser.add_argument("--pin", default=None, help="run on these CPU ids only (e.g. 0 or 0,1), for side-by-side runs")
    parser.add_argument("--keep", action="store_true", help="keep the snapshots (default: delete them once scored)")
    args, extra = parser.parse_known_args()
    _common.quiet()
    for path in (args.config, args.train, args.dev):
        if not path.exists():
            parser.error(f"{path} does not exist")
    minutes = [float(m) for m in args.minutes.split(",") if m.strip()]
    if not minutes or min(minutes) <= 0:
        parser.error("--minutes needs positive numbers, e.g. 10,20,40,60")
    if args.pin is not None:
        os.sched_setaffinity(0, {int(c) for c in args.pin.split(",")})
    threads = _common.set_threads(args.threads)
    overrides = parse_overrides(extra)
    overrides.update({"paths.train": str(args.train), "paths.dev": str(args.dev)})
    args.output.mkdir(parents=True, exist_ok=True)

    def log(line: str) -> None:
        print(line, flush=True)

    log(f"# {args.config} {' '.join(extra)}")
    log(f"# {_common.machine_line(threads)}")
    started = time.time()
    records = train_for_budget(args.config, args.output, minutes, overrides, log)
    log(
        f"# training done in {(time.time() - started) / 60:.1f} min wall; scoring {len(records)} snapshots on {args.dev}"
    )
    for record in records:
        record.update(score_snapshot(record["path"], args.dev))
        if not args.keep:
            import shutil

            shutil.rmtree(record["path"], ignore_errors=True)
    result = {"config": str(args.config), "overrides": extra, "threads": threads, "pin": args.pin, "snapshots": records}
    (args.output / "curve.json").write_text(json.dumps(result, indent=2))
    headers = [
        "min",
        "step",
        "epoch",
        "CoNLL F1",
        "MUC",
        "B3",
        "CEAFe",
        "mention R",
        "mention P",
        "best threshold",
        "CoNLL F1 there",
        "mention R there",
    ]
    rows = [
        [
            r["minute"],
            r["step"],
            r.get("epoch", ""),
            r["coref_conll_f"],
            r["coref_muc_f"],
            r["coref_b3_f"],
            r["coref_ceafe_f"],
            r["coref_mentions_r"],
            r["coref_mentions_p"],
            r["best_threshold"],
            r["best_conll_f"],
            r["best_mentions_r"],
        ]
        for r in records
    ]
    print(_common.table(headers, rows))


if __name__ == "__main__":
    main()
