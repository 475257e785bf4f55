"""Convert s2e's corpus (the one check-data chose and described in its
manifest) to train / dev / test DocBins, and write the test split's key for
the CoNLL scorer:

    python scripts/convert_corpus.py corpus/ontogum/sources.json corpus/ontogum [--gum-entities DIR]

writes OUTPUT_DIR/train.spacy, dev.spacy, test.spacy and test.key.conll with
the converter the corpus needs (`convert ontogum` for OntoGUM's native files,
`convert conll` for CoNLL-2012), each a `python -m spacy_memcoref` command
whose report (documents, masked documents skipped, clusters) is printed,
then a summary: per split, the documents converted and those skipped as
masked (GUM's Reddit documents, every character an underscore).

With `--gum-entities DIR` (GUM's dep/ folder) and an OntoGUM corpus, the
train split also gets GUM's own entity layer (every mention, singletons
included, with type and information status) for s2e's auxiliary losses;
when DIR does not exist, or the corpus is not OntoGUM, the train split is
converted without it and the summary says so.
"""

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Optional, Tuple


# a converter's report: "wrote PATH: ... N docs, ..., M masked documents skipped (NAMES) (Ts)"
_DOCS_RE = re.compile(r"\b(\d+) docs\b")
_MASKED_RE = re.compile(r"\b(\d+) masked documents skipped(?: \(([^)]*)\))?")


def gum_layer_note(manifest: dict, gum_entities: Optional[Path]) -> Tuple[bool, str]:
    """Whether the train split gets GUM's entity layer, and the line that says so."""
    if gum_entities is None:
        return False, "GUM's entity layer: not asked for (--gum-entities)"
    if manifest["splits"]["train"]["format"] != "ontogum":
        return False, "GUM's entity layer: not added (the corpus is not OntoGUM)"
    if not gum_entities.is_dir():
        return (
            False,
            f"GUM's entity layer: not added ({gum_entities} does not exist); the all-mentions scorer learns from the cluster mentions only, and the singleton, entity-type and information-status losses refuse train.spacy",
        )
    return True, f"GUM's entity layer: added to the train split from {gum_entities}"


def commands(manifest: dict, out: Path, gum_entities: Optional[Path] = None):
    """(split role or None, command arguments) for each step."""
    with_gum, _ = gum_layer_note(manifest, gum_entities)
    for role in ("train", "dev", "test"):
        split = manifest["splits"][role]
        target = out / f"{role}.spacy"
        extra = ["--gum-entities", str(gum_entities)] if with_gum and role == "train" else []
        if split["format"] == "ontogum":
            yield (
                role,
                [
                    "convert",
                    "ontogum",
                    split["path"],
                    str(target),
                    "--split",
                    split["split"],
                    "--splits",
                    split["splits_md"],
                    *extra,
                ],
            )
        elif split["format"] == "conll2012":
            yield role, ["convert", "conll", split["path"], str(target), *extra]
        else:
            raise ValueError(f"unknown corpus format {split['format']!r} for the {role} split")
    yield None, ["export", "conll", str(out / "test.spacy"), str(out / "test.key.conll")]


def split_summary(role: str, report: str) -> str:
    """One line for a split from its converter's report: documents converted,
    documents skipped as masked (and which)."""
    docs, masked = _DOCS_RE.search(report), _MASKED_RE.search(report)
    if docs is None or masked is None:
        return f"{role}: (no converter report found)"
    names = f" ({masked.group(2)})" if masked.group(1) != "0" and masked.group(2) else ""  # not the "(0.0s)" after 0
    return f"{role}: {docs.group(1)} documents converted, {masked.group(1)} skipped as masked{names}"


def main(argv) -> int:
    gum_entities = None
    if len(argv) == 4 and argv[2] == "--gum-entities":
        gum_entities, argv = Path(argv[3]), argv[:2]
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    manifest_path, out = Path(argv[0]), Path(argv[1])
    manifest = json.loads(manifest_path.read_text(encoding="utf8"))
    print(f"corpus: {manifest['name']} ({manifest['license']})")
    summary = []
    for role, args in commands(manifest, out, gum_entities):
        print("$ python -m spacy_memcoref " + " ".join(args), flush=True)
        proc = subprocess.run([sys.executable, "-m", "spacy_memcoref", *args], stdout=subprocess.PIPE, text=True)
        print(proc.stdout, end="", flush=True)
        if proc.returncode != 0:
            return proc.returncode
        if role is not None:
            summary.append(split_summary(role, proc.stdout))
    print("documents per split:")
    for line in summary:
        print(f"  {line}")
    print(gum_layer_note(manifest, gum_entities)[1])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
