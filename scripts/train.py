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

A config that fine-tunes a trained s2e (its component is `source =
${paths.source}`, with a `[components.memcoref.warm_start]` block: the
settings to train under, the encoder the s2e must be on, and a shipped
model to start from when none is given) gets its source made here: the s2e
named by `--s2e PIPELINE` (the project passes the workflow's own tuned s2e)
when it is on that encoder, else the block's shipped model, saved with the
block's settings by scripts/warm_start.py into OUTPUT/source and passed as
--paths.source. `--components.memcoref.X` overrides of such a config change
those settings (spaCy would ignore them beside `source`), and
`--components.memcoref.model.tok2vec.name` names the encoder the s2e must be
on. A config that trains from scratch ignores --s2e.

Training runs with THP_MEM_ALLOC_ENABLE=1 in its environment unless
the caller set it (to anything): PyTorch then asks Linux for 2 MB pages for
its large CPU buffers, which makes updates faster (benchmarks/RESULTS.md,
"2 MB pages for PyTorch's buffers"). PyTorch reads it at its first
allocation, while spaCy imports it, so no config setting can set it; off
Linux, or where the kernel grants no huge pages, it does nothing.
"""

import json
import os
import shlex
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Tuple

KEEP = "config"  # the value that means "the config's own"
DRY_RUN = "--dry-run"
FROM_S2E = "--s2e"  # the trained s2e a fine-tuning config starts from
COMPONENT = "components.memcoref."
ENCODER_SETTING = "model.tok2vec.name"
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


def take_option(args: List[str], name: str) -> Tuple[List[str], Optional[str]]:
    """`args` without `name VALUE` (or `name=VALUE`), and VALUE (None when absent)."""
    rest: List[str] = []
    value: Optional[str] = None
    i = 0
    while i < len(args):
        if args[i] == name:
            if i + 1 >= len(args):
                raise ValueError(f"{name} has no value")
            value = args[i + 1]
            i += 2
            continue
        if args[i].startswith(name + "="):
            value = args[i].split("=", 1)[1]
        else:
            rest.append(args[i])
        i += 1
    return rest, value


def _parse_value(text: str) -> Any:
    """An override's value as spaCy reads it: JSON where it parses, else the string."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def _flatten(block: Dict[str, Any], prefix: str = "") -> Dict[str, Any]:
    """{"memory_cells": 40, "model": {"memory_loss_cells": 40}} -> {"memory_cells": 40, "model.memory_loss_cells": 40}."""
    flat: Dict[str, Any] = {}
    for key, value in block.items():
        if isinstance(value, dict):
            flat.update(_flatten(value, f"{prefix}{key}."))
        else:
            flat[prefix + key] = value
    return flat


def same_encoder(a: Optional[str], b: Optional[str]) -> bool:
    """Whether two encoder settings name one encoder: null (the embedded
    MiniLM) only null; a Hugging Face name and a local folder of the same
    model by their last part ("sentence-transformers/all-mpnet-base-v2" and
    "/models/all-mpnet-base-v2")."""
    if a is None or b is None:
        return a is None and b is None
    return Path(str(a).rstrip("/")).name == Path(str(b).rstrip("/")).name


def s2e_encoder(model: str) -> Tuple[Optional[Path], Optional[str], str]:
    """(folder, encoder setting, why unusable) of a trained s2e given as a
    folder or a shipped model's name; folder None when it cannot be used."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from spacy.util import load_config

    from spacy_memcoref.loading import resolve_model

    folder = resolve_model(model).folder
    if folder is None or not (folder / "config.cfg").is_file():
        return None, None, "not found (no pipeline folder with a config.cfg)"
    component = load_config(folder / "config.cfg", interpolate=True)["components"].get("memcoref", {})
    if "model" not in component:
        return None, None, "has no memcoref component"
    tok2vec = component["model"].get("tok2vec", {})
    # a transformer encoder by its name; any other tok2vec (a CNN) by its architecture
    return folder, tok2vec["name"] if "name" in tok2vec else tok2vec.get("@architectures"), ""


def fine_tune_source(args: List[str], s2e: Optional[str], write: bool = True) -> List[str]:
    """`args` with the source a fine-tuning config trains from (see the
    docstring): made from `s2e` or the config's shipped model, saved into
    OUTPUT/source, given as --paths.source; `args` unchanged (but for its
    memcoref overrides) for any other config. `write` False (--dry-run)
    finds the s2e and saves nothing.

    RAISES ValueError: no s2e on the encoder asked for; no --output.
    """
    from spacy.util import load_config

    config_path = Path(args[0])
    if not config_path.is_file():
        return args  # `memcoref train` says so
    raw = load_config(config_path, interpolate=False)
    block = raw["components"].get("memcoref", {})
    if "source" not in block or "warm_start" not in block:
        return args
    if any(a == "--paths.source" or a.startswith("--paths.source=") for a in args):
        return args  # a source made by the caller: trained as it is
    # the component's overrides change the warm start's settings
    rest: List[str] = []
    changes: Dict[str, Any] = {}
    encoder_given: Optional[str] = None
    i = 0
    while i < len(args):
        token = args[i]
        key, _, inline = token.partition("=")
        if key.startswith("--" + COMPONENT) and _is_override(token):
            value = inline if "=" in token else args[i + 1]
            i += 1 if "=" in token else 2
            setting = key[len("--" + COMPONENT) :]
            if value == KEEP:
                continue
            if setting == ENCODER_SETTING:
                encoder_given = value
            elif setting.startswith("warm_start."):
                changes[setting] = _parse_value(value)
            else:
                changes["warm_start.set." + setting] = _parse_value(value)
            continue
        rest.append(token)
        i += 1
    overrides = {COMPONENT + key: value for key, value in changes.items()}
    try:
        config = load_config(config_path, overrides=overrides, interpolate=True)
    except Exception as err:  # an override of a setting the block does not hold
        raise ValueError(f"{config_path}: {err}") from None
    warm = config["components"]["memcoref"]["warm_start"]
    settings = _flatten(warm.get("set", {}))
    encoder = warm.get("encoder") if encoder_given is None else _parse_value(encoder_given)
    if encoder_given is not None and encoder == "null":
        encoder = None
    tried: List[str] = []
    chosen: Optional[Path] = None
    for candidate in [c for c in (s2e, warm.get("fallback")) if c]:
        folder, found, why = s2e_encoder(candidate)
        if folder is not None and not same_encoder(found, encoder):
            why = f"is on {found or 'the embedded MiniLM'}"
        if folder is not None and not why:
            chosen = folder
            break
        tried.append(f"{candidate} {why}")
    wanted = encoder or "the embedded MiniLM (null)"
    if chosen is None:
        raise ValueError(
            f"{config_path} fine-tunes a trained s2e on {wanted}, and "
            + ("; ".join(tried) or "none was given (--s2e PIPELINE)")
            + ": train one first (the project's train-s2e and tune-s2e with an s2e config on that encoder)"
        )
    output = _output_dir(rest)
    if output is None:
        raise ValueError(f"{config_path} fine-tunes a trained s2e: --output is needed (its source is saved there)")
    source = output / "source"
    skipped = f" ({'; '.join(tried)})" if tried else ""
    if has_checkpoint(output) and (source / "config.cfg").is_file():
        print(f"fine-tuning {source} (saved before; the run resumes){skipped}", flush=True)
    else:
        made = ", ".join(f"{key} = {json.dumps(value)}" for key, value in sorted(settings.items()))
        print(f"fine-tuning {chosen} on {wanted}{skipped}; saved with {made} as {source}", flush=True)
        if write:
            _warm_start_script().warm_start(str(chosen), source, sorted(settings.items()), replace=True)
    return [*rest, "--paths.source", str(source)]


def _warm_start_script() -> Any:
    """scripts/warm_start.py as a module, loaded by its path (no import of a
    top-level name: check_data reads this script's imports as what the
    project needs installed)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "memcoref_warm_start", Path(__file__).resolve().parent / "warm_start.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


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
        args, s2e = take_option(args, FROM_S2E)
        args = fine_tune_source(args, s2e, write=not dry_run)
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
