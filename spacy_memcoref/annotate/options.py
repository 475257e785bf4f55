"""`AnnotateOptions`: how `annotate_corpus` runs, in one dataclass, and the
checks of it that refuse bad options before any work is done."""

from dataclasses import dataclass, fields, replace
from typing import Any, Dict, List, Mapping, NamedTuple, Optional, Sequence, Tuple, Union

ENGINES = ("local", "ray")
FORMATS = ("jsonl", "spacy")


def parse_formats(formats: Union[str, Sequence[str]]) -> List[str]:
    """The output formats, from "jsonl,spacy" or a sequence, in FORMATS' order.
    RAISES ValueError: none, or one that is not jsonl or spacy."""
    items = formats.split(",") if isinstance(formats, str) else list(formats)
    items = [f.strip() for f in items if f.strip()]
    bad = [f for f in items if f not in FORMATS]
    if bad or not items:
        raise ValueError(f"--format must be jsonl, spacy or jsonl,spacy; got {','.join(items) or formats!r}")
    return sorted(set(items), key=FORMATS.index)


class EngineOptions(NamedTuple):
    """The engine and its options, checked, defaults filled in."""

    engine: str
    n_process: int
    threads: Optional[int]
    gpu_id: int
    workers: Optional[int]
    gpus_per_worker: float
    cpus_per_worker: float
    address: Optional[str]


@dataclass(frozen=True)
class AnnotateOptions:
    """How `annotate_corpus` runs; every field has the default of the
    `annotate` command's option of that name.

    engine (str): "local" (nlp.pipe here, `n_process` processes) or "ray".
    formats (Union[str, Sequence[str]]): "jsonl" and/or "spacy" (DocBin).
    text_field, id_field (str): JSONL fields of the text and the id.
    input_format (str): "auto" (by suffix), "jsonl", "txt" or "spacy".
    encoding (str): encoding of JSONL and txt files.
    shard_size (int): documents a shard: shard k = input items
        [k * shard_size, (k + 1) * shard_size), whatever the engine.
    batch_size (int): documents a `nlp.pipe` batch.
    skip_errors (bool): record bad input in shard-*.errors.jsonl and go on,
        instead of stopping at the first: bad lines, and bad files (a file
        or folder that cannot be read, a symbolic link loop, a truncated or
        corrupt DocBin), each of which counts as one error.
    resolved (bool): add "resolved" (the text with pronouns replaced by their
        cluster's representative) and "edits" to each JSONL record, and
        store them in each DocBin Doc's user_data["resolved"] = {"text",
        "edits"}, as `predict --resolved` does.
    overwrite (bool): replace an OUTPUT_DIR written by another run.
    prefix (Optional[str]): span-group prefix of the clusters (default: the
        pipeline's memcoref component's); one that the pipeline's memcoref
        components do not write is refused.
    n_process (Optional[int]): local engine: worker processes (default 1).
    threads (Optional[int]): local engine: torch threads a process (default:
        torch's for one process, the cores shared out for several).
    gpu_id (Optional[int]): local engine: the GPU (default -1: CPU).
    workers (Optional[int]): Ray engine: actors (default: the cluster's CPUs
        / cpus_per_worker, or GPUs / gpus_per_worker).
    gpus_per_worker, cpus_per_worker (Optional[float]): Ray engine: resources
        an actor (default 0 and 1); an actor's torch threads = its CPUs.
    address (Optional[str]): Ray engine: the cluster to join (default
        $RAY_ADDRESS, else a new local cluster).
    progress (Optional[bool]): show a progress bar (None: when stderr is a terminal).

    The options of the engine not chosen must be left unset (None).
    """

    engine: str = "local"
    formats: Union[str, Sequence[str]] = ("jsonl",)
    text_field: str = "text"
    id_field: str = "id"
    input_format: str = "auto"
    encoding: str = "utf-8"
    shard_size: int = 1000
    batch_size: int = 8
    skip_errors: bool = False
    resolved: bool = False
    overwrite: bool = False
    prefix: Optional[str] = None
    n_process: Optional[int] = None
    threads: Optional[int] = None
    gpu_id: Optional[int] = None
    workers: Optional[int] = None
    gpus_per_worker: Optional[float] = None
    cpus_per_worker: Optional[float] = None
    address: Optional[str] = None
    progress: Optional[bool] = None

    @classmethod
    def names(cls) -> Tuple[str, ...]:
        """The options' names (the fields)."""
        return tuple(f.name for f in fields(cls))

    @classmethod
    def of(
        cls,
        options: Optional["AnnotateOptions"] = None,
        changes: Optional[Mapping[str, Any]] = None,
        *,
        caller: str = "annotate_corpus",
    ) -> "AnnotateOptions":
        """`options` (default: the defaults) with `changes` (option name ->
        value) made.

        RAISES TypeError: `options` is not AnnotateOptions, or a name in
            `changes` is no option (the message names it and lists them).
        """
        if options is None:
            options = cls()
        elif not isinstance(options, cls):
            raise TypeError(f"{caller}(): options must be AnnotateOptions, got {type(options).__name__}")
        changes = dict(changes or {})
        unknown = sorted(set(changes) - set(cls.names()))
        if unknown:
            raise TypeError(
                f"{caller}() got unknown option(s) {', '.join(repr(name) for name in unknown)}: "
                f"the options of AnnotateOptions are {', '.join(cls.names())}"
            )
        return replace(options, **changes) if changes else options

    def read_options(self) -> Dict[str, Any]:
        """How the input is read: text_field, id_field and encoding."""
        return {"text_field": self.text_field, "id_field": self.id_field, "encoding": self.encoding}

    def check(self) -> Tuple[List[str], EngineOptions]:
        """Refuse bad options before any work (Ray missing included).

        RETURNS (Tuple[List[str], EngineOptions]): the formats and the
            engine's options, defaults filled in.
        RAISES ValueError: naming the option (as the command spells it).
        RAISES ImportError: the Ray engine without Ray (with the install hint).
        """
        engine = self.engine
        if engine not in ENGINES:
            raise ValueError(f"--engine must be local or ray, got {engine!r}")
        formats = parse_formats(self.formats)
        local_opts = {"--n-process": self.n_process, "--threads": self.threads, "--gpu-id": self.gpu_id}
        ray_opts = {
            "--workers": self.workers,
            "--gpus-per-worker": self.gpus_per_worker,
            "--cpus-per-worker": self.cpus_per_worker,
            "--address": self.address,
        }
        wrong = [name for name, value in (ray_opts if engine == "local" else local_opts).items() if value is not None]
        if wrong:
            takes = ", ".join(local_opts if engine == "local" else ray_opts)
            raise ValueError(f"{', '.join(wrong)} does not apply to --engine {engine} (it takes {takes})")
        n_process = 1 if self.n_process is None else self.n_process
        gpu_id = -1 if self.gpu_id is None else self.gpu_id
        gpus_per_worker = 0.0 if self.gpus_per_worker is None else float(self.gpus_per_worker)
        cpus_per_worker = 1.0 if self.cpus_per_worker is None else float(self.cpus_per_worker)
        for name, value in (
            ("--shard-size", self.shard_size),
            ("--batch-size", self.batch_size),
            ("--n-process", n_process),
        ):
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if self.workers is not None and self.workers < 1:
            raise ValueError(f"--workers must be a positive integer, got {self.workers!r}")
        if gpus_per_worker < 0 or cpus_per_worker <= 0:
            raise ValueError("--gpus-per-worker must be >= 0 and --cpus-per-worker > 0")
        if self.threads is not None and self.threads < 1:
            raise ValueError(f"--threads must be a positive integer, got {self.threads!r}")
        if not self.text_field or not self.id_field:
            raise ValueError("--text-field and --id-field must not be empty")
        try:
            "".encode(self.encoding)
        except LookupError:
            raise ValueError(f"unknown encoding {self.encoding!r}") from None
        if engine == "ray":
            from .ray_engine import import_ray

            import_ray()  # fail now, with the install hint, not after planning
        return formats, EngineOptions(
            engine, n_process, self.threads, gpu_id, self.workers, gpus_per_worker, cpus_per_worker, self.address
        )
