"""Training checkpoints: everything the next update of `spacy train`'s loop
needs, written atomically, found again after a stop.

A checkpoint is a folder `checkpoint-STEP` in the training output:

    model/                  the pipeline (nlp.to_disk): weights, vocab, config
    optimizer.safetensors   Thinc's Adam moments and parameter averages
    state.json              the step, the scores so far, the losses since the
                            last evaluation, the random states (Python, numpy,
                            torch), the shuffle state of each epoch, Adam's
                            update counts, the config's digest
    COMPLETE                written last: the SHA-256 of the two files above

It is written into `checkpoint-STEP.partial` and renamed when complete, so a
stop while writing leaves no folder that looks complete; the last
`KEEP` complete checkpoints stay, so a damaged newest one (a failing
checksum) still leaves the one before it. No pickle: tensors go through
safetensors, the rest through JSON.

Thinc's optimizer keys its state by `(model or shim id, parameter name)`,
ids that a new process numbers afresh: a checkpoint names each key by where
its node sits in the pipeline (`component/walk index[/shimN]`) instead.
"""

import hashlib
import json
import os
import random
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple, cast

import numpy
from spacy.language import Language
from thinc.api import Model, Optimizer, get_current_ops

from ..errors import CheckpointError
from ..util import file_sha256

PREFIX = "checkpoint-"
PARTIAL = ".partial"
MARKER = "COMPLETE"
STATE = "state.json"
OPTIMIZER = "optimizer.safetensors"
MODEL = "model"
KEEP = 2
FORMAT = 1


@dataclass
class TrainState:
    """Where a training run stands after `next_step` updates (steps 0 to
    next_step - 1 done), beyond the weights and the optimizer.

    next_step (int): the step the run continues with.
    epoch (int): the epoch of the last step done.
    results (List[Tuple[float, int]]): (score, step) of every evaluation.
    losses (Dict[str, float]): the losses summed since the last evaluation.
    words (int): the words seen.
    seconds (float): the training time so far.
    epoch_starts (Dict[int, Any]): the first step of each epoch -> Python's
        random state just before that step's batch was drawn (the shuffle of
        the epoch happens then).
    random_states (Optional[Dict[str, Any]]): see below; None in a new run.
    added_settings (List[str]): settings the checkpoint's config lacks that
        this version fills at their defaults (`config_differences`).
    """

    next_step: int = 0
    epoch: int = 0
    results: List[Tuple[float, int]] = field(default_factory=list)
    losses: Dict[str, float] = field(default_factory=dict)
    words: int = 0
    seconds: float = 0.0
    epoch_starts: Dict[int, Any] = field(default_factory=dict)
    # a loaded checkpoint's random states (Python, numpy, torch), which the
    # loop sets once it has drawn again the batches already trained on
    random_states: Optional[Dict[str, Any]] = None
    added_settings: List[str] = field(default_factory=list)


def config_digest(nlp: Language) -> str:
    """The SHA-256 of the pipeline's config as text: a checkpoint continues
    only the run of the same config (overrides included). Where the digests
    differ, `config_differences` decides."""
    return hashlib.sha256(nlp.config.to_str().encode("utf8")).hexdigest()


def _flat(config: Dict[str, Any], prefix: Tuple[str, ...] = ()) -> Dict[Tuple[str, ...], Any]:
    found: Dict[Tuple[str, ...], Any] = {}
    for key, value in config.items():
        if isinstance(value, dict):
            found.update(_flat(value, prefix + (key,)))
        else:
            found[prefix + (key,)] = value
    return found


def _default_of(current: Dict[str, Any], place: Tuple[str, ...]) -> Tuple[bool, Any]:
    """(True, the default) where `place` is a setting with a default: a
    component factory's setting or an argument of a registered function."""
    import inspect

    from spacy.util import registry

    section: Any = current
    for key in place[:-1]:
        section = section[key]
    setting = place[-1]
    if len(place) == 3 and place[0] == "components" and "factory" in section:
        defaults = Language.get_factory_meta(section["factory"]).default_config or {}
        return (setting in defaults, defaults.get(setting))
    for key, name in section.items():
        if key.startswith("@"):
            try:
                function = registry.get(key[1:], name)
            except Exception:  # an unknown registry or name: no default known
                return (False, None)
            parameter = inspect.signature(function).parameters.get(setting)
            if parameter is None or parameter.default is inspect.Parameter.empty:
                return (False, None)
            return (True, parameter.default)
    return (False, None)


def config_differences(saved: Dict[str, Any], current: Dict[str, Any]) -> Tuple[List[str], List[str]]:
    """How the config a checkpoint was written with differs from the current
    one, key order aside: (differences, added) as `section.key` lines.

    A setting the saved config lacks that the current one has *at its
    default* (a component factory's setting or a registered function's
    argument that a newer version of the code added) is `added`, not a
    difference: the run it continues is the same run. Anything else (a
    value changed, a setting gone, a new one away from its default) is a
    difference."""
    old, new = _flat(saved), _flat(current)
    differences, added = [], []
    for place in sorted(old.keys() | new.keys()):
        name = ".".join(place)
        if place not in new:
            differences.append(f"{name}: {old[place]!r} -> (absent)")
        elif place not in old:
            has_default, default = _default_of(current, place)
            if has_default and default == new[place]:
                added.append(f"{name} = {new[place]!r}")
            else:
                differences.append(f"{name}: (absent) -> {new[place]!r}")
        elif old[place] != new[place]:
            differences.append(f"{name}: {old[place]!r} -> {new[place]!r}")
    return differences, added


# ----- random states ---------------------------------------------------------------


def _random_states() -> Dict[str, Any]:
    import torch

    version, internal, gauss = random.getstate()
    # the legacy tuple (get_state's default; typed as a union with the dict form)
    kind, keys, pos, has_gauss, cached = cast(Tuple[str, numpy.ndarray, int, int, float], numpy.random.get_state())
    states = {
        "python": [version, list(internal), gauss],
        "numpy": [kind, keys.tolist(), int(pos), int(has_gauss), float(cached)],
        "torch": torch.get_rng_state().tolist(),
    }
    if torch.cuda.is_available():
        states["cuda"] = [s.tolist() for s in torch.cuda.get_rng_state_all()]
    return states


def python_state_to_json(state: Any) -> list:
    version, internal, gauss = state
    return [version, list(internal), gauss]


def python_state_from_json(value: list) -> Any:
    version, internal, gauss = value
    return (version, tuple(internal), gauss)


def _set_random_states(states: Dict[str, Any]) -> None:
    import torch

    random.setstate(python_state_from_json(states["python"]))
    kind, keys, pos, has_gauss, cached = states["numpy"]
    numpy.random.set_state((kind, numpy.asarray(keys, dtype=numpy.uint32), pos, has_gauss, cached))
    torch.set_rng_state(torch.tensor(states["torch"], dtype=torch.uint8))
    if "cuda" in states and torch.cuda.is_available():
        torch.cuda.set_rng_state_all([torch.tensor(s, dtype=torch.uint8) for s in states["cuda"]])


# ----- the optimizer ---------------------------------------------------------------


def _places(nlp: Language) -> Tuple[Dict[int, Tuple[str, Model]], Dict[int, str]]:
    """Each node and shim id of the pipeline's models -> its place name."""
    nodes: Dict[int, Tuple[str, Model]] = {}
    shims: Dict[int, str] = {}
    for name, component in nlp.components:
        model = getattr(component, "model", None)
        if not isinstance(model, Model):
            continue
        for i, node in enumerate(model.walk()):
            nodes.setdefault(node.id, (f"{name}/{i}", node))
            for j, shim in enumerate(node.shims):
                shims.setdefault(shim.id, f"{name}/{i}/shim{j}")
    return nodes, shims


def _key_names(nlp: Language, keys) -> Dict[Any, str]:
    """Thinc optimizer keys -> "place|parameter". Node and shim ids come from
    two counters, so an id may name both: a node's key is one of its
    parameter names."""
    nodes, shims = _places(nlp)
    names = {}
    for key in keys:
        id_, param = key
        if id_ in nodes and nodes[id_][1].has_param(param):
            place = nodes[id_][0]
        elif id_ in shims:
            place = shims[id_]
        else:
            raise CheckpointError(None, f"the optimizer holds state for {key!r}, which is no parameter of the pipeline")
        names[key] = f"{place}|{param}"
    return names


def _optimizer_arrays(nlp: Language, optimizer: Optimizer) -> Tuple[Dict[str, numpy.ndarray], Dict[str, Any]]:
    ops = get_current_ops()
    tables = {"mom1": optimizer.mom1, "mom2": optimizer.mom2, "averages": optimizer.averages or {}}
    keys = set(optimizer.nr_update) | set(optimizer.last_seen)
    for table in tables.values():
        keys |= set(table)
    names = _key_names(nlp, keys)
    arrays = {
        f"{table}:{names[key]}": numpy.ascontiguousarray(ops.to_numpy(value), dtype=numpy.float32)
        for table, values in tables.items()
        for key, value in values.items()
    }
    counts = {
        "nr_update": {names[key]: int(value) for key, value in optimizer.nr_update.items()},
        "last_seen": {names[key]: int(value) for key, value in optimizer.last_seen.items()},
        "averages": optimizer.averages is not None,
    }
    return arrays, counts


def _restore_optimizer(
    nlp: Language, optimizer: Optimizer, arrays: Dict[str, numpy.ndarray], counts: Dict[str, Any], steps: int
) -> None:
    """Put the saved state into a fresh optimizer of the same config, and move
    its schedules (learning rate and the rest) `steps` steps on, as the loop
    does once a step."""
    ops = get_current_ops()
    if bool(counts["averages"]) != (optimizer.averages is not None):
        raise CheckpointError(None, "the checkpoint's optimizer and the config's disagree on use_averages")
    by_name: Dict[str, Any] = {}
    nodes, shims = _places(nlp)
    for id_, (place, node) in nodes.items():
        for param in node.param_names:
            by_name[f"{place}|{param}"] = (id_, param)
    for id_, place in shims.items():
        by_name[f"{place}|"] = id_  # a prefix: shim parameter names are the torch module's

    def key_of(name: str):
        if name in by_name and isinstance(by_name[name], tuple):
            return by_name[name]
        place, param = name.split("|", 1)
        if f"{place}|" in by_name:
            return (by_name[f"{place}|"], param)
        raise CheckpointError(None, f"the checkpoint holds optimizer state for {name!r}, which is not in this pipeline")

    tables: Dict[str, Dict[Any, Any]] = {"mom1": optimizer.mom1, "mom2": optimizer.mom2}
    if optimizer.averages is not None:
        tables["averages"] = optimizer.averages
    for table in tables.values():
        table.clear()
    for name, array in arrays.items():
        table_name, key_name = name.split(":", 1)
        # Ops.asarray takes a numpy array (its signature names only thinc's array types)
        tables[table_name][key_of(key_name)] = ops.asarray(array)  # type: ignore[arg-type]
    optimizer.nr_update.clear()
    optimizer.nr_update.update({key_of(k): v for k, v in counts["nr_update"].items()})
    optimizer.last_seen.clear()
    optimizer.last_seen.update({key_of(k): v for k, v in counts["last_seen"].items()})
    for _ in range(steps):
        optimizer.step_schedules()


# ----- writing and finding ---------------------------------------------------------


def _fsync_tree(path: Path) -> None:
    for root, _, files in os.walk(path):
        for name in files:
            with open(Path(root) / name, "rb") as file_:
                os.fsync(file_.fileno())


def write_checkpoint(output: Path, nlp: Language, optimizer: Optimizer, state: TrainState) -> Path:
    """Write the checkpoint after `state.next_step` updates into `output`,
    then drop all but the last KEEP complete ones.

    RETURNS (Path): the checkpoint's folder.
    """
    from safetensors.numpy import save_file

    output = Path(output)
    final = output / f"{PREFIX}{state.next_step:07d}"
    partial = final.with_name(final.name + PARTIAL)
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    nlp.to_disk(partial / MODEL)
    arrays, counts = _optimizer_arrays(nlp, optimizer)
    save_file(arrays, str(partial / OPTIMIZER))
    record = {
        "format": FORMAT,
        "config_sha256": config_digest(nlp),
        "next_step": state.next_step,
        "epoch": state.epoch,
        "results": [[score, step] for score, step in state.results],
        "losses": state.losses,
        "words": state.words,
        "seconds": state.seconds,
        "epoch_starts": {str(step): python_state_to_json(s) for step, s in state.epoch_starts.items()},
        "random": _random_states(),
        "optimizer": counts,
    }
    (partial / STATE).write_text(json.dumps(record), encoding="utf8")
    _fsync_tree(partial)
    marker = {name: file_sha256(partial / name) for name in (STATE, OPTIMIZER)}
    (partial / MARKER).write_text(json.dumps(marker), encoding="utf8")
    shutil.rmtree(final, ignore_errors=True)
    os.replace(partial, final)
    for old in complete_checkpoints(output)[:-KEEP]:
        shutil.rmtree(old, ignore_errors=True)
    return final


def complete_checkpoints(output: Path) -> List[Path]:
    """The checkpoint folders in `output` that were written to the end
    (their COMPLETE marker is there), oldest first; checksums not checked."""
    output = Path(output)
    if not output.is_dir():
        return []
    found = [
        p for p in output.glob(f"{PREFIX}*") if p.is_dir() and not p.name.endswith(PARTIAL) and (p / MARKER).is_file()
    ]
    return sorted(found, key=lambda p: p.name)


def remove_checkpoints(output: Path) -> None:
    """Remove every checkpoint folder in `output`, complete or not."""
    for path in Path(output).glob(f"{PREFIX}*"):
        if path.is_dir():
            shutil.rmtree(path, ignore_errors=True)


def _verify(path: Path) -> Optional[str]:
    """None when the checkpoint's files match its marker, else why not."""
    try:
        marker = json.loads((path / MARKER).read_text(encoding="utf8"))
        for name in (STATE, OPTIMIZER):
            if file_sha256(path / name) != marker[name]:
                return f"{name} does not match its checksum"
        if not (path / MODEL / "config.cfg").is_file():
            return "the model folder is incomplete"
    except (OSError, ValueError, KeyError, TypeError) as err:
        return f"unreadable ({err})"
    return None


def find_checkpoint(output: Path, warn=print) -> Optional[Path]:
    """The newest complete checkpoint in `output` whose files match their
    checksums; a damaged newer one is passed over with a warning."""
    for path in reversed(complete_checkpoints(output)):
        problem = _verify(path)
        if problem is None:
            return path
        warn(f"passing over the damaged checkpoint {path}: {problem}")
    return None


def read_config_digest(path: Path) -> str:
    return json.loads((Path(path) / STATE).read_text(encoding="utf8"))["config_sha256"]


def load_checkpoint(path: Path, nlp: Language, optimizer: Optimizer) -> TrainState:
    """Load the checkpoint at `path` into `nlp` and a fresh `optimizer` of the
    same config; the random states are not set (the loop sets them once it
    has drawn again the batches already trained on).

    RAISES CheckpointError: the checkpoint is of another config or format.
    RETURNS (TrainState): where the run stands.
    """
    from safetensors.numpy import load_file

    path = Path(path)
    record = json.loads((path / STATE).read_text(encoding="utf8"))
    if record.get("format") != FORMAT:
        raise CheckpointError(path, f"checkpoint format {record.get('format')!r}, this version reads {FORMAT}")
    added: List[str] = []
    if record["config_sha256"] != config_digest(nlp):
        from thinc.api import Config

        saved = Config().from_disk(path / MODEL / "config.cfg", interpolate=False)
        differences, added = config_differences(saved, nlp.config)
        if differences:
            shown = "; ".join(differences[:5]) + ("; ..." if len(differences) > 5 else "")
            raise CheckpointError(
                path,
                f"the checkpoint is of another config ({shown}): start a new output folder, or remove the checkpoints to start again",
            )
    nlp.from_disk(path / MODEL)
    _restore_optimizer(nlp, optimizer, load_file(str(path / OPTIMIZER)), record["optimizer"], record["next_step"])
    state = TrainState(
        next_step=record["next_step"],
        epoch=record["epoch"],
        results=[(score, step) for score, step in record["results"]],
        losses=record["losses"],
        words=record["words"],
        seconds=record["seconds"],
        epoch_starts={int(step): python_state_from_json(s) for step, s in record["epoch_starts"].items()},
        random_states=record["random"],
        added_settings=added,
    )
    return state


def set_random_states(state: TrainState) -> None:
    """Set the random states saved with a loaded checkpoint's `state`."""
    if state.random_states is not None:
        _set_random_states(state.random_states)
