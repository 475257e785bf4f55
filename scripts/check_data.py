"""Check the project's input data before anything runs, and explain what is
missing. Exits 1 (and names every problem) when something is wrong; it never
swaps in other data.

    python scripts/check_data.py --conll TRAIN_DIR DEV_DIR TEST_DIR \
        --gap DEV.tsv VALIDATION.tsv TEST.tsv --people PEOPLE.tsv --package-build sdist

- --conll: each directory must hold CoNLL-2012 files (`*_gold_conll`,
  `*.conll`, ... the names `python -m spacy_memcoref convert conll` reads),
  English only, gold only (the converter reads every `*_conll` file, so
  `*_auto_conll` files beside the gold ones would add every document twice).
- --gap: the GAP TSVs (fetched by `spacy project assets`).
- --people: the people-counting TSV (ID, text, count; a header row).
- --package-build: when it asks for a wheel, `build` (or `wheel`) must be
  installed, as `spacy package --build wheel` needs it; checked here so a
  long run does not fail at its last step.
"""
import argparse
import importlib.util
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

Any corpus in the same 12-column CoNLL-2012 form works the same way (e.g.
OntoGUM, which has no test split: set --vars.conll_test_dir to its dev
folder, and read its test scores as dev scores).
"""


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


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--conll", nargs=3, type=Path, metavar=("TRAIN", "DEV", "TEST"), help="CoNLL-2012 train, dev and test folders")
    parser.add_argument("--gap", nargs=3, type=Path, metavar=("DEVELOPMENT", "VALIDATION", "TEST"), help="GAP TSVs")
    parser.add_argument("--people", type=Path, help="people-counting TSV")
    parser.add_argument("--package-build", default="sdist", help="the formats `spacy package --build` will be asked for")
    args = parser.parse_args(argv)

    problems: List[str] = []
    notes: List[str] = []
    conll_missing = False
    if args.conll:
        for role, path in zip(("train", "dev", "test"), args.conll):
            found = conll_problems(path, role)
            conll_missing = conll_missing or any("does not exist" in p or "holds no" in p or "_skel" in p for p in found)
            problems.extend(found)
        if args.conll[1].resolve() == args.conll[2].resolve():
            notes.append(
                f"the test folder is the dev folder ({args.conll[2]}): the CoNLL 'test' scores are dev scores "
                "(the dev split also picks the best checkpoint)"
            )
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
        if conll_missing:
            print("", file=sys.stderr)
            print(ONTONOTES_HELP, file=sys.stderr)
        return 1
    print("data ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
