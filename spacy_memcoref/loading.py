"""Loading a trained pipeline: the one way the commands and the annotate
workers (local processes and Ray actors) do it, with errors a user can act
on: one line that names the file that cannot be loaded, not a traceback from
deep inside spaCy, Thinc or torch. `resolve_model` is the one rule of what a
model argument names (a folder, a package, a shipped model by name or by
its folder), for the loader, annotate and pretrained alike.

spaCy is imported by the functions, torch only when threads are asked for:
the CLI imports this module for every command.
"""
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Optional

from .errors import ModelLoadError, shorten


def use_gpu(gpu_id: Optional[int]) -> None:
    """Run on the GPU `gpu_id` (spacy.require_gpu); -1 or None: the CPU, nothing to do.

    gpu_id (Optional[int]): the GPU, or -1 / None.
    RAISES ValueError: the GPU cannot be used; the message names --gpu-id.
    """
    if gpu_id is None or gpu_id < 0:
        return
    import spacy

    try:
        spacy.require_gpu(gpu_id)
    except ValueError as err:
        raise ValueError(f"--gpu-id {gpu_id}: {err}") from None


def set_torch_threads(threads: Optional[int]) -> None:
    """torch.set_num_threads(threads); None or 0: leave torch's default.

    threads (Optional[int]): torch's CPU threads.
    """
    if threads is None or threads <= 0:
        return
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is a dependency
        return
    torch.set_num_threads(int(threads))


def file_being_read(err: BaseException) -> Optional[Path]:
    """The file spaCy was reading when `err` was raised: spaCy's loaders all go
    through spacy.util.from_disk(path, readers), one reader a file or folder,
    so the innermost such call in the traceback names the file.

    err (BaseException): the error, with its traceback.
    RETURNS (Optional[Path]): the file, or None when no reader was running.
    """
    import spacy.util

    found = None
    tb = err.__traceback__
    while tb is not None:
        frame = tb.tb_frame
        if frame.f_code is spacy.util.from_disk.__code__:
            path, key = frame.f_locals.get("path"), frame.f_locals.get("key")
            if path is not None and isinstance(key, str):
                found = Path(path) / key
        tb = tb.tb_next
    return found


@dataclass(frozen=True)
class ResolvedModel:
    """What a model argument (a folder, an installed package's name, or the
    name of a model shipped with this package) names: the one answer that
    the loader, annotate's checks and its output identity share.

    model (str): what the user gave.
    path (Optional[Path]): the model's folder (absolute; an installed
        package's data folder); None when `model` names nothing found.
    shipped (bool): a shipped model in its stored form (config.cfg,
        weights.safetensors, meta.json; spacy_memcoref.pretrained), loaded
        by pretrained.load whether named or given as a folder.
    name (Optional[str]): the shipped model's name, else None.
    package (bool): an installed pipeline package.
    meta (Dict[str, Any]): its meta.json ({} when unreadable or none).
    identity (str): how annotate's manifest names it: a model of this
        package by its name (however it was given), a folder by its
        absolute path, a package or anything else as given.
    """

    model: str
    path: Optional[Path]
    shipped: bool = False
    name: Optional[str] = None
    package: bool = False
    meta: Dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    identity: str = ""


def resolve_model(model: Any) -> ResolvedModel:
    """The model that `model` names, by one rule: an existing path wins (a
    folder in the stored form of a shipped model is that shipped model;
    any other path is a spaCy pipeline folder, or what spacy.load makes of
    it); else the name of a model shipped with this package; else an
    installed pipeline package. Nothing is loaded and nothing is raised:
    a model found nowhere has path None.

    model (Any): a path, a package name or a shipped model's name (str or Path).
    RETURNS (ResolvedModel): the folder, whether it is a shipped model, its
        meta and the identity annotate writes.
    """
    from . import pretrained

    text = str(model)
    shipped = pretrained.find_shipped(text)
    if shipped is not None:
        folder, name, meta = shipped
        own = folder.parent == pretrained.PRETRAINED_DIR.resolve()
        return ResolvedModel(text, folder, True, name, False, meta, name if own and name else str(folder))
    path = Path(text)
    if path.exists():
        folder = path.resolve()
        return ResolvedModel(text, folder, meta=pretrained.read_json(folder / "meta.json") if folder.is_dir() else {}, identity=str(folder))
    try:
        from spacy.util import get_package_path, is_package

        if is_package(text):
            package = Path(get_package_path(text))
            found = sorted(package.glob("*/config.cfg"))
            folder = found[0].parent if found else package
            meta_path = folder / "meta.json" if (folder / "meta.json").exists() else package / "meta.json"
            return ResolvedModel(text, folder, package=True, meta=pretrained.read_json(meta_path), identity=text)
    except Exception:  # not an installed package: spacy.load will say so
        pass
    return ResolvedModel(text, None, identity=text)


def shipped_model_dir(model: str) -> Optional[Path]:
    """The folder of the model shipped with this package that `model` names
    (resolve_model's rule): None when a path `model` exists (the path
    wins) or no shipped model has that name.

    model (str): what the user gave as the pipeline.
    RETURNS (Optional[Path]): the shipped model's folder, or None.
    """
    if Path(model).exists():
        return None
    resolved = resolve_model(model)
    return resolved.path if resolved.shipped else None


def load_pipeline(model: str, gpu_id: Optional[int] = -1, *, threads: Optional[int] = None):
    """spacy.load(model) on the GPU `gpu_id` (-1: CPU), with errors a user can act on.

    model (str): a package name, a directory, or a model shipped with this
        package, by its name ("s2e-ontogum", "petra-gap"; a path of that
        name wins) or its folder (resolve_model).
    gpu_id (Optional[int]): the GPU, or -1 (None: -1).
    threads (Optional[int]): torch's CPU threads (None or 0: torch's default),
        set before the pipeline is loaded.
    RETURNS (Language): the pipeline.
    RAISES ValueError: the GPU cannot be used, or a file of the pipeline cannot
        be loaded (a truncated or corrupt file, weights that are not plain
        tensors); the message, one line, names the file.
    RAISES OSError: no such pipeline (spaCy's own message).
    """
    import spacy

    set_torch_threads(threads)
    use_gpu(gpu_id)
    if resolve_model(model).shipped:  # by name or as its folder
        from . import pretrained

        return pretrained.load(model)
    try:
        return spacy.load(model)
    except Exception as err:
        if isinstance(err, OSError) and not Path(model).exists():
            raise  # spaCy's own "can't find model" message says it well
        where = file_being_read(err) or Path(model)
        reason = " ".join(str(err).split()) or type(err).__name__
        if isinstance(err, ModelLoadError):  # it names the file: name it once
            where, reason = err.path or where, err.reason
        raise ValueError(f"{where}: cannot load the pipeline {model}: {shorten(reason)}") from err
