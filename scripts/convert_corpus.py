"""Convert s2e's corpus (the one check-data chose and described in its
manifest) to train / dev / test DocBins, and write the test split's key for
the CoNLL scorer:

    python scripts/convert_corpus.py corpus/ontogum/sources.json corpus/ontogum

writes OUTPUT_DIR/train.spacy, dev.spacy, test.spacy and test.key.conll with
the converter the corpus needs (`convert ontogum` for OntoGUM's native files,
`convert conll` for CoNLL-2012), each a `python -m spacy_memcoref` command
whose report (documents, masked documents skipped, clusters) is printed.
"""
import json
import subprocess
import sys
from pathlib import Path


def commands(manifest: dict, out: Path):
    for role in ("train", "dev", "test"):
        split = manifest["splits"][role]
        target = out / f"{role}.spacy"
        if split["format"] == "ontogum":
            yield ["convert", "ontogum", split["path"], str(target), "--split", split["split"], "--splits", split["splits_md"]]
        elif split["format"] == "conll2012":
            yield ["convert", "conll", split["path"], str(target)]
        else:
            raise ValueError(f"unknown corpus format {split['format']!r} for the {role} split")
    yield ["export", "conll", str(out / "test.spacy"), str(out / "test.key.conll")]


def main(argv) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    manifest_path, out = Path(argv[0]), Path(argv[1])
    manifest = json.loads(manifest_path.read_text(encoding="utf8"))
    print(f"corpus: {manifest['name']} ({manifest['license']})")
    for args in commands(manifest, out):
        print("$ python -m spacy_memcoref " + " ".join(args), flush=True)
        code = subprocess.call([sys.executable, "-m", "spacy_memcoref", *args])
        if code != 0:
            return code
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
