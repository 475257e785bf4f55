"""What drawing dropout masks with numpy saves (models/cpu_dropout.py).

Two tables from one process, on this CPU:

  masks    torch's nn.Dropout against CpuDropout, forward and backward, on
           tensors of the sizes s2e-base's training step drops: the
           attention probabilities of a batch of windows and the hidden
           states of the same windows
  updates  training updates of a config (default configs/s2e_base.cfg) on
           OntoGUM train, torch's dropout and numpy's in alternating blocks
           of --steps updates (which goes first alternates too), after
           --warm updates (default: one epoch, which fills the frozen
           layers' cache, as in `spacy train` from its second epoch on)

    python benchmarks/cpu_dropout.py --encoder ENCODER_DIR \\
        --train corpus/ontogum/train_gum.spacy --blocks 2 --steps 15

--profile N adds, after the blocks, torch.profiler's top operations (self
CPU time) over N updates with each kind of mask: where an update's time
goes, `aten::bernoulli_` among it.

torch takes MKL's vectorized generator for its masks on Intel CPUs only,
so this measures a difference on other CPUs (AMD EPYC) and about none on
Intel's, where the training callback leaves torch's dropout in place.
"""

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as C  # noqa: E402

REPO = Path(__file__).resolve().parent.parent


def _swap(module, to_numpy: bool) -> int:
    """Every dropout module below `module` to CpuDropout (to_numpy) or back
    to nn.Dropout; RETURNS how many it swapped."""
    from torch import nn

    from spacy_memcoref.models.cpu_dropout import CpuDropout, use_cpu_dropout

    if to_numpy:
        return use_cpu_dropout(module)
    swapped = 0
    for parent in list(module.modules()):
        for name, child in list(parent.named_children()):
            if type(child) is CpuDropout:
                back = nn.Dropout(p=child.p, inplace=child.inplace)
                back.train(child.training)
                setattr(parent, name, back)
                swapped += 1
    return swapped


def _time_ms(fn, repeats: int) -> float:
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return 1000 * statistics.median(times)


def mask_table(repeats: int) -> str:
    import torch
    from torch import nn

    from spacy_memcoref.models.cpu_dropout import CpuDropout

    shapes = {
        "attention probs 11 x 12 x 330 x 330": (11, 12, 330, 330),
        "hidden states 11 x 330 x 768": (11, 330, 768),
    }
    rows = []
    for label, shape in shapes.items():
        x = torch.randn(*shape, requires_grad=True)
        grad = torch.ones(*shape)
        cells = [label]
        times = []
        for module in (nn.Dropout(0.1), CpuDropout(0.1)):
            module.train()

            def step(module=module):
                x.grad = None
                module(x).backward(grad)

            times.append(_time_ms(step, repeats))
            cells.append(f"{times[-1]:.1f}")
        cells.append(f"{times[0] / times[1]:.2f}x")
        rows.append(cells)
    return C.table(["tensor", "torch ms (fwd+bwd)", "numpy ms (fwd+bwd)", "torch / numpy"], rows)


def update_table(args) -> str:
    import random

    from spacy.schemas import ConfigSchemaTraining
    from spacy.util import load_config, load_model_from_config, registry, resolve_dot_names
    from thinc.api import fix_random_seed

    from spacy_memcoref.pretrained import torch_modules

    overrides = {"paths.train": args.train, "paths.dev": args.train}
    if args.encoder:
        overrides["paths.encoder"] = args.encoder
    config = load_config(args.config, overrides=overrides, interpolate=False)
    nlp = load_model_from_config(config, auto_fill=True, validate=True)
    fix_random_seed(0)
    config = nlp.config.interpolate()
    training = registry.resolve(config["training"], schema=ConfigSchemaTraining)
    (train_corpus,) = resolve_dot_names(config, [training["train_corpus"]])
    optimizer = training["optimizer"]
    nlp.initialize(lambda: train_corpus(nlp), sgd=optimizer)
    examples = list(train_corpus(nlp))
    batches = list(training["batcher"](examples))
    modules = [module for _, _, module in torch_modules(nlp)]
    _swap_all = lambda to_numpy: sum(_swap(m, to_numpy) for m in modules)  # noqa: E731
    _swap_all(False)
    warm = len(batches) if args.warm is None else args.warm
    start = time.perf_counter()
    for batch in batches[:warm]:  # one epoch: the frozen layers' cache fills
        nlp.update(batch, sgd=optimizer)
    print(f"warm-up ({warm} updates of an epoch's {len(batches)}): {time.perf_counter() - start:.0f} s", flush=True)
    random.seed(0)
    chosen = [random.choice(batches) for _ in range(args.steps)]
    seconds = {"torch": [], "numpy": []}
    n_swapped = 0
    for block in range(args.blocks):
        for kind in ("torch", "numpy") if block % 2 == 0 else ("numpy", "torch"):
            n = _swap_all(kind == "numpy")
            n_swapped = max(n_swapped, n)
            start = time.perf_counter()
            for batch in chosen:
                nlp.update(batch, sgd=optimizer)
            seconds[kind].append((time.perf_counter() - start) / len(chosen))
            print(f"block {block + 1}, {kind}: {seconds[kind][-1]:.3f} s an update", flush=True)
    torch_s, numpy_s = statistics.median(seconds["torch"]), statistics.median(seconds["numpy"])
    rows = [[args.config, n_swapped, f"{torch_s:.3f}", f"{numpy_s:.3f}", f"{torch_s / numpy_s:.3f}x"]]
    table = C.table(["config", "dropout modules", "torch s/update", "numpy s/update", "torch / numpy"], rows)
    if args.profile:
        import torch

        for kind in ("torch", "numpy"):
            _swap_all(kind == "numpy")
            with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
                for batch in chosen[: args.profile]:
                    nlp.update(batch, sgd=optimizer)
            table += f"\n\n{kind}'s masks, {args.profile} updates, top operations by self CPU time:\n"
            table += prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=12)
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", default=str(REPO / "configs" / "s2e_base.cfg"))
    parser.add_argument("--encoder", help="the config's paths.encoder (a Hugging Face name or folder)")
    parser.add_argument("--train", default=str(REPO / "corpus" / "ontogum" / "train_gum.spacy"))
    parser.add_argument("--blocks", type=int, default=2, help="alternating blocks of each kind")
    parser.add_argument("--steps", type=int, default=15, help="updates a block (the same batches in every block)")
    parser.add_argument(
        "--warm",
        type=int,
        help="updates before the blocks (default: one epoch; a few for a config without a frozen cache)",
    )
    parser.add_argument("--repeats", type=int, default=5, help="repeats of each mask timing")
    parser.add_argument(
        "--profile", type=int, default=0, help="profile this many updates of each kind after the blocks (0: none)"
    )
    parser.add_argument("--masks-only", action="store_true", help="the mask table alone (no training)")
    args = parser.parse_args()
    C.quiet()
    threads = C.set_threads(None)
    from spacy_memcoref.models.cpu_dropout import torch_dropout_is_vectorized

    print(C.machine_line(threads))
    print(f"torch's CPU dropout vectorized here (Intel with MKL): {torch_dropout_is_vectorized()}\n")
    print(mask_table(args.repeats), flush=True)
    if args.masks_only:
        return
    if not Path(args.train).exists():
        sys.exit(f"{args.train} not found: convert OntoGUM train first (docs/development.md), or pass --masks-only")
    print()
    print(update_table(args))


if __name__ == "__main__":
    main()
