"""`annotate_corpus`: a corpus in, numbered shards of coreference clusters out,
on one machine or on Ray, resumable."""

import contextlib
import hashlib
import itertools
import os
import signal
import sys
import threading
import time
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, Iterator, List, NamedTuple, Optional, Set, Tuple, Union

from ..errors import DataFormatError, Terminated
from ..loading import ResolvedModel, resolve_model, use_gpu
from . import _faults
from .inputs import InputSpec, ShardPlan, plan_shards, resolve_input, shard_ids
from .options import AnnotateOptions, EngineOptions
from .output import OutputDir, model_identity
from .results import ShardResult
from .worker import choose_prefix


class BadInput(ValueError):
    """A bad input item (a bad line, or a bad file: see annotate.inputs)
    stopped the run (without --skip-errors)."""


class DuplicateIds:
    """Counts the documents whose id an earlier document of the output
    already has, wherever they are (other shards, other workers): fed in the
    writing process, with the ids of every shard written or found done.
    Keeps an 8-byte hash an id (about 70 bytes a document) and the first few
    duplicate ids for the warning."""

    EXAMPLES = 5

    def __init__(self) -> None:
        self._seen: set = set()
        self._repeated: set = set()
        self.count = 0
        self.examples: List[str] = []

    def add(self, ids: Iterable[str]) -> None:
        for doc_id in ids:
            key = int.from_bytes(
                hashlib.blake2b(str(doc_id).encode("utf-8", "surrogatepass"), digest_size=8).digest(), "little"
            )
            if key not in self._seen:
                self._seen.add(key)
                continue
            self.count += 1
            if key not in self._repeated:
                self._repeated.add(key)
                if len(self.examples) < self.EXAMPLES:
                    self.examples.append(str(doc_id))

    def warning(self) -> Optional[str]:
        """The one warning of a run, or None when every id is unique."""
        if not self.count:
            return None
        shown = ", ".join(repr(doc_id) for doc_id in self.examples)
        more = ", ..." if len(self._repeated) > len(self.examples) else ""
        return (
            f"warning: duplicate document ids: {self.count:,} documents have an id that an earlier document has "
            f"({len(self._repeated):,} ids: {shown}{more}); they are annotated all the same, but their records "
            "cannot be told apart by id (duplicate_ids in the summary)"
        )


@dataclass
class AnnotateSummary:
    """What a run did (documents ... errors: this run) and what OUTPUT_DIR holds
    (totals, from the manifest). duplicate_ids: documents in OUTPUT_DIR
    (shards done by an earlier run included) whose id an earlier document
    has (so distinct ids = totals n_docs - duplicate_ids). seconds: the
    whole run; busy_seconds: from the first shard's start to the last one's
    end in the workers (model loading and worker start-up left out);
    plan_seconds: planning the shards up front (Ray); write_seconds: writing
    shards and manifest in this process; worker_peak_rss_mb: peak RSS by
    worker pid."""

    output_dir: str
    documents: int = 0
    tokens: int = 0
    clusters: int = 0
    errors: int = 0
    duplicate_ids: int = 0
    shards: int = 0
    skipped_shards: int = 0
    seconds: float = 0.0
    busy_seconds: float = 0.0
    plan_seconds: float = 0.0
    write_seconds: float = 0.0
    worker_peak_rss_mb: Dict[str, float] = field(default_factory=dict)
    totals: Dict[str, int] = field(default_factory=dict)
    complete: bool = False

    @property
    def docs_per_s(self) -> float:
        return self.documents / self.seconds if self.seconds > 0 else 0.0

    @property
    def tokens_per_s(self) -> float:
        return self.tokens / self.seconds if self.seconds > 0 else 0.0

    def to_dict(self) -> Dict[str, Any]:
        data = asdict(self)
        data["docs_per_s"] = round(self.docs_per_s, 3)
        data["tokens_per_s"] = round(self.tokens_per_s, 1)
        data["seconds"] = round(self.seconds, 3)
        for key in ("busy_seconds", "plan_seconds", "write_seconds"):
            data[key] = round(data[key], 3)
        return data


def check_model(resolved: ResolvedModel) -> None:
    """Raise a clear error when the model (loading.resolve_model's record)
    is no pipeline: a path given that is not a pipeline folder, or a name
    that is neither an installed package nor a model shipped with
    spacy_memcoref."""
    model = resolved.model
    if resolved.given_path:
        assert resolved.folder is not None  # a path given is its folder (resolve_model)
        if not (resolved.folder.is_dir() and (resolved.folder / "config.cfg").exists()):
            raise ValueError(f"{model} is not a spaCy pipeline folder (no config.cfg in it)")
        return
    if resolved.folder is None:
        raise ValueError(
            f"cannot find the pipeline {model!r}: not a folder with config.cfg, nor an installed pipeline package, "
            "nor a model shipped with spacy_memcoref (python -m spacy_memcoref info lists them)"
        )


def annotate_corpus(
    model: str,
    input_path: Union[str, Path],
    output_dir: Union[str, Path],
    options: Optional[AnnotateOptions] = None,
    *,
    log: Optional[Callable[[str], None]] = None,
    **changes: Any,
) -> AnnotateSummary:
    """Annotate a corpus with a coreference pipeline, shard by shard.

    model (str): a pipeline package name or directory, or a model shipped
        with spacy_memcoref (by name or folder).
    input_path (Union[str, Path]): a JSONL file (one {"id": ..., "text": ...}
        object a line) or a folder of them, a folder of .txt files (id = the
        relative path), or DocBin (.spacy) files.
    output_dir (Union[str, Path]): where the shards and manifest.json go.
    options (Optional[AnnotateOptions]): how to run (engine, formats,
        shards, workers, ...; default: AnnotateOptions()).
    log (Optional[Callable[[str], None]]): where to say what happens.
    **changes: options by name, made on top of `options`:
        annotate_corpus(m, i, o, n_process=2) is annotate_corpus(m, i, o,
        AnnotateOptions(n_process=2)); a name that is no option of
        AnnotateOptions is refused (TypeError naming it).
    An input that holds no document (an empty or blank-only JSONL file, a
    DocBin of no Docs) is refused (DataFormatError naming it) before
    OUTPUT_DIR is made. SIGTERM (when SIGTERM has no handler of the
    caller's and this is the main thread) stops the workers and raises
    Terminated; the shards written stay recorded, so a rerun resumes.
    RETURNS (AnnotateSummary): what this run did and what OUTPUT_DIR holds.
    """
    options = AnnotateOptions.of(options, changes)
    say = log or (lambda message: None)
    formats, engine_opts = options.check()
    faults = _faults.active()
    job = _prepare(model, input_path, output_dir, options, formats, die_once=faults.die_once, stall=faults.stall)
    plans = _plans_of_some_documents(job.spec, options.shard_size)
    summary = AnnotateSummary(output_dir=str(output_dir))
    with OutputDir(output_dir, job.identity, overwrite=options.overwrite) as out:
        n_done_before = len(out.manifest["shards"])
        if n_done_before:
            say(f"resuming: {n_done_before} shards of {output_dir} are done; checking that their input is unchanged")
        duplicates = DuplicateIds()
        pending = _PendingShards(plans, out, duplicates, options.read_options())
        bar = _Progress(options.progress)
        start = time.time()
        try:
            with _stop_on_sigterm():
                results = _start_engine(engine_opts, pending, job.model, job.options, summary=summary, bar=bar, say=say)
                windows = _write_results(
                    results, out, summary, duplicates, bar, pending, fail_after_shards=faults.fail_after_shards
                )
                out.finish(pending.planned)
        except _SigTerm:
            n_kept = len(out.manifest["shards"])
            raise Terminated(
                f"stopped by SIGTERM: {output_dir} keeps the {n_kept} finished shards ({summary.shards} of them "
                "written by this run): rerun the same command to resume"
            ) from None
        finally:
            bar.close()
        summary.skipped_shards = pending.skipped
        _finish_summary(summary, out, duplicates, windows, start, log=log)
    return summary


# ----- the steps of annotate_corpus ---------------------------------------------------


class _Job(NamedTuple):
    """What a run annotates and how: the model (resolved once, a path made
    absolute), the input, the identity of the output (for resume) and the
    options of the workers (annotate_shard)."""

    model: ResolvedModel
    spec: InputSpec
    identity: Dict[str, Any]
    options: Dict[str, Any]


def _prepare(
    model: str,
    input_path: Union[str, Path],
    output_dir: Union[str, Path],
    opts: AnnotateOptions,
    formats: List[str],
    *,
    die_once: Optional[_faults.DieOnce] = None,
    stall: Optional[_faults.Stall] = None,
) -> _Job:
    """Find the pipeline (worked out here, once, and handed to the output's
    identity and the workers) and the input (or raise a clear error)."""
    found = resolve_model(model)
    check_model(found)
    found = found.with_absolute_path()  # workers (Ray's too) may run elsewhere than in this folder
    prefix = choose_prefix(opts.prefix, found.span_prefixes, found.model)
    spec = resolve_input(input_path, opts.input_format, output_dir=output_dir)
    identity = {
        "input": spec.path,
        "input_format": spec.kind,
        "text_field": opts.text_field if spec.kind == "jsonl" else None,
        "id_field": opts.id_field if spec.kind == "jsonl" else None,
        "encoding": opts.encoding if spec.kind != "spacy" else None,
        "shard_size": opts.shard_size,
        "formats": formats,
        "prefix": prefix,
        "resolved": opts.resolved,
        "model": model_identity(found),
    }
    options = {
        **opts.read_options(),
        "batch_size": opts.batch_size,
        "formats": formats,
        "prefix": prefix,
        "skip_errors": opts.skip_errors,
        "resolved": opts.resolved,
    }
    if die_once is not None:  # tests only
        options[_faults.DIE_ONCE] = die_once
    if stall is not None:  # tests only
        options[_faults.STALL] = stall
    return _Job(found, spec, identity, options)


def _no_documents(spec: InputSpec) -> DataFormatError:
    """The error of an input that holds no document (predict's rule: an
    input with nothing to annotate is refused, naming the file)."""
    if spec.single is None:
        what = (
            "*.jsonl files are empty or hold only blank lines" if spec.kind == "jsonl" else "*.spacy files hold no Docs"
        )
        return DataFormatError(spec.path, None, f"the folder holds no documents: its {what}")
    if spec.kind == "spacy":
        return DataFormatError(spec.path, None, "the DocBin holds no Docs")
    return DataFormatError(spec.path, None, "the file holds no documents: it is empty or holds only blank lines")


def _plans_of_some_documents(spec: InputSpec, shard_size: int) -> Iterator[ShardPlan]:
    """plan_shards(spec, shard_size), with its first shard planned now: an
    input of no documents (no items, bad ones included) is refused before
    any output is made."""
    plans = plan_shards(spec, shard_size)
    first = next(plans, None)
    if first is None:
        raise _no_documents(spec)
    return itertools.chain([first], plans)


class _SigTerm(BaseException):
    """SIGTERM came (raised by the handler of _stop_on_sigterm). Not an
    Exception, so that no `except Exception` on the way swallows it."""


@contextlib.contextmanager
def _stop_on_sigterm() -> Iterator[None]:
    """Inside the block, SIGTERM raises _SigTerm in the main thread: the
    engine's cleanup runs (the worker processes are stopped) and the shards
    written so far stay recorded, so that a rerun resumes. A second SIGTERM
    kills at once. Left as it is when this is not the main thread or when
    SIGTERM already has a handler (the caller's) or is ignored."""
    if (
        threading.current_thread() is not threading.main_thread()
        or signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL
    ):
        yield
        return

    def handler(signum, frame) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        raise _SigTerm()

    signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


class _PendingShards:
    """The shards this run annotates, planned as the engine asks for them
    (Ray: all up front): a shard that OUTPUT_DIR's manifest lists as done is
    checked unchanged, its ids go to the duplicate count, and it is skipped.
    planned: the shards of the input so far, done or not; skipped: the done ones;
    handed_out: the numbers of the shards given to the engine so far (in
    increasing order, so a shard not yet handed out comes after all of them)."""

    def __init__(
        self, plans: Iterable[ShardPlan], out: OutputDir, duplicates: DuplicateIds, read_options: Dict[str, Any]
    ) -> None:
        self.plans = plans
        self.out = out
        self.duplicates = duplicates
        self.read_options = read_options  # AnnotateOptions.read_options()
        self.planned = 0
        self.skipped = 0
        self.handed_out: Set[int] = set()

    def __iter__(self) -> Iterator[ShardPlan]:
        for plan in self.plans:
            self.planned += 1
            if self.out.done(plan.index) is not None:
                self.out.check_unchanged(plan.index, plan.digest)
                self.duplicates.add(shard_ids(plan, **self.read_options))
                self.skipped += 1
                continue
            self.handed_out.add(plan.index)
            yield plan


def _start_engine(
    opts: EngineOptions,
    pending: _PendingShards,
    model: ResolvedModel,
    options: Dict[str, Any],
    *,
    summary: AnnotateSummary,
    bar: "_Progress",
    say: Callable[[str], None],
) -> Iterator[ShardResult]:
    """Start the engine on the pending shards and the progress bar.
    RETURNS the shards' results, as they finish."""
    if opts.engine == "ray":
        t_plan = time.time()
        plans = list(pending)
        summary.plan_seconds = time.time() - t_plan
        bar.start(total=sum(p.n_items for p in plans))
        from .ray_engine import run_ray

        return run_ray(
            plans,
            model,
            options,
            workers=opts.workers,
            gpus_per_worker=opts.gpus_per_worker,
            cpus_per_worker=opts.cpus_per_worker,
            address=opts.address,
            log=say,
        )
    if opts.n_process > 1:
        from .local import default_threads, run_pool

        use_gpu(opts.gpu_id)  # fail here, clearly, rather than in every worker
        bar.start(total=None)
        threads = opts.threads or default_threads(opts.n_process)
        return run_pool(iter(pending), model, options, n_process=opts.n_process, gpu_id=opts.gpu_id, threads=threads)
    from .local import run_inline

    bar.start(total=None)
    return run_inline(iter(pending), model, options, gpu_id=opts.gpu_id, threads=opts.threads, on_docs=bar.docs)


def _write_results(
    results: Iterator[ShardResult],
    out: OutputDir,
    summary: AnnotateSummary,
    duplicates: DuplicateIds,
    bar: "_Progress",
    pending: _PendingShards,
    *,
    fail_after_shards: Optional[int] = None,
) -> List[Tuple[float, float]]:
    """Write each shard's files and manifest entry as it arrives and count it
    in the summary; stop at the first bad item in input order (BadInput).
    Parallel engines finish shards out of order, so a fatal result is held
    until every shard before it has come in (a fatal one of those wins):
    the error names the same line whatever the engine and the timing.
    RETURNS the workers' (start, end) times of the shards."""
    windows: List[Tuple[float, float]] = []
    held: Optional[ShardResult] = None
    arrived: Set[int] = set()
    try:
        for result in results:
            arrived.add(result.index)
            if result.fatal:
                if held is None or result.index < held.index:
                    held = result
            else:
                _write_one(result, out, summary, duplicates, bar, windows, fail_after_shards)
            if held is not None and not any(i < held.index for i in pending.handed_out - arrived):
                break
    finally:
        close = getattr(results, "close", None)
        if close is not None:
            close()
    if held is not None:
        raise BadInput(f"{held.fatal} (pass --skip-errors to record bad lines and files and go on)")
    return windows


def _write_one(
    result: ShardResult,
    out: OutputDir,
    summary: AnnotateSummary,
    duplicates: DuplicateIds,
    bar: "_Progress",
    windows: List[Tuple[float, float]],
    fail_after_shards: Optional[int],
) -> None:
    """Write one good shard's files and manifest entry, and count it."""
    if fail_after_shards is not None and summary.shards + 1 >= fail_after_shards:  # tests only
        out.write_shard(result)  # files written, manifest not: as if killed in between
        raise _faults.InjectedFailure(f"injected failure after shard {result.index}")
    duplicates.add(result.ids)
    t_write = time.time()
    out.record_shard(result)
    summary.write_seconds += time.time() - t_write
    summary.shards += 1
    summary.documents += result.n_docs
    summary.tokens += result.n_tokens
    summary.clusters += result.n_clusters
    summary.errors += result.n_errors
    if result.t_start is not None and result.t_end is not None:
        windows.append((result.t_start, result.t_end))
    pid = str(result.pid)
    summary.worker_peak_rss_mb[pid] = max(summary.worker_peak_rss_mb.get(pid, 0.0), result.peak_rss_mb)
    bar.shard(result)


def _finish_summary(
    summary: AnnotateSummary,
    out: OutputDir,
    duplicates: DuplicateIds,
    windows: List[Tuple[float, float]],
    start: float,
    *,
    log: Optional[Callable[[str], None]],
) -> None:
    """Fill in the summary of a finished run; say the duplicate ids warning
    (to `log`, else with `warnings`, pointing at annotate_corpus's caller)."""
    summary.duplicate_ids = duplicates.count
    message = duplicates.warning()
    if message is not None:
        if log is not None:
            log(message)
        else:
            warnings.warn(message[len("warning: ") :], stacklevel=3)
    summary.seconds = time.time() - start
    if windows:
        summary.busy_seconds = max(t for _, t in windows) - min(t for t, _ in windows)
    summary.totals = out.totals()
    summary.complete = True


class _Progress:
    """A tqdm bar of documents with documents/s and tokens/s."""

    def __init__(self, enabled: Optional[bool]) -> None:
        self.enabled = sys.stderr.isatty() if enabled is None else enabled
        self.bar = None
        self.tokens = 0
        self.per_doc = False
        self.t0 = time.time()

    def start(self, total: Optional[int]) -> None:
        self.t0 = time.time()
        if not self.enabled:
            return
        from tqdm import tqdm

        self.bar = tqdm(total=total or None, unit=" docs", file=sys.stderr, dynamic_ncols=True, mininterval=0.5)

    def _postfix(self) -> None:
        if self.bar is not None:
            rate = self.tokens / max(time.time() - self.t0, 1e-9)
            self.bar.set_postfix_str(f"{rate:,.0f} tokens/s", refresh=False)

    def docs(self, n_docs: int, n_tokens: int) -> None:
        """Per document (the inline engine)."""
        self.per_doc = True
        self.tokens += n_tokens
        if self.bar is not None:
            self._postfix()
            self.bar.update(n_docs)

    def shard(self, result: ShardResult) -> None:
        """Per finished shard (pool and Ray engines); errors count as done items."""
        if self.per_doc:
            if self.bar is not None and result.n_errors:
                self.bar.update(result.n_errors)
            return
        self.tokens += result.n_tokens
        if self.bar is not None:
            self._postfix()
            self.bar.update(result.n_items)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


def format_summary(summary: AnnotateSummary) -> List[str]:
    """Readable lines about a finished run."""
    t = summary.totals
    lines = [
        f"annotated {summary.documents:,} documents ({summary.tokens:,} tokens, {summary.clusters:,} clusters) "
        f"in {summary.shards} shards, {summary.errors:,} errors, in {summary.seconds:.1f} s: "
        f"{summary.docs_per_s:,.1f} documents/s, {summary.tokens_per_s:,.0f} tokens/s",
    ]
    if summary.skipped_shards:
        lines.append(f"skipped {summary.skipped_shards} shards done by an earlier run")
    lines.append(
        f"{summary.output_dir}: {t.get('n_docs', 0):,} documents + {t.get('n_errors', 0):,} errors "
        f"= {t.get('n_items', 0):,} input documents in {t.get('n_shards', 0)} shards (manifest.json)"
    )
    if t.get("n_errors"):
        lines.append(f"bad lines and files: {os.path.join(summary.output_dir, 'shard-*.errors.jsonl')}")
    return lines
