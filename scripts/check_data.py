"""Check the project's input data, and that every step of the workflow can
run, before anything runs, and explain what is missing. Exits 1 (and names
every problem) when something is wrong; it never swaps in other data.

    python scripts/check_data.py --corpus ontogum \
        --ontogum ONTOGUM_DIR SPLITS_MD TEST_SPLIT --conll TRAIN_DIR DEV_DIR TEST_DIR \
        --gap DEV.tsv VALIDATION.tsv TEST.tsv --people PEOPLE.tsv --litbank LITBANK \
        --package-build sdist --workflow all --manifest corpus/ontogum/sources.json

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
- --package-build: the formats `spacy package --build` is asked for (the
  project's package_build variable).
- --workflow (with --project, default project.yml): check that every step of
  this workflow can run, before the first one does, so a long run does not
  fail at its last steps: the modules each step's script lines import (the
  `python -m` modules, the imports of the scripts/ they run, and what a
  command imports only when it runs: matplotlib for `spacy_memcoref
  visualize`, Ray for `annotate --engine ray`), `build` for `spacy package`
  (a wheel needs it; an sdist falls back to the deprecated `setup.py sdist`
  without it) and the programs a line runs (perl for a `*.pl` scorer). Each
  missing piece is named with what to install, e.g.
  `pip install "spacy-memcoref[viz]"`.
"""

import argparse
import ast
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import shlex
import shutil
import sys
from pathlib import Path
from typing import Dict, List, NamedTuple, Optional, Sequence, Tuple

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

# ----- can every step of the workflow run? -------------------------------------------

DISTRIBUTION = "spacy-memcoref"
# optional dependencies a command imports only when it runs:
# (the words after `python -m`, an option and the value that needs it or None, module, extra)
OPTIONAL_IMPORTS: List[Tuple[Tuple[str, ...], Optional[Tuple[str, str]], str, str]] = [
    (("spacy_memcoref", "visualize"), None, "matplotlib", "viz"),
    (("spacy_memcoref", "annotate"), ("--engine", "ray"), "ray", "ray"),
]
PACKAGE_EXTRA = "package"  # `build`, which `spacy package` builds sdists and wheels with


class Need(NamedTuple):
    """Something a step needs: kind "module" (importable), "distribution"
    (installed, by its metadata), "program" (on PATH) or "file"."""

    kind: str
    name: str
    step: str
    why: str
    extra: Optional[str] = None  # spacy-memcoref's extra that installs it
    required: bool = True  # False: the step runs without it, the worse way


def module_installed(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def distribution_installed(name: str) -> bool:
    # as `spacy package` checks `build`: a folder named build/ is no package
    try:
        importlib.metadata.version(name)
        return True
    except importlib.metadata.PackageNotFoundError:
        return False


def _option(tokens: Sequence[str], name: str) -> Optional[str]:
    for i, token in enumerate(tokens[:-1]):
        if token == name:
            return tokens[i + 1]
        if token.startswith(name + "="):
            return token.split("=", 1)[1]
    return None


def script_imports(path: Path) -> List[str]:
    """The top-level modules a Python script imports (absolute imports, anywhere in it)."""
    tree = ast.parse(path.read_text(encoding="utf8"), filename=str(path))
    found: List[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        for name in names:
            top = name.split(".")[0]
            if top not in found and top != "__future__":
                found.append(top)
    return found


def line_needs(line: str, step: str, package_build: str, project_dir: Path) -> List[Need]:
    """What one script line of a step needs. `${vars.*}` in the raw line stay
    as they are, except spacy package's --build, which is package_build."""
    tokens = shlex.split(line)
    if not tokens:
        return []
    needs = [Need("program", "perl", step, f"runs {t}") for t in tokens if t.endswith(".pl")]
    if tokens[0] != "python":
        return [Need("program", tokens[0], step, f"runs {tokens[0]}")] + needs
    if len(tokens) > 1 and tokens[1].endswith(".py"):
        script = project_dir / tokens[1]
        if not script.is_file():
            return needs + [Need("file", tokens[1], step, f"runs {tokens[1]}")]
        needs += [Need("module", m, step, f"{tokens[1]} imports {m}") for m in script_imports(script)]
        if tokens[1] == "scripts/json_report.py":  # json_report.py OUTPUT COMMAND...
            needs += line_needs(shlex.join(tokens[3:]), step, package_build, project_dir)
        elif tokens[1] == "scripts/train.py":  # `spacy train` with the same arguments
            needs += line_needs(
                shlex.join(["python", "-m", "spacy", "train", *tokens[2:]]), step, package_build, project_dir
            )
        return needs
    if len(tokens) < 3 or tokens[1] != "-m":
        return needs
    words = tokens[2:]
    needs.append(Need("module", words[0].split(".")[0], step, f"runs python -m {words[0]}"))
    for command, option, module, extra in OPTIONAL_IMPORTS:
        if tuple(words[: len(command)]) == command and (option is None or _option(words, option[0]) == option[1]):
            needs.append(Need("module", module, step, f"`{' '.join(command)}` imports {module}", extra))
    if words[:2] == ["spacy", "package"]:
        build = _option(words, "--build") or "sdist"
        formats = {f.strip() for f in (package_build if "${" in build else build).split(",")}
        if "wheel" in formats:
            needs.append(
                Need(
                    "distribution",
                    "build",
                    step,
                    "`spacy package --build wheel` builds the wheel with `build`",
                    PACKAGE_EXTRA,
                )
            )
        elif "sdist" in formats:
            needs.append(
                Need(
                    "distribution",
                    "build",
                    step,
                    "`spacy package --build sdist` builds with `build` (without it, the deprecated `setup.py sdist`)",
                    PACKAGE_EXTRA,
                    required=False,
                )
            )
    return needs


def workflow_needs(project: Path, workflow: str, package_build: str) -> List[Need]:
    """What the steps of a workflow of project.yml need, in order."""
    import srsly

    config = srsly.read_yaml(project)
    workflows = config.get("workflows") or {}
    if workflow not in workflows:
        raise ValueError(f"{project} has no workflow {workflow!r} (it has {', '.join(workflows) or 'none'})")
    commands = {cmd["name"]: cmd for cmd in config.get("commands", [])}
    needs: List[Need] = []
    for step in workflows[workflow]:
        for line in commands.get(step, {}).get("script", []):
            needs.extend(line_needs(line, step, package_build, project.parent))
    return needs


def _met(need: Need) -> bool:
    if need.kind == "module":
        return module_installed(need.name)
    if need.kind == "distribution":
        if need.name == "build" and need.required:  # spacy package also builds wheels with `wheel` + setuptools
            return distribution_installed("build") or (module_installed("wheel") and module_installed("setuptools"))
        return distribution_installed(need.name)
    if need.kind == "program":
        return shutil.which(need.name) is not None
    return False  # a file line_needs found missing


def _install_hint(need: Need) -> str:
    if need.extra:
        return f'pip install "{DISTRIBUTION}[{need.extra}]"'
    if need.kind == "module" and need.name == "spacy_memcoref":
        return f"pip install {DISTRIBUTION}"
    if need.kind == "module":
        return f"install the package that provides the module {need.name!r}"
    if need.kind == "program":
        return f"install {need.name} (it must be on PATH)"
    return "restore it from the project's repository"


def workflow_problems(project: Path, workflow: str, package_build: str) -> Tuple[List[str], List[str], List[str]]:
    """(problems, notes, extras to install) for the steps of a workflow."""
    by_need: Dict[Tuple[str, str, bool], List[Need]] = {}
    for need in workflow_needs(project, workflow, package_build):
        by_need.setdefault((need.kind, need.name, need.required), []).append(need)
    problems: List[str] = []
    notes: List[str] = []
    extras: List[str] = []
    for needs in by_need.values():
        need = needs[0]
        if _met(need):
            continue
        steps = list(dict.fromkeys(n.step for n in needs))
        where = f"step{'s' if len(steps) > 1 else ''} {', '.join(steps)}"
        missing = (
            "does not exist"
            if need.kind == "file"
            else "is not on PATH"
            if need.kind == "program"
            else "is not installed"
        )
        message = f"{where}: {need.why}, and {need.name} {missing}: {_install_hint(need)}"
        if not need.required and need.name == "build" and not module_installed("setuptools"):
            message = f"{where}: {need.why}, and neither build nor setuptools is installed: {_install_hint(need)}"
        elif not need.required:  # the step runs, the worse way
            notes.append(message)
            continue
        problems.append(message)
        if need.extra and need.extra not in extras:
            extras.append(need.extra)
    return problems, notes, extras


# ----- the data --------------------------------------------------------------------


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
        absent = [
            n
            for n in names
            if not (root / "conll" / f"{n}.conll").is_file() or not (root / "conllu" / f"{n}.conllu").is_file()
        ]
        if len(absent) == len(names):
            hint = (
                " (a copy without them: score the dev split with --vars.ontogum_test_split dev)"
                if split == test_split != "dev"
                else ""
            )
            problems.append(f"none of the {len(names)} documents of split {split!r} is in {root}{hint}")
        elif absent:
            problems.append(
                f"{len(absent)} of the {len(names)} documents of split {split!r} are not in {root} (e.g. {absent[0]})"
            )
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
        info["splits"] = {
            role: {"format": "conll2012", "path": str(path)} for role, path in zip(("train", "dev", "test"), args.conll)
        }
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
    parser.add_argument(
        "--ontogum",
        nargs=3,
        metavar=("ONTOGUM_DIR", "SPLITS_MD", "TEST_SPLIT"),
        help="OntoGUM's native folder, GUM's splits.md and the split scored as test",
    )
    parser.add_argument(
        "--conll",
        nargs=3,
        type=Path,
        metavar=("TRAIN", "DEV", "TEST"),
        help="CoNLL-2012 train, dev and test folders (OntoNotes)",
    )
    parser.add_argument("--gap", nargs=3, type=Path, metavar=("DEVELOPMENT", "VALIDATION", "TEST"), help="GAP TSVs")
    parser.add_argument("--people", type=Path, help="people-counting TSV")
    parser.add_argument(
        "--litbank", type=Path, help="LitBank's coreference CoNLL files: a folder, or the GitHub archive (.tar.gz)"
    )
    parser.add_argument(
        "--package-build", default="sdist", help="the formats `spacy package --build` will be asked for"
    )
    parser.add_argument(
        "--workflow", help="check that every step of this workflow of --project can run (modules, programs)"
    )
    parser.add_argument("--project", type=Path, default=Path("project.yml"), help="the project.yml of --workflow")
    parser.add_argument(
        "--manifest", type=Path, help="write the chosen corpus's manifest (JSON) here when the data is ready"
    )
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
            conll_missing = conll_missing or any(
                "does not exist" in p or "holds no" in p or "_skel" in p for p in found
            )
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
            notes.append(
                "the OntoGUM split scored as 'test' is dev: its scores are dev scores (dev also picks the best checkpoint)"
            )
    if args.gap:
        hint = (
            "run `python -m spacy project assets` (it downloads the GAP TSVs) or set --vars.gap_dir / --vars.gap_test"
        )
        for what, path in zip(("GAP development", "GAP validation", "GAP test"), args.gap):
            problems.extend(file_problems(path, what, hint))
        if args.gap[2].resolve() == args.gap[1].resolve():
            notes.append(
                f"the GAP test file is the validation file ({args.gap[2]}): PeTra's threshold is tuned on it, "
                "so its 'test' scores are optimistic"
            )
    if args.people:
        problems.extend(
            file_problems(
                args.people, "people-counting TSV", "set --vars.people_tsv to a TSV of ID, text, count (with a header)"
            )
        )
    if args.litbank and not args.litbank.exists():
        problems.append(
            f"LitBank {args.litbank} does not exist: run `python -m spacy project assets` (it fetches LitBank's "
            "coreference files) or set --vars.litbank to a folder of LitBank *.conll files"
        )
    step_problems: List[str] = []
    extras: List[str] = []
    if args.workflow:
        if not args.project.is_file():
            parser.error(f"--project {args.project} does not exist")
        try:
            step_problems, step_notes, extras = workflow_problems(args.project, args.workflow, args.package_build)
        except ValueError as err:
            parser.error(str(err))
        notes.extend(step_notes)
    else:
        formats = {f.strip() for f in args.package_build.split(",")}
        if "wheel" in formats and not _met(Need("distribution", "build", "package", "")):
            step_problems.append(
                f"--vars.package_build {args.package_build} asks for a wheel, which `spacy package` builds with "
                f'`build`: pip install "{DISTRIBUTION}[{PACKAGE_EXTRA}]", or use --vars.package_build sdist'
            )
            extras.append(PACKAGE_EXTRA)

    for note in notes:
        print(f"note: {note}")
    if problems:
        print("The project's input data is not ready:", file=sys.stderr)
        for problem in problems:
            print(f"  - {problem}", file=sys.stderr)
        for text in help_texts:
            print("", file=sys.stderr)
            print(text, file=sys.stderr)
    if step_problems:
        what = f"workflow {args.workflow!r}" if args.workflow else "the project"
        print(f"Not every step of {what} can run: install what is missing first", file=sys.stderr)
        for problem in step_problems:
            print(f"  - {problem}", file=sys.stderr)
        if extras:
            print(f'All the extras at once: pip install "{DISTRIBUTION}[{",".join(extras)}]"', file=sys.stderr)
    if problems or step_problems:
        return 1
    if args.manifest:
        write_json(args.manifest, corpus_manifest(args))
        print(f"wrote {args.manifest}")
    print("data ok" + (f" (s2e corpus: {CORPORA[corpus]['name']})" if corpus else ""))
    if args.workflow:
        print(f"every step of workflow {args.workflow!r} can run")
    return 0


if __name__ == "__main__":
    sys.exit(main())
