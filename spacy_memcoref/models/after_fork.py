"""One torch thread in a process forked from one that ran torch.

spaCy's `nlp.pipe(texts, n_process=k)` forks its workers (Linux). GNU
OpenMP, which runs torch's intra-op threads, does not survive a fork: a
child whose parent had used the thread pool waits forever on a lock of
threads that no longer exist (seen: `nlp.pipe(..., n_process=2)` never
returned, the children at 0 s of CPU). With one thread a child never enters
the pool. The k workers share the machine's cores anyway, so one thread
each costs nothing; `annotate --n-process` (spawned workers) is not
affected. Imported by the model modules (it imports torch).
"""

import os

import torch


def _one_thread() -> None:
    torch.set_num_threads(1)


if hasattr(os, "register_at_fork"):  # POSIX
    os.register_at_fork(after_in_child=_one_thread)
