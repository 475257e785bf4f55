"""Save a trained pipeline (a shipped model's name or a folder) with some of
its component's settings changed, for `spacy train` to fine-tune through
`[components.memcoref] source = ${paths.source}`.

spaCy builds a sourced component from the source pipeline's own config and
ignores the settings written beside `source`; a setting that training must
see (a memory's size, the memory's loss) is therefore set here, in the
source, before training reads it.

    python scripts/warm_start.py s2e-ontogum training/warm \\
        --set memory_cells=40 --set model.memory_loss_cells=40

A setting is a dotted path under [components.memcoref] (model.X for the
model's) and a JSON value; a path the config does not hold is an error, so
a misspelt setting never trains silently unset.
"""

import argparse
import json
import shutil
import sys
from pathlib import Path
from typing import Any, Dict, List, Tuple

REPO = Path(__file__).resolve().parent.parent
COMPONENT = "memcoref"


def parse_setting(text: str) -> Tuple[str, Any]:
    """ "model.memory_loss_cells=40" -> ("model.memory_loss_cells", 40)."""
    path, sep, value = text.partition("=")
    if not sep or not path:
        raise SystemExit(f"--set {text!r}: expected PATH=VALUE, e.g. memory_cells=40")
    try:
        return path, json.loads(value)
    except json.JSONDecodeError as err:
        raise SystemExit(f"--set {text!r}: the value is not JSON ({err})") from None


def apply_settings(block: Dict[str, Any], settings: List[Tuple[str, Any]], where: str) -> None:
    """Set each dotted path of `settings` in the component's config block
    (in place); every path must exist there already."""
    for path, value in settings:
        parts = path.split(".")
        node = block
        for part in parts[:-1]:
            if not isinstance(node.get(part), dict):
                raise SystemExit(f"{where}: [components.{COMPONENT}] has no section {path.rsplit('.', 1)[0]!r}")
            node = node[part]
        if parts[-1] not in node:
            known = ", ".join(sorted(k for k, v in node.items() if not isinstance(v, dict)))
            raise SystemExit(f"{where}: no setting {path!r} to change (settings there: {known})")
        node[parts[-1]] = value


def warm_start(source: str, output: Path, settings: List[Tuple[str, Any]], replace: bool = False) -> None:
    """Load `source` (a shipped model or a pipeline folder), change its
    component's settings, and save it to `output`: a new folder, or with
    `replace` a pipeline folder written before (a rerun of a stopped recipe)."""
    sys.path.insert(0, str(REPO))
    import spacy

    from spacy_memcoref.loading import load_pipeline

    if output.exists() and any(output.iterdir()):
        if not replace:
            raise SystemExit(f"{output}: exists and is not empty; warm_start writes a new folder (or --replace)")
        if not (output / "config.cfg").is_file():
            raise SystemExit(f"{output}: --replace replaces a pipeline folder, and this one has no config.cfg")
        shutil.rmtree(output)
    nlp = load_pipeline(source)
    if COMPONENT not in nlp.pipe_names:
        raise SystemExit(f"{source}: no {COMPONENT!r} component (pipeline: {nlp.pipe_names})")
    config = nlp.config.copy()
    apply_settings(config["components"][COMPONENT], settings, source)
    # the weights as trained, under the changed settings: rebuild the pipeline
    # from the new config and move the trained state into it whole
    changed = spacy.util.load_model_from_config(config, auto_fill=False, validate=True)
    # (its own config kept: the source's would write the old settings back)
    changed.from_bytes(nlp.to_bytes(exclude=["config.cfg"]), exclude=["config.cfg"])
    output.parent.mkdir(parents=True, exist_ok=True)
    changed.to_disk(output)
    print(f"{source} -> {output}: " + ", ".join(f"{path} = {json.dumps(value)}" for path, value in settings))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("source", help="a shipped model's name (as spacy_memcoref.load takes it) or a pipeline folder")
    parser.add_argument("output", type=Path, help="the folder to write (new)")
    parser.add_argument("--replace", action="store_true", help="replace OUTPUT if it is a pipeline folder")
    parser.add_argument("--set", dest="settings", action="append", default=[], metavar="PATH=VALUE")
    args = parser.parse_args(argv)
    warm_start(args.source, args.output, [parse_setting(s) for s in args.settings], args.replace)
    return 0


if __name__ == "__main__":
    sys.exit(main())
