"""Loading a trained pipeline: the one way the commands and the annotate
workers (local processes and Ray actors) do it, with errors a user can act
on: one line that names the file that cannot be loaded, not a traceback from
deep inside spaCy, Thinc or torch.

spaCy is imported by the functions, torch only when threads are asked for:
the CLI imports this module for every command.
"""
from pathlib import Path
from typing import Optional

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


def shipped_model_dir(model: str) -> Optional[Path]:
    """The folder of the model shipped with this package that `model` names,
    as load_pipeline reads it: None when a path `model` exists (the path
    wins) or no shipped model has that name.

    model (str): what the user gave as the pipeline.
    RETURNS (Optional[Path]): the shipped model's folder, or None.
    """
    if Path(model).exists():
        return None
    from . import pretrained

    return pretrained.model_dir(model) if model in pretrained.available() else None


def load_pipeline(model: str, gpu_id: Optional[int] = -1, *, threads: Optional[int] = None):
    """spacy.load(model) on the GPU `gpu_id` (-1: CPU), with errors a user can act on.

    model (str): a package name, a directory, or the name of a model shipped
        with this package ("s2e-ontogum", "petra-gap"; a path of that name
        wins).
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
    if shipped_model_dir(model) is not None:
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
