"""The errors of corpus annotation that the engines raise and the runner and
the CLI catch (a module of its own, so that the engines need not import the
runner that imports them)."""


class AnnotateError(RuntimeError):
    """The workers failed (a process that keeps dying, a failed Ray job); the
    shards written so far are kept."""


class Terminated(AnnotateError):
    """The run was stopped by SIGTERM: the workers were stopped and the shards
    written so far are kept, so that a rerun resumes."""
