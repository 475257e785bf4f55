"""The local engine: shards annotated with `nlp.pipe` in this process, or in a
pool of worker processes (`--n-process`), each of which loads the pipeline
once. A worker that dies (a crash, the OOM killer) is replaced and its shards
are done again; the writer in this process keeps what was already written.
A worker dies with this process, however it ends (kill -9 included): on
Linux by prctl(PR_SET_PDEATHSIG), elsewhere by a thread that watches for
the parent to go.
"""

import os
import signal
import sys
import threading
import time
from collections import deque
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Callable, Dict, Iterable, Iterator, Optional, Union

from ..errors import AnnotateError
from ..loading import ResolvedModel, load_pipeline
from .inputs import ShardPlan
from .results import ShardResult
from .worker import annotate_shard

MAX_POOL_RESTARTS = 3


def default_threads(n_process: int) -> Optional[int]:
    """torch threads a process: the cores shared out when there are several
    processes; torch's own default for one."""
    if n_process <= 1:
        return None
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        cores = os.cpu_count() or 1
    return max(1, cores // n_process)


def run_inline(
    plans: Iterable[ShardPlan],
    model: Union[str, ResolvedModel],
    options: Dict[str, Any],
    *,
    gpu_id: int = -1,
    threads: Optional[int] = None,
    on_docs: Optional[Callable[[int, int], None]] = None,
    on_ready: Optional[Callable[[], None]] = None,
) -> Iterator[ShardResult]:
    """Annotate shards one after another in this process, in order.
    model: the pipeline (loading.resolve_model's record, or a name)."""
    nlp = load_pipeline(model, gpu_id=gpu_id, threads=threads)
    if on_ready is not None:
        on_ready()
    for plan in plans:
        yield annotate_shard(nlp, plan, options, on_docs=on_docs)


# ----- the process pool ------------------------------------------------------

_WORKER: Dict[str, Any] = {}

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
PARENT_POLL_S = 1.0


def _set_parent_death_signal(signum: int) -> bool:
    """Ask Linux to send this process `signum` when its parent dies.
    RETURNS (bool): whether it was set (False elsewhere than Linux)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_PDEATHSIG, int(signum), 0, 0, 0) == 0
    except (OSError, AttributeError):  # pragma: no cover - no libc prctl
        return False


def _watch_parent(parent_pid: int, poll_s: float) -> None:
    """Exit this process when it is no longer `parent_pid`'s child (the
    parent died and the process was handed to init or a subreaper)."""
    while True:
        time.sleep(poll_s)
        if os.getppid() != parent_pid:
            os._exit(1)


def die_with_parent(parent_pid: int, *, poll_s: float = PARENT_POLL_S) -> None:
    """Make this worker process end when `parent_pid` (the process that
    started it) ends, however it ends: a killed parent must not leave its
    workers (hundreds of MB each) running. PR_SET_PDEATHSIG where Linux has
    it, and a daemon thread that polls os.getppid() everywhere (POSIX
    hands an orphan to another parent). Exits at once when the parent is
    already gone."""
    _set_parent_death_signal(signal.SIGKILL)
    if os.getppid() != parent_pid:  # it died before the death signal was set
        os._exit(1)
    threading.Thread(target=_watch_parent, args=(parent_pid, poll_s), name="memcoref-watch-parent", daemon=True).start()


def _init_worker(
    model: Union[str, ResolvedModel],
    gpu_id: int,
    threads: Optional[int],
    options: Dict[str, Any],
    parent_pid: Optional[int] = None,
) -> None:
    if parent_pid is not None:
        die_with_parent(parent_pid)
    _WORKER["options"] = options
    try:
        _WORKER["nlp"] = load_pipeline(model, gpu_id=gpu_id, threads=threads)
    except Exception as err:
        # raised by the worker's first shard, so that the user reads the
        # loader's message (as `--n-process 1` gives it), not "a worker
        # process died" after every restart of a pool whose initializer fails
        _WORKER["error"] = _portable(err)


def _portable(err: Exception) -> Exception:
    """The error as one that pickles back to this process with its message
    (an exception class whose __init__ takes other arguments would not):
    an OSError stays one, anything else becomes a ValueError."""
    message = str(err) or type(err).__name__
    return OSError(message) if isinstance(err, OSError) else ValueError(message)


def _work(plan: Dict[str, Any]) -> ShardResult:
    if "error" in _WORKER:
        raise _WORKER["error"]
    return annotate_shard(_WORKER["nlp"], ShardPlan.from_dict(plan), _WORKER["options"])


def run_pool(
    plans: Iterable[ShardPlan],
    model: Union[str, ResolvedModel],
    options: Dict[str, Any],
    *,
    n_process: int,
    gpu_id: int = -1,
    threads: Optional[int] = None,
    max_restarts: int = MAX_POOL_RESTARTS,
) -> Iterator[ShardResult]:
    """Annotate shards in n_process worker processes (each gets `model`,
    resolve_model's record, pickled); results come as shards finish (not
    in order). At most 2 * n_process shards are in flight, so memory does
    not grow with the corpus."""
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")  # fork and torch's threads do not mix

    def new_pool() -> ProcessPoolExecutor:
        return ProcessPoolExecutor(
            n_process, mp_context=ctx, initializer=_init_worker, initargs=(model, gpu_id, threads, options, os.getpid())
        )

    plans = iter(plans)
    retry: deque = deque()
    in_flight: Dict[Any, ShardPlan] = {}
    restarts = 0
    pool = new_pool()
    exhausted = False
    finished = False
    try:
        while True:
            broken = False
            while len(in_flight) < 2 * n_process:
                if retry:
                    plan = retry.popleft()
                elif not exhausted:
                    plan = next(plans, None)
                    if plan is None:
                        exhausted = True
                        continue
                else:
                    break
                try:
                    in_flight[pool.submit(_work, plan.to_dict())] = plan
                except BrokenProcessPool:
                    # a worker died after the last wait() returned (its shard's
                    # future may not be failed yet): the pool refuses new work
                    retry.append(plan)
                    broken = True
                    break
            if not broken:
                if not in_flight:
                    finished = True
                    return
                done, _ = wait(list(in_flight), return_when=FIRST_COMPLETED)
                for future in sorted(done, key=lambda f: in_flight[f].index):
                    plan = in_flight.pop(future)
                    try:
                        result = future.result()
                    except BrokenProcessPool:
                        broken = True
                        retry.append(plan)
                        continue
                    yield result
            if broken:
                # every shard still in flight died with the pool: do them again
                for future, plan in sorted(in_flight.items(), key=lambda kv: kv[1].index):
                    if future.done() and future.exception() is None:
                        yield future.result()
                    else:
                        retry.append(plan)
                in_flight.clear()
                retry = deque(sorted(retry, key=lambda p: p.index))
                pool.shutdown(wait=True, cancel_futures=True)
                restarts += 1
                if restarts > max_restarts:
                    raise AnnotateError(
                        f"a worker process died {restarts} times (out of memory? see the messages above); "
                        "the shards written so far are kept: rerun to resume"
                    )
                pool = new_pool()
    finally:
        if not finished:  # stopped early (a bad line, an interrupt): do not wait for the shards in flight
            _terminate(pool)
        pool.shutdown(wait=True, cancel_futures=True)


def _terminate(pool: ProcessPoolExecutor) -> None:
    processes = getattr(pool, "_processes", None) or {}
    for process in list(processes.values()):
        try:
            process.terminate()
        except Exception:  # pragma: no cover - already gone
            pass
