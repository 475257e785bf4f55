"""Run `python -m spacy_memcoref train` (`spacy train` with checkpoints and
resume) with the project's settings, where a setting given as "config" keeps
the config's own value: every `--section.key config` override is left out,
every other argument is passed on unchanged.

    python scripts/train.py configs/s2e_base.cfg --output training/s2e \
        --paths.train corpus/train.spacy --paths.dev corpus/dev.spacy --gpu-id -1 \
        --training.max_steps config --training.optimizer.learn_rate.total_steps config \
        --training.eval_frequency config --components.memcoref.model.tok2vec.name config

trains s2e_base.cfg for its own 4,500 steps (its own schedule, evaluation
frequency and encoder); `--training.max_steps 400` there would train 400.
So a preset carries its own settings, and the project's variables
(`s2e_max_steps`, `num_cells`, ... default "config") override one only when
they are set. --dry-run prints the training command instead of running it.

When the --output folder holds a complete checkpoint (`checkpoint-*/COMPLETE`,
written every `checkpoint_every` updates and at SIGTERM), the run continues
from it (`--resume`): a project step that was stopped picks up where it was
when run again. A checkpoint of another config is refused, with the reason.

Training runs with THP_MEM_ALLOC_ENABLE=1 in its environment unless
the caller set it (to anything): PyTorch then asks Linux for 2 MB pages for
its large CPU buffers, which makes updates faster (benchmarks/RESULTS.md,
"2 MB pages for PyTorch's buffers"). PyTorch reads it at its first
allocation, while spaCy imports it, so no config setting can set it; off
Linux, or where the kernel grants no huge pages, it does nothing.
"""

import os
import shlex
import signal
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Mapping, Optional

KEEP = "config"  # the value that means "the config's own"
DRY_RUN = "--dry-run"
# set for `spacy train` where the caller has not set them (see the docstring)
TRAIN_ENV = {"THP_MEM_ALLOC_ENABLE": "1"}


def _is_override(token: str) -> bool:
    """`--section.key` (spaCy's config overrides), as opposed to --output, --gpu-id."""
    return token.startswith("--") and "." in token.split("=", 1)[0]


def _output_dir(args: List[str]) -> Optional[Path]:
    for i, token in enumerate(args):
        if token in ("--output", "-o") and i + 1 < len(args):
            return Path(args[i + 1])
        if token.startswith("--output="):
            return Path(token.split("=", 1)[1])
    return None


def has_checkpoint(output: Optional[Path]) -> bool:
    """Whether `output` holds a checkpoint written to the end (its COMPLETE
    marker; spacy_memcoref/training/checkpoint.py)."""
    return output is not None and any(
        (p / "COMPLETE").is_file() for p in output.glob("checkpoint-*") if not p.name.endswith(".partial")
    )


def train_argv(args: List[str]) -> List[str]:
    """The `python -m spacy_memcoref train` command for these arguments,
    without the overrides whose value is "config", with --resume when the
    output folder holds a checkpoint.

    args (List[str]): the arguments of `spacy train` (config path, options, overrides).
    RETURNS (List[str]): the command, starting with this interpreter.
    """
    kept: List[str] = []
    i = 0
    while i < len(args):
        token = args[i]
        if _is_override(token) and "=" in token:
            if token.split("=", 1)[1] != KEEP:
                kept.append(token)
            i += 1
        elif _is_override(token):
            if i + 1 >= len(args):
                raise ValueError(f"the override {token} has no value")
            if args[i + 1] != KEEP:
                kept.extend(args[i : i + 2])
            i += 2
        else:
            if token == KEEP:
                raise ValueError(
                    f"{args[i - 1] if i else 'the config path'} is {KEEP!r}: only `--section.key` overrides may keep the config's own value"
                )
            kept.append(token)
            i += 1
    if "--resume" not in kept and has_checkpoint(_output_dir(kept)):
        kept.append("--resume")
    return [sys.executable, "-m", "spacy_memcoref", "train", *kept]


def train_env(environ: Mapping[str, str]) -> Dict[str, str]:
    """The environment of `spacy train`: `environ` with TRAIN_ENV's settings
    where `environ` has none of its own (the caller's value wins)."""
    return {**TRAIN_ENV, **environ}


def main(argv=None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    dry_run = DRY_RUN in args
    args = [a for a in args if a != DRY_RUN]
    if not args or args[0] in ("-h", "--help"):
        print(__doc__)
        return 0
    try:
        command = train_argv(args)
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(shlex.join(command), flush=True)
    if dry_run:
        return 0
    child = subprocess.Popen(command, env=train_env(os.environ))
    # a SIGTERM sent to this process alone reaches the training too, which
    # then writes a checkpoint and stops (exit 3, resumable)
    signal.signal(signal.SIGTERM, lambda signum, frame: child.send_signal(signal.SIGTERM))
    while True:
        try:
            return child.wait()
        except KeyboardInterrupt:  # the child got the same signal: wait for its checkpoint
            continue


if __name__ == "__main__":
    sys.exit(main())
