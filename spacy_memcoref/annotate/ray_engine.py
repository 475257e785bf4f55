"""The Ray engine, and Ray Data helpers for people who already have a Dataset.

`annotate --engine ray` plans the shards in the driver, then runs a Ray Data
pipeline: a dataset of shard descriptors (one block each) -> `map_batches`
with `ShardAnnotator`, a callable class that loads the pipeline once per actor
and annotates a whole shard per call -> the driver writes each shard's files
as it arrives, exactly as the local engine does. Ray Data restarts an actor
that dies and retries its shard (max_restarts / max_task_retries = -1); the
driver writes a shard once, whichever attempt delivers it.

The workers read the shards from INPUT themselves, so INPUT must be readable
at the same path on every node (a shared file system); only the driver writes
OUTPUT_DIR.

With a Dataset of your own, `MemcorefPredictor` (or `annotate_dataset`) adds
the clusters as columns::

    ds = ray.data.read_json("news/")
    ds = ds.map_batches(MemcorefPredictor, fn_constructor_kwargs={"model": "en_memcoref_s2e"},
                        batch_size=64, compute=ray.data.ActorPoolStrategy(size=4))
"""

import logging
import os
import pickle
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Union

from ..errors import AnnotateError
from ..loading import ResolvedModel, load_pipeline
from .inputs import ShardPlan
from .results import ShardResult
from .worker import annotate_shard, choose_prefix, coref_prefixes, doc_record

RAY_HINT = 'the Ray engine needs Ray Data: pip install "spacy-memcoref[ray]" (or pip install "ray[data]")'


def import_ray():
    """Import ray and ray.data, or raise ImportError with the install hint."""
    try:
        import ray
        import ray.data  # noqa: F401
    except ImportError as err:
        raise ImportError(f"{RAY_HINT} ({err})") from None
    return ray


def _torch_threads(cpus: Optional[float]) -> Optional[int]:
    return max(1, int(cpus)) if cpus else None


def _gpu_for_actor(use_gpu: Optional[bool]) -> int:
    """The GPU index to run on inside a Ray actor: Ray sets
    CUDA_VISIBLE_DEVICES to the GPUs it gave the actor, so that is device 0."""
    if use_gpu is False:
        return -1
    try:
        import ray

        ids = ray.get_gpu_ids()
    except Exception:
        ids = []
    if ids:
        return 0
    if use_gpu:
        raise RuntimeError("a GPU was asked for but Ray gave this worker none (num_gpus in map_batches)")
    return -1


class ShardAnnotator:
    """map_batches callable for `annotate --engine ray`: each row of a batch is
    a pickled ShardPlan; each output row is the pickled ShardResult of the
    shard (its file contents and counts). model: resolve_model's record
    (or a name), resolved once in the driver."""

    def __init__(
        self,
        model: Union[str, ResolvedModel],
        options: Dict[str, Any],
        threads: Optional[int] = None,
        use_gpu: Optional[bool] = None,
    ) -> None:
        self.nlp = load_pipeline(model, gpu_id=_gpu_for_actor(use_gpu), threads=threads)
        self.options = options

    def __call__(self, batch: Dict[str, Any]) -> Dict[str, List[bytes]]:
        out = []
        for data in batch["plan"]:
            plan = ShardPlan.from_dict(pickle.loads(data))
            out.append(pickle.dumps(annotate_shard(self.nlp, plan, self.options)))
        return {"result": out}


def _local_cluster_env() -> Dict[str, Any]:
    """runtime_env for a cluster this process starts: workers import
    spacy_memcoref from where this process does (a source checkout too)."""
    package_parent = str(Path(__file__).resolve().parents[2])
    paths = [package_parent] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    return {"env_vars": {"PYTHONPATH": os.pathsep.join(dict.fromkeys(paths))}}


def ensure_ray(address: Optional[str] = None, *, num_cpus: Optional[int] = None) -> bool:
    """Connect to Ray: an already initialized session; else the cluster at
    `address` (or $RAY_ADDRESS); else a new local cluster.

    RETURNS (bool): whether this call started Ray (and should shut it down).
    """
    ray = import_ray()
    if ray.is_initialized():
        return False
    address = address or os.environ.get("RAY_ADDRESS") or None
    kwargs: Dict[str, Any] = {"log_to_driver": True, "logging_level": logging.WARNING}
    if address:
        ray.init(address=address, **kwargs)
    else:
        ray.init(num_cpus=num_cpus, include_dashboard=False, runtime_env=_local_cluster_env(), **kwargs)
    return True


def run_ray(
    plans: List[ShardPlan],
    model: Union[str, ResolvedModel],
    options: Dict[str, Any],
    *,
    workers: Optional[int] = None,
    gpus_per_worker: float = 0.0,
    cpus_per_worker: float = 1.0,
    address: Optional[str] = None,
    log: Optional[Callable[[str], None]] = None,
) -> Iterator[ShardResult]:
    """Annotate the shards on Ray; results come as shards finish.

    model (Union[str, ResolvedModel]): the pipeline, as resolve_model found
        it (it pickles to every actor), or a name.

    workers (Optional[int]): actors; None: as many as the cluster's CPUs (or
        GPUs, with gpus_per_worker) allow.
    """
    ray = import_ray()
    if not plans:
        return
    started = ensure_ray(address)
    # our progress bar and summary replace Ray Data's running commentary (and
    # its note that its progress bars are off)
    loggers = {"ray.data": logging.WARNING, "ray.data._internal.progress": logging.ERROR}
    levels = {name: logging.getLogger(name).level for name in loggers}
    for name, level in loggers.items():
        logging.getLogger(name).setLevel(level)
    saved: Dict[str, Any] = {}
    try:
        if workers is None:
            resources = ray.cluster_resources()
            if gpus_per_worker:
                workers = int(resources.get("GPU", 0) // gpus_per_worker)
            else:
                workers = int(resources.get("CPU", 1) // cpus_per_worker)
            workers = max(1, workers)
        if log is not None:
            log(
                f"Ray: {len(plans)} shards on {workers} workers ({cpus_per_worker:g} CPU, {gpus_per_worker:g} GPU each)"
            )
            if len(plans) < workers:
                log(f"only {len(plans)} shards for {workers} workers: a smaller --shard-size would keep them all busy")
        saved = _quiet_ray_data(ray)
        ds = ray.data.from_items(
            [{"plan": pickle.dumps(plan.to_dict())} for plan in plans], override_num_blocks=len(plans)
        )
        ds = ds.map_batches(
            ShardAnnotator,
            batch_size=1,
            compute=ray.data.ActorPoolStrategy(size=workers),
            fn_constructor_kwargs={
                "model": model,
                "options": options,
                "threads": _torch_threads(cpus_per_worker),
                "use_gpu": bool(gpus_per_worker) or None,
            },
            num_cpus=cpus_per_worker,
            num_gpus=gpus_per_worker or None,
            # no max_restarts / max_task_retries here: Ray Data's actor pools
            # default to -1 for both (a dead actor is restarted and its shard
            # retried), and passing them as **ray_remote_args is deprecated
        )
        rows = iter(ds.iter_rows())
        while True:
            try:
                row = next(rows)
            except StopIteration:
                break
            except Exception as err:  # a failed Ray job: its message holds the workers' traceback
                raise AnnotateError(
                    f"the Ray job failed (the shards written so far are kept: rerun to resume): {err}"
                ) from err
            yield pickle.loads(row["result"])
    finally:
        for name, level in levels.items():
            logging.getLogger(name).setLevel(level)
        _restore(ray, saved)
        if started:
            ray.shutdown()


def _quiet_ray_data(ray) -> Dict[str, Any]:
    """Our own progress bar replaces Ray Data's. RETURNS the settings it changed."""
    saved = {}
    try:
        context = ray.data.DataContext.get_current()
        for name in ("enable_progress_bars", "enable_operator_progress_bars", "print_on_execution_start"):
            if hasattr(context, name):
                saved[name] = getattr(context, name)
                setattr(context, name, False)
    except Exception:  # pragma: no cover - older Ray
        pass
    return saved


def _restore(ray, saved: Dict[str, Any]) -> None:
    if saved:
        context = ray.data.DataContext.get_current()
        for name, value in saved.items():
            setattr(context, name, value)


# ----- for a Dataset of your own --------------------------------------------------


def _column(batch: Any, name: str) -> List[Any]:
    if hasattr(batch, "column_names") and hasattr(batch, "column"):  # pyarrow.Table
        return batch.column(name).to_pylist()
    return list(batch[name])


class MemcorefPredictor:
    """A callable class for `Dataset.map_batches`: loads a coreference pipeline
    once per actor and adds to each row `clusters` (a list of {"name",
    "mentions": [{"start", "end", "text"}]}, character offsets into the
    text) and `n_tokens`, the same values as `annotate` writes.

    model (str): a pipeline package name or directory.
    text_column (str): the column with the texts.
    batch_size (int): documents a `nlp.pipe` batch.
    prefix (Optional[str]): span-group prefix of the clusters (default: the
        pipeline's memcoref component's); one that the pipeline's memcoref
        components do not write is refused (ValueError).
    threads (Optional[int]): torch threads in each actor (default: torch's).
    use_gpu (Optional[bool]): None: run on the GPU when Ray gave the actor
        one (`num_gpus=1` in map_batches); False: never; True: require one.

    Batches may be dicts of arrays (Ray's default), pandas DataFrames or
    pyarrow Tables; the other columns pass through unchanged.
    """

    def __init__(
        self,
        model: str,
        *,
        text_column: str = "text",
        batch_size: int = 8,
        prefix: Optional[str] = None,
        threads: Optional[int] = None,
        use_gpu: Optional[bool] = None,
    ) -> None:
        self.nlp = load_pipeline(model, gpu_id=_gpu_for_actor(use_gpu), threads=threads)
        self.text_column = text_column
        self.batch_size = batch_size
        self.prefix = choose_prefix(prefix, coref_prefixes(self.nlp), model)

    def annotate(self, texts: List[str]) -> List[Dict[str, Any]]:
        """The record (without id) of each text."""
        for i, text in enumerate(texts):
            if not isinstance(text, str):
                raise ValueError(
                    f"column {self.text_column!r}, row {i} of the batch: expected a string, found {type(text).__name__}"
                )
        records = []
        for doc in self.nlp.pipe(texts, batch_size=self.batch_size):
            record = doc_record(None, doc, self.prefix)
            del record["id"]
            records.append(record)
        return records

    def __call__(self, batch: Any) -> Any:
        records = self.annotate(_column(batch, self.text_column))
        clusters = [r["clusters"] for r in records]
        n_tokens = [r["n_tokens"] for r in records]
        if hasattr(batch, "column_names") and hasattr(batch, "append_column"):  # pyarrow.Table
            import pyarrow as pa

            cluster_type = pa.list_(
                pa.struct(
                    [
                        ("name", pa.string()),
                        (
                            "mentions",
                            pa.list_(pa.struct([("start", pa.int64()), ("end", pa.int64()), ("text", pa.string())])),
                        ),
                    ]
                )
            )
            batch = batch.append_column("clusters", pa.array(clusters, type=cluster_type))
            return batch.append_column("n_tokens", pa.array(n_tokens, type=pa.int64()))
        if hasattr(batch, "assign"):  # pandas.DataFrame
            return batch.assign(clusters=clusters, n_tokens=n_tokens)
        out = dict(batch)
        out["clusters"] = clusters
        out["n_tokens"] = n_tokens
        return out


def annotate_dataset(
    ds: Any,
    model: str,
    *,
    text_column: str = "text",
    workers: int = 1,
    batch_size: int = 8,
    gpus_per_worker: float = 0.0,
    cpus_per_worker: float = 1.0,
    prefix: Optional[str] = None,
) -> Any:
    """Add coreference clusters to a Ray Dataset of texts.

    ds (ray.data.Dataset): rows with a text column.
    model (str): a pipeline package name or directory (on every node).
    text_column (str): the column with the texts.
    workers (int): actors, each with the pipeline loaded once.
    batch_size (int): rows a call (and a `nlp.pipe` batch).
    gpus_per_worker (float): GPUs an actor (0: CPU).
    cpus_per_worker (float): CPUs an actor (also its torch threads).
    prefix (Optional[str]): span-group prefix of the clusters.
    RETURNS (ray.data.Dataset): the rows with `clusters` and `n_tokens` added.
    """
    ray = import_ray()
    return ds.map_batches(
        MemcorefPredictor,
        batch_size=batch_size,
        compute=ray.data.ActorPoolStrategy(size=workers),
        fn_constructor_kwargs={
            "model": model,
            "text_column": text_column,
            "batch_size": batch_size,
            "prefix": prefix,
            "threads": _torch_threads(cpus_per_worker),
            "use_gpu": bool(gpus_per_worker) or None,
        },
        num_cpus=cpus_per_worker,
        num_gpus=gpus_per_worker or None,
    )


__all__ = ["MemcorefPredictor", "annotate_dataset", "ShardAnnotator", "run_ray", "ensure_ray", "import_ray", "RAY_HINT"]
