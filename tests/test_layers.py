"""The house drawn from the imports: the package's import graph, read from the
source with `ast` (module-level and function-level imports alike), has no
cycles, and no module imports a module of a higher layer.

Layers, lowest first (a module may import its own layer and the layers
below; two layers of one rank may not import each other):

0. base         about, errors, util: no spaCy objects, no torch
1. doc_helpers  Doc conventions and helpers (cluster span groups, GAP
                spans, gold targets, the memory log): spaCy only, no torch
2. corpora      file formats (CoNLL-2012, GAP, DocBin, people counts): I/O
2. decoders     each model's decisions on a prediction (link threshold,
                calibration, GAP threshold, people-count alpha) and the
                writing of it on a Doc: numpy, no torch
3. models       Thinc builders and pure torch modules, a layer by part
                (every module of models/ in a part; lowest first):
   3.0 models          the package, the torch helpers both the encoder
                       and the heads use (averaged_params, torch_weights,
                       after_fork) and the training's dropout masks (cpu_dropout)
   3.1 models.encoder  the encoder: the embedded transformer, its frozen
                       and partly frozen forms, their cache, bfloat16, int8,
                       weights-only loading
   3.2 models.glue     thinc_glue: a torch head as a Thinc model
   3.3 models.s2e      s2e's builder and torch module
   3.3 models.petra    PeTra's builder and torch modules (s2e and PeTra do
                       not import each other)
   3.3 models.gating   EntityGating.v1: a downstream tok2vec's entity gate
                       over the Docs' entity vectors (Thinc, no torch)
4. scoring      metrics, GAP decisions
5. pipeline     the spaCy components (and the training callbacks)
6. tuning       choosing decoder settings on validation data: grids, the
                tie-break rule, saving a pipeline with them; and training
                (spaCy's loop with checkpoints and resume)
7. app          the command line, corpus annotation, pictures, resolved
                text and entity records, the shipped trained models, the
                package's own __init__
"""

import ast
from pathlib import Path
from typing import Dict, List, Optional, Set, Tuple

PACKAGE = "spacy_memcoref"
SOURCE = Path(__file__).resolve().parent.parent / PACKAGE

# first part of the module name under the package -> (layer, rank); a
# package divided into parts ("models" and "models.encoder", ...) places a
# module by its part, and a module of it in no part is in no layer
LAYERS: Dict[str, Tuple[str, float]] = {
    "about": ("base", 0),
    "errors": ("base", 0),
    "util": ("base", 0),
    "gendered_words": ("base", 0),  # word lists: the gender swap's and the decoding rules'
    "doc_helpers": ("doc_helpers", 1),
    "corpora": ("corpora", 2),
    "decoders": ("decoders", 2),
    "models": ("models", 3.0),  # spacy_memcoref/models/__init__.py
    "models.averaged_params": ("models", 3.0),
    "models.torch_weights": ("models", 3.0),
    "models.cpu_dropout": ("models", 3.0),
    "models.after_fork": ("models", 3.0),
    "models.encoder": ("models.encoder", 3.1),
    "models.thinc_glue": ("models.glue", 3.2),
    "models.s2e": ("models.s2e", 3.3),
    "models.petra": ("models.petra", 3.3),
    "models.entity_gating": ("models.gating", 3.3),  # a downstream tok2vec's entity gate (no torch)
    "scoring": ("scoring", 4),
    "pipeline": ("pipeline", 5),
    "training_callbacks": ("pipeline", 5),
    "training": ("tuning", 6),  # memcoref train: spaCy's loop with checkpoints
    "tuning": ("tuning", 6),
    "visualize": ("app", 7),
    "resolution": ("app", 7),
    "entities": ("app", 7),
    "stream": ("app", 7),  # text in pieces, over the pipeline
    "pretrained": ("app", 7),
    "weight_forms": ("app", 7),  # how pretrained stores tuned layers
    "encoder_source": ("app", 7),  # where pretrained finds a Hub encoder
    "loading": ("app", 7),
    "annotate": ("app", 7),
    "cli": ("app", 7),
    "__main__": ("app", 7),
    "": ("app", 7),  # spacy_memcoref/__init__.py
}
TORCH_FREE_LAYERS = ("base", "doc_helpers", "corpora", "decoders")
HEAVY = ("torch", "thinc", "spacy_transformers", "transformers")


def _modules() -> Dict[str, Path]:
    found = {}
    for path in sorted(SOURCE.rglob("*.py")):
        parts = list(path.relative_to(SOURCE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def _imports(name: str, path: Path, modules: Dict[str, Path]) -> Tuple[Set[str], Set[str]]:
    """(package modules imported, other top-level packages imported), anywhere in the file."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    inside: Set[str] = set()
    outside: Set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            # `from package import submodule` imports the submodule
            targets = [f"{module}.{a.name}" if f"{module}.{a.name}" in modules else module for a in node.names]
        else:
            continue
        for target in targets:
            if target == PACKAGE or target.startswith(PACKAGE + "."):
                while target not in modules:  # `import spacy_memcoref.x.y` of a name in x
                    target = target.rsplit(".", 1)[0]
                if target != name:
                    inside.add(target)
            else:
                outside.add(target.split(".")[0])
    return inside, outside


def _graph() -> Tuple[Dict[str, Set[str]], Dict[str, Set[str]]]:
    modules = _modules()
    graph, external = {}, {}
    for name, path in modules.items():
        graph[name], external[name] = _imports(name, path, modules)
    return graph, external


def _layer_key(module: str) -> Optional[str]:
    """The key of LAYERS that places a module: its first part under the
    package, then, while that package is divided into parts, the part
    (None: in no layer)."""
    rest = module[len(PACKAGE) + 1 :] if module != PACKAGE else ""
    parts = rest.split(".")
    key = parts[0]
    if key not in LAYERS:
        return None
    for part in parts[1:]:
        if not any(other.startswith(key + ".") for other in LAYERS):
            break  # an undivided package: all of it is in its layer
        key = f"{key}.{part}"
        if key not in LAYERS:
            return None  # a module of a divided package in none of its parts
    return key


def _layer(module: str) -> Tuple[str, float]:
    key = _layer_key(module)
    assert key is not None, f"{module} is in no layer"
    return LAYERS[key]


def _cycles(graph: Dict[str, Set[str]]) -> List[List[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on_stack: Set[str] = set()
    found: List[List[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_every_module_has_a_layer():
    graph, _ = _graph()
    unplaced = [m for m in graph if _layer_key(m) is None]
    assert not unplaced, f"modules in no layer (add them to LAYERS): {unplaced}"


def test_a_divided_package_places_each_module_by_its_part():
    assert _layer(PACKAGE) == ("app", 7)
    assert _layer(f"{PACKAGE}.pipeline.coref_component") == ("pipeline", 5)
    assert _layer(f"{PACKAGE}.models") == ("models", 3.0)
    assert _layer(f"{PACKAGE}.models.torch_weights") == ("models", 3.0)
    assert _layer(f"{PACKAGE}.models.encoder.frozen_encoder") == ("models.encoder", 3.1)
    assert _layer(f"{PACKAGE}.models.s2e.pytorch_s2e") == ("models.s2e", 3.3)
    assert _layer(f"{PACKAGE}.models.petra") == ("models.petra", 3.3)
    # a new module of models/ must be given a part
    assert _layer_key(f"{PACKAGE}.models.new_module") is None
    assert _layer_key(f"{PACKAGE}.nowhere") is None


def test_no_import_cycles():
    graph, _ = _graph()
    cycles = _cycles(graph)
    assert not cycles, "import cycles:\n" + "\n".join(" <-> ".join(cycle) for cycle in cycles)


def test_no_upward_imports():
    graph, _ = _graph()
    upward = []
    for module, targets in sorted(graph.items()):
        layer, rank = _layer(module)
        for target in sorted(targets):
            target_layer, target_rank = _layer(target)
            if target_layer != layer and target_rank >= rank:
                upward.append(f"{module} ({layer}) -> {target} ({target_layer})")
    assert not upward, "imports of a higher (or sibling) layer:\n" + "\n".join(upward)


def test_torch_free_layers_import_no_torch():
    graph, external = _graph()
    heavy = [
        f"{module} -> {package}"
        for module, packages in sorted(external.items())
        for package in sorted(packages)
        if _layer(module)[0] in TORCH_FREE_LAYERS and package in HEAVY
    ]
    assert not heavy, "torch-free layers importing torch or Thinc:\n" + "\n".join(heavy)


# ----- the tests' own imports -------------------------------------------------------

TESTS = Path(__file__).resolve().parent


def _test_modules_imported(source: str, filename: str = "<test>") -> Set[str]:
    """The test_* modules a file imports, anywhere in it: import statements
    and importlib.import_module / __import__ of a literal name."""
    found: Set[str] = set()
    for node in ast.walk(ast.parse(source, filename)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module or ""] + [alias.name for alias in node.names if not node.module]
        elif (
            isinstance(node, ast.Call)
            and getattr(node.func, "attr", getattr(node.func, "id", None)) in ("import_module", "__import__")
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            names = [node.args[0].value]
        else:
            continue
        found.update(name.split(".")[0] for name in names if name.split(".")[0].startswith("test_"))
    return found


def test_the_check_of_the_tests_imports_finds_each_form():
    source = (
        "import test_a\n"
        "import os, test_b as b\n"
        "from test_c import x\n"
        "from test_d.sub import y\n"
        "def f():\n"
        "    from test_e import z\n"
        "    importlib.import_module('test_f')\n"
        "    __import__('test_g')\n"
        "from conftest import s2e_config\n"
        "import testing, pytest\n"
    )
    assert _test_modules_imported(source) == {f"test_{c}" for c in "abcdefg"}


def test_no_test_file_imports_another():
    """Shared builders and fixtures live in tests/conftest.py, not in a test
    file: importing a test file ties two subjects together, and a test
    function imported with it is collected twice."""
    found = []
    for path in sorted(TESTS.rglob("*.py")):
        for module in sorted(_test_modules_imported(path.read_text(encoding="utf-8"), str(path))):
            found.append(f"{path.relative_to(TESTS)} imports {module}")
    assert not found, "test files importing test files (move what they share to conftest.py):\n" + "\n".join(found)
