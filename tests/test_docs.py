"""The documentation stays true to the code and to itself: every option of
every registered builder and factory is in docs/configuration.md with its
default, the README stays short and keeps the test command, user pages name
no developer-only paths or issue numbers, and every relative link resolves."""

import inspect
import json
import re
from pathlib import Path
from typing import Any, Dict, List

import pytest

REPO = Path(__file__).resolve().parent.parent
DOCS = REPO / "docs"
README = REPO / "README.md"
CONFIGURATION = DOCS / "configuration.md"
DEVELOPMENT = DOCS / "development.md"
README_MAX_LINES = 200
# user pages must not name these (the developer page may)
DEVELOPER_ONLY = re.compile(r"\.\./shared|issue [0-9]")
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^\s*(```|~~~)")


def user_pages() -> List[Path]:
    return [README] + sorted(p for p in DOCS.glob("*.md") if p != DEVELOPMENT)


def linked_pages() -> List[Path]:
    bench = REPO / "benchmarks"
    return [README] + sorted(DOCS.glob("*.md")) + sorted(bench.glob("*.md")) + sorted((bench / "log").glob("*.md"))


def prose_lines(path: Path) -> List[str]:
    """The lines of a Markdown file outside fenced code blocks."""
    lines, fenced = [], False
    for line in path.read_text(encoding="utf8").splitlines():
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            lines.append(line)
    return lines


def config_value(value: Any) -> str:
    """A default as a spaCy config (and this documentation) writes it; a
    registered function by its registered name."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        names = [v for k, v in value.items() if k.startswith("@")]
        if names:
            return names[0]
        return json.dumps(value)
    if isinstance(value, (list, tuple)):
        return json.dumps(list(value))
    return repr(value)


def option_tables(path: Path) -> Dict[str, Dict[str, str]]:
    """{section heading: {option: default cell}} for the option tables of a page."""
    tables: Dict[str, Dict[str, str]] = {}
    heading = ""
    for line in prose_lines(path):
        if line.startswith("#"):
            heading = line.lstrip("#").strip()
            continue
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
        if len(cells) >= 3 and re.fullmatch(r"`[A-Za-z_][A-Za-z0-9_]*`", cells[0]):
            tables.setdefault(heading, {})[cells[0].strip("`")] = cells[1]
    return tables


def section_for(tables: Dict[str, Dict[str, str]], name: str) -> Dict[str, str]:
    matches = [heading for heading in tables if f"`{name}`" in heading]
    assert len(matches) == 1, f"docs/configuration.md: expected one section for `{name}`, found {matches}"
    return tables[matches[0]]


def builder_defaults(builder) -> Dict[str, Any]:
    return {
        name: param.default
        for name, param in inspect.signature(builder).parameters.items()
        if param.default is not inspect.Parameter.empty
    }


def architectures():
    from spacy_memcoref.models.encoder.encoder import build_embedded_transformer
    from spacy_memcoref.models.entity_gating import build_entity_gating
    from spacy_memcoref.models.petra.petra_model import build_petra
    from spacy_memcoref.models.s2e.s2e_model import build_s2e

    return [
        ("spacy_memcoref.S2E.v1", build_s2e),
        ("spacy_memcoref.PeTra.v1", build_petra),
        ("spacy_memcoref.EmbeddedTransformer.v1", build_embedded_transformer),
        ("spacy_memcoref.EntityGating.v1", build_entity_gating),
    ]


@pytest.mark.parametrize("index", range(4), ids=["S2E", "PeTra", "EmbeddedTransformer", "EntityGating"])
def test_every_architecture_option_is_documented_with_its_default(index):
    name, builder = architectures()[index]
    documented = section_for(option_tables(CONFIGURATION), name)
    defaults = builder_defaults(builder)
    assert defaults, f"{name} has no keyword options?"
    missing = sorted(set(defaults) - set(documented))
    assert not missing, f"docs/configuration.md, `{name}`: options not documented: {missing}"
    wrong = {
        option: (documented[option], config_value(default))
        for option, default in defaults.items()
        if f"`{config_value(default)}`" not in documented[option]
    }
    assert not wrong, f"docs/configuration.md, `{name}`: documented default (cell, expected) differs: {wrong}"
    # and nothing documented that the builder does not take
    params = set(inspect.signature(builder).parameters)
    extra = sorted(set(documented) - params)
    assert not extra, f"docs/configuration.md, `{name}`: documents options the builder does not take: {extra}"


@pytest.mark.parametrize("factory", ["memcoref", "memcoref_petra"])
def test_every_factory_option_is_documented_with_its_default(factory):
    from spacy.language import Language

    import spacy_memcoref.pipeline.coref_component  # noqa: F401 (registers the factories)

    default_config = Language.get_factory_meta(factory).default_config
    documented = section_for(option_tables(CONFIGURATION), factory)
    missing = sorted(set(default_config) - set(documented))
    assert not missing, f"docs/configuration.md, `{factory}`: options not documented: {missing}"
    wrong = {
        option: (documented[option], config_value(default))
        for option, default in default_config.items()
        if f"`{config_value(default)}`" not in documented[option]
    }
    assert not wrong, f"docs/configuration.md, `{factory}`: documented default (cell, expected) differs: {wrong}"


def test_readme_is_short():
    n_lines = len(README.read_text(encoding="utf8").splitlines())
    assert n_lines <= README_MAX_LINES, (
        f"README.md has {n_lines} lines (at most {README_MAX_LINES}): move detail to docs/"
    )


def test_readme_keeps_the_test_command():
    text = README.read_text(encoding="utf8")
    assert 'pip install -e ".[test,viz,ray]"' in text
    assert "python -m pytest -q" in text


def test_readme_starts_with_the_shipped_models():
    text = README.read_text(encoding="utf8")
    # after the two commands to start (tests/test_readme_start.py), the first Python block
    first_block = re.search(r"```python\n(.*?)```", text, re.S)
    assert first_block is not None
    # the default model first, and the name of the one that runs offline
    assert "spacy_memcoref.load()" in first_block.group(1) and 'load("s2e-ontogum")' in first_block.group(1)


def test_user_pages_name_no_developer_paths_or_issues():
    found = [
        f"{page.relative_to(REPO)}:{number}: {line.strip()}"
        for page in user_pages()
        for number, line in enumerate(page.read_text(encoding="utf8").splitlines(), 1)
        if DEVELOPER_ONLY.search(line)
    ]
    assert not found, "user pages name ../shared or an issue (keep that to docs/development.md):\n" + "\n".join(found)


def github_anchor(heading: str) -> str:
    """The anchor GitHub gives a Markdown heading."""
    text = heading.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set:
    return {github_anchor(line.lstrip("#")) for line in prose_lines(path) if re.match(r"#{1,6} ", line)}


def test_every_relative_link_resolves():
    broken = []
    for page in linked_pages():
        for line in prose_lines(page):
            for target in LINK.findall(line):
                if re.match(r"[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
                    continue
                path_part, _, fragment = target.partition("#")
                dest = (page.parent / path_part).resolve() if path_part else page
                if not dest.exists():
                    broken.append(f"{page.relative_to(REPO)}: {target} (no such file)")
                elif fragment and dest.suffix == ".md" and fragment not in anchors(dest):
                    broken.append(f"{page.relative_to(REPO)}: {target} (no such heading)")
    assert not broken, "broken relative links:\n" + "\n".join(broken)


def test_config_headers_point_to_the_results():
    for config in sorted((REPO / "configs").glob("*.cfg")):
        header = []
        for line in config.read_text(encoding="utf8").splitlines():
            if not line.startswith("#"):
                break
            header.append(line)
        text = "\n".join(header)
        assert "benchmarks/RESULTS.md" in text, f"{config.name}: its header should point to benchmarks/RESULTS.md"
        assert "benchmarks/README.md" not in text, f"{config.name}: results live in benchmarks/RESULTS.md"


LOAD_CALL = re.compile(r"""spacy\.load\(\s*["']([^"']+)["']""")


def project_outputs() -> List[str]:
    """Every output of every project.yml command, with the default variables."""
    from weasel.util.config import load_project_config

    config = load_project_config(REPO, interpolate=True)
    return [str(out) for command in config["commands"] for out in command.get("outputs", [])]


def test_every_folder_the_docs_load_is_written_by_the_project():
    outputs = project_outputs()
    for page in user_pages():
        for folder in LOAD_CALL.findall(page.read_text(encoding="utf8")):
            if "/" not in folder:  # a package name, e.g. en_core_web_sm
                continue
            assert any(folder == out or folder.startswith(out.rstrip("/") + "/") for out in outputs), (
                f"{page.name}: spacy.load({folder!r}) names a folder no project.yml command writes"
            )
