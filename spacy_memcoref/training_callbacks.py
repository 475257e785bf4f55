"""Callbacks for `spacy train` configs (`[training.before_update]`)."""

import ctypes
import ctypes.util
import functools
import os
from pathlib import Path
from typing import Any, Callable, Dict, Optional

from spacy.language import Language
from spacy.util import registry
from wasabi import msg

# glibc mallopt parameters (malloc.h)
_M_MMAP_THRESHOLD = -3
_M_ARENA_MAX = -8
# tensors over this are mapped and unmapped on their own, so they never
# fragment a heap; smaller ones reuse heap memory without page faults
# (0 leaves glibc's own threshold, which moves: for benchmarks only)
MMAP_THRESHOLD = 4 * 1024 * 1024
# give freed heap memory back every this many updates (benchmarks/train_memory.py
# and benchmarks/RESULTS.md, "Training speed", for the measured choices)
TRIM_EVERY = 1
# PyTorch's switch for 2 MB pages under its CPU buffers, read at its first
# allocation, while spaCy imports it (so a callback cannot set it;
# scripts/train.py sets it for the project's steps), and where Linux says
# whether it grants them on request
THP_SWITCH = "THP_MEM_ALLOC_ENABLE"
THP_MODE_FILE = Path("/sys/kernel/mm/transparent_hugepage/enabled")
_hinted = False  # spaCy builds the [training] callbacks twice: hint once


@functools.lru_cache(maxsize=None)
def _glibc() -> Optional[ctypes.CDLL]:
    """glibc, or None on another C library (macOS, Windows, musl); looked up
    once a process (find_library runs ldconfig, and spaCy resolves the
    callback twice, each asking twice)."""
    name = ctypes.util.find_library("c")
    if not name:
        return None
    try:
        libc = ctypes.CDLL(name)
    except OSError:
        return None
    return libc if hasattr(libc, "mallopt") and hasattr(libc, "malloc_trim") else None


def release_memory_settings() -> bool:
    """Two malloc arenas, a fixed mmap threshold of 4 MB, and the heap
    trimmed once now.

    Training allocates and frees tensors of ever different sizes (documents
    differ in length) from several threads. Left alone, glibc keeps what is
    freed in per-thread arenas and raises its mmap threshold after each
    large free, so ever larger tensors come from heaps it rarely returns,
    and the process's RSS grows with the steps though the memory in use does
    not (benchmarks/train_memory.py). Two arenas (MALLOC_ARENA_MAX=2) bound
    the heaps; a fixed threshold (MALLOC_MMAP_THRESHOLD_) keeps the large
    tensors out of them; the trim before every update (`make_before_update`)
    gives back what the smaller ones freed.

    Not a trim threshold of 0 (MALLOC_TRIM_THRESHOLD_=0), which an earlier
    version set: it also pins the mmap threshold, at 128 KB, so nearly every
    tensor was mapped fresh and its pages faulted in again, in the kernel.

    RETURNS (bool): whether glibc was there and took the settings.
    """
    libc = _glibc()
    if libc is None:
        return False
    # mallopt returns 1 when it took a setting, 0 when it refused it
    took = libc.mallopt(_M_ARENA_MAX, 2) == 1
    if MMAP_THRESHOLD:
        took = libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1 and took
    libc.malloc_trim(0)
    return took


def huge_pages_hint() -> Optional[str]:
    """A line for a user who trains on 4 KB pages where 2 MB ones are to be
    had: the trim before every update returns the large buffers, so each
    update faults them in afresh, far less often on 2 MB pages
    (benchmarks/RESULTS.md, "2 MB pages for PyTorch's buffers"). Only where
    the kernel grants them on request (`madvise`, the mode measured); None
    when the switch is set, to anything.
    """
    if THP_SWITCH in os.environ:
        return None
    try:
        mode = THP_MODE_FILE.read_text(encoding="utf8")
    except OSError:  # not Linux, or no transparent huge pages in this kernel
        return None
    if "[madvise]" not in mode:
        return None
    return (
        f"{THP_SWITCH}=1 in the environment of `spacy train` puts PyTorch's buffers on 2 MB pages "
        f"for faster updates (the project's train steps set it; docs/training.md, 'Huge pages')"
    )


def _check_threads(name: str, threads: int) -> None:
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 0:
        raise ValueError(f"{name}: threads must be an integer >= 0, got {threads!r}")


def _set_threads(threads: int) -> None:
    if threads == 0:
        return
    import torch

    if torch.get_num_threads() != threads:
        torch.set_num_threads(threads)


@registry.callbacks("spacy_memcoref.before_update.v1")
def make_before_update(
    threads: int = 0, release_memory: bool = True, numpy_dropout: bool = True, checkpoint_every: int = 0
) -> Callable[[Language, Dict[str, Any]], None]:
    """Set up the training process: (release_memory) glibc settings that
    keep RSS flat over the steps (`release_memory_settings`), applied when
    the training config is resolved, i.e. before the pipeline is initialized
    and torch's threads get their malloc arenas (set at the first update they
    came too late to matter), then the heap trimmed before every update
    (`TRIM_EVERY`), with a hint where 2 MB pages would make that faster
    (`huge_pages_hint`); and torch's CPU threads before the first update. Only
    `spacy train` resolves [training], so a loaded pipeline never runs it.
    (numpy_dropout) On a CPU where torch's dropout draws its masks one
    element at a time (any but Intel's), the pipeline's dropout modules
    draw them with numpy before each update (models.cpu_dropout: the same
    distribution, faster; Linux only, where /proc/cpuinfo names the
    vendor).

    threads (int): torch.set_num_threads value; 0 leaves torch's default.
    release_memory (bool): apply the glibc settings (no effect without glibc).
    numpy_dropout (bool): draw dropout masks with numpy where torch's are slow.
    checkpoint_every (int): `memcoref train` writes a checkpoint every this
        many updates (and at SIGTERM), so that `--resume` continues a stopped
        run (training/loop.py); 0: only at SIGTERM. Plain `spacy train`
        writes none.
    RETURNS (Callable): a before_update callback.
    """
    _check_threads("spacy_memcoref.before_update.v1", threads)
    if isinstance(checkpoint_every, bool) or not isinstance(checkpoint_every, int) or checkpoint_every < 0:
        raise ValueError(
            f"spacy_memcoref.before_update.v1: checkpoint_every must be an integer >= 0, got {checkpoint_every!r}"
        )
    if not isinstance(release_memory, bool):
        raise ValueError(
            f"spacy_memcoref.before_update.v1: release_memory must be true or false, got {release_memory!r}"
        )
    glibc = _glibc() if release_memory and release_memory_settings() else None
    global _hinted
    hint = huge_pages_hint() if glibc is not None and not _hinted else None
    if hint:
        msg.info(hint)
        _hinted = True

    if not isinstance(numpy_dropout, bool):
        raise ValueError(f"spacy_memcoref.before_update.v1: numpy_dropout must be true or false, got {numpy_dropout!r}")
    swap_dropout = numpy_dropout and _torch_dropout_is_slow()

    def before_update(nlp: Language, info: Dict[str, Any]) -> None:
        _set_threads(threads)
        if swap_dropout:
            _use_numpy_dropout(nlp)
        if glibc is not None and info.get("step", 0) % TRIM_EVERY == 0:
            glibc.malloc_trim(0)

    # read by training/loop.py (checkpoint_every there)
    before_update.checkpoint_every = checkpoint_every  # type: ignore[attr-defined]
    return before_update


def _torch_dropout_is_slow() -> bool:
    from .models.cpu_dropout import torch_dropout_is_vectorized

    return not torch_dropout_is_vectorized()


def _use_numpy_dropout(nlp: Language) -> None:
    """Every dropout module of the pipeline's torch models (the encoder and
    the heads) draws its CPU masks with numpy; cheap after the first call
    (the modules are walked, nothing is replaced twice), and it also
    reaches a model swapped in since."""
    from thinc.api import PyTorchShim

    from .models.cpu_dropout import use_cpu_dropout

    replaced = 0
    for _, component in nlp.components:
        model = getattr(component, "model", None)
        if model is None or not hasattr(model, "walk"):
            continue
        for node in model.walk():
            for shim in node.shims:
                # an encoder's shim holds no model until it is initialized
                if isinstance(shim, PyTorchShim) and shim._model is not None:
                    replaced += use_cpu_dropout(shim._model)
    if replaced:
        msg.info(f"dropout: {replaced} torch dropout modules draw their CPU masks with numpy (models/cpu_dropout.py)")
