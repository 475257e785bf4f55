"""Throughput of `annotate`: documents/s and tokens/s for plain `nlp.pipe`,
the local engine with 1 and 2 processes, and Ray with 1 and 2 workers, on the
same texts (LitBank and OntoGUM documents from ../shared, as plain text, no
gold), each in a fresh process with single-threaded torch; peak RSS per
worker; and the ratios the design asks for:

  annotate, 1 process / plain nlp.pipe (time)    goal <= 1.10
  local, 2 processes / 1 process (speed-up)      goal >= 1.70
  Ray / local at equal workers (time)            goal <= 1.10

Rates use the busy window (first shard started -> last shard done, in the
workers: model loading and worker start-up left out, as plain nlp.pipe is
timed after loading); the whole-run ("wall") rates are shown beside them.
From the per-worker rate and the driver's own cost (planning, writing
shards) it estimates, on paper, a cluster of N workers.

Without --model it builds an initialized, untrained s2e pipeline over the
embedded MiniLM (speed does not depend on the weights) and saves it to a
temporary folder.

    python benchmarks/annotate_throughput.py                     # 48 documents, ~5 min on 2 quiet cores
    python benchmarks/annotate_throughput.py --docs 4 --configs plain,local1,ray1   # a smoke run
"""

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parent.parent))  # this checkout's spacy_memcoref, installed or not

import _common as C  # noqa: E402

CONFIGS = {
    # name: (engine, workers)
    "plain": ("plain", 1),
    "local1": ("local", 1),
    "local2": ("local", 2),
    "ray1": ("ray", 1),
    "ray2": ("ray", 2),
}
GOAL_OVERHEAD, GOAL_SPEEDUP, GOAL_RAY = 1.10, 1.70, 1.10


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description="documents/s and tokens/s of annotate (local 1/2 processes, Ray 1/2 workers) against plain nlp.pipe",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument(
        "--docs", type=int, default=48, help="documents, alternately from LitBank and OntoGUM (dev, then train)"
    )
    p.add_argument(
        "--model", default=None, help="a pipeline folder or package; None = an initialized s2e over the embedded MiniLM"
    )
    p.add_argument("--batch-size", type=int, default=4, help="documents a nlp.pipe batch (all runs)")
    p.add_argument("--shard-size", type=int, default=4, help="documents a shard (keep it a multiple of --batch-size)")
    p.add_argument("--configs", default=",".join(CONFIGS), help="which runs, comma-separated: " + ", ".join(CONFIGS))
    p.add_argument("--timeout", type=float, default=3600, help="seconds a run may take")
    p.add_argument("--json", default=None, help="also write the results here")
    p.add_argument("--keep", default=None, help="keep the inputs, model and outputs in this folder")
    # child mode
    p.add_argument("--child", default=None, help=argparse.SUPPRESS)
    p.add_argument("--input", default=None, help=argparse.SUPPRESS)
    p.add_argument("--out", default=None, help=argparse.SUPPRESS)
    return p.parse_args(argv)


# ----- inputs -------------------------------------------------------------------


def write_inputs(path: Path, n_docs: int) -> dict:
    """n_docs texts as JSONL, alternately LitBank and OntoGUM documents."""
    import spacy

    from spacy_memcoref.corpora.conll import read_conll_docs

    vocab = spacy.blank("en").vocab
    sources = []
    for name, folder in (("litbank", C.SHARED / "data" / "litbank"), ("ontogum", C.SHARED / "data" / "ontogum")):
        if folder.is_dir():
            sub = [folder / "dev", folder / "train"] if name == "ontogum" else [folder]
            sources.append((name, (doc for d in sub if d.is_dir() for doc in read_conll_docs(d, vocab))))
    if not sources:
        raise SystemExit(f"SKIPPED: no LitBank or OntoGUM under {C.SHARED / 'data'} (set MEMCOREF_SHARED)")
    n_tokens, counts = 0, {}
    with path.open("w", encoding="utf8") as out:
        written = 0
        while written < n_docs and sources:
            for name, docs in list(sources):
                doc = next(docs, None)
                if doc is None:
                    sources.remove((name, docs))
                    continue
                doc_id = f"{name}/{doc.user_data.get('doc_id')}#{doc.user_data.get('part')}"
                out.write(json.dumps({"id": doc_id, "text": doc.text}) + "\n")
                n_tokens += len(doc)
                counts[name] = counts.get(name, 0) + 1
                written += 1
                if written >= n_docs:
                    break
    return {"docs": written, "conll_tokens": n_tokens, "by_source": counts}


def save_default_model(path: Path) -> None:
    C.quiet()
    nlp = C.build_pipeline()
    nlp.to_disk(path)


# ----- children -------------------------------------------------------------------


def child(args) -> dict:
    C.quiet()
    engine, workers = CONFIGS[args.child]
    if engine == "plain":
        import torch

        from spacy_memcoref.loading import load_pipeline

        torch.set_num_threads(1)
        t0 = time.time()
        nlp = load_pipeline(args.model, threads=1)
        load = time.time() - t0
        texts = [
            json.loads(line)["text"]
            for line in Path(args.input).read_text(encoding="utf8").splitlines()
            if line.strip()
        ]
        t0 = time.time()
        n_docs = n_tokens = 0
        for doc in nlp.pipe(texts, batch_size=args.batch_size):
            n_docs += 1
            n_tokens += len(doc)
        busy = time.time() - t0
        return {
            "documents": n_docs,
            "tokens": n_tokens,
            "busy_seconds": busy,
            "seconds": busy + load,
            "load_seconds": load,
            "worker_peak_rss_mb": {str(os.getpid()): C.peak_rss_mb()},
        }
    from spacy_memcoref.annotate import annotate_corpus

    kwargs = dict(shard_size=args.shard_size, batch_size=args.batch_size, progress=False, overwrite=True)
    if engine == "local":
        kwargs.update(n_process=workers, threads=1)
    else:
        kwargs.update(engine="ray", workers=workers, cpus_per_worker=1)
    t0 = time.time()
    summary = annotate_corpus(args.model, args.input, args.out, **kwargs)
    result = summary.to_dict()
    result["seconds"] = time.time() - t0
    return result


# ----- the report -----------------------------------------------------------------


def report(results: dict, meta: dict) -> str:
    lines = []
    rows = []
    for name, r in results.items():
        if "error" in r:
            rows.append(
                [
                    name,
                    CONFIGS[name][1],
                    "-",
                    "-",
                    float("nan"),
                    float("nan"),
                    float("nan"),
                    float("nan"),
                    r["error"][:80],
                ]
            )
            continue
        busy, wall = r["busy_seconds"], r["seconds"]
        rss = r.get("worker_peak_rss_mb") or {}
        rows.append(
            [
                name,
                CONFIGS[name][1],
                r["documents"],
                r["tokens"],
                busy,
                r["documents"] / busy if busy else float("nan"),
                r["tokens"] / busy if busy else float("nan"),
                r["tokens"] / wall if wall else float("nan"),
                " / ".join(f"{v:,.0f}" for v in sorted(rss.values())) or "-",
            ]
        )
    lines.append(
        C.table(
            [
                "run",
                "workers",
                "docs",
                "tokens",
                "busy s",
                "docs/s",
                "tokens/s",
                "tokens/s (wall)",
                "peak RSS a worker, MB",
            ],
            rows,
        )
    )

    def rate(name, key="busy_seconds"):
        r = results.get(name)
        if not r or "error" in r or not r.get(key):
            return None
        return r["tokens"] / r[key]

    lines.append("")
    checks = []
    plain, local1, local2 = rate("plain"), rate("local1"), rate("local2")
    if plain and local1:
        ratio = plain / local1
        checks.append(
            f"annotate 1 process / plain nlp.pipe, time: {ratio:.3f} (goal <= {GOAL_OVERHEAD}) {'ok' if ratio <= GOAL_OVERHEAD else 'MISSED'}"
        )
    if local1 and local2:
        speedup = local2 / local1
        wall = rate("local2", "seconds") / rate("local1", "seconds")
        checks.append(
            f"local 2 processes / 1, speed-up: {speedup:.2f} (goal >= {GOAL_SPEEDUP}) {'ok' if speedup >= GOAL_SPEEDUP else 'MISSED'}; whole runs: {wall:.2f}"
        )
    for n in (1, 2):
        ray_rate, local_rate = rate(f"ray{n}"), rate(f"local{n}")
        if ray_rate and local_rate:
            ratio = local_rate / ray_rate
            wall = rate(f"local{n}", "seconds") / rate(f"ray{n}", "seconds")
            checks.append(
                f"Ray / local, {n} worker{'s' if n > 1 else ''}, time: {ratio:.3f} (goal <= {GOAL_RAY}) {'ok' if ratio <= GOAL_RAY else 'MISSED'}; whole runs: {wall:.2f}"
            )
    lines.extend(f"- {c}" for c in checks)

    # on paper: N workers
    per_worker = local1 or rate("ray1")
    if per_worker:
        eff = (local2 / (2 * local1)) if (local1 and local2) else None
        ray2 = results.get("ray2") or results.get("ray1")
        driver = None
        if ray2 and "error" not in ray2:
            cost = ray2.get("write_seconds", 0.0) + ray2.get("plan_seconds", 0.0)
            driver = ray2["tokens"] / cost if cost > 0 else None
        lines.append("")
        lines.append(
            f"On paper: one single-threaded CPU worker does {per_worker:,.0f} tokens/s here"
            + (f"; two reach {eff:.0%} of twice that" if eff else "")
            + ". N workers on a cluster: about N x (one worker's rate) x that efficiency, while there are several shards a worker"
            + (
                f" and the driver keeps up: it planned and wrote {driver:,.0f} tokens/s of output here (one core)"
                if driver
                else ""
            )
            + ". With GPU workers put a GPU worker's rate (measure `annotate --gpu-id 0` on one GPU) in place of the CPU rate;"
            " no GPU was measured by this script."
        )
    lines.append("")
    lines.append(f"inputs: {meta}")
    return "\n".join(lines)


def main(argv=None) -> None:
    args = parse_args(argv)
    if args.child:
        print(json.dumps(child(args)))
        return
    C.quiet()
    names = [n.strip() for n in args.configs.split(",") if n.strip()]
    unknown = [n for n in names if n not in CONFIGS]
    if unknown:
        raise SystemExit(f"unknown --configs {unknown}; choose from {list(CONFIGS)}")
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="annotate_bench_"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        print(C.machine_line(1).replace("(1 threads)", "(1 thread a worker)"))
        corpus = work / "corpus.jsonl"
        meta = write_inputs(corpus, args.docs)
        model = args.model
        if model is None:
            model = str(work / "model")
            if not Path(model).exists():
                save_default_model(Path(model))
            meta["model"] = "initialized s2e over the embedded MiniLM (untrained)"
        else:
            meta["model"] = model
        meta.update(batch_size=args.batch_size, shard_size=args.shard_size)
        script = str(Path(__file__).resolve())
        results = {}
        for name in names:
            t0 = time.time()
            argv_child = [
                script,
                "--child",
                name,
                "--model",
                model,
                "--input",
                str(corpus),
                "--out",
                str(work / f"out_{name}"),
                "--batch-size",
                str(args.batch_size),
                "--shard-size",
                str(args.shard_size),
            ]
            results[name] = C.run_child(argv_child, timeout=args.timeout)
            print(f"  {name}: {time.time() - t0:.1f} s", file=sys.stderr)
        outs = [work / f"out_{n}" for n in names if n != "plain" and "error" not in results[n]]
        if len(outs) > 1:

            def shards(folder):
                return {p.name: p.read_bytes() for p in folder.glob("shard-*")}

            same = all(shards(o) == shards(outs[0]) for o in outs[1:])
            meta["outputs identical across engines"] = same
        print(report(results, meta))
        print(C.load_line())
        if args.json:
            Path(args.json).write_text(json.dumps({"results": results, "meta": meta}, indent=1), encoding="utf8")
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
