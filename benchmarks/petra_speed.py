"""Speed and memory of the PeTra memory head (the pure torch module,
spacy_memcoref.models.petra.pytorch_petra.PeTra) on top of the embedded MiniLM
encoder, in inference (eval mode, torch.no_grad). It does not need the
PeTra spaCy component: the encoder is the s2e component's tok2vec (the same
MiniLM), run once to get token features, and PeTra(input_size=384) reads them.

1. speed, on LitBank documents: encoder tokens/s against PeTra tokens/s, one
   document a call, all documents in one padded batch, and streamed in
   chunks; ratio (encoder + PeTra) / encoder. PeTra runs at the machine's
   thread count and again at 1 thread: its controller is a sequential step
   a token of small matmuls and element-wise ops, and on a busy machine a
   second OpenMP thread can make it many times slower. A pass stops early
   after --budget seconds. With --baseline FILE (a pytorch_petra.py of an
   older revision, e.g. `git show REV:spacy_memcoref/models/petra/pytorch_petra.py
   > /tmp/petra_old.py`; models/pytorch_petra.py in revisions before models/
   was split by part) that PeTra is timed too, on the same weights and
   features, interleaved with the current one in the same passes (so both
   see the same machine load), with the speed-up and the largest difference
   between the two memory logs.
2. memory and time as one document grows (1k..20k tokens): every row in a
   FRESH subprocess that imports only torch + PeTra and loads the features
   from a file (so the baseline is not the transformer's), warms up, resets
   the kernel's peak-RSS counter and runs one call:
     forward   PeTra.forward on the whole document
     stream    the same model fed in chunks (GRU state and memory (m, u)
               carried between chunks through run_controller(state=...)),
               the bounded-memory way to read a book
   plus stream rows only at --stream-sizes (default 100k tokens: a book),
   whose features repeat those of the longest --sizes document (memory
   does not depend on the values; encoding 100k tokens would take minutes).
   Peak = the kernel's peak-RSS counter after the call (VmHWM, what
   ru_maxrss reports; see _common.peak_rss_mb); increment = peak - RSS
   before it. Streaming keeps the memory log (the output: 3 floats a cell
   and 1 a token, about 0.12 MB per 1k tokens at N = 10) and nothing else
   that grows, so its increment per 1k tokens should be about that. These
   processes run at --memory-threads (default 1).

    python benchmarks/petra_speed.py                 # 5 docs, 1k..20k tokens, stream 100k
    python benchmarks/petra_speed.py --docs 1 --sizes 1000,2000 --stream-sizes 4000   # small
    git show 2cd503e:spacy_memcoref/models/pytorch_petra.py > /tmp/petra_old.py
    python benchmarks/petra_speed.py --baseline /tmp/petra_old.py --threads 1 --skip-memory
"""

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parent.parent))  # this checkout's spacy_memcoref, installed or not

import _common as C  # noqa: E402

SCRIPT = str(Path(__file__).resolve())


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description="Tokens/s and peak memory of the PeTra torch module on MiniLM features.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("--docs", type=int, default=5, help="LitBank documents for the speed table")
    p.add_argument("--repeats", type=int, default=2, help="timed passes (best and median reported)")
    p.add_argument("--warmup", type=int, default=1, help="documents run before timing")
    p.add_argument("--sizes", default="1000,2000,5000,10000,20000", help="document lengths for the memory table")
    p.add_argument(
        "--stream-sizes",
        default="100000",
        help="further lengths for stream rows only (features repeat the longest --sizes document's); '' for none",
    )
    p.add_argument(
        "--baseline",
        default=None,
        help="a pytorch_petra.py (e.g. of an older revision) whose PeTra is timed beside the current one",
    )
    p.add_argument("--chunk", type=int, default=512, help="tokens a chunk in stream mode")
    p.add_argument("--budget", type=float, default=30.0, help="seconds a timed pass may take before it stops early")
    p.add_argument("--num-cells", type=int, default=10, help="PeTra num_cells (N)")
    # configs/petra_gap.cfg's sizes; the paper's (and the factory default's) are 300
    p.add_argument("--hidden-size", type=int, default=200, help="PeTra hidden_size (d)")
    p.add_argument("--mlp-size", type=int, default=200, help="PeTra mlp_size")
    p.add_argument("--skip-speed", action="store_true", help="only the memory table")
    p.add_argument("--skip-memory", action="store_true", help="only the speed table")
    p.add_argument("--threads", type=int, default=None, help="torch threads; None = the machine's cores")
    p.add_argument(
        "--memory-threads",
        type=int,
        default=1,
        help="torch threads in the memory-table processes (memory does not depend on it; 1 keeps "
        "the controller loop fast on a busy machine); 0 = --threads",
    )
    p.add_argument(
        "--bfloat16",
        action="store_true",
        help="the encoder in bfloat16 (tok2vec.bfloat16, as configs/petra_gap.cfg); PeTra stays float32",
    )
    p.add_argument("--data", default=None, help=f"LitBank folder; None = {C.LITBANK}")
    p.add_argument("--timeout", type=float, default=600, help="seconds allowed to one child process")
    # internal: the child process
    p.add_argument("--child", choices=["forward", "stream"], help=argparse.SUPPRESS)
    p.add_argument("--child-features", help=argparse.SUPPRESS)
    p.add_argument("--child-tokens", type=int, help=argparse.SUPPRESS)
    p.add_argument("--child-petra-args", help=argparse.SUPPRESS)  # JSON: builder_defaults() of the parent
    return p.parse_args(argv)


# PeTra's arguments besides the sizes: the builder's defaults (the torch
# module takes required arguments; models.petra.petra_model.build_petra is their home)
BUILDER_ARGS = (
    "usage_decay",
    "entity_loss_weight",
    "dropout",
    "learned_init",
    "fixed_key_size",
    "positive_weight",
    "negative_weight",
    "action_loss_weight",
)


def builder_defaults():
    """{name: build_petra's default} of BUILDER_ARGS."""
    import inspect

    from spacy_memcoref.models.petra.petra_model import build_petra

    params = inspect.signature(build_petra).parameters
    return {name: params[name].default for name in BUILDER_ARGS}


def petra_kwargs(args):
    """PeTra's keyword arguments: the sizes of the command line, the rest
    build_petra's defaults (a child process gets them from its parent, so it
    imports torch + PeTra only, not spaCy)."""
    rest = json.loads(args.child_petra_args) if args.child_petra_args else builder_defaults()
    return {"hidden_size": args.hidden_size, "num_cells": args.num_cells, "mlp_size": args.mlp_size, **rest}


def make_petra(args, input_size=384):
    import torch

    from spacy_memcoref.models.petra.pytorch_petra import PeTra

    torch.manual_seed(0)
    model = PeTra(input_size, **petra_kwargs(args))
    return model.eval()


def make_baseline(args, petra):
    """The PeTra class of --baseline FILE, with petra's weights, in eval mode."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("petra_baseline", args.baseline)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    import inspect

    params = inspect.signature(module.PeTra.__init__).parameters
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    # an older PeTra may not know every argument (it had defaults for them)
    kwargs = {k: v for k, v in petra_kwargs(args).items() if takes_any or k in params}
    model = module.PeTra(petra.input_size, **kwargs)
    model.load_state_dict(petra.state_dict())
    return model.eval()


def stream(petra, x, chunk):
    """Read one document [T, d_in] in chunks, carrying the GRU state and the
    memory; RETURNS the memory log of the whole document (as forward does)."""
    import torch

    hn, state = None, None
    parts = {key: [] for key in ("entity", "overwrite", "coref", "usage")}
    for s in range(0, x.shape[0], chunk):
        out, hn = petra.gru(x[s : s + chunk].unsqueeze(0), hn)
        out = petra.dropout(out)
        lengths = torch.tensor([out.shape[1]], device=out.device)
        logs, state = petra.run_controller(out, lengths, state=state)
        for key in parts:
            parts[key].append(logs[key][0])
    return {key: torch.cat(v) for key, v in parts.items()}


# ----- child ---------------------------------------------------------------------------


def child(args) -> None:
    import numpy
    import torch

    threads = C.set_threads(args.threads)
    petra = make_petra(args)
    feats = numpy.load(args.child_features)
    if args.child_tokens > feats.shape[0]:  # a longer document: repeat the features
        feats = numpy.concatenate([feats] * -(-args.child_tokens // feats.shape[0]))
    feats = torch.from_numpy(feats[: args.child_tokens].copy())
    with torch.no_grad():
        # warm-up on a short prefix: both code paths, thread pools, allocator
        petra([feats[:300]])
        stream(petra, feats[:300], args.chunk)
        C.release_memory()
        before = C.rss_mb()
        reset = C.reset_peak()
        if not reset:
            before = C.peak_rss_mb()
        t0 = time.perf_counter()
        if args.child == "forward":
            _, logs = petra([feats])
            log = logs[0]
        else:
            log = stream(petra, feats, args.chunk)
        secs = time.perf_counter() - t0
        peak = C.peak_rss_mb()
    print(
        json.dumps(
            {
                "tokens": int(feats.shape[0]),
                "seconds": secs,
                "baseline_mb": before,
                "peak_mb": peak,
                "reset": reset,
                "threads": threads,
                "log_shape": list(log["coref"].shape),
            }
        )
    )


# ----- parent -----------------------------------------------------------------------------


def speed(args, nlp, tok2vec, data):
    """Tokens/s of the encoder and of PeTra on the same documents (and of the
    --baseline PeTra, interleaved). PeTra runs at the machine's thread count
    and at 1 thread: its controller is a sequential step a token of small
    ops, where a second OpenMP thread buys little and, on a busy machine,
    costs a great deal. A pass that runs past --budget seconds stops after
    the current document (tokens/s is then over the documents it finished)."""
    import torch

    docs = C.read_litbank(nlp.vocab, args.docs + args.warmup, data)
    warm, docs = docs[: args.warmup], docs[args.warmup :]
    n_tokens = sum(len(d) for d in docs)
    petra = make_petra(args)
    feats = [torch.from_numpy(v) for v in tok2vec.predict(docs)]
    lengths = [int(f.shape[0]) for f in feats]
    threads = torch.get_num_threads()
    thread_counts = [threads] + ([1] if threads != 1 else [])

    def per_doc(fn):
        t0 = time.perf_counter()
        done = 0
        for f, n in zip(feats, lengths):
            fn(f)
            done += n
            if time.perf_counter() - t0 > args.budget:
                break
        return time.perf_counter() - t0, done

    def batched():
        t0 = time.perf_counter()
        petra(feats)
        return time.perf_counter() - t0, n_tokens

    def encoder():
        t0 = time.perf_counter()
        for d in docs:
            tok2vec.predict([d])
        return time.perf_counter() - t0, n_tokens

    def batched_with(model):
        def run():
            t0 = time.perf_counter()
            model(feats)
            return time.perf_counter() - t0, n_tokens

        return run

    runs = {
        "encoder": encoder,
        "petra1": lambda: per_doc(lambda f: petra([f])),
        "petraB": batched,
        "stream": lambda: per_doc(lambda f: stream(petra, f, args.chunk)),
    }
    kinds = ["petra1", "petraB", "stream"]
    models = [petra]
    baseline = None
    if args.baseline:
        baseline = make_baseline(args, petra)
        models.append(baseline)
        runs.update(
            {
                "base1": lambda: per_doc(lambda f: baseline([f])),
                "baseB": batched_with(baseline),
                "baseS": lambda: per_doc(lambda f: stream(baseline, f, args.chunk)),
            }
        )
        # interleaved: each baseline pass right after the current one
        kinds = ["base1", "petra1", "baseB", "petraB", "baseS", "stream"]
    keys = [("encoder", threads)] + [(k, n) for n in thread_counts for k in kinds]
    rates = {k: [] for k in keys}
    cut = {k: False for k in keys}
    one_doc = {"petraB": "petra1", "baseB": "base1"}
    with torch.no_grad():
        for n in thread_counts:  # warm-up: both code paths, short prefixes
            torch.set_num_threads(n)
            for d in warm:
                f = torch.from_numpy(tok2vec.predict([d])[0])[:200]
                for model in models:
                    model([f])
                    model([f, f[:150]])
                    stream(model, f, args.chunk)
        torch.set_num_threads(threads)
        for _ in range(args.repeats):
            for kind, n in keys:
                if kind in one_doc and cut[(one_doc[kind], n)]:
                    continue  # one doc a call already ran out of time: skip the batch
                torch.set_num_threads(n)
                secs, done = runs[kind]()
                cut[(kind, n)] |= done < n_tokens
                rates[(kind, n)].append(done / secs)
            torch.set_num_threads(threads)
        # streamed = whole-document forward (eval mode: no dropout, argmax overwrite)
        torch.set_num_threads(1)
        prefix = feats[0][:1000]
        _, ref = petra([prefix])
        got = stream(petra, prefix, min(args.chunk, 300))
        diff = max(float((ref[0][k] - got[k]).abs().max()) for k in got)
        base_diff = None
        if baseline is not None:  # the same logs as the baseline, batched and one doc
            _, mine = petra([f[:1000] for f in feats])
            _, theirs = baseline([f[:1000] for f in feats])
            _, theirs1 = baseline([prefix])
            base_diff = max(
                max(float((a[k] - b[k]).abs().max()) for a, b in zip(mine, theirs) for k in a),
                max(float((ref[0][k] - theirs1[0][k]).abs().max()) for k in ref[0]),
            )
        torch.set_num_threads(threads)

    labels = {
        "encoder": "encoder alone (tok2vec.predict, 1 doc a call)",
        "petra1": "PeTra forward, 1 doc a call",
        "petraB": f"PeTra forward, {len(docs)} docs in one batch",
        "stream": f"PeTra streamed in {args.chunk}-token chunks, 1 doc a call",
        "base1": "baseline PeTra forward, 1 doc a call",
        "baseB": f"baseline PeTra forward, {len(docs)} docs in one batch",
        "baseS": f"baseline PeTra streamed in {args.chunk}-token chunks, 1 doc a call",
    }
    print(
        f"\n## 1. speed on {len(docs)} LitBank docs, {n_tokens:,} tokens, {args.repeats} repeats "
        f"(a pass stops after {args.budget:.0f}s)\n"
    )
    rows = []
    for k in keys:
        v = rates[k]
        if not v:
            rows.append([labels[k[0]], k[1], "skipped (too slow)", "", ""])
            continue
        rows.append([labels[k[0]], k[1], max(v), statistics.median(v), "yes" if cut[k] else "no"])
    print(C.table(["mode", "torch threads", "best tok/s", "median tok/s", "cut short"], rows))
    print()
    enc = ("encoder", threads)
    enc_best, enc_med = max(rates[enc]), statistics.median(rates[enc])
    rows = [
        [
            f"(encoder + {labels[k[0]]}, {k[1]} thread(s)) / encoder",
            1.0 + enc_best / max(rates[k]),
            1.0 + enc_med / statistics.median(rates[k]),
        ]
        for k in keys[1:]
        if rates[k]
    ]
    print(C.table(["ratio (time)", "best", "median"], rows))
    if baseline is not None:
        rows = []
        for n in thread_counts:
            for base, cur in (("base1", "petra1"), ("baseB", "petraB"), ("baseS", "stream")):
                if rates[(base, n)] and rates[(cur, n)]:
                    rows.append(
                        [
                            f"{labels[cur]}, {n} thread(s)",
                            max(rates[(base, n)]),
                            max(rates[(cur, n)]),
                            max(rates[(cur, n)]) / max(rates[(base, n)]),
                            statistics.median(rates[(cur, n)]) / statistics.median(rates[(base, n)]),
                        ]
                    )
        print(f"\nhead only, baseline = {args.baseline} (same weights, same features, interleaved passes)\n")
        print(
            C.table(["mode", "baseline best tok/s", "current best tok/s", "speed-up (best)", "speed-up (median)"], rows)
        )
        print(
            f"\ncurrent vs baseline memory logs (first 1,000 tokens a doc, batched and one doc), max |difference|: {base_diff:.2e}"
        )
    print(f"\nstreamed (300-token chunks) vs whole-document log on 1,000 tokens, max |difference|: {diff:.2e}")


def memory(args, nlp, tok2vec, data):
    import numpy

    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    doc, source = C.long_doc(nlp.vocab, max(sizes), data)
    t0 = time.perf_counter()
    feats = tok2vec.predict([doc])[0]
    enc_s = time.perf_counter() - t0
    fd, path = tempfile.mkstemp(suffix=".npy", prefix="petra_feats_")
    os.close(fd)
    try:
        numpy.save(path, numpy.ascontiguousarray(feats, dtype="float32"))
        print(
            f"\n## 2. memory and time vs document length (fresh process a row; features of {source}, "
            f"{max(sizes):,} tokens, encoded once in {enc_s:.1f}s)\n"
        )
        rows = []
        results = {}
        stream_sizes = [int(v) for v in args.stream_sizes.split(",") if v.strip()]
        petra_args_json = json.dumps(builder_defaults())
        plan = [("forward", n) for n in sizes] + [("stream", n) for n in sorted(set(sizes) | set(stream_sizes))]
        for mode, n in plan:
            argv = [
                SCRIPT,
                "--child",
                mode,
                "--child-features",
                path,
                "--child-tokens",
                str(n),
                "--chunk",
                str(args.chunk),
            ]
            argv += [
                "--num-cells",
                str(args.num_cells),
                "--hidden-size",
                str(args.hidden_size),
                "--mlp-size",
                str(args.mlp_size),
            ]
            argv += ["--child-petra-args", petra_args_json]
            if args.memory_threads or args.threads:
                argv += ["--threads", str(args.memory_threads or args.threads)]
            r = C.run_child(argv, args.timeout)
            results[(mode, n)] = r
            if "error" in r:
                print(f"  [{mode} {n:,}] FAILED: {r['error']}", file=sys.stderr)
                rows.append([mode, f"{n:,}", "FAILED", "", "", "", "", ""])
                continue
            inc = r["peak_mb"] - r["baseline_mb"]
            rows.append(
                [
                    mode,
                    f"{r['tokens']:,}",
                    r["seconds"],
                    r["tokens"] / r["seconds"],
                    r["baseline_mb"],
                    r["peak_mb"],
                    inc,
                    1000.0 * inc / r["tokens"],
                ]
            )
        mode_label = f"stream = {args.chunk}-token chunks"
        print(
            C.table(
                [
                    "mode",
                    "tokens",
                    "seconds",
                    "tok/s",
                    "baseline RSS MB",
                    "peak RSS MB",
                    "increment MB",
                    "MB / 1k tokens",
                ],
                rows,
            )
        )
        ok = [r for r in results.values() if "reset" in r]
        print(
            f"\n({mode_label}; torch threads {ok[0]['threads'] if ok else '?'}; baseline = torch + PeTra + the "
            f"document's features [T, 384] already loaded; peak counter reset before the call: "
            f"{ok[0]['reset'] if ok else '?'})"
        )
        log_mb = (3 * args.num_cells + 1) * 4 / 1e3  # MB of memory log per 1k tokens (float32)
        print(f"(the memory log itself: {log_mb:.2f} MB per 1k tokens)")
        for mode in ("forward", "stream"):
            lengths = sorted(n for m, n in results if m == mode)
            pts = [(n, results[(mode, n)]) for n in lengths if "error" not in results[(mode, n)]]
            if len(pts) >= 2:
                a, b = pts[0], pts[-1]
                inc_a = a[1]["peak_mb"] - a[1]["baseline_mb"]
                inc_b = b[1]["peak_mb"] - b[1]["baseline_mb"]
                print(
                    f"{mode}: increment {inc_a:.1f} MB at {a[0]:,} tokens -> {inc_b:.1f} MB at {b[0]:,} tokens "
                    f"({(inc_b - inc_a) / ((b[0] - a[0]) / 1000):.2f} MB per extra 1k tokens)"
                )
    finally:
        os.unlink(path)


def main(argv=None):
    args = parse_args(argv)
    if args.child:
        child(args)
        return 0
    C.quiet()
    threads = C.set_threads(args.threads)
    data = C.litbank_dir(args.data)
    print("# PeTra speed and memory: the pure torch module on MiniLM features (eval, no_grad)\n")
    print(C.machine_line(threads))
    print(
        f"PeTra(input_size=384, hidden_size={args.hidden_size}, num_cells={args.num_cells}, mlp_size={args.mlp_size})"
    )
    nlp, tok2vec = C.build_encoder(bfloat16=args.bfloat16)
    print(f"encoder: embedded MiniLM in {'bfloat16 autocast' if args.bfloat16 else 'float32'}")
    if not args.skip_speed:
        if data is None:
            print(
                f"\nspeed table SKIPPED: LitBank not found at {args.data or C.LITBANK} (set MEMCOREF_SHARED or --data)."
            )
        else:
            speed(args, nlp, tok2vec, data)
    if not args.skip_memory:
        memory(args, nlp, tok2vec, data)
    print(f"\nat the end: {C.load_line()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
