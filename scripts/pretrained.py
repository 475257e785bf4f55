"""Rebuild one trained model that ships inside the package, from its recipe
in configs/pretrained/NAME.json: train (`spacy train` by scripts/train.py,
with the recipe's config, overrides and seed; a recipe with a "source"
fine-tunes that shipped model, which scripts/train.py saves first with the
settings of the config's [warm_start] block), tune the decision (s2e: link
threshold on dev, for model-best and model-last, the better kept; PeTra:
calibration and threshold on validation), then store what training
changed (`python -m spacy_memcoref pretrained-build`, in the recipe's
"storage" form), scored as stored. A recipe with a "finetune" block has a
second stage: the first stage's model stored as above, fine-tuned from that
stored form by the block's config on the block's corpora (copied into one
folder) with its seed, the fine-tune's weights moved part of the way back
to the stored first stage (`interpolate --weight`, the block's "weight"),
tuned again, and that is what is stored and ships. A recipe on a Hugging Face encoder (its
"encoder": name and SHA-256) trains on the local copy that load() would use
($SPACY_MEMCOREF_ENCODER, the Hugging Face cache, or a download).

    python scripts/pretrained.py s2e-ontogum [--gpu-id 0] [--dry-run]

The recipe file is the one home of the recipe: meta.json records it as it
was run. Writes training/pretrained/NAME/ and
spacy_memcoref/pretrained_models/NAME/.
"""

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import List, Optional

REPO = Path(__file__).resolve().parent.parent
TUNE = {"tune-link-threshold": "coref_", "tune-gap-threshold": "gap_"}


def read_recipe(name: str) -> dict:
    """The recipe of the shipped model `name` (configs/pretrained/NAME.json)."""
    recipe_file = REPO / "configs" / "pretrained" / f"{name}.json"
    if not recipe_file.is_file():
        known = ", ".join(sorted(p.stem for p in recipe_file.parent.glob("*.json")))
        raise SystemExit(f"{recipe_file.relative_to(REPO)}: no recipe for {name!r} (recipes: {known})")
    return json.loads(recipe_file.read_text(encoding="utf8"))["recipe"]


def tune_command(recipe: dict) -> str:
    """The tuning command for a recipe, by its model: PeTra on GAP tunes
    calibration and threshold (tune-gap-threshold); an s2e head, also one
    read through a bounded memory (configs/petra_ontogum.cfg), its link
    threshold (tune-link-threshold, through that memory). A recipe that
    fine-tunes another shipped model (its "source") has that model's."""
    from spacy.util import load_config

    if "source" in recipe:
        return tune_command(read_recipe(recipe["source"]["model"]))
    components = load_config(REPO / recipe["config"], interpolate=False)["components"].values()
    models = [component.get("model", {}).get("@architectures", "") for component in components]
    return "tune-gap-threshold" if any(m.startswith("spacy_memcoref.PeTra") for m in models) else "tune-link-threshold"


def commands(name: str, gpu_id: int, encoder_dir: Optional[str] = None) -> List[List[str]]:
    """The commands that rebuild the shipped model `name`, in order.

    encoder_dir (Optional[str]): for a recipe on a Hugging Face encoder
        (its "encoder" block), the local folder of that encoder (main()
        finds it: $SPACY_MEMCOREF_ENCODER, the Hugging Face cache, a download).
    """
    recipe_file = Path("configs", "pretrained", f"{name}.json")
    recipe = read_recipe(name)
    run = run_folder(name)
    overrides = [item for key, value in recipe["overrides"].items() for item in (f"--{key}", json.dumps(value))]
    python = sys.executable
    encoder = recipe.get("encoder")
    if encoder is not None:
        overrides += ["--paths.encoder", encoder_dir or encoder["name"]]
    tune = tune_command(recipe)
    source = recipe.get("source")
    if source is not None:  # fine-tuning a shipped model: scripts/train.py saves it with the config's settings
        overrides += ["--s2e", source["model"]]
    # s2e: as the project's tune-s2e step, the last checkpoint is tuned beside
    # the best one (the best at the decision 0 is not always the best tuned)
    also = ["--also", str(run / "model-last")] if tune == "tune-link-threshold" else []
    storage = recipe.get("storage", {})
    store = [f"--{key}={value}" for key, value in sorted(storage.items())]
    if encoder is not None:
        store.append(f"--encoder={encoder['name']}")
    first_stage = [
        [  # through scripts/train.py (which makes a fine-tuning config's source), for the environment it gives `spacy train`
            python,
            str(Path("scripts", "train.py")),
            recipe["config"],
            "--output",
            str(run),
            "--paths.train",
            recipe["train"],
            "--paths.dev",
            recipe["dev"],
            "--gpu-id",
            str(gpu_id),
            "--system.seed",
            str(recipe["seed"]),
            "--training.max_steps",
            str(recipe["steps"]),
            "--training.optimizer.learn_rate.total_steps",
            str(recipe["steps"]),
            *overrides,
        ],
        [python, "-m", "spacy_memcoref", tune, str(run / "model-best"), recipe["dev"], *also]
        + ["--output", str(run / "model-tuned"), "--gpu-id", str(gpu_id)],
    ]
    build = [python, "-m", "spacy_memcoref", "pretrained-build"]
    identity = ["--name", name, "--meta", str(recipe_file)]
    tuned = run / "model-tuned"
    second_stage: List[List[str]] = []
    finetune = recipe.get("finetune")
    if finetune is not None:
        # the first stage stored as it would ship, then fine-tuned from that
        # stored form by the second stage's config (its own steps and rate)
        stored = run / "first-stage-stored"
        second = run / "finetune"
        second_stage = [
            [*build, str(tuned), str(stored), *identity, *store],
            [python, str(Path("scripts", "train.py")), finetune["config"], "--s2e", str(stored)]
            + ["--output", str(second), "--paths.train", str(finetune_corpus(name)), "--paths.dev", recipe["dev"]]
            + ["--gpu-id", str(gpu_id), "--system.seed", str(finetune["seed"])],
            # the fine-tune's last checkpoint moved part of the way back to
            # the source it started from (scripts/train.py saved it as
            # OUTPUT/source): the block's "weight" is the fine-tune's share
            # (model-best is not used: spaCy scores the source before the
            # first update, so it can be the first stage unchanged)
            [python, "-m", "spacy_memcoref", "interpolate", str(second / "source"), str(second / "model-last")]
            + [str(second / "interpolated"), "--weight", str(finetune["weight"])],
            [python, "-m", "spacy_memcoref", tune, str(second / "interpolated"), recipe["dev"]]
            + ["--output", str(second / "model-tuned"), "--gpu-id", str(gpu_id)],
        ]
        tuned = second / "model-tuned"
    shipped = Path("spacy_memcoref", "pretrained_models", name)
    return [*first_stage, *second_stage, [*build, str(tuned), str(shipped), *identity, "--dev", recipe["dev"], *store]]


def run_folder(name: str) -> Path:
    """Where the recipe of `name` trains and tunes (relative to the repository)."""
    return Path("training", "pretrained", name)


def finetune_corpus(name: str) -> Path:
    """The folder a recipe's second stage trains on: a copy of each corpus
    its "finetune" block lists ("train"), made by join_corpora (spaCy's
    corpus reader takes one path, and reads every .spacy file of a folder)."""
    return run_folder(name) / "finetune-corpus"


def join_corpora(name: str) -> None:
    """Copy the corpora of the recipe's second stage into finetune_corpus
    (nothing for a recipe without one). A corpus that is missing is an
    error naming it and the project step that makes it."""
    finetune = read_recipe(name).get("finetune")
    if finetune is None:
        return
    missing = [path for path in finetune["train"] if not (REPO / path).is_file()]
    if missing:
        raise SystemExit(
            f"{name}: the second stage trains on {', '.join(missing)}, which is missing (run convert-gap and convert-corpus first)"
        )
    folder = REPO / finetune_corpus(name)
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    for index, path in enumerate(finetune["train"]):
        # numbered, so two corpora with one file name (train.spacy) both stay
        shutil.copyfile(REPO / path, folder / f"{index}-{Path(path).name}")


def encoder_folder(name: str) -> Optional[str]:
    """The local folder of the recipe's Hugging Face encoder, its checksum
    checked (spacy_memcoref.encoder_source), or None for the embedded one."""
    recipe = read_recipe(name)
    encoder = recipe.get("encoder")
    if encoder is None:
        return None
    sys.path.insert(0, str(REPO))
    from spacy_memcoref import encoder_source

    return str(encoder_source.locate(encoder["name"], encoder["sha256"], model=name))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("name", help="the shipped model: a file name of configs/pretrained/ without .json")
    parser.add_argument("--gpu-id", type=int, default=-1)
    parser.add_argument("--dry-run", action="store_true", help="print the commands instead of running them")
    args = parser.parse_args(argv)
    env = dict(os.environ)
    folder = None if args.dry_run else encoder_folder(args.name)
    if folder is not None:  # pretrained-build's --dev score loads the stored form: the same folder
        from spacy_memcoref.encoder_source import ENV_VAR

        env[ENV_VAR] = folder
    if not args.dry_run:
        join_corpora(args.name)
    for command in commands(args.name, args.gpu_id, folder):
        print(shlex.join(command), flush=True)
        if not args.dry_run:
            code = subprocess.call(command, cwd=REPO, env=env)
            if code:
                return code
    return 0


if __name__ == "__main__":
    sys.exit(main())
