"""Resident memory of `spacy train` over its steps, for s2e and PeTra.

Each run is `spacy train CONFIG` in a fresh process (spaCy's own training
loop, the config as shipped), with a logger around spaCy's ConsoleLogger
that records the process's RSS (VmRSS) and its peak so far (VmHWM) every
--every steps and at every evaluation. The table shows RSS at a few steps,
the peak, and the growth from the first evaluation after step 0 to the last
step (the goal: flat). `--variants` runs each config as shipped and with
the glibc settings of the training callback switched off
(`--training.before_update.release_memory false`), and off but with the
environment variables of its first version set at process start
(MALLOC_ARENA_MAX=2 MALLOC_TRIM_THRESHOLD_=0, without its trims), so the
settings' effect shows side by side; `--env-variant` adds runs with other
environment variables. The last columns give the cost of an update between
the evaluations: seconds, page faults and the kernel's share of the CPU
time (evaluate only at the ends, `--eval-frequency` = `--steps`, for them).
`BENCH_TRIM_EVERY=N` in the environment makes the callback trim the heap
every N updates instead of every one; `BENCH_MMAP_THRESHOLD=BYTES` sets
its mmap threshold (0: glibc's own, which moves). Each child inherits the
environment of this script: `THP_MEM_ALLOC_ENABLE=1 python
benchmarks/train_memory.py ...` measures `spacy train` as the project's
train steps run it (scripts/train.py sets that variable; plain `spacy
train` runs without it).

    python benchmarks/train_memory.py --steps 200 --eval-frequency 50

s2e trains on OntoGUM train (dev: OntoGUM dev, 20 documents) and PeTra on GAP
development (dev: GAP validation), both from ../shared/data converted on the
fly; skipped with a reason when the data is not there.
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as C  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("MEMCOREF_SHARED", REPO.parent / "shared"))
GOALS_MB = {"s2e": 4096, "petra": 3072}


def _status_mb(key: str) -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) / 1024.0
    return float("nan")


def register_logger(path: str, every: int) -> None:
    """spacy_memcoref_bench.rss_logger.v1: spaCy's ConsoleLogger, plus one
    JSON line (step, rss_mb, peak_mb, eval) to `path` every `every` steps and
    at each evaluation. spaCy calls a logger's log_step on every step (info
    is None between evaluations)."""
    from spacy.training.loggers import console_logger
    from spacy.util import registry

    @registry.loggers("spacy_memcoref_bench.rss_logger.v1")
    def rss_logger():
        console = console_logger(progress_bar=False)

        def setup(nlp, stdout=sys.stdout, stderr=sys.stderr):
            log_console, finalize = console(nlp, stdout, stderr)
            out = open(path, "w", encoding="utf8")
            state = {"step": 0, "t0": time.time()}

            def log_step(info):
                log_console(info)
                step = info["step"] if info is not None else state["step"] + 1
                state["step"] = step
                if info is not None or step % every == 0:
                    usage = resource.getrusage(resource.RUSAGE_SELF)
                    row = {
                        "step": step,
                        "rss_mb": _status_mb("VmRSS"),
                        "peak_mb": _status_mb("VmHWM"),
                        "eval": info is not None,
                        "s": time.time() - state["t0"],
                        "minflt": usage.ru_minflt,
                        "user_s": usage.ru_utime,
                        "sys_s": usage.ru_stime,
                    }
                    out.write(json.dumps(row) + "\n")
                    out.flush()

            def close():
                finalize()
                out.close()

            return log_step, close

        return setup


def child(argv) -> int:
    """`python train_memory.py --child LOG EVERY CONFIG OUTPUT [spacy train overrides...]`"""
    log, every, config, output, *rest = argv
    register_logger(log, int(every))
    from spacy.cli._util import parse_config_overrides
    from spacy.cli.train import train

    from spacy_memcoref import training_callbacks  # (importing the package registers the components)

    if os.environ.get("BENCH_TRIM_EVERY"):
        training_callbacks.TRIM_EVERY = max(1, int(os.environ["BENCH_TRIM_EVERY"]))
    if os.environ.get("BENCH_MMAP_THRESHOLD"):
        training_callbacks.MMAP_THRESHOLD = int(os.environ["BENCH_MMAP_THRESHOLD"])

    overrides = parse_config_overrides(rest)
    overrides["training.logger"] = {"@loggers": "spacy_memcoref_bench.rss_logger.v1"}
    train(Path(config), Path(output), overrides=overrides, use_gpu=-1)
    return 0


def convert(tmp: Path) -> dict:
    """The shared data as DocBins (the converters' CLI, as the project runs them)."""
    paths = {
        "og_train": tmp / "og_train.spacy",
        "og_dev": tmp / "og_dev.spacy",
        "gap_dev": tmp / "gap_dev.spacy",
        "gap_val": tmp / "gap_val.spacy",
    }
    jobs = [
        ["convert", "conll", str(SHARED / "data/ontogum/train"), str(paths["og_train"])],
        ["convert", "conll", str(SHARED / "data/ontogum/dev"), str(paths["og_dev"])],
        ["convert", "gap", str(SHARED / "data/gap/gap-development.tsv"), str(paths["gap_dev"])],
        ["convert", "gap", str(SHARED / "data/gap/gap-validation.tsv"), str(paths["gap_val"])],
    ]
    for job in jobs:
        subprocess.run([sys.executable, "-m", "spacy_memcoref", *job], check=True, capture_output=True)
    return paths


def run(name: str, config: str, data: dict, args, tmp: Path, extra, env=None) -> list:
    """One child training run; env: environment variables set at its start."""
    log = tmp / f"{name}.jsonl"
    if name.startswith("s2e"):
        paths = ["--paths.train", str(data["og_train"]), "--paths.dev", str(data["og_dev"])]
    else:
        paths = ["--paths.train", str(data["gap_dev"]), "--paths.dev", str(data["gap_val"])]
    cmd = [
        sys.executable,
        __file__,
        "--child",
        str(log),
        str(args.every),
        config,
        str(tmp / f"out_{name}"),
        *paths,
        "--training.max_steps",
        str(args.steps),
        "--training.eval_frequency",
        str(args.eval_frequency),
        *extra,
    ]
    if "petra" in config:
        cmd += ["--training.optimizer.learn_rate.total_steps", str(args.steps)]
    t0 = time.time()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, **env) if env else None)
    if proc.returncode != 0:
        print(f"{name}: failed (exit {proc.returncode}): {' | '.join(proc.stderr.strip().splitlines()[-4:])}")
        return []
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    print(f"{name}: {args.steps} steps in {time.time() - t0:.0f}s")
    step = max(1, args.steps // 10)
    print(
        "  RSS / peak GB by step: "
        + " ".join(
            f"{r['step']}:{r['rss_mb'] / 1024:.2f}/{r['peak_mb'] / 1024:.2f}"
            for r in rows
            if r["step"] % step == 0 or r["eval"]
        )
    )
    return rows


def summarize(name: str, rows: list, goal_mb: float) -> list:
    evals = [r for r in rows if r["eval"] and r["step"] > 0]
    first_eval = evals[0] if evals else rows[0]
    last = rows[-1]
    peak = max(r["peak_mb"] for r in rows)
    marks = {}
    for frac in (0.25, 0.5, 0.75):
        target = frac * last["step"]
        marks[frac] = min(rows, key=lambda r: abs(r["step"] - target))["rss_mb"]
    growth = last["rss_mb"] - first_eval["rss_mb"]
    # the cost of an update, between the first and the last row recorded
    # between evaluations (an evaluation inside that span adds its time: for
    # timings, evaluate only at the ends, --eval-frequency >= --steps)
    steps = [r for r in rows if not r["eval"] and r["step"] > 0 and "minflt" in r]
    if len(steps) >= 2 and steps[-1]["step"] > steps[0]["step"]:
        a, b = steps[0], steps[-1]
        n = b["step"] - a["step"]
        cpu = (b["user_s"] - a["user_s"]) + (b["sys_s"] - a["sys_s"])
        cost = [
            (b["s"] - a["s"]) / n,
            (b["minflt"] - a["minflt"]) / n / 1000.0,
            100.0 * (b["sys_s"] - a["sys_s"]) / max(cpu, 1e-9),
        ]
    else:
        cost = [float("nan")] * 3
    return [
        name,
        first_eval["step"],
        first_eval["rss_mb"],
        marks[0.25],
        marks[0.5],
        marks[0.75],
        last["rss_mb"],
        growth,
        peak,
        "yes" if peak <= goal_mb else "NO",
        *cost,
    ]


def main(argv=None) -> int:
    if argv is None and sys.argv[1:2] == ["--child"]:
        return child(sys.argv[2:])
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    p.add_argument("--steps", type=int, default=200, help="training steps a run")
    p.add_argument("--eval-frequency", type=int, default=50, help="evaluate every this many steps")
    p.add_argument("--every", type=int, default=5, help="record RSS every this many steps")
    p.add_argument(
        "--models", default="s2e,petra", help="which configs: s2e (configs/s2e.cfg), petra (configs/petra_gap.cfg)"
    )
    p.add_argument("--variants", action="store_true", help="also run each with release_memory off")
    p.add_argument(
        "--env-variant",
        action="append",
        default=[],
        metavar="'K=V K=V'",
        help="also run each config with release_memory off and these environment variables (e.g. glibc's MALLOC_* settings); repeatable",
    )
    p.add_argument(
        "--float32",
        action="store_true",
        help="the encoder in float32 (bfloat16 off; a CPU without native bfloat16 runs float32 anyway)",
    )
    args = p.parse_args(argv)
    if not (SHARED / "data/ontogum/train").is_dir() or not (SHARED / "data/gap/gap-development.tsv").is_file():
        print(f"SKIPPED: the shared OntoGUM / GAP data is not at {SHARED / 'data'} (set MEMCOREF_SHARED)")
        return 0
    configs = {"s2e": str(REPO / "configs/s2e.cfg"), "petra": str(REPO / "configs/petra_gap.cfg")}
    print("# RSS of `spacy train` over its steps\n")
    print(C.machine_line(os.cpu_count() or 1))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        data = convert(tmp)
        for model in args.models.split(","):
            component = "memcoref" if model == "s2e" else "memcoref_petra"
            precision = [f"--components.{component}.model.tok2vec.bfloat16", "false"] if args.float32 else []
            variants = [("as shipped" + (", float32" if args.float32 else ""), precision, None)]
            off = precision + ["--training.before_update.release_memory", "false"]
            if args.variants:
                variants.append(("release_memory off" + (", float32" if args.float32 else ""), off, None))
                # the first version of the settings, from the environment at process start
                variants.append(
                    (
                        "off + MALLOC_ARENA_MAX=2 MALLOC_TRIM_THRESHOLD_=0",
                        off,
                        {"MALLOC_ARENA_MAX": "2", "MALLOC_TRIM_THRESHOLD_": "0"},
                    )
                )
            for spec in args.env_variant:
                env = dict(item.split("=", 1) for item in spec.split())
                variants.append((f"off + {spec}", off, env))
            for label, extra, env in variants:
                name = f"{model} ({label})"
                found = run(model + str(len(rows)), configs[model], data, args, tmp, extra, env)
                if found:
                    rows.append(summarize(name, found, GOALS_MB[model]))
    headers = [
        "run",
        "first eval step",
        "RSS there MB",
        "RSS 25% MB",
        "RSS 50% MB",
        "RSS 75% MB",
        "RSS last MB",
        "growth MB",
        "peak MB",
        "peak within goal",
        "s / update",
        "page faults / update (k)",
        "kernel % of CPU",
    ]
    print()
    print(C.table(headers, rows))
    print(
        f"\ngoals: s2e peak <= {GOALS_MB['s2e']} MB, PeTra <= {GOALS_MB['petra']} MB, flat from the first evaluation on"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
