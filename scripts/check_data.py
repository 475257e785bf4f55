"""Check the project's input data before anything runs, and explain what is
missing. Exits 1 (and names every problem) when something is wrong; it never
swaps in other data.

    python scripts/check_data.py --corpus ontogum \
        --ontogum ONTOGUM_DIR SPLITS_MD TEST_SPLIT --conll TRAIN_DIR DEV_DIR TEST_DIR \
        --gap DEV.tsv VALIDATION.tsv TEST.tsv --people PEOPLE.tsv --litbank LITBANK \
        --package-build sdist --manifest corpus/ontogum/sources.json

- --corpus: s2e's corpus, `ontogum` (public, fetched by `spacy project
  assets`) or `ontonotes` (LDC-licensed, provided by the user). Only the
  chosen corpus is checked.
- --ontogum: OntoGUM's native folder (conll/ and conllu/, as coref/ontogum/
  in the GUM repository), GUM's splits.md, and the split scored as "test"
  (test, test2 = GENTLE, or dev where a copy has no test documents).
- --conll: each directory must hold CoNLL-2012 files (`*_gold_conll`,
  `*.conll`, ... the names `python -m spacy_memcoref convert conll` reads),
  English only, gold only (the converter reads every `*_conll` file, so
  `*_auto_conll` files beside the gold ones would add every document twice).
- --litbank: LitBank's coreference CoNLL files, a folder or the GitHub
  archive (.tar.gz) that `spacy project assets` fetches.
- --manifest: where to write what the chosen corpus is made of (paths, split
  names, a digest of the files' bytes): `convert-corpus` reads it, and
  `spacy project run` reruns the conversion when it changes.
- --gap: the GAP TSVs (fetched by `spacy project assets`).
- --people: the people-counting TSV (ID, text, count; a header row).
- --package-build: when it asks for a wheel, `build` (or `wheel`) must be
  installed, as `spacy package --build wheel` needs it; checked here so a
  long run does not fail at its last step.
"""
import argparse
import hashlib
import importlib.util
import json
import os
import sys
from pathlib import Path
from typing import List

CONLL_SUFFIXES = ("_conll", ".conll")  # what `convert conll` reads

ONTONOTES_HELP = """\
OntoNotes 5.0 is licensed by the LDC and cannot be downloaded by this project.
Provide its CoNLL-2012 files (*_gold_conll) in one of the two usual ways:

  1. Rebuild them from LDC OntoNotes 5.0 (LDC2013T19) with the CoNLL-2012
     skeleton files and scripts (conll-2012-train.v4, conll-2012-development.v4,
     conll-2012-test-key and conll-2012-scripts.v3 from the CoNLL-2012 shared
     task page):
       conll-2012/v3/scripts/skeleton2conll.sh -D ontonotes-release-5.0/data/files/data conll-2012
     then point the project at the English gold files:
       --vars.conll_train_dir conll-2012/v4/data/train/data/english
       --vars.conll_dev_dir   conll-2012/v4/data/development/data/english
       --vars.conll_test_dir  conll-2012/v4/data/test/data/english
     (delete or move the *_auto_conll files the script also writes).
  2. Use an existing copy, e.g. the usual train/dev/test.english.v4_gold_conll
     files: put one in each of assets/ontonotes/train, dev and test (or set
     --vars.conll_dir to a folder with train/, dev/ and test/ in it).

No LDC license? OntoGUM is public and needs no file by hand:
  python -m spacy project assets && python -m spacy project run all --vars.corpus ontogum
"""

ONTOGUM_HELP = """\
OntoGUM (GUM's coreference in the OntoNotes scheme) is a project asset:
`python -m spacy project assets` fetches coref/ontogum/ and splits.md of the GUM
repository at tag V11.1.0 (github.com/amir-zeldes/gum) into --vars.ontogum_dir and
--vars.ontogum_splits. A copy elsewhere works the same: point those two at it.
"""

CORPORA = {
    "ontogum": {
        "name": "OntoGUM (GUM V11.1.0, coref/ontogum)",
        "url": "https://github.com/amir-zeldes/gum",
        "license": "annotations CC-BY-4.0; texts under the licenses in GUM's LICENSE.txt (Reddit texts are not distributed)",
    },
    "ontonotes": {
        "name": "OntoNotes 5.0 (CoNLL-2012 English)",
        "url": "https://catalog.ldc.upenn.edu/LDC2013T19",
        "license": "LDC User Agreement for Non-Members: models trained on it may be restricted; check your license before shipping",
    },
}

def conll_problems(path: Path, role: str) -> List[str]:
    if not path.exists():
        return [f"{role} CoNLL-2012 folder {path} does not exist"]
    if path.is_file():
        return [] if path.name.endswith(CONLL_SUFFIXES) else [f"{role}: {path} is not a *_conll / *.conll file"]
    files = sorted(p for p in path.rglob("*") if p.is_file() and p.name.endswith(CONLL_SUFFIXES))
    if not files:
        skel = [p for p in path.rglob("*_skel") if p.is_file()]
        if skel:
            return [
                f"{role} folder {path} holds {len(skel)} *_skel skeleton files but no *_conll files: "
                "run the CoNLL-2012 skeleton2conll.sh script over it with your OntoNotes 5.0 copy first"
            ]
        return [f"{role} folder {path} holds no CoNLL-2012 files (*_gold_conll, *_conll, *.conll)"]
    problems = []
    auto = [p for p in files if p.name.endswith("_auto_conll")]
    if auto:
        problems.append(
            f"{role} folder {path} holds {len(auto)} *_auto_conll files (e.g. {auto[0]}) beside the gold ones; "
            "the converter reads every *_conll file, so each document would be read twice: "
            "remove or move the *_auto_conll files"
        )
    foreign = [p for p in files if {"arabic", "chinese"} & set(p.relative_to(path).parts)]
    if foreign:
        problems.append(
            f"{role} folder {path} holds {len(foreign)} Arabic/Chinese files (e.g. {foreign[0]}): "
            "point the project at the data/english subfolder"
        )
    return problems


def file_problems(path: Path, what: str, hint: str) -> List[str]:
    if path.is_file():
        return []
    return [f"{what} {path} does not exist: {hint}"]


def ontogum_problems(root: Path, splits_md: Path, test_split: str) -> List[str]:
    """What is wrong with an OntoGUM native copy for train / dev / test_split."""
    missing = [str(root / sub) for sub in ("conll", "conllu") if not (root / sub).is_dir()]
    if missing:
        return [f"OntoGUM folder {' and '.join(missing)} does not exist"]
    if not splits_md.is_file():
        return [f"GUM's splits.md {splits_md} does not exist"]
    from spacy_memcoref.corpora.ontogum import read_splits
    from spacy_memcoref.errors import DataFormatError

    try:
        splits = read_splits(splits_md)
    except (DataFormatError, OSError) as err:
        return [str(err)]
    problems = []
    for split in ("train", "dev", test_split):
        names = splits.get(split)
        if not names:
            problems.append(f"{splits_md} has no split {split!r} (it has {', '.join(splits) or 'none'})")
            continue
        absent = [n for n in names if not (root / "conll" / f"{n}.conll").is_file() or not (root / "conllu" / f"{n}.conllu").is_file()]
        if len(absent) == len(names):
            hint = " (a copy without them: score the dev split with --vars.ontogum_test_split dev)" if split == test_split != "dev" else ""
            problems.append(f"none of the {len(names)} documents of split {split!r} is in {root}{hint}")
        elif absent:
            problems.append(f"{len(absent)} of the {len(names)} documents of split {split!r} are not in {root} (e.g. {absent[0]})")
    return problems


def digest(paths: List[Path]) -> str:
    """MD5 of the files' names and bytes, in sorted order: changes when the data does."""
    md5 = hashlib.md5()
    for path in sorted(set(paths)):
        md5.update(str(path).encode("utf8") + b"\0")
        md5.update(path.read_bytes())
    return md5.hexdigest()


def conll_files(path: Path) -> List[Path]:
    if path.is_file():
        return [path]
    return sorted(p for p in path.rglob("*") if p.is_file() and p.name.endswith(CONLL_SUFFIXES))


def corpus_manifest(args) -> dict:
    """What convert-corpus converts: the corpus, its three splits and a digest."""
    info = dict(CORPORA[args.corpus], corpus=args.corpus)
    if args.corpus == "ontogum":
        root, splits_md, test_split = Path(args.ontogum[0]), Path(args.ontogum[1]), args.ontogum[2]
        info["splits"] = {
            role: {"format": "ontogum", "path": str(root), "splits_md": str(splits_md), "split": split}
            for role, split in (("train", "train"), ("dev", "dev"), ("test", test_split))
        }
        files = [splits_md] + [p for sub in ("conll", "conllu") for p in (root / sub).iterdir() if p.is_file()]
        info["test_is_dev"] = test_split == "dev"
    else:
        info["splits"] = {role: {"format": "conll2012", "path": str(path)} for role, path in zip(("train", "dev", "test"), args.conll)}
        files = [f for path in args.conll for f in conll_files(path)]
        info["test_is_dev"] = args.conll[1].resolve() == args.conll[2].resolve()
    info["digest"] = digest(files)
    return info


def write_json(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf8")
    os.replace(tmp, path)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", choices=sorted(CORPORA), help="s2e's corpus: ontogum (public) or ontonotes (LDC)")
    parser.add_argument("--ontogum", nargs=3, metavar=("ONTOGUM_DIR", "SPLITS_MD", "TEST_SPLIT"), help="OntoGUM's native folder, GUM's splits.md and the split scored as test")
    parser.add_argument("--conll", nargs=3, type=Path, metavar=("TRAIN", "DEV", "TEST"), help="CoNLL-2012 train, dev and test folders (OntoNotes)")
    parser.add_argument("--gap", nargs=3, type=Path, metavar=("DEVELOPMENT", "VALIDATION", "TEST"), help="GAP TSVs")
    parser.add_argument("--people", type=Path, help="people-counting TSV")
    parser.add_argument("--litbank", type=Path, help="LitBank's coreference CoNLL files: a folder, or the GitHub archive (.tar.gz)")
    parser.add_argument("--package-build", default="sdist", help="the formats `spacy package --build` will be asked for")
    parser.add_argument("--manifest", type=Path, help="write the chosen corpus's manifest (JSON) here when the data is ready")
    args = parser.parse_args(argv)
    corpus = args.corpus or ("ontonotes" if args.conll else None)
    if args.manifest and corpus is None:
        parser.error("--manifest needs --corpus")
    if corpus == "ontogum" and not args.ontogum:
        parser.error("--corpus ontogum needs --ontogum ONTOGUM_DIR SPLITS_MD TEST_SPLIT")
    if corpus == "ontonotes" and not args.conll:
        parser.error("--corpus ontonotes needs --conll TRAIN DEV TEST")
    args.corpus = corpus

    problems: List[str] = []
    notes: List[str] = []
    help_texts: List[str] = []
    if corpus == "ontonotes":
        conll_missing = False
        for role, path in zip(("train", "dev", "test"), args.conll):
            found = conll_problems(path, role)
            conll_missing = conll_missing or any("does not exist" in p or "holds no" in p or "_skel" in p for p in found)
            problems.extend(found)
        if conll_missing:
            help_texts.append(ONTONOTES_HELP)
        if args.conll[1].resolve() == args.conll[2].resolve():
            notes.append(
                f"the test folder is the dev folder ({args.conll[2]}): the CoNLL 'test' scores are dev scores "
                "(the dev split also picks the best checkpoint)"
            )
    elif corpus == "ontogum":
        root, splits_md, test_split = Path(args.ontogum[0]), Path(args.ontogum[1]), args.ontogum[2]
        found = ontogum_problems(root, splits_md, test_split)
        problems.extend(found)
        if any("does not exist" in p for p in found):
            help_texts.append(ONTOGUM_HELP)
        if test_split == "dev":
            notes.append("the OntoGUM split scored as 'test' is dev: its scores are dev scores (dev also picks the best checkpoint)")
    if args.gap:
        hint = "run `python -m spacy project assets` (it downloads the GAP TSVs) or set --vars.gap_dir / --vars.gap_test"
        for what, path in zip(("GAP development", "GAP validation", "GAP test"), args.gap):
            problems.extend(file_problems(path, what, hint))
        if args.gap[2].resolve() == args.gap[1].resolve():
            notes.append(
                f"the GAP test file is the validation file ({args.gap[2]}): PeTra's threshold is tuned on it, "
                "so its 'test' scores are optimistic"
            )
    if args.people:
        problems.extend(file_problems(args.people, "people-counting TSV", "set --vars.people_tsv to a TSV of ID, text, count (with a header)"))
    if args.litbank and not args.litbank.exists():
        problems.append(
            f"LitBank {args.litbank} does not exist: run `python -m spacy project assets` (it fetches LitBank's "
            "coreference files) or set --vars.litbank to a folder of LitBank *.conll files"
        )
    formats = {f.strip() for f in args.package_build.split(",")}
    if "wheel" in formats and not (importlib.util.find_spec("build") or importlib.util.find_spec("wheel")):
        problems.append(
            f"--vars.package_build {args.package_build} asks for a wheel, which `spacy package` builds with the "
            "`build` package: `pip install build`, or use --vars.package_build sdist"
        )

    for note in notes:
        print(f"note: {note}")
    if problems:
        print("The project's input data is not ready:", file=sys.stderr)
        for problem in problems:
            print(f"  - {problem}", file=sys.stderr)
        for text in help_texts:
            print("", file=sys.stderr)
            print(text, file=sys.stderr)
        return 1
    if args.manifest:
        write_json(args.manifest, corpus_manifest(args))
        print(f"wrote {args.manifest}")
    print("data ok" + (f" (s2e corpus: {CORPORA[corpus]['name']})" if corpus else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
