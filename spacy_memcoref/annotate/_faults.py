"""Fault injection for the tests of `annotate`: not part of the API.

The tests stop a run as if it were killed after N shards, and kill a worker
process once, to check resume and the engines' retries:

    from spacy_memcoref.annotate import _faults

    with _faults.inject(fail_after_shards=3):
        annotate_corpus(...)  # raises _faults.InjectedFailure
    with _faults.inject(die_once=_faults.DieOnce(shard=1, marker=str(tmp_path / "died"))):
        annotate_corpus(..., n_process=2)
    with _faults.inject(stall=_faults.Stall(shard=2)):
        annotate_corpus(...)  # hangs in shard 2 (and later ones): a run to kill

The runner reads the active plan when a run starts (`active()`). Workers run
in other processes (the spawned pool, Ray actors), where this module's state
is not the test's: the runner hands them the `DieOnce` in the shard options
(key `DIE_ONCE`; a `Stall` under `STALL`), small top-level dataclasses
that pickle.
"""

import contextlib
import os
import time
from dataclasses import dataclass
from typing import Iterator, Optional

# the key of the shard options that carries a DieOnce to the workers
DIE_ONCE = "_die_once"
# the key of the shard options that carries a Stall to the workers
STALL = "_stall"


class InjectedFailure(RuntimeError):
    """The run stops as if killed (fail_after_shards)."""


@dataclass(frozen=True)
class DieOnce:
    """Kill the worker process (as a crash would) the first time it annotates
    a document of shard `shard`; `marker` is a file that records that it
    happened, so that the retry goes through."""

    shard: int
    marker: str

    def strike(self, index: int) -> None:
        """Called by the worker after each document of shard `index`."""
        if index != self.shard:
            return
        try:
            fd = os.open(self.marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            return
        os.close(fd)
        os._exit(17)


@dataclass(frozen=True)
class Stall:
    """Hang the worker (as a very slow document would) for `seconds` after
    the first document of shard `shard` and of every later shard, so that
    the shards before it are written and the run is still going: a run for
    the tests to kill."""

    shard: int
    seconds: float = 600.0

    def strike(self, index: int) -> None:
        """Called by the worker after each document of shard `index`."""
        if index >= self.shard:
            time.sleep(self.seconds)


@dataclass(frozen=True)
class FaultPlan:
    """fail_after_shards: the runner writes the files of the N-th shard of the
    run but not the manifest entry, then raises InjectedFailure.
    die_once, stall: passed to the workers (see DieOnce, Stall)."""

    fail_after_shards: Optional[int] = None
    die_once: Optional[DieOnce] = None
    stall: Optional[Stall] = None


NONE = FaultPlan()
_active = NONE


def active() -> FaultPlan:
    """The faults to inject into the run that starts now (NONE outside tests)."""
    return _active


@contextlib.contextmanager
def inject(
    *, fail_after_shards: Optional[int] = None, die_once: Optional[DieOnce] = None, stall: Optional[Stall] = None
) -> Iterator[FaultPlan]:
    """Inject faults into the runs started inside the block."""
    global _active
    saved = _active
    _active = FaultPlan(fail_after_shards=fail_after_shards, die_once=die_once, stall=stall)
    try:
        yield _active
    finally:
        _active = saved
