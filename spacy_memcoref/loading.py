"""Loading a trained pipeline: the one way the commands and the annotate
workers (local processes and Ray actors) do it, with errors a user can act
on: one line that names the file that cannot be loaded, not a traceback from
deep inside spaCy, Thinc or torch. `resolve_model` is the one rule of what a
model argument names (a folder, a package, a shipped model by name or by
its folder), for the loader, annotate and pretrained alike.

spaCy is imported by the functions, torch only when threads are asked for:
the CLI imports this module for every command.
"""

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple, Union

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
    name of a model shipped with this package) names, worked out once by
    resolve_model and handed on: to the loader (load_pipeline takes it in
    place of the name), to annotate's checks, its output identity and its
    workers (it pickles: local processes and Ray actors get it as it is).

    model (str): what the user gave (named in messages; what spacy.load is
        given for a folder or a package).
    folder (Optional[Path]): the model's folder (absolute; an installed
        package's data folder); None when `model` names nothing found.
    meta (Dict[str, Any]): its meta.json ({} when unreadable or none).
    identity (str): how annotate's manifest names it: a model of this
        package by its name (however it was given), a folder by its
        absolute path, a package or anything else as given.
    span_prefixes (Optional[Tuple[str, ...]]): the span_cluster_prefix of
        each enabled memcoref component (from its config.cfg), in pipeline
        order: where the pipeline writes clusters; None when the config
        cannot be read (then nothing is known).
    name (Optional[str]): a shipped model's name, else None.
    shipped (bool): a shipped model in its stored form (config.cfg,
        weights.safetensors, meta.json; spacy_memcoref.pretrained), loaded
        by pretrained.load_stored whether named or given as a folder.
    package (bool): an installed pipeline package.
    given_path (bool): `model` is an existing path (a path wins over a name).
    """

    model: str
    folder: Optional[Path]
    meta: Dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    identity: str = ""
    span_prefixes: Optional[Tuple[str, ...]] = None
    name: Optional[str] = None
    shipped: bool = False
    package: bool = False
    given_path: bool = False

    def with_absolute_path(self) -> "ResolvedModel":
        """The record with a path given made absolute, for workers that may
        run in another folder or on another node (Ray); a name stays."""
        return replace(self, model=str(self.folder)) if self.given_path else self


def resolve_model(model: Any) -> ResolvedModel:
    """The model that `model` names, by one rule: an existing path wins (a
    folder in the stored form of a shipped model is that shipped model;
    any other path is a spaCy pipeline folder, or what spacy.load makes of
    it); else the name of a model shipped with this package; else an
    installed pipeline package. Nothing is loaded and nothing is raised:
    a model found nowhere has folder None.

    model (Any): a path, a package name or a shipped model's name (str or
        Path), or a ResolvedModel (returned as it is).
    RETURNS (ResolvedModel): the folder, whether it is a shipped model, its
        meta, the identity annotate writes and the prefixes of its clusters.
    """
    if isinstance(model, ResolvedModel):
        return model
    from . import pretrained

    text = str(model)
    given_path = Path(text).exists()
    shipped = pretrained.find_shipped(text)
    if shipped is not None:
        folder, name, meta = shipped
        own = folder.parent == pretrained.PRETRAINED_DIR.resolve()
        identity = name if own and name else str(folder)
        return ResolvedModel(text, folder, meta, identity, _config_prefixes(folder), name, True, given_path=given_path)
    if given_path:
        folder = Path(text).resolve()
        meta = pretrained.read_json(folder / "meta.json") if folder.is_dir() else {}
        return ResolvedModel(text, folder, meta, str(folder), _config_prefixes(folder), given_path=True)
    try:
        from spacy.util import get_package_path, is_package

        if is_package(text):
            package = Path(get_package_path(text))
            found = sorted(package.glob("*/config.cfg"))
            folder = found[0].parent if found else package
            meta_path = folder / "meta.json" if (folder / "meta.json").exists() else package / "meta.json"
            return ResolvedModel(
                text, folder, pretrained.read_json(meta_path), text, _config_prefixes(folder), package=True
            )
    except Exception:  # not an installed package: spacy.load will say so
        pass
    return ResolvedModel(text, None, identity=text)


def _config_prefixes(folder: Path) -> Optional[Tuple[str, ...]]:
    """The span_cluster_prefix of each enabled memcoref component of the
    pipeline in `folder` (its config.cfg, interpolated where it can be), in
    pipeline order; None when there is no config.cfg or it cannot be read."""
    if not (folder / "config.cfg").is_file():
        return None
    from thinc.api import Config

    from .doc_helpers.clusters import CLUSTER_PREFIX
    from .pipeline.coref_component import COREF_FACTORIES

    try:
        config = Config().from_disk(folder / "config.cfg", interpolate=False)
        try:
            config = config.interpolate()  # a prefix given as ${vars...}
        except Exception:
            pass
    except Exception:
        return None
    nlp_block = config.get("nlp", {})
    disabled = set(nlp_block.get("disabled", []) or [])
    prefixes: List[str] = []
    for name in nlp_block.get("pipeline", []):
        block = config.get("components", {}).get(name, {})
        if name not in disabled and block.get("factory") in COREF_FACTORIES:
            prefix = str(block.get("span_cluster_prefix", CLUSTER_PREFIX))
            if prefix not in prefixes:
                prefixes.append(prefix)
    return tuple(prefixes)


def load_pipeline(model: Union[str, ResolvedModel], gpu_id: Optional[int] = -1, *, threads: Optional[int] = None):
    """spacy.load(model) on the GPU `gpu_id` (-1: CPU), with errors a user can act on.

    model (Union[str, ResolvedModel]): a package name, a directory, or a
        model shipped with this package, by its name ("s2e-ontogum",
        "petra-ontogum", "petra-gap"; a path of that name wins) or its folder; or what
        resolve_model made of one (then it is not worked out again).
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

    resolved = resolve_model(model)
    set_torch_threads(threads)
    use_gpu(gpu_id)
    if resolved.shipped:  # by name or as its folder
        from . import pretrained

        assert resolved.folder is not None  # a shipped model is found by its folder (resolve_model)
        return pretrained.load_stored(resolved.folder, resolved.meta)
    model = resolved.model
    try:
        return spacy.load(model)
    except Exception as err:
        if isinstance(err, OSError) and not resolved.given_path:
            raise  # spaCy's own "can't find model" message says it well
        where = file_being_read(err) or Path(model)
        reason = " ".join(str(err).split()) or type(err).__name__
        if isinstance(err, ModelLoadError):  # it names the file: name it once
            where, reason = err.path or where, err.reason
        raise ValueError(f"{where}: cannot load the pipeline {model}: {shorten(reason)}") from err
