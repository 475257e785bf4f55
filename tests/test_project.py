"""The spaCy project (project.yml), its helper scripts and demo data, and
shipping a trained pipeline with `spacy package`.

Cheap tests read project.yml as `spacy project` does and check that every
command refers to files, CLI commands, options and config settings that
exist, that the demo is `all` run on the demo's variables, and that the demo
data converts. The slow test packages a tiny trained pipeline, installs the wheel
into a fresh virtual environment and loads it there by name.
"""

import copy
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List, Optional, Set

import pytest
import srsly

from conftest import TRAIN, load_script

REPO = Path(__file__).resolve().parent.parent
PROJECT = REPO / "project.yml"
SCRIPTS = REPO / "scripts"
OUTPUT_ROOTS = ("corpus", "training", "metrics", "visuals", "packages")
SHARED = Path(os.environ.get("MEMCOREF_SHARED", REPO.parent / "shared"))


# ----- reading project.yml as weasel does ------------------------------------------


def raw_project() -> dict:
    return srsly.read_yaml(PROJECT)


def load_project(overrides: Optional[Dict[str, object]] = None) -> dict:
    """project.yml validated and with its variables substituted, as `spacy
    project run` loads it (without creating its directories)."""
    from weasel.schemas import ProjectConfigSchema, validate
    from weasel.util.config import substitute_project_variables
    from weasel.util.validation import validate_project_commands

    config = raw_project()
    errors = validate(ProjectConfigSchema, config)
    assert not errors, errors
    validate_project_commands(config)
    return substitute_project_variables(copy.deepcopy(config), overrides or {})


def commands(config: dict) -> Dict[str, dict]:
    return {cmd["name"]: cmd for cmd in config["commands"]}


# what the demo passes on from its own variables to `all` (the variables the two share)
DEMO_PASSES_ON = ("corpus", "gpu_id", "s2e_config", "petra_config", "package_version")
DEMO_RUNS = ["python", "-m", "spacy", "project", "run", "all", "."]


def demo_overrides(overrides: Optional[Dict[str, object]] = None) -> Dict[str, object]:
    """The variables the demo command runs `all` with (`spacy project run
    demo` with these overrides), parsed as `spacy project run` parses them."""
    from weasel.util import parse_config_overrides

    (line,) = commands(load_project(overrides))["demo"]["script"]
    tokens = shlex.split(line)
    assert tokens[: len(DEMO_RUNS)] == DEMO_RUNS, line
    return parse_config_overrides(tokens[len(DEMO_RUNS) :])


def _norm(path: str) -> str:
    return path.rstrip("/")


# ----- checking one script line against the CLIs it calls ---------------------------


def _click_command(app):
    import typer.main

    return typer.main.get_command(app)


def _check_click_args(cmd, args: List[str], where: str, *, extra_dotted: bool = False) -> List[str]:
    """Check options and the number of positional arguments of a click
    command; returns the positional arguments (and, with extra_dotted, the
    `--section.key` overrides are returned as 'override:' entries)."""
    # duck-typed: typer vendors its own copy of click
    options = {}
    for param in cmd.params:
        if param.param_type_name == "option":
            for opt in param.opts + param.secondary_opts:
                options[opt] = param
    arguments = [p for p in cmd.params if p.param_type_name == "argument"]
    positional: List[str] = []
    overrides: List[str] = []
    i = 0
    while i < len(args):
        tok = args[i]
        if tok.startswith("--") and "." in tok and extra_dotted:
            assert i + 1 < len(args), f"{where}: override {tok} has no value"
            overrides.append(f"override:{tok[2:]}={args[i + 1]}")
            i += 2
            continue
        if tok.startswith("-") and len(tok) > 1 and not re.fullmatch(r"-\d+", tok):
            assert tok in options, f"{where}: {cmd.name} has no option {tok} (has {sorted(options)})"
            i += 1 if options[tok].is_flag else 2
            continue
        positional.append(tok)
        i += 1
    required = sum(1 for a in arguments if a.required)
    assert required <= len(positional) <= len(arguments), (
        f"{where}: {cmd.name} takes {required} to {len(arguments)} arguments, got {positional}"
    )
    return positional + overrides


def _config_has(config, dotted: str) -> bool:
    node = config
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
    return True


def check_script_line(line: str, where: str) -> None:
    """A script line calls a CLI command that exists, with options it has,
    or a helper script that exists (whose wrapped command is checked too)."""
    tokens = shlex.split(line)
    assert tokens[0] == "python", f"{where}: scripts start with `python` (run by spacy's interpreter): {line}"
    if tokens[1] == "-m" and tokens[2] == "spacy_memcoref":
        from spacy_memcoref.cli import app

        cmd = _click_command(app)
        rest = tokens[3:]
        while hasattr(cmd, "commands") and rest and rest[0] in cmd.commands:
            cmd = cmd.commands[rest[0]]
            rest = rest[1:]
        assert not hasattr(cmd, "commands"), f"{where}: `spacy_memcoref {' '.join(tokens[3:5])}` is not a command"
        _check_click_args(cmd, rest, where)
    elif tokens[1] == "-m" and tokens[2] == "spacy":
        from spacy.cli import app

        group = _click_command(app)
        assert tokens[3] in group.commands, f"{where}: `spacy {tokens[3]}` is not a command"
        if tokens[3] == "project":  # the demo: a workflow of this project, on other variables
            assert tokens[4:7] == ["run", tokens[5], "."] and tokens[5] in raw_project()["workflows"], (
                f"{where}: {line}"
            )
            assert all(t.startswith("--vars.") for t in tokens[7::2]), f"{where}: only --vars.* overrides: {line}"
            return
        cmd = group.commands[tokens[3]]
        found = _check_click_args(cmd, tokens[4:], where, extra_dotted=tokens[3] == "train")
        if tokens[3] == "train":
            from spacy.util import load_config

            config_path = REPO / found[0]
            assert config_path.is_file(), f"{where}: no config {found[0]}"
            config = load_config(config_path, interpolate=False)
            for item in found[1:]:
                assert item.startswith("override:"), f"{where}: unexpected argument {item}"
                key = item[len("override:") :].split("=", 1)[0]
                assert _config_has(config, key), f"{where}: {found[0]} has no setting {key}"
        if tokens[3] == "package":
            build = tokens[tokens.index("--build") + 1]
            assert set(build.split(",")) <= {"sdist", "wheel", "none"}, f"{where}: --build {build}"
    else:
        script = REPO / tokens[1]
        assert tokens[1].startswith("scripts/") and script.is_file(), f"{where}: no script {tokens[1]}"
        if tokens[1] == "scripts/json_report.py":
            check_script_line(shlex.join(tokens[3:]), where)
        if tokens[1] == "scripts/train.py":  # `spacy train`, less the "config" overrides: check them all
            # (less the wrapper's own --s2e: the trained s2e a fine-tuning config starts from)
            args, _ = load_script("train").take_option(tokens[2:], "--s2e")
            check_script_line(shlex.join(["python", "-m", "spacy", "train", *args]), where)


# ----- cheap tests: project.yml ------------------------------------------------------


def test_project_loads_and_every_command_is_in_a_workflow():
    config = load_project()
    names = [cmd["name"] for cmd in config["commands"]]
    assert set(config["workflows"]) == {"all", "pretrained", "entity-typing"}
    in_workflows = {step for steps in config["workflows"].values() for step in steps}
    # the demo is one command, which runs the workflow `all` on other variables
    assert set(names) == in_workflows | {"demo"} and "demo" not in in_workflows
    # the shipped models are rebuilt from the public data the default route converts
    assert config["workflows"]["pretrained"] == ["check-data", "convert-gap", "convert-corpus", "train-pretrained"]
    # the downstream experiment is a workflow of its own (hours on CPU), not a step of `all` or the demo
    assert config["workflows"]["entity-typing"] == ["entity-typing-data", "entity-typing-train", "entity-typing-report"]
    assert not set(config["workflows"]["entity-typing"]) & set(config["workflows"]["all"])


@pytest.mark.parametrize("demo", [False, True])
def test_interpolated_lists_keep_their_items(demo):
    # confection joins an item that is nothing but "${vars...}" with the next
    # item when that one starts with "${": ["${vars.a}", "${vars.b}/x"] -> ["A, B/x"]
    raw = commands(raw_project())
    loaded = commands(load_project(demo_overrides() if demo else None))
    directories = load_project(demo_overrides() if demo else None)["directories"]
    assert len(directories) == len(raw_project()["directories"]) and not any(", " in d for d in directories)
    for name, cmd in raw.items():
        for key in ("script", "deps", "outputs", "outputs_no_cache"):
            assert len(loaded[name].get(key, [])) == len(cmd.get(key, [])), f"{name}.{key}"
            for item in loaded[name].get(key, []):
                assert ", " not in item or key == "script", f"{name}.{key}: {item!r}"


@pytest.mark.parametrize("overrides", [{}, {"vars.encoder": "roberta-base", "vars.gpu_id": 0}])
def test_every_script_line_calls_something_that_exists(overrides):
    for name, cmd in commands(load_project(overrides)).items():
        assert cmd.get("help"), f"{name} has no help"
        for i, line in enumerate(cmd["script"]):
            check_script_line(line, f"{name}, script line {i + 1}")


def _produced_by_earlier(path: str, outputs: Set[str]) -> bool:
    path = _norm(path)
    return any(path == out or path.startswith(out + "/") for out in outputs)


@pytest.mark.parametrize("workflow", ["all", "demo", "entity-typing"])
def test_deps_exist_or_come_from_earlier_steps_or_assets(workflow):
    # the demo: the steps of `all` on the demo's variables
    config = load_project(demo_overrides() if workflow == "demo" else None)
    cmds = commands(config)
    assets = {_norm(asset["dest"]) for asset in config["assets"]}
    produced: Set[str] = set()
    for step in config["workflows"]["all" if workflow == "demo" else workflow]:
        cmd = cmds[step]
        joined = " ".join(cmd["script"])
        for dep in cmd.get("deps", []):
            assert _produced_by_earlier(dep, produced) or _norm(dep) in assets or (REPO / dep).exists(), (
                f"{step}: dependency {dep} is no asset, no earlier output and not in the repository"
            )
            assert _norm(dep) in joined, f"{step}: dependency {dep} is not used by its script"
        for out in cmd.get("outputs", []):
            assert out.split("/")[0] in OUTPUT_ROOTS, f"{step}: output {out} outside {OUTPUT_ROOTS}"
            # written by the script: the path, or a folder it is in (spacy train --output, spacy package)
            assert any(
                _norm(out) == tok or _norm(out).startswith(tok.rstrip("/") + "/") for tok in shlex.split(joined)
            ), f"{step}: output {out} is not written by its script"
            produced.add(_norm(out))
        assert cmd.get("outputs") or step.endswith("check-data"), (
            f"{step} declares no outputs: it would rerun every time"
        )


def test_demo_outputs_never_touch_the_real_ones():
    real = {o for c in load_project()["commands"] for o in c.get("outputs", [])}
    demo = load_project(demo_overrides())
    steps = commands(demo)
    for step in demo["workflows"]["all"]:
        for out in steps[step].get("outputs", []):
            assert out.split("/")[1] == "demo", out
            assert not any(out.startswith(r + "/") or r.startswith(out + "/") or r == out for r in real), out
    # spacy package writes into packages/demo, which the run creates first (project.yml's directories)
    assert demo["directories"][-5:] == [f"{root}/demo" for root in OUTPUT_ROOTS]
    assert load_project()["directories"][-5:] == list(OUTPUT_ROOTS)


@pytest.mark.parametrize("corpus", ["ontogum", "ontonotes"])
def test_the_demo_runs_all_on_the_demo_variables(corpus):
    """`spacy project run demo` is `spacy project run all` with other
    variables: each one it sets exists and is used by a step of `all`, the
    variables the demo shares with `all` are passed on, and every step reads
    the demo's data (assets/demo/), never the real data, and writes under
    */demo/."""
    raw = raw_project()
    overrides = demo_overrides({"vars.corpus": corpus})
    (line,) = commands(raw)["demo"]["script"]
    names = [tok[len("--vars.") :] for tok in shlex.split(line)[len(DEMO_RUNS) :: 2]]
    assert len(names) == len(set(names)) == len(overrides), "a variable set twice"
    assert all(key.startswith("vars.") for key in overrides)
    # each variable it sets exists, and a step of `all` uses it (or another variable it sets the default of)
    steps = [c for c in raw["commands"] if c["name"] in raw["workflows"]["all"]]
    used_text = json.dumps(steps) + json.dumps(raw["directories"])
    for name in names:
        assert name in raw["vars"], f"the demo sets --vars.{name}, which project.yml does not have"
        users = [k for k, v in raw["vars"].items() if isinstance(v, str) and f"${{vars.{name}}}" in v]
        assert f"${{vars.{name}}}" in used_text or any(f"${{vars.{u}}}" in used_text for u in users), (
            f"the demo sets --vars.{name}, which no step of `all` uses"
        )
    # it passes on the variables the two share (so `spacy project run demo . --vars.corpus ontonotes` works)
    for name in DEMO_PASSES_ON:
        assert f"--vars.{name} ${{vars.{name}}} " in line, name
    assert overrides["vars.corpus"] == corpus
    # the demo's own values: the embedded MiniLM, few steps, its own package names
    assert {
        k: overrides[f"vars.{k}"]
        for k in (
            "encoder",
            "s2e_max_steps",
            "s2e_eval_frequency",
            "petra_max_steps",
            "petra_eval_frequency",
            "num_cells",
            "memory_cells",
            "visualize_limit",
            "s2e_package",
            "petra_package",
            "package_build",
            "output_suffix",
        )
    } == {
        "encoder": None,
        "s2e_max_steps": 8,
        "s2e_eval_frequency": 4,
        "petra_max_steps": 20,
        "petra_eval_frequency": 10,
        "num_cells": 4,
        "memory_cells": 8,
        "visualize_limit": 2,
        "s2e_package": f"memcoref_s2e_{corpus}_demo",
        "petra_package": "memcoref_petra_demo",
        "package_build": "sdist",
        "output_suffix": "/demo",
    }
    # every input is the demo's (offline: no asset to fetch) and no output is a real one
    config = load_project(overrides)
    cmds = commands(config)
    for step in config["workflows"]["all"]:
        cmd = cmds[step]
        for token in shlex.split(" ".join(cmd["script"])) + cmd.get("deps", []):
            if token.startswith("assets/"):
                assert token.startswith("assets/demo/"), f"{step} reads {token}, not the demo's data"
            if token.split("/")[0] in OUTPUT_ROOTS:
                assert token.split("/")[1] == "demo", f"{step}: {token}"
        for out in cmd.get("outputs", []):
            assert out.split("/")[1] == "demo", out
    assert f"--corpus {corpus} " in cmds["check-data"]["script"][0]
    assert cmds["package-s2e"]["outputs"][-1] == f"packages/demo/en_memcoref_s2e_{corpus}_demo-0.1.0"


def test_var_defaults_are_the_configs_own_values():
    from spacy.util import load_config

    variables = raw_project()["vars"]
    # "config": scripts/train.py leaves the override out, so each config trains as it says
    for name in (
        "s2e_max_steps",
        "s2e_eval_frequency",
        "petra_max_steps",
        "petra_eval_frequency",
        "petra_entities_max_steps",
        "petra_entities_eval_frequency",
        "num_cells",
        "memory_cells",
    ):
        assert variables[name] == "config", name
    for path in sorted((REPO / "configs").glob("*.cfg")):
        config = load_config(path, interpolate=False)
        # a max_steps override moves the end of the schedule too (the lines pass both)
        assert config["training"]["optimizer"]["learn_rate"]["total_steps"] in (
            config["training"]["max_steps"],
            "${training.max_steps}",
        ), path
    for step in ("train-s2e", "train-petra", "train-petra-entities"):
        (command,) = [c for c in raw_project()["commands"] if c["name"] == step]
        assert command["script"][0].startswith("python scripts/train.py ")
        max_steps = command["script"][0].split("--training.max_steps ")[1].split()[0]
        assert f"--training.optimizer.learn_rate.total_steps {max_steps} " in command["script"][0]
    # the config's own encoder (the MiniLM presets: the embedded one; the base presets: all-mpnet-base-v2)
    assert variables["encoder"] == "config"
    assert demo_overrides()["vars.encoder"] is None  # the demo's: the embedded MiniLM
    assert variables["gpu_id"] == -1


def test_assets_are_public_and_pinned():
    config = load_project()
    assets = config["assets"]
    gap = [a for a in assets if "url" in a and "gap-coreference" in a["url"]]
    assert [Path(a["dest"]).name for a in gap] == ["gap-development.tsv", "gap-validation.tsv", "gap-test.tsv"]
    for asset in gap:
        assert asset["url"] == (
            "https://raw.githubusercontent.com/google-research-datasets/gap-coreference/master/"
            + Path(asset["dest"]).name
        )
        assert re.fullmatch(r"[0-9a-f]{32}", asset["checksum"])
    # OntoGUM: GUM's coref/ontogum and splits.md at the release tag, where the variables point
    gum = {a["git"]["path"]: a for a in assets if "git" in a}
    assert set(gum) == {"coref/ontogum", "splits.md", "dep"}
    for asset in gum.values():
        assert asset["git"]["repo"] == "https://github.com/amir-zeldes/gum" and asset["git"]["branch"] == "V11.1.0"
    assert gum["coref/ontogum"]["dest"] == config["vars"]["ontogum_dir"]
    assert gum["splits.md"]["dest"] == config["vars"]["ontogum_splits"]
    # GUM's own entity layer (every mention, types, information status)
    assert gum["dep"]["dest"] == config["vars"]["gum_entities_dir"]
    # LitBank: the archive of one commit (40 hex digits), the default of vars.litbank
    (litbank,) = [a for a in assets if "url" in a and "litbank" in a["url"]]
    assert re.fullmatch(r"https://github.com/dbamman/litbank/archive/[0-9a-f]{40}\.tar\.gz", litbank["url"])
    assert litbank["dest"] == config["vars"]["litbank"]
    # OntoNotes: provided by the user, only fetched with --extra (no download exists)
    provided = [a for a in assets if "url" not in a and "git" not in a]
    assert [_norm(a["dest"]) for a in provided] == [
        "assets/ontonotes/train",
        "assets/ontonotes/dev",
        "assets/ontonotes/test",
    ]
    assert all(a.get("extra") for a in provided)
    assert config["vars"]["corpus"] == "ontogum"  # the public route is the default


def test_gap_checksums_match_the_shared_copies():
    gap_dir = SHARED / "data" / "gap"
    if not gap_dir.exists():
        pytest.skip(f"shared GAP data not found at {gap_dir} (set MEMCOREF_SHARED)")
    for asset in load_project()["assets"][:2]:
        path = gap_dir / Path(asset["dest"]).name
        assert hashlib.md5(path.read_bytes()).hexdigest() == asset["checksum"], path


def test_vars_point_at_other_data():
    # the documented offline run on the shared OntoGUM copy + shared GAP: "test" is dev
    config = load_project(
        {
            "vars.gap_dir": "../shared/data/gap",
            "vars.gap_test": "../shared/data/gap/gap-validation.tsv",
            "vars.ontogum_dir": "../shared/data/ontogum_raw",
            "vars.ontogum_splits": "corpus/shared_splits.md",
            "vars.ontogum_test_split": "dev",
            "vars.litbank": "../shared/data/litbank",
        }
    )
    cmds = commands(config)
    check = cmds["check-data"]["script"][0]
    assert "--corpus ontogum --ontogum ../shared/data/ontogum_raw corpus/shared_splits.md dev" in check
    assert "--manifest corpus/ontogum/sources.json" in check
    assert cmds["convert-corpus"]["deps"] == ["corpus/ontogum/sources.json"]
    assert cmds["people-count-data"]["deps"] == ["scripts/build_people_count.py", "../shared/data/litbank"]
    assert "../shared/data/gap/gap-development.tsv" in cmds["convert-gap"]["script"][0]
    # the LDC route: every corpus path, output and package name follows vars.corpus
    config = load_project({"vars.corpus": "ontonotes"})
    cmds = commands(config)
    assert cmds["convert-corpus"]["outputs"][0] == "corpus/ontonotes/train.spacy"
    assert "--output training/s2e_ontonotes " in cmds["train-s2e"]["script"][0]
    assert cmds["package-s2e"]["outputs"][-1] == "packages/en_memcoref_s2e_ontonotes-0.1.0"
    assert "metrics/s2e/ontonotes_test.json" in cmds["report"]["deps"]


def test_project_document_renders(tmp_path):
    from weasel.cli.document import project_document

    shutil.copy(PROJECT, tmp_path / "project.yml")
    project_document(tmp_path, tmp_path / "README.md")
    text = (tmp_path / "README.md").read_text(encoding="utf8")
    assert "spacy project run demo" in text or "`demo`" in text
    assert "gap-development.tsv" in text


# ----- cheap tests: helper scripts ---------------------------------------------------


def run_script(*args, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, *map(str, args)], capture_output=True, text=True, cwd=cwd or REPO, timeout=120
    )


def _conll_file(path: Path, name: str = "doc") -> Path:
    path.mkdir(parents=True, exist_ok=True)
    text = f"#begin document ({name}); part 000\n{name} 0 0 Hi - * - - - - * (0)\n{name} 0 1 it - * - - - - * (0)\n\n#end document\n"
    (path / f"{name}.v4_gold_conll").write_text(text)
    return path


def test_check_data_accepts_the_demo_data():
    proc = run_script(
        SCRIPTS / "check_data.py",
        "--conll",
        "assets/demo/conll/train",
        "assets/demo/conll/dev",
        "assets/demo/conll/test",
        "--gap",
        "assets/demo/gap/gap-development.tsv",
        "assets/demo/gap/gap-validation.tsv",
        "assets/demo/gap/gap-test.tsv",
        "--people",
        "assets/demo/people_count.tsv",
    )
    assert proc.returncode == 0, proc.stderr
    assert "data ok" in proc.stdout


def test_check_data_explains_missing_ontonotes(tmp_path):
    proc = run_script(SCRIPTS / "check_data.py", "--conll", tmp_path / "train", tmp_path / "dev", tmp_path / "test")
    assert proc.returncode == 1
    assert f"{tmp_path / 'train'} does not exist" in proc.stderr
    assert "skeleton2conll" in proc.stderr and "LDC2013T19" in proc.stderr
    assert "existing copy" in proc.stderr


def test_check_data_refuses_auto_and_foreign_files_and_notes_test_is_dev(tmp_path):
    train = _conll_file(tmp_path / "train")
    (train / "x.v4_auto_conll").write_text((train / "doc.v4_gold_conll").read_text())
    _conll_file(tmp_path / "dev" / "chinese" / "annotations")
    _conll_file(tmp_path / "test")
    proc = run_script(SCRIPTS / "check_data.py", "--conll", train, tmp_path / "dev", tmp_path / "test")
    assert proc.returncode == 1
    assert "_auto_conll" in proc.stderr and "Arabic/Chinese" in proc.stderr

    skel = tmp_path / "skel"
    skel.mkdir()
    (skel / "a.v4_gold_skel").write_text("")
    proc = run_script(SCRIPTS / "check_data.py", "--conll", skel, skel, skel)
    assert proc.returncode == 1 and "skeleton2conll" in proc.stderr

    good = _conll_file(tmp_path / "good")
    proc = run_script(SCRIPTS / "check_data.py", "--conll", good, good, good)
    assert proc.returncode == 0, proc.stderr
    assert "the test folder is the dev folder" in proc.stdout


def test_check_data_missing_gap_and_wheel_tool(tmp_path):
    missing = tmp_path / "gap-test.tsv"
    proc = run_script(
        SCRIPTS / "check_data.py",
        "--gap",
        "assets/demo/gap/gap-development.tsv",
        "assets/demo/gap/gap-validation.tsv",
        missing,
        "--package-build",
        "sdist",
    )
    assert proc.returncode == 1
    assert f"GAP test {missing} does not exist" in proc.stderr and "spacy project assets" in proc.stderr


def test_json_report_saves_the_last_json_line(tmp_path):
    out = tmp_path / "sub" / "scores.json"
    code = "print('a table'); print('{\"f\": 0.5}')"
    proc = run_script(SCRIPTS / "json_report.py", out, "python", "-c", code)
    assert proc.returncode == 0, proc.stderr
    assert "a table" in proc.stdout
    assert json.loads(out.read_text()) == {"f": 0.5}


@pytest.mark.parametrize(
    "code,expected",
    [("import sys; print('{}'); sys.exit(3)", 3), ("print('no json')", 1), ("print('[1, 2]')", 1)],
)
def test_json_report_writes_nothing_on_failure(tmp_path, code, expected):
    out = tmp_path / "scores.json"
    proc = run_script(SCRIPTS / "json_report.py", out, "python", "-c", code)
    assert proc.returncode == expected
    assert not out.exists()
    assert list(tmp_path.iterdir()) == []


def test_report_merges_results(tmp_path):
    (tmp_path / "s2e").mkdir()
    (tmp_path / "petra").mkdir()
    (tmp_path / "s2e" / "ontonotes_test.json").write_text(json.dumps({"coref_conll_f": 0.5, "coref_muc_f": 0.25}))
    (tmp_path / "petra" / "people_count.json").write_text(
        json.dumps({"alpha": 0.4, "errors": 2, "docs": 4, "mae": 0.5})
    )
    out = tmp_path / "report.json"
    proc = run_script(
        SCRIPTS / "report.py",
        out,
        tmp_path / "report.md",
        tmp_path / "s2e" / "ontonotes_test.json",
        tmp_path / "petra" / "people_count.json",
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(out.read_text())
    assert report["s2e"]["ontonotes_test"]["coref_conll_f"] == 0.5
    assert report["petra"]["people_count"]["errors"] == 2
    table = (tmp_path / "report.md").read_text()
    assert "| CoNLL F1 | MUC F1 |" in table and "| 50.00 | 25.00 |" in table


def test_report_names_the_corpus(tmp_path):
    manifest = tmp_path / "sources.json"
    proc = run_script(
        SCRIPTS / "check_data.py", "--corpus", "ontogum", "--ontogum", *DEMO_ONTOGUM[:2], "dev", "--manifest", manifest
    )
    assert proc.returncode == 0, proc.stderr
    (tmp_path / "s2e").mkdir()
    (tmp_path / "s2e" / "ontogum_test.json").write_text(json.dumps({"coref_conll_f": 0.5}))
    out = tmp_path / "report.json"
    proc = run_script(
        SCRIPTS / "report.py", "--corpus", manifest, out, tmp_path / "report.md", tmp_path / "s2e" / "ontogum_test.json"
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(out.read_text())
    assert report["data"]["s2e"]["corpus"] == "ontogum" and report["data"]["s2e"]["test_is_dev"] is True
    table = (tmp_path / "report.md").read_text()
    assert "OntoGUM (GUM V11.1.0" in table and "CC-BY-4.0" in table and "scored on its dev split (dev scores" in table


# ----- the corpus choice: check-data, its manifest, convert_corpus, package meta -----

DEMO_ONTOGUM = ("assets/demo/ontogum", "assets/demo/ontogum/splits.md", "test")
DEMO_CONLL = ("assets/demo/conll/train", "assets/demo/conll/dev", "assets/demo/conll/test")


def _docs_by_text(path: Path):
    import spacy
    from spacy.tokens import DocBin

    from spacy_memcoref.doc_helpers.clusters import cluster_span_groups

    nlp = spacy.blank("en")
    out = {}
    for doc in DocBin().from_disk(path).get_docs(nlp.vocab):
        clusters = sorted(sorted((s.start, s.end) for s in group) for group in cluster_span_groups(doc))
        speakers = [(s.start, s.end, s.label_) for s in doc.spans.get("speakers", [])]
        out[doc.text] = ([bool(t.is_sent_start) for t in doc], clusters, speakers)
    return out


def test_both_corpora_convert_the_same_demo_documents(tmp_path):
    # the demo's ten documents in OntoGUM's native form and in CoNLL-2012 form:
    # check-data + convert_corpus give the same Docs by either route, and the
    # masked Reddit document of the native copy is skipped and reported
    outputs = {}
    for corpus, extra in (("ontogum", ["--ontogum", *DEMO_ONTOGUM]), ("ontonotes", ["--conll", *DEMO_CONLL])):
        manifest = tmp_path / corpus / "sources.json"
        proc = run_script(SCRIPTS / "check_data.py", "--corpus", corpus, *extra, "--manifest", manifest)
        assert proc.returncode == 0, proc.stderr
        assert json.loads(manifest.read_text())["corpus"] == corpus
        proc = run_script(SCRIPTS / "convert_corpus.py", manifest, tmp_path / corpus)
        assert proc.returncode == 0, proc.stderr + proc.stdout
        outputs[corpus] = proc.stdout
        for name in ("train.spacy", "dev.spacy", "test.spacy", "test.key.conll"):
            assert (tmp_path / corpus / name).is_file(), name
    assert "1 masked documents skipped (GUM_reddit_demo)" in outputs["ontogum"]
    for split in ("train", "dev", "test"):
        native = _docs_by_text(tmp_path / "ontogum" / f"{split}.spacy")
        conll = _docs_by_text(tmp_path / "ontonotes" / f"{split}.spacy")
        assert native == conll and len(native) == {"train": 6, "dev": 2, "test": 2}[split]
    assert any(speakers for _, _, speakers in _docs_by_text(tmp_path / "ontogum" / "train.spacy").values())


def test_manifest_digest_follows_the_data(tmp_path):
    shutil.copytree(REPO / "assets/demo/ontogum", tmp_path / "og")
    args = [
        "--corpus",
        "ontogum",
        "--ontogum",
        tmp_path / "og",
        tmp_path / "og" / "splits.md",
        "test",
        "--manifest",
        tmp_path / "m.json",
    ]
    assert run_script(SCRIPTS / "check_data.py", *args).returncode == 0
    first = json.loads((tmp_path / "m.json").read_text())["digest"]
    assert run_script(SCRIPTS / "check_data.py", *args).returncode == 0
    assert json.loads((tmp_path / "m.json").read_text())["digest"] == first
    conll = tmp_path / "og" / "conll" / "GUM_story_farm.conll"
    conll.write_text(conll.read_text().replace("\t(0)", "\t_", 1))
    assert run_script(SCRIPTS / "check_data.py", *args).returncode == 0
    assert json.loads((tmp_path / "m.json").read_text())["digest"] != first


def test_check_data_explains_missing_ontogum_and_a_copy_without_test(tmp_path):
    proc = run_script(
        SCRIPTS / "check_data.py",
        "--corpus",
        "ontogum",
        "--ontogum",
        tmp_path / "og",
        tmp_path / "splits.md",
        "test",
        "--manifest",
        tmp_path / "m.json",
    )
    assert proc.returncode == 1 and not (tmp_path / "m.json").exists()
    assert f"{tmp_path / 'og' / 'conll'}" in proc.stderr and "does not exist" in proc.stderr
    assert "spacy project assets" in proc.stderr and "V11.1.0" in proc.stderr
    # a copy holding train and dev only (as ../shared): the test split is missing, with the way out
    shutil.copytree(REPO / "assets/demo/ontogum", tmp_path / "og")
    for name in ("GUM_conversation_book", "GUM_story_farm"):
        (tmp_path / "og" / "conll" / f"{name}.conll").unlink()
    args = ["--corpus", "ontogum", "--ontogum", tmp_path / "og", tmp_path / "og" / "splits.md"]
    proc = run_script(SCRIPTS / "check_data.py", *args, "test")
    assert proc.returncode == 1
    assert "none of the 2 documents of split 'test'" in proc.stderr and "--vars.ontogum_test_split dev" in proc.stderr
    proc = run_script(SCRIPTS / "check_data.py", *args, "test2")
    assert proc.returncode == 1 and "has no split 'test2' (it has train, dev, test)" in proc.stderr
    proc = run_script(SCRIPTS / "check_data.py", *args, "dev")
    assert proc.returncode == 0, proc.stderr
    assert "its scores are dev scores" in proc.stdout


def test_check_data_on_ontonotes_names_the_public_route(tmp_path):
    proc = run_script(
        SCRIPTS / "check_data.py", "--corpus", "ontonotes", "--conll", tmp_path / "a", tmp_path / "b", tmp_path / "c"
    )
    assert proc.returncode == 1
    assert "--vars.corpus ontogum" in proc.stderr and "LDC2013T19" in proc.stderr


def test_package_meta_names_the_training_data(tmp_path):
    model = tmp_path / "model"
    model.mkdir()
    (model / "meta.json").write_text(
        json.dumps({"lang": "en", "name": "pipeline", "version": "0.0.0", "pipeline": ["memcoref"]})
    )
    manifest = tmp_path / "sources.json"
    assert (
        run_script(
            SCRIPTS / "check_data.py", "--corpus", "ontogum", "--ontogum", *DEMO_ONTOGUM, "--manifest", manifest
        ).returncode
        == 0
    )
    out = tmp_path / "pkg" / "pipeline"
    proc = run_script(SCRIPTS / "package_meta.py", model, out, "--manifest", manifest, "--gap")
    assert proc.returncode == 0, proc.stderr
    meta = json.loads((out / "meta.json").read_text())
    assert meta["pipeline"] == ["memcoref"] and meta["name"] == "pipeline"
    assert [s["license"].split(";")[0] for s in meta["sources"]] == ["annotations CC-BY-4.0", "Apache-2.0"]
    assert "OntoGUM" in meta["description"]
    proc = run_script(SCRIPTS / "package_meta.py", tmp_path / "nowhere", out, "--gap")
    assert proc.returncode == 1 and "meta.json does not exist" in proc.stderr


def test_people_count_reads_litbank_from_its_github_archive(tmp_path):
    import tarfile

    inner = tmp_path / "litbank-5cd7f10" / "coref" / "conll"
    shutil.copytree(REPO / "assets/demo/litbank", inner)
    (tmp_path / "litbank-5cd7f10" / "README.md").write_text("not a conll file")
    archive = tmp_path / "litbank.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(tmp_path / "litbank-5cd7f10", arcname="litbank-5cd7f10")
    from_folder, from_archive = tmp_path / "a.tsv", tmp_path / "b.tsv"
    assert run_script(SCRIPTS / "build_people_count.py", inner, from_folder).returncode == 0
    proc = run_script(SCRIPTS / "build_people_count.py", archive, from_archive)
    assert proc.returncode == 0, proc.stderr
    assert from_archive.read_text() == from_folder.read_text() and from_folder.read_text().count("\n") > 1
    bad = tmp_path / "bad.tar.gz"
    bad.write_text("not gzip")
    proc = run_script(SCRIPTS / "build_people_count.py", bad, tmp_path / "c.tsv")
    assert proc.returncode == 1 and str(bad) in proc.stderr and not (tmp_path / "c.tsv").exists()


# ----- cheap tests: the demo data ----------------------------------------------------


@pytest.mark.parametrize("split,n_docs", [("train", 6), ("dev", 2), ("test", 2)])
def test_demo_conll_converts_and_round_trips(tmp_path, split, n_docs):
    import spacy

    from spacy_memcoref.corpora.conll import read_conll_docs, write_conll
    from spacy_memcoref.scoring.conll_files import score_conll_files

    folder = REPO / "assets" / "demo" / "conll" / split
    docs = list(read_conll_docs(folder, spacy.blank("en").vocab))
    assert len(docs) == n_docs
    for doc in docs:
        assert 30 <= len(doc) <= 80
        assert len([k for k in doc.spans if k.startswith("coref_clusters_")]) >= 2
        if doc.user_data["doc_id"].startswith(f"demo/{split}/conversation"):
            assert len({s.label_ for s in doc.spans["speakers"]}) == 2  # two speakers take turns
    key = tmp_path / "key.conll"
    key.write_text("".join(p.read_text() for p in sorted(folder.glob("*_conll"))))
    response = tmp_path / "response.conll"
    write_conll(docs, response)
    scores, _ = score_conll_files(key, response)
    assert scores["coref_conll_f"] == pytest.approx(1.0)


@pytest.mark.parametrize("split,n_rows", [("development", 16), ("validation", 8), ("test", 8)])
def test_demo_gap_converts_without_expansions(tmp_path, split, n_rows):
    from spacy_memcoref.corpora.gap import gap_to_docbin

    stats = gap_to_docbin(REPO / "assets" / "demo" / "gap" / f"gap-{split}.tsv", tmp_path / "gap.spacy")
    assert stats["docs"] == n_rows
    assert stats["expansions"] == 0
    pronouns = [
        line.split("\t")[2]
        for line in (REPO / "assets" / "demo" / "gap" / f"gap-{split}.tsv").read_text().splitlines()[1:]
    ]
    assert {p.lower() for p in pronouns} & {"she", "her"} and {p.lower() for p in pronouns} & {"he", "him", "his"}


@pytest.mark.parametrize("name,n_rows", [("assets/demo/people_count.tsv", 8), ("assets/people_count.tsv", 24)])
def test_people_count_tsvs_read(name, n_rows):
    from spacy_memcoref.corpora import people

    rows = people.read_people_tsv(REPO / name)
    assert len(rows) == n_rows
    assert all(count >= 1 for *_, count in rows)


# ----- every step can run: check-data checks the workflow's needs first (issue 37) ---


def test_check_data_names_the_extra_each_workflow_step_needs(monkeypatch, capsys):
    import importlib.metadata
    import importlib.util

    check_data = load_script("check_data")
    args = ["--project", str(PROJECT), "--package-build", "wheel"]
    missing, present = {"matplotlib", "build", "wheel"}, set()
    real_find_spec, real_version = importlib.util.find_spec, importlib.metadata.version

    def find_spec(name, *rest):
        return None if name.split(".")[0] in missing else real_find_spec(name, *rest)

    def version(name):
        if name in missing:
            raise importlib.metadata.PackageNotFoundError(name)
        return "1.0" if name in present else real_version(name)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    monkeypatch.setattr(importlib.metadata, "version", version)
    # (the demo runs `all` too, and its check-data checks `all`)
    assert check_data.main([*args, "--workflow", "all"]) == 1
    err = capsys.readouterr().err
    assert "visualize: `spacy_memcoref visualize` imports matplotlib, and matplotlib is not installed" in err
    assert 'pip install "spacy-memcoref[viz]"' in err
    assert "steps package-s2e, package-petra: `spacy package --build wheel`" in err
    assert 'pip install "spacy-memcoref[package]"' in err
    assert 'All the extras at once: pip install "spacy-memcoref[viz,package]"' in err
    # an sdist builds without `build` (the deprecated setup.py sdist): a note, not a failure
    missing.discard("matplotlib")
    assert check_data.main(["--project", str(PROJECT), "--package-build", "sdist", "--workflow", "all"]) == 0
    out = capsys.readouterr().out
    assert "note: steps package-s2e, package-petra: `spacy package --build sdist`" in out and "[package]" in out
    assert "every step of workflow 'all' can run" in out
    missing.clear()
    present.add("build")
    assert check_data.main([*args, "--workflow", "all"]) == 0
    assert "note:" not in capsys.readouterr().out
    # the setup.cfg extras the messages name exist and hold those modules
    extras = _setup_cfg_extras()
    assert "matplotlib" in extras["viz"] and "build" in extras["package"]


def _setup_cfg_extras() -> Dict[str, str]:
    import configparser

    parser = configparser.ConfigParser()
    parser.read(REPO / "setup.cfg")
    return dict(parser["options.extras_require"])


def test_check_data_fails_at_once_for_a_missing_module_program_or_script(tmp_path):
    project = tmp_path / "project.yml"
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "uses.py").write_text("import json\nfrom no_such_module_memcoref_b import x\n")
    shutil.copy(SCRIPTS / "json_report.py", tmp_path / "scripts")
    srsly.write_yaml(
        project,
        {
            "title": "t",
            "workflows": {"all": ["first", "last"], "other": ["first"]},
            "commands": [
                {"name": "first", "script": ["python -m spacy --help"]},
                {
                    "name": "last",
                    "script": [
                        "python -m no_such_module_memcoref_a.cli run",
                        "python scripts/uses.py",
                        "python scripts/absent.py",
                        "no-such-program-memcoref ${vars.x}",
                        "python scripts/json_report.py out.json python -m no_such_module_memcoref_c score",
                    ],
                },
            ],
        },
    )
    proc = run_script(SCRIPTS / "check_data.py", "--project", project, "--workflow", "all", cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout
    for expected in (
        "step last: runs python -m no_such_module_memcoref_a.cli, and no_such_module_memcoref_a is not installed",
        "step last: scripts/uses.py imports no_such_module_memcoref_b, and no_such_module_memcoref_b is not installed",
        "step last: runs scripts/absent.py, and scripts/absent.py does not exist",
        "step last: runs no-such-program-memcoref, and no-such-program-memcoref is not on PATH",
        "no_such_module_memcoref_c is not installed",
    ):
        assert expected in proc.stderr, proc.stderr
    proc = run_script(SCRIPTS / "check_data.py", "--project", project, "--workflow", "other", cwd=tmp_path)
    assert proc.returncode == 0 and "every step of workflow 'other' can run" in proc.stdout, proc.stderr
    proc = run_script(SCRIPTS / "check_data.py", "--project", project, "--workflow", "nope", cwd=tmp_path)
    assert proc.returncode == 2 and "has no workflow 'nope' (it has all, other)" in proc.stderr


def test_check_data_steps_check_their_own_workflow():
    cmds = commands(load_project({"vars.package_build": "wheel"}))
    assert "--package-build wheel --workflow all " in cmds["check-data"]["script"][0]
    # the demo runs `all`: its check-data checks the steps of `all`, with the demo's package_build
    demo = commands(load_project(demo_overrides()))
    assert (
        "--package-build sdist --workflow all --manifest corpus/demo/ontogum/sources.json"
        in demo["check-data"]["script"][0]
    )
    assert cmds["visualize"]["script"][0].startswith("python -m spacy_memcoref visualize ")


# ----- the packaged pipeline carries its licenses (issue 34) -------------------------

EMBEDDED_CONFIG = """[nlp]
lang = "en"
pipeline = ["memcoref"]

[components.memcoref.model.tok2vec]
@architectures = "spacy_memcoref.EmbeddedTransformer.v1"
name = {name}
window = 256
"""


def _trained_folder(path: Path, encoder: str = "null") -> Path:
    path.mkdir(parents=True)
    (path / "meta.json").write_text(json.dumps({"lang": "en", "name": "pipeline", "version": "0.0.0", "license": ""}))
    (path / "config.cfg").write_text(EMBEDDED_CONFIG.format(name=encoder))
    (path / "memcoref").mkdir()
    (path / "memcoref" / "model").write_bytes(b"weights")
    return path


@pytest.mark.parametrize(
    "corpus,expected",
    [
        (
            "ontogum",
            ["OntoGUM (GUM V11.1.0", "annotations CC-BY-4.0", "CC-BY-NC-SA-4.0", "GUM's LICENSE.txt", "reddit"],
        ),
        ("ontonotes", ["OntoNotes 5.0", "LDC2013T19", "LDC User Agreement"]),
        (
            "gap",
            ["GAP Coreference Dataset", "Apache License 2.0", "github.com/google-research-datasets/gap-coreference"],
        ),
    ],
)
def test_package_meta_writes_the_licenses_of_each_corpus(tmp_path, corpus, expected):
    model = _trained_folder(tmp_path / "model-tuned")
    before = sorted(p.name for p in model.rglob("*"))
    if corpus == "gap":
        data = ["--gap"]
    else:
        manifest = tmp_path / "sources.json"
        where = ["--ontogum", *DEMO_ONTOGUM] if corpus == "ontogum" else ["--conll", *DEMO_CONLL]
        proc = run_script(SCRIPTS / "check_data.py", "--corpus", corpus, *where, "--manifest", manifest)
        assert proc.returncode == 0, proc.stderr
        data = ["--manifest", manifest]
    out = tmp_path / "packages" / "memcoref_x-pipeline"
    proc = run_script(SCRIPTS / "package_meta.py", model, out, *data)
    assert proc.returncode == 0, proc.stderr
    # the folder spacy package ships: the pipeline, its meta.json and both license files
    assert (out / "memcoref" / "model").read_bytes() == b"weights" and (out / "config.cfg").is_file()
    meta = json.loads((out / "meta.json").read_text())
    names = [s["name"] for s in meta["sources"]]
    assert expected[0] in names[0] and "all-MiniLM-L6-v2" in names[-1] and len(names) == 2
    assert meta["sources"][-1]["license"] == "Apache-2.0"
    assert meta["license"].startswith("MIT") and "LICENSES_SOURCES" in meta["license"]
    assert expected[0] in meta["description"] and "all-MiniLM-L6-v2" in meta["description"]
    license_text = (out / "LICENSE").read_text()
    assert license_text.startswith("MIT License") and "WITHOUT WARRANTY" in license_text
    assert "trained weights" in license_text and expected[0] in license_text
    sources = (out / "LICENSES_SOURCES").read_text()
    for text in expected + ["sentence-transformers/all-MiniLM-L6-v2", "Apache-2.0"]:
        assert text in sources, text
    if corpus == "ontogum":
        assert "NON-COMMERCIAL" in sources
    # the trained pipeline (a tune step's output) is left as it was
    assert sorted(p.name for p in model.rglob("*")) == before
    assert "sources" not in json.loads((model / "meta.json").read_text())
    # rerun: the folder is replaced, not merged
    (out / "stale").write_text("x")
    assert run_script(SCRIPTS / "package_meta.py", model, out, *data).returncode == 0
    assert not (out / "stale").exists()


@pytest.mark.parametrize(
    "encoder,license",
    [
        ('"roberta-base"', "MIT"),
        ('"sentence-transformers/all-mpnet-base-v2"', "Apache-2.0"),
        ("LOCAL", "cc-by-4.0"),
        ('"someone/private-encoder"', "unknown"),
    ],
)
def test_package_meta_names_the_encoder_and_its_license(tmp_path, encoder, license):
    if encoder == "LOCAL":
        local = tmp_path / "my-encoder"
        local.mkdir()
        (local / "README.md").write_text("---\nlanguage: en\nlicense: cc-by-4.0\n---\n# card\n")
        encoder = json.dumps(str(local))
    model = _trained_folder(tmp_path / "model", encoder)
    out = tmp_path / "pipeline"
    proc = run_script(SCRIPTS / "package_meta.py", model, out, "--gap")
    assert proc.returncode == 0, proc.stderr
    meta = json.loads((out / "meta.json").read_text())
    assert meta["sources"][-1]["license"] == license
    assert ("warning" in proc.stderr) == (license == "unknown")
    sources = (out / "LICENSES_SOURCES").read_text()
    assert f"License: {license}" in sources and "all-MiniLM" not in sources


@pytest.mark.parametrize("build", ["none", pytest.param("sdist", marks=pytest.mark.slow)])
def test_spacy_package_ships_the_license_files(tmp_path, build):
    """spacy package on the folder package_meta.py writes: LICENSE and
    LICENSES_SOURCES go into the package and its sdist ("no files found
    matching 'LICENSE'" before)."""
    import tarfile

    import spacy

    model = tmp_path / "model"
    spacy.blank("en").to_disk(model)
    proc = run_script(SCRIPTS / "package_meta.py", model, tmp_path / "pipeline", "--gap")
    assert proc.returncode == 0, proc.stderr
    assert "Encoder: none" in (tmp_path / "pipeline" / "LICENSES_SOURCES").read_text()
    packages = tmp_path / "packages"
    packages.mkdir()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "spacy",
            "package",
            str(tmp_path / "pipeline"),
            str(packages),
            "--name",
            "licensetest",
            "--version",
            "0.0.1",
            "--build",
            build,
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "no files found matching" not in proc.stdout + proc.stderr
    main = packages / "en_licensetest-0.0.1"
    assert (main / "LICENSE").read_text().startswith("MIT License")
    assert "GAP Coreference Dataset" in (main / "LICENSES_SOURCES").read_text()
    assert {"include LICENSE", "include LICENSES_SOURCES"} <= set((main / "MANIFEST.in").read_text().splitlines())
    if build == "none":
        return
    (sdist,) = (main / "dist").glob("*.tar.gz")
    with tarfile.open(sdist) as tar:
        names = {Path(n).name for n in tar.getnames()}
    assert {"LICENSE", "LICENSES_SOURCES", "meta.json"} <= names


def test_package_steps_ship_the_license_files():
    cmds = commands(load_project())
    for step, data in (("package-s2e", "--manifest corpus/ontogum/sources.json"), ("package-petra", "--gap")):
        meta_line, package_line = cmds[step]["script"]
        folder = shlex.split(meta_line)[3]
        assert meta_line.startswith("python scripts/package_meta.py training/") and meta_line.endswith(data)
        # spacy package packs the folder package_meta.py wrote (its meta.json, LICENSE, LICENSES_SOURCES)
        assert shlex.split(package_line)[4:6] == [folder, "packages"] and "--meta-path" not in package_line
        assert cmds[step]["outputs"][0] == folder and "scripts/package_meta.py" in cmds[step]["deps"]


# ----- a preset carries its own settings: scripts/train.py (issue 36) ---------------


def _train_argv(line: str) -> List[str]:
    """The `spacy train` command a train-* script line runs (scripts/train.py --dry-run)."""
    tokens = shlex.split(line)
    assert tokens[:2] == ["python", "scripts/train.py"], line
    proc = run_script(SCRIPTS / "train.py", *tokens[2:], "--dry-run")
    assert proc.returncode == 0, proc.stderr
    argv = shlex.split(proc.stdout.strip().splitlines()[-1])
    assert argv[1:4] == ["-m", "spacy_memcoref", "train"], argv
    return argv[4:]


def _trained_config(args: List[str]):
    """The training config `spacy train` would use for these arguments (overrides applied)."""
    from spacy.util import load_config

    def value(text: str):
        try:
            return srsly.json_loads(text)
        except ValueError:
            return text  # as spaCy's CLI reads an override: JSON, or else a string

    overrides = {
        args[i][2:]: value(args[i + 1]) for i in range(1, len(args) - 1) if args[i].startswith("--") and "." in args[i]
    }
    overrides = {k: v for k, v in overrides.items() if not k.startswith("paths.")}
    return load_config(REPO / args[0], overrides=overrides, interpolate=True)


STEP_KEYS = ("--training.max_steps", "--training.optimizer.learn_rate.total_steps", "--training.eval_frequency")


@pytest.mark.parametrize(
    "s2e_config,petra_config,s2e_steps,petra_steps",
    [
        ("configs/s2e.cfg", "configs/petra_gap.cfg", 3000, 600),
        ("configs/s2e_base.cfg", "configs/petra_gap_base.cfg", 4000, 800),
        ("configs/s2e_gpu.cfg", "configs/petra_gap_base.cfg", 20000, 800),
    ],
)
def test_train_steps_keep_each_presets_own_settings(s2e_config, petra_config, s2e_steps, petra_steps):
    from spacy.util import load_config

    base = {"vars.s2e_config": s2e_config, "vars.petra_config": petra_config, "vars.encoder": "config"}
    cmds = commands(load_project(base))
    for step, config_path, steps in (("train-s2e", s2e_config, s2e_steps), ("train-petra", petra_config, petra_steps)):
        own = load_config(REPO / config_path, interpolate=True)
        args = _train_argv(cmds[step]["script"][0])
        assert args[0] == config_path
        for key in STEP_KEYS + ("--components.memcoref_petra.model.num_cells",):
            assert key not in args, f"{step}: {key} overrides {config_path}'s own value"
        assert not any(a.endswith(".tok2vec.name") for a in args), args  # --vars.encoder config: the preset's encoder
        assert "--output" in args and "--gpu-id" in args and "--paths.train" in args
        trained = _trained_config(args)
        assert trained["training"]["max_steps"] == own["training"]["max_steps"] == steps
        assert trained["training"]["optimizer"]["learn_rate"]["total_steps"] == steps
        assert trained["training"]["eval_frequency"] == own["training"]["eval_frequency"]
    # set: the variable overrides the preset, the schedule's end with it
    cmds = commands(
        load_project(
            {
                **base,
                "vars.encoder": "roberta-base",
                "vars.s2e_max_steps": 40,
                "vars.s2e_eval_frequency": 20,
                "vars.petra_max_steps": 30,
                "vars.petra_eval_frequency": 10,
                "vars.num_cells": 3,
            }
        )
    )
    for step, steps, every in (("train-s2e", 40, 20), ("train-petra", 30, 10)):
        args = _train_argv(cmds[step]["script"][0])
        for key, value in zip(STEP_KEYS, (steps, steps, every)):
            assert args[args.index(key) + 1] == str(value), key
        trained = _trained_config(args)
        assert (
            trained["training"]["max_steps"] == trained["training"]["optimizer"]["learn_rate"]["total_steps"] == steps
        )
        assert [args[i + 1] for i, a in enumerate(args) if a.endswith(".tok2vec.name")] == ["roberta-base"]
    args = _train_argv(cmds["train-petra"]["script"][0])
    assert args[args.index("--components.memcoref_petra.model.num_cells") + 1] == "3"


def test_demo_train_steps_pass_their_few_steps():
    variables = demo_overrides()
    cmds = commands(load_project(variables))
    for step, prefix in (
        ("train-s2e", "vars.s2e"),
        ("train-petra", "vars.petra"),
        ("train-petra-entities", "vars.petra_entities"),
    ):
        args = _train_argv(cmds[step]["script"][0])
        steps, every = variables[f"{prefix}_max_steps"], variables[f"{prefix}_eval_frequency"]
        assert isinstance(steps, int) and steps < 100
        for key, value in zip(STEP_KEYS, (steps, steps, every)):
            assert args[args.index(key) + 1] == str(value), (step, key)
        assert [args[i + 1] for i, a in enumerate(args) if a.endswith(".tok2vec.name")] == [
            "null"
        ]  # the embedded MiniLM
    args = _train_argv(cmds["train-petra"]["script"][0])
    assert args[args.index("--components.memcoref_petra.model.num_cells") + 1] == str(variables["vars.num_cells"])
    # the memory model's cells: the component reads through them and its loss trains for them
    args = _train_argv(cmds["train-petra-entities"]["script"][0])
    assert args[args.index("--components.memcoref.memory_cells") + 1] == str(variables["vars.memory_cells"])
    trained = _trained_config(args)["components"]["memcoref"]
    assert trained["memory_cells"] == trained["model"]["memory_loss_cells"] == variables["vars.memory_cells"]


def test_train_wrapper_runs_spacy_train(tmp_path):
    proc = run_script(
        SCRIPTS / "train.py", tmp_path / "missing.cfg", "--training.max_steps", "config", "--gpu-id", "-1"
    )
    assert proc.returncode != 0
    command = shlex.split(proc.stdout.strip().splitlines()[0])
    assert command[1:] == ["-m", "spacy_memcoref", "train", str(tmp_path / "missing.cfg"), "--gpu-id", "-1"]
    assert "missing.cfg: no such config file" in proc.stdout + proc.stderr
    proc = run_script(SCRIPTS / "train.py", "configs/s2e.cfg", "--gpu-id", "config", "--dry-run")
    assert proc.returncode == 2 and "only `--section.key` overrides" in proc.stderr


def test_train_wrapper_turns_on_huge_pages_unless_the_caller_set_them(monkeypatch):
    train = load_script("train")
    runs = []

    class Child:
        def __init__(self, cmd, env=None):
            runs.append((cmd, env))

        def wait(self):
            return 0

    monkeypatch.setattr(train.subprocess, "Popen", Child)
    monkeypatch.setenv("MEMCOREF_TEST_MARK", "kept")
    monkeypatch.delenv("THP_MEM_ALLOC_ENABLE", raising=False)
    assert train.main(["configs/s2e.cfg", "--gpu-id", "-1"]) == 0
    monkeypatch.setenv("THP_MEM_ALLOC_ENABLE", "0")  # a caller's own value wins
    assert train.main(["configs/s2e.cfg", "--gpu-id", "-1"]) == 0
    assert [env["THP_MEM_ALLOC_ENABLE"] for _, env in runs] == ["1", "0"]
    assert all(
        env["MEMCOREF_TEST_MARK"] == "kept" and cmd[1:4] == ["-m", "spacy_memcoref", "train"] for cmd, env in runs
    )


@pytest.mark.parametrize("name", ["s2e-ontogum", "petra-gap", "petra-ontogum"])
def test_shipped_models_train_through_the_train_wrapper(name):
    steps = load_script("pretrained").commands(name, -1)
    recipe = srsly.read_json(REPO / "configs" / "pretrained" / f"{name}.json")["recipe"]
    (train,) = [command for command in steps if command[1] == "scripts/train.py"]
    assert steps.index(train) == 0 and (REPO / train[1]).is_file()
    # a recipe with a source hands that model to the wrapper, which saves it before training
    args, s2e = load_script("train").take_option(train[2:], "--s2e")
    assert s2e == recipe.get("source", {}).get("model")
    spacy_train = load_script("train").train_argv(args)
    # the recipe reaches `memcoref train` whole: its config first, every setting kept
    assert spacy_train[1:5] == ["-m", "spacy_memcoref", "train", recipe["config"]] and spacy_train[4:] == args
    assert spacy_train[spacy_train.index("--system.seed") + 1] == str(recipe["seed"])


def test_a_recipe_with_a_source_fine_tunes_that_shipped_model_with_its_configs_settings():
    """petra-ontogum fine-tunes the shipped s2e-ontogum: scripts/train.py is
    given it as --s2e, and the config's [warm_start] block (the one home of
    the settings the source is saved with) trains for the memory it reads."""
    from spacy.util import load_config

    recipe = srsly.read_json(REPO / "configs" / "pretrained" / "petra-ontogum.json")["recipe"]
    (train, *_) = load_script("pretrained").commands("petra-ontogum", -1)
    assert train[1] == "scripts/train.py" and train[train.index("--s2e") + 1] == recipe["source"]["model"]
    assert (REPO / "spacy_memcoref" / "pretrained_models" / recipe["source"]["model"]).is_dir()
    assert set(recipe["source"]) == {"model"}  # the settings live in the config alone
    config = load_config(REPO / recipe["config"], interpolate=True)
    warm = config["components"]["memcoref"]["warm_start"]
    assert warm["set"]["memory_cells"] == warm["set"]["model"]["memory_loss_cells"] > 0
    assert warm["fallback"] == recipe["source"]["model"] and warm["encoder"] is None
    # project.yml rebuilds the source before the model made from it
    lines = commands(load_project())["train-pretrained"]["script"]
    order = [line.split()[2] for line in lines if line.startswith("python scripts/pretrained.py")]
    assert order.index(recipe["source"]["model"]) < order.index("petra-ontogum")


@pytest.mark.parametrize("config_name", ["petra_ontogum_finetune.cfg", "petra_ontogum_base.cfg"])
def test_the_fine_tuning_presets_name_a_shipped_s2e_on_their_own_encoder(config_name):
    """Each fine-tuning preset's fallback is a shipped s2e on the encoder the
    preset asks for, so the project step runs without the workflow's s2e."""
    from spacy.util import load_config

    warm = load_config(REPO / "configs" / config_name, interpolate=True)["components"]["memcoref"]["warm_start"]
    shipped = load_config(REPO / "spacy_memcoref" / "pretrained_models" / warm["fallback"] / "config.cfg")
    encoder = shipped["components"]["memcoref"]["model"]["tok2vec"]["name"]
    assert load_script("train").same_encoder(encoder, warm["encoder"])
    assert warm["set"] == {
        "memory_cells": 40,
        "memory_mentions": 8,
        "model": {"memory_loss_cells": 40, "memory_loss_mentions": 8},
    }


def _fine_tuning_config(folder: Path, s2e: Path, **warm_start) -> Path:
    """configs/petra_ontogum_finetune.cfg made tiny: 2 steps on the TRAIN
    documents, its [warm_start] asking for the tok2vec of `s2e`."""
    import spacy
    from spacy.tokens import DocBin
    from spacy.util import load_config

    from conftest import make_examples

    nlp = spacy.load(s2e)
    docs = DocBin(store_user_data=True)
    for eg in make_examples(nlp):
        docs.add(eg.reference)
    docs.to_disk(folder / "train.spacy")
    config = load_config(REPO / "configs" / "petra_ontogum_finetune.cfg", interpolate=False)
    config["training"].update(max_steps=2, eval_frequency=1)
    config["training"]["batcher"]["size"]["rate"] = 40
    config["training"]["optimizer"]["learn_rate"]["warmup_steps"] = 1
    config["training"]["before_update"]["numpy_dropout"] = False
    arch = nlp.config["components"]["memcoref"]["model"]["tok2vec"]["@architectures"]
    config["components"]["memcoref"]["warm_start"].update({"encoder": arch, **warm_start})
    path = folder / "finetune.cfg"
    config.to_disk(path)
    return path


def test_a_fine_tuning_config_trains_the_s2e_it_is_given_under_its_settings(trained_s2e, tmp_path, capsys):
    """scripts/train.py saves the s2e given by --s2e with the config's
    settings (the project's memory_cells override among them, the loss tied
    to it) into OUTPUT/source and fine-tunes it; run again, it resumes from
    the same source."""
    import spacy

    config = _fine_tuning_config(tmp_path, trained_s2e.path, fallback="no-such-model")
    corpus = str(tmp_path / "train.spacy")
    out = tmp_path / "run"
    argv = [str(config), "--s2e", str(trained_s2e.path), "--output", str(out), "--gpu-id", "-1"]
    argv += ["--paths.train", corpus, "--paths.dev", corpus, "--components.memcoref.memory_cells", "3"]
    argv += ["--components.memcoref.model.tok2vec.name", "config", "--training.max_steps", "config"]
    train = load_script("train")
    assert train.main(argv) == 0
    printed = capsys.readouterr().out
    assert f"fine-tuning {trained_s2e.path}" in printed and "memory_cells = 3" in printed
    source = spacy.load(out / "source").config["components"]["memcoref"]
    assert (source["memory_cells"], source["memory_mentions"]) == (3, 8)
    assert (source["model"]["memory_loss_cells"], source["model"]["memory_loss_mentions"]) == (3, 8)
    trained = spacy.load(out / "model-last")
    assert trained.config["components"]["memcoref"]["memory_cells"] == 3
    assert any(doc._.memory_log for doc in trained.pipe(text for text, _ in TRAIN))
    # the command it runs names the source it made
    assert train.fine_tune_source(argv[:1] + argv[3:], str(trained_s2e.path), write=False)[-2:] == [
        "--paths.source",
        str(out / "source"),
    ]


def test_a_fine_tuning_config_without_an_s2e_on_its_encoder_says_which_it_tried(trained_s2e, tmp_path, capsys):
    config = _fine_tuning_config(tmp_path, trained_s2e.path, fallback="no-such-model", encoder="roberta-base")
    argv = [str(config), "--s2e", str(trained_s2e.path), "--output", str(tmp_path / "run"), "--dry-run"]
    assert load_script("train").main(argv) == 2
    err = capsys.readouterr().err
    assert "fine-tunes a trained s2e on roberta-base" in err
    assert f"{trained_s2e.path} is on spacy.Tok2Vec.v2" in err and "no-such-model not found" in err
    assert not (tmp_path / "run").exists()
    # a setting the source does not have is refused before anything trains
    config = _fine_tuning_config(tmp_path, trained_s2e.path)
    argv = [str(config), "--s2e", str(trained_s2e.path), "--output", str(tmp_path / "run2")]
    with pytest.raises(SystemExit, match="no setting 'memory_cell'"):
        load_script("train").main([*argv, "--components.memcoref.memory_cell", "3"])


def test_warm_start_changes_the_settings_training_reads_and_keeps_the_weights(trained_s2e, tmp_path):
    """The saved pipeline holds the source's weights under the new settings:
    it predicts as the source loaded with the same settings by spaCy's own
    config overrides, and a pipeline sourcing it (as the fine-tuning config
    does) gets those settings and trains with the memory's loss."""
    import spacy
    from spacy.training import Example

    from conftest import make_examples, spans_of

    warm_start = load_script("warm_start")
    out = tmp_path / "warm"
    settings = [("memory_cells", 2), ("memory_mentions", 3), ("model.memory_loss_cells", 2)]
    warm_start.warm_start(str(trained_s2e.path), out, settings)
    warm = spacy.load(out)
    block = warm.config["components"]["memcoref"]
    assert (block["memory_cells"], block["memory_mentions"], block["model"]["memory_loss_cells"]) == (2, 3, 2)
    reference = spacy.load(
        trained_s2e.path,
        config={"components.memcoref.memory_cells": 2, "components.memcoref.memory_mentions": 3},
    )
    texts = [text for text, _ in TRAIN] + ["Alice met Bob and Carol . She told him that he and she were late ."]
    assert [spans_of(d) for d in warm.pipe(texts)] == [spans_of(d) for d in reference.pipe(texts)]
    assert any(d._.memory_log for d in warm.pipe(texts))  # read through the 2-cell memory
    # sourced as configs/petra_ontogum_finetune.cfg sources it
    nlp = spacy.blank("en")
    nlp.add_pipe("memcoref", source=warm)
    assert nlp.config["components"]["memcoref"]["memory_cells"] == 2
    examples = [Example(nlp.make_doc(eg.reference.text), eg.reference) for eg in make_examples(warm)]
    losses = {}
    nlp.update(examples, sgd=nlp.resume_training(), losses=losses)
    assert losses["memcoref"] > 0


def test_warm_start_refuses_settings_it_cannot_make_and_folders_it_would_lose(trained_s2e, tmp_path):
    from spacy.util import load_config

    warm_start = load_script("warm_start")
    with pytest.raises(SystemExit, match="no setting 'memory_cell' to change .*memory_cells"):
        warm_start.warm_start(str(trained_s2e.path), tmp_path / "a", [("memory_cell", 2)])
    with pytest.raises(SystemExit, match="has no section 'model.nope'"):
        warm_start.warm_start(str(trained_s2e.path), tmp_path / "a", [("model.nope.x", 2)])
    with pytest.raises(SystemExit, match="expected PATH=VALUE"):
        warm_start.parse_setting("memory_cells")
    with pytest.raises(SystemExit, match="not JSON"):
        warm_start.parse_setting("memory_cells=forty")
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "mine.txt").write_text("keep me")
    with pytest.raises(SystemExit, match="exists and is not empty"):
        warm_start.warm_start(str(trained_s2e.path), notes, [("memory_cells", 2)])
    with pytest.raises(SystemExit, match="has no config.cfg"):
        warm_start.warm_start(str(trained_s2e.path), notes, [("memory_cells", 2)], replace=True)
    assert (notes / "mine.txt").read_text() == "keep me"
    warm_start.warm_start(str(trained_s2e.path), tmp_path / "w", [("memory_cells", 2)])
    warm_start.warm_start(str(trained_s2e.path), tmp_path / "w", [("memory_cells", 3)], replace=True)
    assert load_config(tmp_path / "w" / "config.cfg")["components"]["memcoref"]["memory_cells"] == 3


def test_shipped_s2e_is_tuned_as_the_project_tunes_s2e():
    """scripts/pretrained.py tunes s2e as project.yml's tune-s2e does:
    model-best and model-last, the better kept (S1 in
    benchmarks/log/2026-11-28-shipped-s2e-all-mentions.md peaked before its
    last step, so the two differ)."""
    pretrained_script = load_script("pretrained")
    tune = pretrained_script.commands("s2e-ontogum", -1)[1]
    run = Path("training", "pretrained", "s2e-ontogum")
    assert tune[3:5] == ["tune-link-threshold", str(run / "model-best")]
    assert tune[tune.index("--also") + 1] == str(run / "model-last")
    (project_line,) = commands(load_project())["tune-s2e"]["script"]
    assert "--also training/s2e_ontogum/model-last" in project_line
    petra_tune = pretrained_script.commands("petra-gap", -1)[1]
    assert petra_tune[3] == "tune-gap-threshold" and "--also" not in petra_tune  # one checkpoint
    # the memory model is an s2e head read through its memory: its link threshold, both checkpoints
    (memory_tune,) = [c for c in pretrained_script.commands("petra-ontogum", -1) if c[3:4] == ["tune-link-threshold"]]
    assert memory_tune[3] == "tune-link-threshold" and "--also" in memory_tune


# ----- entity typing: a downstream spancat with and without entity gating -----------

ENTITY_TYPING = ("configs/entity_typing.cfg", "configs/entity_typing_gated.cfg")


def test_the_entity_typing_configs_differ_only_in_the_spancats_tok2vec():
    """The gated twin is the plain config with the spancat's tok2vec wrapped
    in EntityGating.v1, that tok2vec unchanged inside it; nothing else
    differs (data, seeds, steps, suggester, the frozen annotating s2e)."""
    from spacy.util import load_config

    plain, gated = (load_config(REPO / path, interpolate=False) for path in ENTITY_TYPING)
    plain_tok2vec = plain["components"]["spancat"]["model"].pop("tok2vec")
    gated_tok2vec = gated["components"]["spancat"]["model"].pop("tok2vec")
    assert plain_tok2vec["@architectures"] == "spacy.Tok2Vec.v2"
    assert gated_tok2vec.pop("tok2vec") == plain_tok2vec
    assert gated_tok2vec == {
        "@architectures": "spacy_memcoref.EntityGating.v1",
        "entity_width": 1024,
        "span_cluster_prefix": "coref_clusters",
        "init_gate_bias": -2.0,
    }
    assert plain == gated
    # the setup both share: the shipped s2e sourced, frozen and annotating; GUM's mentions, one type a span
    assert plain["nlp"]["pipeline"] == ["memcoref", "spancat"]
    assert plain["components"]["memcoref"] == {"source": "${paths.coref_model}"}
    assert plain["training"]["frozen_components"] == plain["training"]["annotating_components"] == ["memcoref"]
    spancat = plain["components"]["spancat"]
    assert (spancat["factory"], spancat["spans_key"], spancat["max_positive"]) == ("spancat", "gum_mentions", 1)
    weights = {k: v for k, v in plain["training"]["score_weights"].items() if v}
    assert weights == {"spans_gum_mentions_f": 1.0}


@pytest.mark.parametrize("path", ENTITY_TYPING)
def test_the_entity_typing_spancat_models_build(path):
    """Each config's spancat model resolves (every registered name and
    setting exists); the gated one is EntityGating.v1 around the tok2vec."""
    import spacy_memcoref  # noqa: F401 (registers EntityGating.v1)
    from spacy.util import load_config, registry

    config = load_config(REPO / path, interpolate=False)
    model = registry.resolve({"model": config["components"]["spancat"]["model"]})["model"]
    names = [node.name for node in model.walk()]
    assert ("entity_gating" in names) == path.endswith("_gated.cfg"), names
    suggester = registry.resolve({"s": config["components"]["spancat"]["suggester"]})["s"]
    assert suggester is not None


def test_entity_typing_trains_both_configs_on_both_seeds_alike():
    """The four training lines differ only in the config, the output folder
    and the seed; each passes the steps as the schedule's end too; the report
    reads the four model-best folders."""
    raw = commands(raw_project())
    variables = raw_project()["vars"]
    assert variables["entity_typing_max_steps"] == variables["entity_typing_eval_frequency"] == "config"
    trains = raw["entity-typing-train"]["script"]
    (report,) = raw["entity-typing-report"]["script"]
    runs, shapes = {}, set()
    for line in trains:
        tokens = shlex.split(line)
        assert tokens[:2] == ["python", "scripts/train.py"]
        at = {name: tokens.index(name) + 1 for name in ("--output", "--system.seed")}
        config, output, seed = tokens[2], tokens[at["--output"]], tokens[at["--system.seed"]]
        steps = tokens[tokens.index("--training.max_steps") + 1]
        assert steps == tokens[tokens.index("--training.optimizer.learn_rate.total_steps") + 1]
        assert steps == "${vars.entity_typing_max_steps}"
        runs[(config, seed)] = output
        # the line with its config, output and seed left out: the same for all four
        shapes.add(tuple(tok for i, tok in enumerate(tokens) if i not in (2, at["--output"], at["--system.seed"])))
    assert set(runs) == {(c, s) for c in ENTITY_TYPING for s in ("0", "1")} and len(shapes) == 1
    reported = [t for t in shlex.split(report) if t.endswith("/model-best")]
    assert sorted(reported) == sorted(f"{out}/model-best" for out in runs.values())


def _toy_entity_doc(vocab, labels):
    """Ann met Bob . She thanked him . -- GUM mentions Ann / She (entity 1), Bob / him (entity 2)."""
    from spacy.tokens import Doc, Span

    doc = Doc(vocab, words="Ann met Bob . She thanked him .".split())
    bounds = [(0, 1, "1"), (2, 3, "2"), (4, 5, "1"), (6, 7, "2")]
    doc.spans["gum_mentions"] = [
        Span(doc, start, end, label=label, span_id=entity)
        for (start, end, entity), label in zip(bounds, labels)
        if label
    ]
    return doc


def test_entity_typing_report_scores_spans_and_consistency():
    import spacy

    script = load_script("entity_typing")
    vocab = spacy.blank("en").vocab
    gold = _toy_entity_doc(vocab, ["person", "person", "person", "person"])
    # Ann right, Bob wrong, She right, him unlabelled
    pred = _toy_entity_doc(vocab, ["person", "place", "person", None])
    scores = script.score_run([gold], [pred])
    assert (scores["p"], scores["r"]) == (2 / 3, 2 / 4)
    assert scores["typed_right_given_span"] == 2 / 3
    assert (scores["pronoun_recall"], scores["pronoun_mentions"]) == (1 / 2, 2)
    # entity 1 (Ann / She): counted, consistent; entity 2 (Bob / him): one typed mention, not counted
    assert (scores["consistency"], scores["coverage"], scores["counted"]) == (1.0, 0.5, 1)
    pred = _toy_entity_doc(vocab, ["person", "place", "organization", "place"])
    scores = script.score_run([gold], [pred])
    assert (scores["consistency"], scores["counted"], scores["entities"]) == (0.5, 2, 2)
    assert script.run_name("training/entity_typing/gated_seed1/model-best") == (
        "gated_seed1",
        "training/entity_typing/gated_seed1/model-best",
    )
    assert script.config_of("gated_seed1") == "gated"


# ----- slow: ship a pipeline as a user does ------------------------------------------

SHIP_NAME = "memcoref_shiptest"


def _venv_env() -> Dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


def _run(cmd: List[str], cwd: Path, what: str, timings: Dict[str, float], timeout: int = 600) -> str:
    start = time.time()
    proc = subprocess.run(cmd, cwd=cwd, env=_venv_env(), capture_output=True, text=True, timeout=timeout)
    timings[what] = time.time() - start
    assert proc.returncode == 0, f"{what} failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc.stdout


@pytest.mark.slow
def test_spacy_package_wheel_installs_and_loads_in_a_fresh_venv(trained_s2e, tmp_path):
    """Take a tiny trained pipeline (conftest's trained_s2e), `spacy package`
    it as a wheel, install the wheel in a fresh virtual environment (with the
    local spacy-memcoref, which the wheel requires) and spacy.load it there by
    name: same clusters."""
    import spacy
    import torch

    timings: Dict[str, float] = {}
    start = time.time()
    nlp = spacy.load(trained_s2e.path)
    texts = [text for text, _ in TRAIN]
    expected = [
        sorted(
            sorted([s.start, s.end] for s in group)
            for key, group in doc.spans.items()
            if key.startswith("coref_clusters_")
        )
        for doc in nlp.pipe(texts)
    ]
    assert any(expected), "the tiny pipeline predicts no clusters at all"
    pipeline_dir = trained_s2e.path  # spacy package only reads it
    timings["load tiny pipeline"] = time.time() - start

    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", str(venv)], tmp_path, "create venv", timings)
    python = str(venv / "bin" / "python")
    torch_version = torch.__version__.split("+")[0]
    # CPU torch first (as .ci/run): a bare requirement may pull a CUDA build
    _run([python, "-m", "pip", "install", "-q", f"torch=={torch_version}"], tmp_path, "pip install torch", timings)
    _run(
        [python, "-m", "pip", "install", "-q", "build", "-e", str(REPO)],
        tmp_path,
        "pip install -e repo + build",
        timings,
    )

    packages = tmp_path / "packages"
    packages.mkdir()
    _run(
        [
            python,
            "-m",
            "spacy",
            "package",
            str(pipeline_dir),
            str(packages),
            "--name",
            SHIP_NAME,
            "--version",
            "0.0.1",
            "--build",
            "wheel",
        ],
        tmp_path,
        "spacy package --build wheel",
        timings,
    )
    package_dir = packages / f"en_{SHIP_NAME}-0.0.1"
    meta = json.loads((package_dir / "meta.json").read_text())
    assert any(re.match(r"spacy-memcoref\b", req) for req in meta["requirements"]), meta["requirements"]
    wheels = list((package_dir / "dist").glob("*.whl"))
    assert len(wheels) == 1, wheels
    import zipfile

    with zipfile.ZipFile(wheels[0]) as wheel:
        metadata = next(n for n in wheel.namelist() if n.endswith(".dist-info/METADATA"))
        requires = [l for l in wheel.read(metadata).decode().splitlines() if l.startswith("Requires-Dist:")]
    assert any("spacy-memcoref" in l for l in requires), requires

    _run([python, "-m", "pip", "install", "-q", str(wheels[0])], tmp_path, "pip install wheel", timings)
    script = (
        "import json, spacy\n"
        f"nlp = spacy.load('en_{SHIP_NAME}')\n"
        f"texts = {texts!r}\n"
        "out = [sorted(sorted([s.start, s.end] for s in g) for k, g in d.spans.items() if k.startswith('coref_clusters_'))"
        " for d in nlp.pipe(texts)]\n"
        "print(json.dumps({'pipe_names': nlp.pipe_names, 'clusters': out, 'file': spacy.util.get_package_path("
        f"'en_{SHIP_NAME}').as_posix()}}))\n"
    )
    stdout = _run([python, "-c", script], tmp_path, "spacy.load by name", timings)
    result = json.loads(stdout.strip().splitlines()[-1])
    assert result["pipe_names"] == ["memcoref"]
    assert str(venv) in result["file"]  # loaded from the fresh venv's site-packages
    assert result["clusters"] == expected
    print(
        "timings (s): " + ", ".join(f"{k} {v:.0f}" for k, v in timings.items()) + f"; total {sum(timings.values()):.0f}"
    )


def test_a_recipe_with_a_second_stage_fine_tunes_its_stored_first_stage_and_ships_the_second():
    """s2e-ontogum-base: the base-encoder s2e is trained, tuned and stored as
    it would ship, then fine-tuned from that stored form by its second
    stage's config (OntoGUM and GAP's rows), moved part of the way back to
    that form (interpolate), tuned again, and that is what is stored,
    scored on dev, and ships."""
    from spacy.util import load_config

    script = load_script("pretrained")
    recipe = srsly.read_json(REPO / "configs" / "pretrained" / "s2e-ontogum-base.json")["recipe"]
    finetune = recipe["finetune"]
    steps = script.commands("s2e-ontogum-base", -1)
    run = Path("training", "pretrained", "s2e-ontogum-base")
    builds = [step for step in steps if step[3:4] == ["pretrained-build"]]
    trains = [step for step in steps if step[1] == "scripts/train.py"]
    tunes = [step for step in steps if step[3:4] == ["tune-link-threshold"]]
    assert len(builds) == len(trains) == len(tunes) == 2
    first_stored, shipped = builds
    second = trains[1]
    assert first_stored[4] == str(run / "model-tuned") and "--dev" not in first_stored
    assert second[2] == finetune["config"] and second[second.index("--s2e") + 1] == first_stored[5]
    assert second[second.index("--paths.train") + 1] == str(script.finetune_corpus("s2e-ontogum-base"))
    assert second[second.index("--system.seed") + 1] == str(finetune["seed"])
    assert steps.index(first_stored) < steps.index(second) < steps.index(tunes[1]) < steps.index(shipped)
    second_output = Path(second[second.index("--output") + 1])
    # the fine-tune's last checkpoint (its model-best may be the step-0 score, the first stage unchanged)
    # moved part of the way back to the source scripts/train.py saved, then tuned
    (interpolate,) = [step for step in steps if step[3:4] == ["interpolate"]]
    assert interpolate[4:7] == [
        str(second_output / "source"),
        str(second_output / "model-last"),
        str(second_output / "interpolated"),
    ]
    assert float(interpolate[interpolate.index("--weight") + 1]) == finetune["weight"] and 0 < finetune["weight"] < 1
    assert steps.index(second) < steps.index(interpolate) < steps.index(tunes[1])
    assert tunes[1][4] == interpolate[6] and "--also" not in tunes[1]
    assert tunes[1][tunes[1].index("--output") + 1] == str(second_output / "model-tuned")
    assert shipped[4] == str(second_output / "model-tuned") and "--dev" in shipped
    assert shipped[5] == str(Path("spacy_memcoref", "pretrained_models", "s2e-ontogum-base"))
    stored_form = [arg for arg in shipped if arg.startswith(("--form", "--rank", "--encoder"))]
    assert stored_form and stored_form == [
        arg for arg in first_stored if arg.startswith(("--form", "--rank", "--encoder"))
    ]
    # the second stage's steps and rate live in its config alone
    assert not any(arg.startswith("--training.") for arg in second)
    config = load_config(REPO / finetune["config"], interpolate=True)
    warm = config["components"]["memcoref"]["warm_start"]
    assert warm["set"] == {} and load_script("train").same_encoder(warm["encoder"], recipe["encoder"]["name"])
    assert config["components"]["memcoref"]["source"] is None  # paths.source: scripts/train.py makes it
    assert config["training"]["optimizer"]["learn_rate"]["total_steps"] == config["training"]["max_steps"]


def test_the_second_stages_corpora_are_copied_into_one_folder_that_spacy_reads_whole(tmp_path):
    """spaCy's corpus reader takes one path: join_corpora copies each corpus
    of the recipe's second stage into one folder (two files of one name
    both kept), and a missing corpus is an error naming it."""
    import spacy
    from spacy.tokens import DocBin
    from spacy.training import Corpus

    script = load_script("pretrained")
    script.REPO = tmp_path
    nlp = spacy.blank("en")
    for part, texts in (("ontogum", ["Alice met Bob.", "She waved."]), ("gap", ["Anna saw Mary there."])):
        (tmp_path / "corpus" / part).mkdir(parents=True)
        DocBin(docs=[nlp.make_doc(t) for t in texts]).to_disk(tmp_path / "corpus" / part / "train.spacy")
    recipe = {
        "finetune": {"config": "x.cfg", "train": ["corpus/ontogum/train.spacy", "corpus/gap/train.spacy"], "seed": 0}
    }
    (tmp_path / "configs" / "pretrained").mkdir(parents=True)
    srsly.write_json(tmp_path / "configs" / "pretrained" / "two.json", {"recipe": recipe})
    script.join_corpora("two")
    folder = tmp_path / script.finetune_corpus("two")
    assert sorted(p.name for p in folder.iterdir()) == ["0-train.spacy", "1-train.spacy"]
    texts = sorted(eg.reference.text for eg in Corpus(folder)(nlp))
    assert texts == ["Alice met Bob.", "Anna saw Mary there.", "She waved."]
    (tmp_path / "corpus" / "gap" / "train.spacy").unlink()
    with pytest.raises(SystemExit, match="corpus/gap/train.spacy"):
        script.join_corpora("two")
