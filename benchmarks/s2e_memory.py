"""Peak memory (RSS) of the s2e pipeline as one document grows.

Every measurement runs in a FRESH subprocess, which loads the pipeline
(spacy.blank("en") + memcoref, initialized; no trained model needed), warms
it up on a short document, records its baseline RSS and then runs ONE call:

  full   nlp(doc): encoder + s2e head            (table 1)
  split  the encoder (as the pipeline runs it: encode_for_inference, which
         takes long documents a segment at a time) and then the head layer
         alone on its output, each with its own baseline       (table 2: the head's own
         growth, which the encoder's memory would otherwise hide)

Peak RSS is the kernel's high-water mark read in the child after the call
(VmHWM, the counter getrusage(RUSAGE_SELF).ru_maxrss reports, which is the
fallback; see _common.peak_rss_mb). Before the call the child frees what it
can (gc + malloc_trim) and resets that counter to the current RSS
(/proc/self/clear_refs, Linux); so "increment" = peak during the call - RSS
before it. Without the reset (other kernels) the baseline is the peak after
loading. A full row also times a second, warm nlp(doc) call (time only).

Documents are LitBank documents' words concatenated (with their sentence
boundaries), or repeated filler text when ../shared is absent.

    python benchmarks/s2e_memory.py                  # 1k..20k tokens
    python benchmarks/s2e_memory.py --with-100k      # + a 100k-token book, max_antecedents=200
"""

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as C  # noqa: E402

SCRIPT = str(Path(__file__).resolve())
DEFAULT_SIZES = "1000,2000,5000,10000,20000"


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description="Peak RSS of the memcoref (s2e) pipeline vs document length, one fresh process a measurement.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("--sizes", default=DEFAULT_SIZES, help="comma-separated document lengths in tokens")
    p.add_argument("--max-antecedents", type=int, default=None, help="model.max_antecedents for --sizes; None = all")
    p.add_argument("--no-split", action="store_true", help="skip table 2 (encoder and head measured separately)")
    p.add_argument("--with-100k", action="store_true", help="also one book-length document (see --big-*)")
    p.add_argument("--big-tokens", type=int, default=100_000, help="length of the book-length document")
    p.add_argument("--big-max-antecedents", type=int, default=200, help="model.max_antecedents for the book")
    p.add_argument(
        "--big-no-limit", action="store_true", help="also run the book with max_antecedents=null (slow, several GB)"
    )
    p.add_argument("--threads", type=int, default=None, help="torch threads; None = the machine's cores")
    p.add_argument("--data", default=None, help=f"LitBank folder; None = {C.LITBANK}")
    p.add_argument("--timeout", type=float, default=600, help="seconds allowed to one child process")
    p.add_argument(
        "--no-second-call",
        dest="second_call",
        action="store_false",
        help="skip the second nlp(doc) call a full row makes to time a warm call (memory is the first call's)",
    )
    # internal: the child process
    p.add_argument("--child", choices=["full", "split"], help=argparse.SUPPRESS)
    p.add_argument("--child-tokens", type=int, help=argparse.SUPPRESS)
    p.add_argument("--child-max-antecedents", type=int, default=None, help=argparse.SUPPRESS)
    return p.parse_args(argv)


# ----- child ----------------------------------------------------------------------


def _measure(fn):
    """Run fn once; RETURNS (result, seconds, rss before MB, peak MB, peak reset?)."""
    C.release_memory()
    before = C.rss_mb()
    reset = C.reset_peak()
    if not reset:
        before = C.peak_rss_mb()
    t0 = time.perf_counter()
    out = fn()
    secs = time.perf_counter() - t0
    return out, secs, before, C.peak_rss_mb(), reset


def child(args) -> None:
    C.quiet()
    threads = C.set_threads(args.threads)
    nlp = C.build_pipeline(max_antecedents=args.child_max_antecedents)
    load_peak = C.peak_rss_mb()
    data = C.litbank_dir(args.data)
    doc, source = C.long_doc(nlp.vocab, args.child_tokens, data)
    warm, _ = C.long_doc(nlp.vocab, 300, data)
    nlp(warm)
    comp = nlp.get_pipe("memcoref")
    tok2vec, head_layer = comp.model.layers[:2]
    result = {
        "tokens": len(doc),
        "source": source,
        "threads": threads,
        "load_peak_mb": load_peak,
        "max_antecedents": args.child_max_antecedents,
    }
    if args.child == "full":
        out, secs, before, peak, reset = _measure(lambda: nlp(doc))
        n_clusters = sum(1 for k in out.spans if k.startswith("coref_clusters_"))
        result.update(seconds=secs, baseline_mb=before, peak_mb=peak, reset=reset, clusters=n_clusters)
        if args.second_call:
            # a warm second call, for the time only (the first call's time
            # includes one-off costs for new tensor shapes)
            t0 = time.perf_counter()
            nlp(doc)
            result["seconds_2nd"] = time.perf_counter() - t0
    else:
        from spacy_memcoref.models.encoder.encoder import encode_for_inference

        vectors, enc_s, enc_before, enc_peak, reset = _measure(lambda: encode_for_inference(tok2vec, [doc]))
        _, head_s, head_before, head_peak, _ = _measure(lambda: head_layer.predict(([doc], vectors, None)))
        result.update(
            enc_seconds=enc_s,
            enc_baseline_mb=enc_before,
            enc_peak_mb=enc_peak,
            head_seconds=head_s,
            head_baseline_mb=head_before,
            head_peak_mb=head_peak,
            reset=reset,
        )
    print(json.dumps(result))


# ----- parent -----------------------------------------------------------------------


def run(args, mode, tokens, max_antecedents):
    argv = [SCRIPT, "--child", mode, "--child-tokens", str(tokens)]
    if not args.second_call:
        argv.append("--no-second-call")
    if max_antecedents is not None:
        argv += ["--child-max-antecedents", str(max_antecedents)]
    if args.threads:
        argv += ["--threads", str(args.threads)]
    if args.data:
        argv += ["--data", args.data]
    t0 = time.perf_counter()
    res = C.run_child(argv, args.timeout)
    res["wall_s"] = time.perf_counter() - t0
    if "error" in res:
        print(f"  [{mode} {tokens:,} tokens] FAILED: {res['error']}", file=sys.stderr)
    elif mode == "full":
        print(
            f"  [{mode} {tokens:,} tokens] {res['seconds']:.1f}s, peak {res['peak_mb']:.0f} MB, "
            f"+{res['peak_mb'] - res['baseline_mb']:.0f} MB ({res['wall_s']:.0f}s with loading)",
            file=sys.stderr,
        )
    else:
        print(
            f"  [{mode} {tokens:,} tokens] encoder +{res['enc_peak_mb'] - res['enc_baseline_mb']:.0f} MB, "
            f"head {res['head_seconds']:.1f}s +{res['head_peak_mb'] - res['head_baseline_mb']:.0f} MB "
            f"({res['wall_s']:.0f}s with loading)",
            file=sys.stderr,
        )
    return res


def full_rows(results):
    rows = []
    for r in results:
        if "error" in r:
            rows.append([f"{r['tokens_asked']:,}", r.get("limit", "-"), "FAILED", "", "", "", "", "", ""])
            continue
        inc = r["peak_mb"] - r["baseline_mb"]
        warm = r.get("seconds_2nd", float("nan"))
        rows.append(
            [
                f"{r['tokens']:,}",
                str(r["max_antecedents"]) if r["max_antecedents"] else "all",
                r["seconds"],
                warm,
                r["tokens"] / (warm if warm == warm else r["seconds"]),
                r["baseline_mb"],
                r["peak_mb"],
                inc,
                1000.0 * inc / r["tokens"],
            ]
        )
    return rows


def split_rows(results):
    rows = []
    for r in results:
        if "error" in r:
            rows.append([f"{r['tokens_asked']:,}", r.get("limit", "-"), "FAILED", "", "", "", "", ""])
            continue
        enc_inc = r["enc_peak_mb"] - r["enc_baseline_mb"]
        head_inc = r["head_peak_mb"] - r["head_baseline_mb"]
        rows.append(
            [
                f"{r['tokens']:,}",
                str(r["max_antecedents"]) if r["max_antecedents"] else "all",
                r["enc_seconds"],
                enc_inc,
                1000.0 * enc_inc / r["tokens"],
                r["head_seconds"],
                head_inc,
                1000.0 * head_inc / r["tokens"],
            ]
        )
    return rows


def linear_fit(xs, ys):
    """Least squares y = a x + b. RETURNS (a, b, R^2)."""
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    a = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    b = my - a * mx
    ss_tot = sum((y - my) ** 2 for y in ys)
    ss_res = sum((y - (a * x + b)) ** 2 for x, y in zip(xs, ys))
    return a, b, 1.0 - ss_res / ss_tot if ss_tot else 1.0


FULL_HEAD = [
    "tokens",
    "max_antecedents",
    "1st call s",
    "2nd call s",
    "tok/s (2nd)",
    "baseline RSS MB",
    "peak RSS MB",
    "increment MB",
    "MB / 1k tokens",
]
SPLIT_HEAD = [
    "tokens",
    "max_antecedents",
    "encoder s",
    "encoder incr. MB",
    "enc MB / 1k tok",
    "head s",
    "head incr. MB",
    "head MB / 1k tok",
]


def main(argv=None):
    args = parse_args(argv)
    if args.child:
        child(args)
        return 0
    C.quiet()
    threads = C.set_threads(args.threads)
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    data = C.litbank_dir(args.data)
    print("# s2e memory: peak RSS vs document length (fresh process a row)\n")
    print(C.machine_line(threads))
    print(
        "documents: "
        + (
            "LitBank words concatenated, with sentence boundaries"
            if data
            else "repeated filler text (../shared absent)"
        )
    )

    plan = [(s, args.max_antecedents) for s in sizes]
    if args.with_100k:
        plan.append((args.big_tokens, args.big_max_antecedents))
        if args.big_no_limit:
            plan.append((args.big_tokens, None))
    full, split = [], []
    for tokens, limit in plan:
        r = run(args, "full", tokens, limit)
        r.update(tokens_asked=tokens, limit=limit)
        full.append(r)
        if not args.no_split:
            r = run(args, "split", tokens, limit)
            r.update(tokens_asked=tokens, limit=limit)
            split.append(r)
    ok = [r for r in full if "error" not in r]
    if ok:
        print(
            f"pipeline load peak RSS {ok[0]['load_peak_mb']:,.0f} MB; peak counter reset before the call: {ok[0]['reset']}\n"
        )

    print("## 1. full pipeline, nlp(doc)\n")
    print(C.table(FULL_HEAD, full_rows(full)))
    if split:
        print("\n## 2. encoder and head separately (same process: encoder, then head on its output)\n")
        print(C.table(SPLIT_HEAD, split_rows(split)))

    # linearity: increments per 1k tokens of the default-limit sizes
    def per_k(rows, key_peak, key_base):
        out = []
        for r in rows:
            if "error" in r or r["limit"] != args.max_antecedents or r["tokens"] not in sizes:
                continue
            out.append((r["tokens"], 1000.0 * (r[key_peak] - r[key_base]) / r["tokens"]))
        return out

    notes = [("full pipeline", per_k(full, "peak_mb", "baseline_mb"))]
    if split:
        notes.append(("head alone", per_k(split, "head_peak_mb", "head_baseline_mb")))
        notes.append(("encoder alone", per_k(split, "enc_peak_mb", "enc_baseline_mb")))
    print()
    for name, pts in notes:
        if len(pts) >= 3:
            slope, icept, r2 = linear_fit([t / 1000 for t, _ in pts], [t * v / 1000 for t, v in pts])
            print(
                f"{name}: least-squares fit increment = {icept:.0f} MB + {slope:.1f} MB per 1k tokens "
                f"(R^2 = {r2:.3f}) over {pts[0][0]:,}..{pts[-1][0]:,} tokens"
            )
    print(f"\nat the end: {C.load_line()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
