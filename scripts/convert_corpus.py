"""Convert s2e's corpus (the one check-data chose and described in its
manifest) to train / dev / test DocBins, and write the test split's key for
the CoNLL scorer:

    python scripts/convert_corpus.py corpus/ontogum/sources.json corpus/ontogum

writes OUTPUT_DIR/train.spacy, dev.spacy, test.spacy and test.key.conll with
the converter the corpus needs (`convert ontogum` for OntoGUM's native files,
`convert conll` for CoNLL-2012), each a `python -m spacy_memcoref` command
whose report (documents, masked documents skipped, clusters) is printed,
then a summary: per split, the documents converted and those skipped as
masked (GUM's Reddit documents, every character an underscore).
"""
import json
import re
import subprocess
import sys
from pathlib import Path


# a converter's report: "wrote PATH: ... N docs, ..., M masked documents skipped (NAMES) (Ts)"
_DOCS_RE = re.compile(r"\b(\d+) docs\b")
_MASKED_RE = re.compile(r"\b(\d+) masked documents skipped(?: \(([^)]*)\))?")


def commands(manifest: dict, out: Path):
    """(split role or None, command arguments) for each step."""
    for role in ("train", "dev", "test"):
        split = manifest["splits"][role]
        target = out / f"{role}.spacy"
        if split["format"] == "ontogum":
            yield role, ["convert", "ontogum", split["path"], str(target), "--split", split["split"], "--splits", split["splits_md"]]
        elif split["format"] == "conll2012":
            yield role, ["convert", "conll", split["path"], str(target)]
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
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    manifest_path, out = Path(argv[0]), Path(argv[1])
    manifest = json.loads(manifest_path.read_text(encoding="utf8"))
    print(f"corpus: {manifest['name']} ({manifest['license']})")
    summary = []
    for role, args in commands(manifest, out):
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
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
