"""Speed of the s2e pipeline against its encoder alone, on LitBank documents.

Three ways over the same Docs, interleaved in every repeat:

  encoder   the component's tok2vec (embedded MiniLM), model.layers[0].predict
  full      nlp.pipe: encoder + s2e head + writing doc.spans
  head      the head layer alone (model.layers[1]) on encoder outputs computed
            once beforehand: glue (numpy -> torch, sentence ids) + S2EHead

The head overhead ratio is full / encoder time (design goal <= 1.15). When
it misses the goal (or with --profile always) the script breaks the head's
time down by stage and prints the top cProfile and torch.profiler items.

Works without a trained model (an initialized, untrained pipeline: speed does
not depend on the weights).

    python benchmarks/s2e_speed.py --docs 10

--precision compares one pipeline in float32, bfloat16 (autocast) and int8
(`python -m spacy_memcoref quantize`) on the same texts, interleaved in every
repeat, and with --model and --dev also scores each on a dev DocBin (the
component's own scorer: CoNLL F1 for s2e, GAP F1 for PeTra), so speed and
accuracy come from one run:

    python benchmarks/s2e_speed.py --precision --model training/s2e/model-tuned --dev corpus/ontogum/dev.spacy
"""

import argparse
import cProfile
import io
import pstats
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as C  # noqa: E402

GOAL = 1.15


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description="Tokens/s of the full memcoref (s2e) pipeline vs the encoder alone on LitBank docs.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("--docs", type=int, default=10, help="LitBank documents to time (~2,000 tokens each)")
    p.add_argument("--repeats", type=int, default=3, help="timed passes over the docs (best and median reported)")
    p.add_argument("--warmup", type=int, default=2, help="documents run through every mode before timing")
    p.add_argument("--batch-size", type=int, default=1, help="documents per encoder / pipeline call")
    p.add_argument("--threads", type=int, default=None, help="torch threads; None = the machine's cores")
    p.add_argument("--max-antecedents", type=int, default=None, help="model.max_antecedents; None = all")
    p.add_argument(
        "--hidden-size", type=int, default=None, help="model.hidden_size; None = the component default (512)"
    )
    p.add_argument("--chunk-size", type=int, default=None, help="model.chunk_size; None = the component default (512)")
    p.add_argument(
        "--bfloat16", action="store_true", help="the encoder in bfloat16 (tok2vec.bfloat16, as configs/s2e.cfg)"
    )
    p.add_argument(
        "--encoder",
        default=None,
        help="a Hugging Face name or path in place of the embedded MiniLM (e.g. the base presets' encoder)",
    )
    p.add_argument(
        "--no-sents", action="store_true", help="drop sentence boundaries (as for raw text in a blank pipeline)"
    )
    p.add_argument("--data", default=None, help=f"LitBank folder; None = {C.LITBANK}")
    p.add_argument(
        "--profile",
        choices=["auto", "always", "never"],
        default="auto",
        help="stage breakdown + cProfile + torch.profiler of the head (auto: when the ratio misses the goal)",
    )
    p.add_argument("--top", type=int, default=15, help="profile rows to print")
    p.add_argument(
        "--precision",
        action="store_true",
        help="compare float32, bfloat16 and int8 pipelines (tokens/s; CoNLL F1 with --dev)",
    )
    p.add_argument(
        "--precisions",
        default="float32,bfloat16,int8",
        help="--precision: which of float32, bfloat16, int8 (float32 is always run: the baseline)",
    )
    p.add_argument(
        "--model", default=None, help="--precision: a trained pipeline, s2e or PeTra (default: an untrained s2e)"
    )
    p.add_argument(
        "--dev",
        default=None,
        help="--precision: a DocBin with gold annotation to score each precision on (the component's scorer)",
    )
    return p.parse_args(argv)


def batches(items, size):
    return [items[i : i + size] for i in range(0, len(items), size)]


def strip_sents(docs):
    from spacy.tokens import Doc

    return [Doc(d.vocab, words=[t.text for t in d]) for d in docs]


# ----- stage breakdown --------------------------------------------------------


def stage_breakdown(head_layer, docs, vectors, bs):
    """Wrap the S2EHead's methods with timers for one pass (the code that runs
    is the model's own; only timing wrappers are added, then removed). The
    head predicts links; the clusters are the decoder's, run by the component
    (see `time_set_annotations`)."""
    head = head_layer.shims[0]._model
    totals = defaultdict(float)
    counts = defaultdict(int)

    def timed(name, fn):
        def wrapper(*a, **k):
            t0 = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                totals[name] += time.perf_counter() - t0
                counts[name] += 1

        return wrapper

    # Sub-stages of score_mentions: the four endpoint MLP/linear layers.
    def module_timer(name):
        def pre(mod, inp):
            mod._bench_t0 = time.perf_counter()

        def post(mod, inp, out):
            totals[name] += time.perf_counter() - mod._bench_t0
            counts[name] += 1

        return pre, post

    hooks = []
    for attr, name in [
        ("mention_start", "- mention MLPs (start/end, d->h)"),
        ("mention_end", "- mention MLPs (start/end, d->h)"),
        ("mention_start_score", "- mention start/end scores + B_m"),
        ("mention_end_score", "- mention start/end scores + B_m"),
        ("mention_bilinear", "- mention start/end scores + B_m"),
        ("antecedent_start", "- antecedent MLPs (kept endpoints, d->h)"),
        ("antecedent_end", "- antecedent MLPs (kept endpoints, d->h)"),
        ("antecedent_s2s", "- 4 antecedent bilinears (K x h x h)"),
        ("antecedent_e2e", "- 4 antecedent bilinears (K x h x h)"),
        ("antecedent_s2e", "- 4 antecedent bilinears (K x h x h)"),
        ("antecedent_e2s", "- 4 antecedent bilinears (K x h x h)"),
    ]:
        pre, post = module_timer(name)
        mod = getattr(head, attr)
        hooks.append(mod.register_forward_pre_hook(pre))
        hooks.append(mod.register_forward_hook(post))

    patched = {
        "score_mentions": "score_mentions (all widths)",
        "top_candidates": "top_candidates (topk + sort)",
        "_antecedent_inputs": "_antecedent_inputs",
        "_antecedent_chunk": "_antecedent_chunk (K x K scores, chunked)",
        "predicted_links": "predicted_links (whole head.forward)",
    }
    for attr, name in patched.items():
        setattr(head, attr, timed(name, getattr(head, attr)))
    try:
        t0 = time.perf_counter()
        for b, v in zip(batches(docs, bs), batches(vectors, bs)):
            head_layer.predict((b, v, None))
        total = time.perf_counter() - t0
    finally:
        for attr in patched:
            delattr(head, attr)
        for h in hooks:
            h.remove()
    order = [
        "predicted_links (whole head.forward)",
        "score_mentions (all widths)",
        "- mention MLPs (start/end, d->h)",
        "- mention start/end scores + B_m",
        "top_candidates (topk + sort)",
        "_antecedent_inputs",
        "- antecedent MLPs (kept endpoints, d->h)",
        "- 4 antecedent bilinears (K x h x h)",
        "_antecedent_chunk (K x K scores, chunked)",
    ]
    rows = [["head layer total (glue + forward)", total, 100.0, len(docs)]]
    for name in order:
        rows.append([name, totals[name], 100.0 * totals[name] / total, counts[name]])
    glue = total - totals["predicted_links (whole head.forward)"]
    rows.append(["glue: xp2torch, sentence/speaker ids, Thinc shim", glue, 100.0 * glue / total, len(docs)])
    # width loop = score_mentions minus the linear layers it calls
    loop = (
        totals["score_mentions (all widths)"]
        - totals["- mention MLPs (start/end, d->h)"]
        - totals["- mention start/end scores + B_m"]
    )
    rows.insert(5, ["- per-width loop (max_width slices, masks, cat)", loop, 100.0 * loop / total, len(docs)])
    return rows


def time_set_annotations(comp, docs, preds):
    """Seconds of the component's set_annotations (the decoder's clusters and
    writing doc.spans) and, within it, of the decoder's union-find
    (decoders.s2e.clusters_from_links, wrapped with a timer, then restored)."""
    from spacy_memcoref.decoders import s2e as s2e_decoder

    union_find = [0.0]
    orig = s2e_decoder.clusters_from_links

    def timed(*a, **k):
        t0 = time.perf_counter()
        try:
            return orig(*a, **k)
        finally:
            union_find[0] += time.perf_counter() - t0

    s2e_decoder.clusters_from_links = timed
    try:
        t = time.perf_counter()
        comp.set_annotations(docs, preds)
        total = time.perf_counter() - t
    finally:
        s2e_decoder.clusters_from_links = orig
    return total, union_find[0]


def run_profiles(head_layer, docs, vectors, bs, top):
    import torch

    print(f"\n## cProfile of the head layer over {len(docs)} docs (top {top} by own time)\n")
    prof = cProfile.Profile()
    prof.enable()
    for b, v in zip(batches(docs, bs), batches(vectors, bs)):
        head_layer.predict((b, v, None))
    prof.disable()
    s = io.StringIO()
    pstats.Stats(prof, stream=s).strip_dirs().sort_stats("tottime").print_stats(top)
    text = s.getvalue()
    start = text.find("   ncalls")
    print(text[start:].rstrip() if start >= 0 else text)

    print(f"\n## torch.profiler of the head layer (top {top} ops by self CPU time)\n")
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as tp:
        for b, v in zip(batches(docs, bs), batches(vectors, bs)):
            head_layer.predict((b, v, None))
    print(tp.key_averages().table(sort_by="self_cpu_time_total", row_limit=top))


# ----- float32 vs bfloat16 vs int8 ----------------------------------------------------


def precision_pipelines(model_path, tmp, wanted=("float32", "bfloat16", "int8")):
    """{name: pipeline} of one pipeline in three precisions, the same
    weights: float32 (autocast kept off, whatever the config says), bfloat16
    (autocast forced on the encoder, even on a CPU without native bfloat16,
    where `bfloat16 = true` alone runs float32) and the int8 copy that
    `spacy_memcoref quantize` writes."""
    import spacy
    from typer.testing import CliRunner

    from spacy_memcoref.cli import app
    from spacy_memcoref import run_in_bfloat16, run_in_float32

    pipes = {"float32": spacy.load(model_path)}
    run_in_float32(pipes["float32"])
    if "bfloat16" in wanted:
        pipes["bfloat16"] = spacy.load(model_path)
        run_in_bfloat16(pipes["bfloat16"])
    if "int8" in wanted:
        result = CliRunner().invoke(app, ["quantize", str(model_path), str(tmp / "int8")])
        if result.exit_code != 0:
            raise SystemExit(f"quantize failed: {result.output}")
        pipes["int8"] = spacy.load(tmp / "int8")
    return pipes


def compare_precisions(args, data, threads) -> int:
    import tempfile

    from spacy.tokens import DocBin
    from spacy.training import Example

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        model_path = args.model
        if model_path is None:
            model_path = tmp / "untrained"
            C.build_pipeline(encoder=args.encoder).to_disk(model_path)
        pipes = precision_pipelines(model_path, tmp, tuple(args.precisions.split(",")))
        vocab = pipes["float32"].vocab
        docs = C.read_litbank(vocab, args.docs + args.warmup, data)
        if args.no_sents:
            docs = strip_sents(docs)
        warm, docs = docs[: args.warmup], docs[args.warmup :]
        n_tokens = sum(len(d) for d in docs)
        bs = max(1, args.batch_size)
        print("# one pipeline in float32, bfloat16 and int8\n")
        print(C.machine_line(threads))
        flags = C.cpu_flags()
        print(
            f"low-precision CPU flags: {', '.join(flags) or 'none (no avx512_bf16, amx, avx512_vnni, avx_vnni: int8 runs on AVX2, bfloat16 is emulated)'}"
        )
        print(
            f"{len(docs)} LitBank docs, {n_tokens:,} tokens, batch size {bs}, {args.repeats} repeats (interleaved); pipeline {args.model or 'untrained s2e'}\n"
        )
        texts = [d.text for d in docs]
        for nlp in pipes.values():
            for d in warm:
                nlp(d.text)
        times = {name: [] for name in pipes}
        for _ in range(args.repeats):
            for name, nlp in pipes.items():
                t = time.perf_counter()
                for _doc in nlp.pipe(texts, batch_size=bs):
                    pass
                times[name].append(time.perf_counter() - t)
        scores = {}
        if args.dev:
            gold = list(DocBin(store_user_data=True).from_disk(args.dev).get_docs(vocab))
            for name, nlp in pipes.items():
                examples = [Example(nlp.make_doc(g.text), g) for g in gold]
                result = nlp.evaluate(examples, batch_size=bs)
                key = "coref_conll_f" if result.get("coref_conll_f") is not None else "gap_f"
                scores[name] = (key, result[key])
        base = min(times["float32"])
        rows = []
        for name in pipes:
            best = min(times[name])
            row = [name, best, n_tokens / best, base / best]
            if scores:
                key, value = scores[name]
                row += [key, 100 * value, 100 * (value - scores["float32"][1])]
            rows.append(row)
        headers = ["precision", "best s", "tok/s", "speed vs float32"] + (
            ["dev score", "value", "minus float32"] if scores else []
        )
        print(C.table(headers, rows))
    return 0


# ----- main -----------------------------------------------------------------------


def main(argv=None):
    args = parse_args(argv)
    C.quiet()
    data = C.litbank_dir(args.data)
    if data is None:
        print(
            f"SKIPPED: LitBank not found at {args.data or C.LITBANK} "
            "(needs ../shared/data/litbank/*.conll; set MEMCOREF_SHARED or --data)."
        )
        return 0
    threads = C.set_threads(args.threads)
    if args.precision:
        return compare_precisions(args, data, threads)
    t0 = time.perf_counter()
    nlp = C.build_pipeline(
        max_antecedents=args.max_antecedents,
        chunk_size=args.chunk_size,
        hidden_size=args.hidden_size,
        bfloat16=args.bfloat16,
        encoder=args.encoder,
    )
    load_s = time.perf_counter() - t0
    comp = nlp.get_pipe("memcoref")
    tok2vec, head_layer = comp.model.layers[:2]
    head = head_layer.shims[0]._model
    docs = C.read_litbank(nlp.vocab, args.docs + args.warmup, data)
    if args.no_sents:
        docs = strip_sents(docs)
    warm, docs = docs[: args.warmup], docs[args.warmup :]
    if not docs:
        print("SKIPPED: no LitBank documents left after warm-up.")
        return 0
    n_tokens = sum(len(d) for d in docs)
    bs = max(1, args.batch_size)

    print("# s2e speed: full pipeline vs encoder alone\n")
    print(C.machine_line(threads))
    print(
        f"{len(docs)} LitBank docs, {n_tokens:,} tokens (mean {n_tokens / len(docs):,.0f}), "
        f"batch size {bs}, {args.repeats} repeats after {len(warm)} warm-up docs; "
        f"sentence boundaries {'dropped' if args.no_sents else 'kept'}; pipeline load {load_s:.1f}s"
    )
    print(
        f"head: hidden_size={head.mention_bilinear.in_features}, max_width={head.max_width}, "
        f"top_lambda={head.top_lambda}, max_antecedents={head.max_antecedents}, chunk_size={head.chunk_size}\n"
    )

    # warm-up: every code path once
    for d in warm:
        vec = tok2vec.predict([d])
        head_layer.predict(([d], vec, None))
        list(nlp.pipe([d]))
    vectors = []
    for b in batches(docs, bs):
        vectors.extend(tok2vec.predict(b))

    times = defaultdict(list)
    for _ in range(args.repeats):
        t = time.perf_counter()
        for b in batches(docs, bs):
            tok2vec.predict(b)
        times["encoder"].append(time.perf_counter() - t)
        t = time.perf_counter()
        for _doc in nlp.pipe(docs, batch_size=bs):
            pass
        times["full"].append(time.perf_counter() - t)
        t = time.perf_counter()
        for b, v in zip(batches(docs, bs), batches(vectors, bs)):
            head_layer.predict((b, v, None))
        times["head"].append(time.perf_counter() - t)

    best = {k: min(v) for k, v in times.items()}
    med = {k: statistics.median(v) for k, v in times.items()}
    rows = []
    labels = {
        "encoder": "encoder alone (tok2vec.predict)",
        "full": "full pipeline (nlp.pipe)",
        "head": "head alone (on cached vectors)",
    }
    for k in ("encoder", "full", "head"):
        rows.append([labels[k], best[k], n_tokens / best[k], med[k], n_tokens / med[k]])
    print(C.table(["mode", "best s", "best tok/s", "median s", "median tok/s"], rows))
    ratio = best["full"] / best["encoder"]
    ratio_med = med["full"] / med["encoder"]
    ratio_sum = (best["encoder"] + best["head"]) / best["encoder"]
    print()
    print(
        C.table(
            ["ratio", "best", "median", "goal"],
            [
                ["full / encoder (head overhead)", ratio, ratio_med, f"<= {GOAL}"],
                [
                    "(encoder + head alone) / encoder",
                    ratio_sum,
                    (med["encoder"] + med["head"]) / med["encoder"],
                    f"<= {GOAL}",
                ],
            ],
        )
    )
    verdict = "meets" if ratio <= GOAL else "MISSES"
    print(f"\nhead overhead ratio {ratio:.3f} {verdict} the goal (<= {GOAL}).")

    if args.profile == "always" or (args.profile == "auto" and ratio > GOAL):
        print(f"\n## Where the head spends its time (one pass, {len(docs)} docs)\n")
        rows = stage_breakdown(head_layer, docs, vectors, bs)
        print(C.table(["stage", "seconds", "% of head", "calls"], rows))
        # Outside the head layer: the component's decoder (links -> clusters
        # at the link threshold) and writing doc.spans. (An untrained head's
        # cluster count is arbitrary; a trained one writes more, smaller
        # clusters.)
        preds = []
        for b, v in zip(batches(docs, bs), batches(vectors, bs)):
            preds.extend(head_layer.predict((b, v, None))[1])
        set_s, union_s = time_set_annotations(comp, docs, preds)
        decoder = comp.decoder
        clusters = [decoder.clusters(p) for p in preds]
        n_cl = sum(len(c) for c in clusters)
        n_m = sum(len(m) for c in clusters for m in c)
        print(
            f"\ncomponent.set_annotations (outside the head): {set_s:.3f}s for {len(docs)} docs, "
            f"of which the decoder's clusters_from_links (python union-find) {union_s:.3f}s "
            f"({n_cl} clusters, {n_m} mentions written); full - encoder - head (best): "
            f"{best['full'] - best['encoder'] - best['head']:+.2f}s"
        )
        run_profiles(head_layer, docs, vectors, bs, args.top)
    print(f"\nat the end: {C.load_line()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
