"""The README opens with the two commands a newcomer needs on a fresh machine:
one that installs the package and resolves a text with the default shipped
model, and one that runs the tests (`bash .ci/run`).

The first runs here as written, from a clean copy of the repository (its
tracked files, nothing built) in a fresh virtual environment, and must print
the output the README shows. Offline, with no new downloads, and so with
this environment's own torch and the other dependencies: the fresh
environment sees this one's installed packages (not this project's own
installation) through a .pth file, as a `--system-site-packages`
environment sees the system's; pip runs with no index (everything the
command asks for is then already satisfied, and an attempt to download fails
at once) and without build isolation (which would fetch setuptools); the
Hugging Face Hub is taken as offline. Where the default model's encoder is not
on this machine ($SPACY_MEMCOREF_ENCODER or the Hugging Face cache, as
`.ci/run` provides), the one substitution is `--model s2e-ontogum`, the
offline model the README names beside it, and the test says so.

The second command runs this test suite, so a test cannot run it in full
without running itself: what is checked is that the README's second command
is exactly `bash .ci/run`, and that `.ci/run` is tracked, is valid bash,
works from any clone (it changes to its repository), makes a fresh virtual
environment and ends with the README's test command. CI runs it."""

import os
import re
import shutil
import site
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Dict, List, Tuple

import pytest

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"
CI_RUN = REPO / ".ci" / "run"
START_HEADING = "## Two commands to start"
FENCED = re.compile(r"^```([a-z]*)\n(.*?)^```$", re.M | re.S)
RESOLVE = re.compile(r'memcoref resolve "[^"]+"$')
OFFLINE_MODEL = "s2e-ontogum"
# names in site-packages that belong to this project's own installation (editable or not)
OWN = ("spacy_memcoref", "spacy-memcoref", "__editable__", "__editable___spacy_memcoref")


def fenced_blocks(text: str) -> List[Tuple[str, str]]:
    """(language, body) of each fenced code block, in order."""
    return [(m.group(1), m.group(2)) for m in FENCED.finditer(text)]


def start_section() -> str:
    text = README.read_text(encoding="utf8")
    assert START_HEADING in text, f"README.md has no {START_HEADING!r} section"
    after = text.split(START_HEADING, 1)[1]
    return after.split("\n## ", 1)[0]


def start_commands() -> Tuple[str, List[str], str]:
    """The start section's first command, the output it shows, and the
    second command."""
    blocks = fenced_blocks(start_section())
    assert [lang for lang, _ in blocks] == ["bash", "text", "bash"], (
        "the start section holds the first command (bash), its output (text) and the second command (bash): "
        f"found {[lang for lang, _ in blocks]}"
    )
    return blocks[0][1], blocks[1][1].rstrip("\n").split("\n"), blocks[2][1].strip()


def command_lines(block: str) -> List[str]:
    """The commands of a bash block: its lines without comments or blanks."""
    lines = [re.sub(r"\s+#.*$", "", line).strip() for line in block.splitlines()]
    return [line for line in lines if line and not line.startswith("#")]


def test_the_readme_opens_with_the_two_commands():
    text = README.read_text(encoding="utf8")
    headings = [line for line in text.splitlines() if line.startswith("## ")]
    assert headings and headings[0] == START_HEADING, f"the README's first section is {headings[:1]}"
    first, shown, second = start_commands()
    # nothing in a code block comes before them
    assert fenced_blocks(text)[0][1] == first
    lines = command_lines(first)
    assert lines[-1].startswith("pip install . && "), lines
    assert RESOLVE.search(lines[-1]), f"the first command ends by resolving a text: {lines[-1]}"
    assert second == "bash .ci/run"
    assert len(shown) >= 3 and "" in shown, f"the output shown: clusters, a blank line, the resolved text: {shown}"


def test_ci_run_makes_a_fresh_environment_and_ends_with_the_readmes_test_command():
    script = CI_RUN.read_text(encoding="utf8")
    if shutil.which("git") and (REPO / ".git").exists():
        tracked = subprocess.run(["git", "ls-files", "--error-unmatch", ".ci/run"], cwd=REPO, capture_output=True)
        assert tracked.returncode == 0, ".ci/run is not tracked: a clone would not have it"
    syntax = subprocess.run(["bash", "-n", str(CI_RUN)], capture_output=True, text=True)
    assert syntax.returncode == 0, syntax.stderr
    assert 'cd "$(dirname "$0")/.."' in script, ".ci/run runs from its own repository, wherever it is called from"
    assert re.search(r"^rm -rf \"\$VENV\"$", script, re.M) and re.search(r"-m venv \"\$VENV\"", script)
    # the README's test command (its Tests section's last command) is the script's last
    tests_section = README.read_text(encoding="utf8").split("\n## Tests", 1)[1].split("\n## ", 1)[0]
    readme_test_command = command_lines(fenced_blocks(tests_section)[0][1])[-1]
    assert readme_test_command == "python -m pytest -q"
    assert command_lines(script)[-1] == readme_test_command
    # and the suite it runs holds this file
    assert Path(__file__).resolve().parent == REPO / "tests"


# ----- the first command, run in a clean copy -------------------------------------------


def _default_encoder_here() -> bool:
    """Whether the default model finds its encoder without a download."""
    from spacy_memcoref import encoder_source, pretrained

    hub = pretrained.info(pretrained.DEFAULT_MODEL)["base_encoder"].get("hub")
    if not hub:
        return True
    given = os.environ.get(encoder_source.ENV_VAR)
    if given:
        return (Path(given) / encoder_source.WEIGHTS).is_file()
    return encoder_source.cached(hub) is not None


def _clean_copy(dest: Path) -> Path:
    """The repository's tracked files, as they are in the working tree."""
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("not a git checkout: no clean copy of the repository to make")
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True).stdout
    for name in listed.decode("utf8").split("\0"):
        source = REPO / name
        if name and source.is_file():  # a tracked file deleted in the working tree is not copied
            target = dest / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    return dest


def _fresh_environment(env_dir: Path, view: Path) -> Path:
    """A virtual environment that sees this environment's packages, except
    this project's own installation, through a .pth file (a folder of links:
    a .pth line adds a folder without running the .pth files in it). Its
    `pip` is this environment's pip, run by its own interpreter, so it
    installs into it."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env_dir)], check=True)
    folders = [sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"], *site.getsitepackages()]
    if site.ENABLE_USER_SITE:
        folders.append(site.getusersitepackages())
    view.mkdir()
    for folder in dict.fromkeys(folders):
        if not Path(folder).is_dir():
            continue
        for entry in Path(folder).iterdir():
            if entry.name.startswith(OWN) or entry.suffix in (".pth", ".egg-link") or (view / entry.name).exists():
                continue
            (view / entry.name).symlink_to(entry)
    python = env_dir / "bin" / "python"
    env_site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    (Path(env_site) / "_this_environment.pth").write_text(f"{view}\n", encoding="utf8")
    pip = env_dir / "bin" / "pip"
    pip.write_text('#!/bin/sh\nexec "$(dirname "$0")/python" -m pip "$@"\n', encoding="utf8")
    pip.chmod(0o755)
    return Path(env_site)


def _environment(env_dir: Path, *, offline_model: bool, hf_home: Path) -> Dict[str, str]:
    """The variables the commands run with: the fresh environment active
    (first on PATH, this one's bin off it), pip without an index or build
    isolation, the Hub offline."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTHONPATH", "PYTHONHOME", "PIP_USER", "PIP_TARGET", "PIP_PREFIX")
    }
    ours = {str(Path(sys.prefix) / "bin"), str(Path(os.environ.get("VIRTUAL_ENV", sys.prefix)) / "bin")}
    path = [p for p in env.get("PATH", os.defpath).split(os.pathsep) if p and p not in ours]
    env.update(
        PATH=os.pathsep.join([str(env_dir / "bin"), *path]),
        VIRTUAL_ENV=str(env_dir),
        PIP_NO_INDEX="1",
        PIP_NO_BUILD_ISOLATION="0",  # pip's spelling: "0" turns build isolation off
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        HF_HUB_OFFLINE="1",
    )
    if offline_model:  # nothing to find the default's encoder by: the offline model must need none
        env.pop("SPACY_MEMCOREF_ENCODER", None)
        env["HF_HOME"] = str(hf_home)
    return env


def _run(command: str, cwd: Path, env: Dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-e", "-c", command], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


def _check_output(result: subprocess.CompletedProcess, shown: List[str], what: str) -> None:
    assert result.returncode == 0, (
        f"{what} failed ({result.returncode}):\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    )
    printed = result.stdout.rstrip("\n").split("\n")
    assert printed[-len(shown) :] == shown, (
        f"{what} printed (last lines) {printed[-len(shown) :]}, the README shows {shown}"
    )
    assert "Traceback" not in result.stderr, result.stderr[-3000:]


def test_the_readmes_first_command_runs_as_written_in_a_clean_copy(tmp_path):
    first, shown, _ = start_commands()
    lines = command_lines(first)
    repo = _clean_copy(tmp_path / "repo")
    env_dir = tmp_path / "env"
    env_site = _fresh_environment(env_dir, tmp_path / "this-environment")
    as_written = _default_encoder_here()
    command = first
    if not as_written:
        # the one substitution: the offline model, which the README names beside the default
        command = "\n".join(line + f" --model {OFFLINE_MODEL}" if RESOLVE.search(line) else line for line in lines)
    env = _environment(env_dir, offline_model=not as_written, hf_home=tmp_path / "hf-empty")
    result = _run(command, repo, env)
    _check_output(
        result, shown, "the README's first command" + ("" if as_written else f" with --model {OFFLINE_MODEL}")
    )
    # what ran is the copy's package, installed in the fresh environment (package data included), not an editable link
    assert (env_dir / "bin" / "memcoref").is_file()
    installed = env_site / "spacy_memcoref"
    assert (installed / "pretrained_models" / OFFLINE_MODEL / "weights.safetensors").is_file()
    where = subprocess.run(
        [str(env_dir / "bin" / "python"), "-c", "import spacy_memcoref; print(spacy_memcoref.__file__)"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert Path(where).parent == installed, where
    if as_written:
        # and the offline model the README names needs nothing downloaded: no encoder to find, an empty cache
        resolve_line = next(line for line in lines if RESOLVE.search(line)).split("&&")[-1].strip()
        offline = _run(
            f"{resolve_line} --model {OFFLINE_MODEL}",
            repo,
            _environment(env_dir, offline_model=True, hf_home=tmp_path / "hf-empty"),
        )
        _check_output(offline, shown, f"`{resolve_line} --model {OFFLINE_MODEL}`")
    else:
        pytest.skip(
            "ran with --model s2e-ontogum in place of the default model, whose encoder is not on this machine "
            "(set SPACY_MEMCOREF_ENCODER, as .ci/run does); the offline model printed what the README shows"
        )
