"""`spacy train` that survives a stop: spaCy's training loop
(spacy/training/loop.py of spaCy 3.8, `train` and `train_while_improving`)
with checkpoints (`checkpoint.py`) every `checkpoint_every` updates and at
SIGTERM or SIGINT, and a resume that ends where the uninterrupted run ends.

spaCy's loop has no resume (asked for since v3.0) and no hook that reaches
the optimizer, so its two functions are restated here with a start state;
every other piece (batches, evaluation, saving, the meta) is spaCy's own.
An uninterrupted run updates exactly as `spacy train` does, which
tests/test_resume.py checks weight for weight.

Resuming draws again the batches already trained on (the same seed; at each
epoch's first step, Python's random state as it was then, so the shuffles
repeat), moves the optimizer's and dropout's schedules on as many steps,
loads the weights and the optimizer's moments, then sets the random states
saved at the checkpoint: the next update is the one the stopped run would
have made.
"""

import random
import signal
import sys
from pathlib import Path
from timeit import default_timer as timer
from typing import IO, Any, Callable, Dict, Iterator, List, Optional, Tuple, cast

from spacy.language import Language
from spacy.schemas import ConfigSchemaTraining
from spacy.training.loop import (
    DIR_MODEL_BEST,
    DIR_MODEL_LAST,
    clean_output_dir,
    create_before_to_disk_callback,
    create_evaluation_callback,
    create_train_batches,
    subdivide_batch,
    update_meta,
)
from spacy.util import registry, resolve_dot_names
from thinc.api import Optimizer, constant, fix_random_seed, set_gpu_allocator
from wasabi import Printer

from ..errors import CheckpointError, TrainingStopped
from . import checkpoint as ckpt

# the before_update callback's attribute that carries its checkpoint_every setting
CHECKPOINT_EVERY_ATTR = "checkpoint_every"


class StopFlag:
    """Set by SIGTERM / SIGINT (or a test's `stop_after`); the loop checks it
    after each update, writes a checkpoint and stops."""

    def __init__(self, stop_after: Optional[int] = None) -> None:
        self.signal: Optional[int] = None
        self.stop_after = stop_after

    def __call__(self, signum, frame) -> None:
        if self.signal is not None and signum == signal.SIGINT:
            raise KeyboardInterrupt  # a second Ctrl-C: stop now, without the checkpoint
        self.signal = signum

    def is_set(self, steps_done: int) -> bool:
        return self.signal is not None or (self.stop_after is not None and steps_done >= self.stop_after)


def checkpoint_every(before_update: Any) -> int:
    """The checkpoint interval the config's [training.before_update] callback
    carries (spacy_memcoref.before_update.v1's checkpoint_every); 0 for none."""
    return int(getattr(before_update, CHECKPOINT_EVERY_ATTR, 0) or 0)


def resumable_steps(
    nlp: Language,
    optimizer: Optimizer,
    train_data: Iterator,
    evaluate: Callable[[], Tuple[float, Any]],
    *,
    dropout,
    eval_frequency: int,
    accumulate_gradient: int,
    patience: int,
    max_steps: int,
    exclude: List[str],
    annotating_components: List[str],
    before_update: Optional[Callable[[Language, Dict[str, Any]], None]],
    state: ckpt.TrainState,
    save: Callable[[ckpt.TrainState], Path],
    every: int,
    stop: StopFlag,
):
    """spaCy's `train_while_improving`, from `state` on: yields
    `(batch, info, is_best_checkpoint)` after each update as it does, and
    calls `save(state)` after every `every`-th update and when `stop` is set
    (then raises TrainingStopped)."""
    # a schedule is a generator (thinc types constant() as an Iterable)
    dropouts = cast(Iterator[float], constant(dropout) if isinstance(dropout, float) else dropout)
    batches = iter(train_data)
    epoch_starts = dict(state.epoch_starts)
    # draw again what the stopped run trained on
    for step in range(state.next_step):
        if step in epoch_starts:
            random.setstate(epoch_starts[step])
        next(batches)
        next(dropouts)
    ckpt.set_random_states(state)
    results = list(state.results)
    losses: Dict[str, float] = dict(state.losses)
    words_seen = state.words
    start_time = timer() - state.seconds
    step, epoch = state.next_step, state.epoch
    while True:
        before_draw = random.getstate()
        try:
            new_epoch, batch = next(batches)
        except StopIteration:
            break
        if new_epoch != epoch or step == 0:
            epoch_starts[step] = before_draw
        epoch = new_epoch
        if before_update:
            before_update(nlp, {"step": step, "epoch": epoch})
        drop = next(dropouts)
        for subbatch in subdivide_batch(batch, accumulate_gradient):
            # sgd=False: no optimizer step here, as in spaCy's own loop (the stub types sgd as Optional[Optimizer])
            nlp.update(subbatch, drop=drop, losses=losses, sgd=False, exclude=exclude, annotates=annotating_components)  # type: ignore[arg-type]
        proc: Any  # a component (model, finish_update); nlp.pipeline types it as a Callable[[Doc], Doc]
        for name, proc in nlp.pipeline:
            if name not in exclude and getattr(proc, "is_trainable", False) and proc.model not in (True, False, None):
                proc.finish_update(optimizer)
        optimizer.step_schedules()
        if not (step % eval_frequency):
            if optimizer.averages:
                with nlp.use_params(optimizer.averages):
                    score, other_scores = evaluate()
            else:
                score, other_scores = evaluate()
            results.append((score, step))
            is_best_checkpoint = score == max(results)[0]
        else:
            score, other_scores = (None, None)
            is_best_checkpoint = None
        words_seen += sum(len(eg) for eg in batch)
        info = {
            "epoch": epoch,
            "step": step,
            "score": score,
            "other_scores": other_scores,
            "losses": losses,
            "checkpoints": results,
            "seconds": int(timer() - start_time),
            "words": words_seen,
        }
        yield batch, info, is_best_checkpoint
        if is_best_checkpoint is not None:
            losses = {}
        best_result = max((r_score, -r_step) for r_score, r_step in results)
        best_step = -best_result[1]
        if patience and (step - best_step) >= patience:
            break
        if max_steps and step >= max_steps:
            break
        done = step + 1
        stopping = stop.is_set(done)
        if stopping or (every and done % every == 0):
            path = save(
                ckpt.TrainState(
                    next_step=done,
                    epoch=epoch,
                    results=list(results),
                    losses=dict(losses),
                    words=words_seen,
                    seconds=timer() - start_time,
                    epoch_starts=epoch_starts,
                )
            )
            if stopping:
                raise TrainingStopped(done, path)
        step += 1


def train(
    nlp: Language,
    output_path: Optional[Path],
    *,
    use_gpu: int = -1,
    resume: bool = False,
    stop_after: Optional[int] = None,
    stdout: IO = sys.stdout,
    stderr: IO = sys.stderr,
) -> Tuple[Language, Optional[Path]]:
    """spaCy's `spacy.training.loop.train` with checkpoints and resume.

    nlp (Language): the initialized pipeline with the full config.
    output_path (Optional[Path]): where model-best, model-last and the
        checkpoints go (no checkpoints without one).
    use_gpu (int): the GPU id, -1 for the CPU (require_gpu called before).
    resume (bool): continue from the newest complete checkpoint in
        output_path (CheckpointError if there is none, or it is of another config).
    stop_after (Optional[int]): stop after this many updates, as SIGTERM
        does (write a checkpoint, raise TrainingStopped); for tests. Needs
        output_path (CheckpointError without it).
    RAISES TrainingStopped: stopped by a signal or stop_after, a checkpoint written.
    RETURNS (Tuple[Language, Optional[Path]]): the pipeline and model-last's path.
    """
    msg = Printer(no_print=True)
    if stop_after is not None and output_path is None:
        # checked before the first update: the stop writes a checkpoint into output_path
        raise CheckpointError(None, "stop_after needs the output folder that the checkpoint is written to")
    if output_path is not None:
        output_path = Path(output_path)
        output_path.mkdir(parents=True, exist_ok=True)
    config = nlp.config.interpolate()
    if config["training"]["seed"] is not None:
        fix_random_seed(config["training"]["seed"])
    allocator = config["training"]["gpu_allocator"]
    if use_gpu >= 0 and allocator:
        set_gpu_allocator(allocator)
    T = registry.resolve(config["training"], schema=ConfigSchemaTraining)
    train_corpus, dev_corpus = resolve_dot_names(config, [T["train_corpus"], T["dev_corpus"]])
    optimizer = T["optimizer"]
    before_to_disk = create_before_to_disk_callback(T["before_to_disk"])
    before_update = T["before_update"]
    frozen_components = T["frozen_components"]
    annotating_components = T["annotating_components"]
    every = checkpoint_every(before_update) if output_path is not None else 0

    state = ckpt.TrainState()
    if resume:
        if output_path is None:
            raise CheckpointError(None, "resuming needs the output folder that holds the checkpoints")
        found = ckpt.find_checkpoint(output_path, warn=lambda line: stdout.write(msg.warn(line) + "\n"))
        if found is None:
            raise CheckpointError(output_path, "holds no complete checkpoint to resume from")
        state = ckpt.load_checkpoint(found, nlp, optimizer)
        stdout.write(msg.info(f"Resuming from {found} (after {state.next_step} updates)") + "\n")
        if state.added_settings:
            added = ", ".join(state.added_settings)
            stdout.write(msg.info(f"Settings this version added, at their defaults: {added}") + "\n")
    elif output_path is not None:
        ckpt.remove_checkpoints(output_path)

    def save_model(is_best: bool) -> None:
        assert output_path is not None  # called only with an output folder
        with nlp.use_params(optimizer.averages):
            before_to_disk(nlp).to_disk(output_path / DIR_MODEL_LAST)
        if is_best:
            import shutil

            if (output_path / DIR_MODEL_BEST).exists():
                shutil.rmtree(output_path / DIR_MODEL_BEST)
            shutil.copytree(output_path / DIR_MODEL_LAST, output_path / DIR_MODEL_BEST)

    def save_checkpoint(state: ckpt.TrainState) -> Path:
        # called every `every` updates (0 without an output folder) and at a stop (signal
        # handlers only with an output folder, stop_after checked above)
        assert output_path is not None
        return _save_checkpoint(output_path, nlp, optimizer, state, stdout)

    stop = StopFlag(stop_after)
    steps = resumable_steps(
        nlp,
        optimizer,
        create_train_batches(nlp, train_corpus, T["batcher"], T["max_epochs"]),
        create_evaluation_callback(nlp, dev_corpus, T["score_weights"]),
        dropout=T["dropout"],
        accumulate_gradient=T["accumulate_gradient"],
        patience=T["patience"],
        max_steps=T["max_steps"],
        eval_frequency=T["eval_frequency"],
        exclude=frozen_components,
        annotating_components=annotating_components,
        before_update=before_update,
        state=state,
        save=save_checkpoint,
        every=every,
        stop=stop,
    )
    if not resume:
        clean_output_dir(output_path)
    stdout.write(msg.info(f"Pipeline: {nlp.pipe_names}") + "\n")
    if frozen_components:
        stdout.write(msg.info(f"Frozen components: {frozen_components}") + "\n")
    if annotating_components:
        stdout.write(msg.info(f"Set annotations on update for: {annotating_components}") + "\n")
    stdout.write(msg.info(f"Initial learn rate: {optimizer.learn_rate}") + "\n")
    if every:
        stdout.write(msg.info(f"Checkpoint every {every} updates and at SIGTERM / Ctrl-C, in {output_path}") + "\n")
    with nlp.select_pipes(disable=frozen_components):
        log_step, finalize_logger = T["logger"](nlp, stdout, stderr)
    handlers = _install(stop) if output_path is not None else {}
    finished = False
    try:
        for batch, info, is_best_checkpoint in steps:
            if is_best_checkpoint is not None:
                with nlp.select_pipes(disable=frozen_components):
                    update_meta(T, nlp, info)
                if output_path is not None:
                    # model-best only beats the best score of the whole run, before the stop too
                    save_model(is_best_checkpoint)
                    info["output_path"] = str(output_path / DIR_MODEL_LAST)
            log_step(info if is_best_checkpoint is not None else None)
        finished = True
    except TrainingStopped as stopped:
        stdout.write(msg.warn(f"Stopped after {stopped.step} updates; checkpoint {stopped.checkpoint}") + "\n")
        raise
    except Exception as err:
        if output_path is not None:
            stdout.write(msg.warn(f"Aborting and saving the final best model. Encountered exception: {err!r}") + "\n")
        raise
    finally:
        _restore(handlers)
        finalize_logger()
        if output_path is not None:
            save_model(False)
    if finished and output_path is not None:
        # the run is whole: its checkpoints are no longer needed
        ckpt.remove_checkpoints(output_path)
    if optimizer.averages:
        nlp.use_params(optimizer.averages)
    if output_path is not None:
        stdout.write(msg.good("Saved pipeline to output directory", output_path / DIR_MODEL_LAST) + "\n")
        return nlp, output_path / DIR_MODEL_LAST
    return nlp, None


def _save_checkpoint(output: Path, nlp: Language, optimizer: Optimizer, state: ckpt.TrainState, stdout: IO) -> Path:
    """Write a checkpoint and say so, with its size and time: a user sees
    what a stop would keep, and what checkpoints cost."""
    started = timer()
    path = ckpt.write_checkpoint(output, nlp, optimizer, state)
    size = sum(f.stat().st_size for f in path.rglob("*") if f.is_file())
    stdout.write(
        Printer(no_print=True).info(f"{path.name}: {size / 2**20:.0f} MiB in {timer() - started:.1f} s") + "\n"
    )
    return path


def _install(stop: StopFlag) -> Dict[int, Any]:
    """SIGTERM and SIGINT set `stop` (in the main thread only: elsewhere
    Python refuses signal handlers, and the run keeps the default ones)."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        return {}
    return {signum: signal.signal(signum, stop) for signum in (signal.SIGTERM, signal.SIGINT)}


def _restore(handlers: Dict[int, Any]) -> None:
    for signum, handler in handlers.items():
        signal.signal(signum, handler)
