"""Write the meta.json that `spacy package --meta-path` ships with a trained
pipeline: the pipeline's own meta.json plus the data it was trained on, with
licenses, so an installed package says where it came from.

    python scripts/package_meta.py training/s2e_ontogum/model-tuned packages/s2e_ontogum.meta.json \
        --manifest corpus/ontogum/sources.json
    python scripts/package_meta.py training/petra/model-tuned packages/petra.meta.json --gap

--manifest: a corpus manifest written by check-data (name, URL, license);
--gap: GAP (google-research-datasets/gap-coreference, Apache-2.0).
"""
import argparse
import json
import os
import sys
from pathlib import Path

GAP = {
    "name": "GAP Coreference Dataset (development: training; validation: checkpoint and threshold)",
    "url": "https://github.com/google-research-datasets/gap-coreference",
    "license": "Apache-2.0",
}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", type=Path, help="the trained pipeline folder (holds meta.json)")
    parser.add_argument("output", type=Path, help="the meta.json to write")
    parser.add_argument("--manifest", type=Path, action="append", default=[], help="a corpus manifest from check-data")
    parser.add_argument("--gap", action="store_true", help="the pipeline was trained on GAP")
    args = parser.parse_args(argv)
    meta_path = args.model / "meta.json"
    if not meta_path.is_file():
        print(f"error: {meta_path} does not exist (train and tune the pipeline first)", file=sys.stderr)
        return 1
    meta = json.loads(meta_path.read_text(encoding="utf8"))
    sources = []
    for path in args.manifest:
        manifest = json.loads(path.read_text(encoding="utf8"))
        sources.append({key: manifest[key] for key in ("name", "url", "license")})
    if args.gap:
        sources.append(dict(GAP))
    if not sources:
        parser.error("name the training data: --manifest FILE and/or --gap")
    meta["sources"] = sources
    trained_on = "; ".join(source["name"] for source in sources)
    meta["description"] = f"spacy_memcoref coreference pipeline trained on {trained_on}."
    args.output.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.output.with_name(args.output.name + ".tmp")
    tmp.write_text(json.dumps(meta, indent=2) + "\n", encoding="utf8")
    os.replace(tmp, args.output)
    print(f"wrote {args.output}: trained on {trained_on}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
