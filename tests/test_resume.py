"""Training that survives a stop (spacy_memcoref/training): `memcoref train`
updates exactly as `spacy train` does; a run stopped at step k and resumed
ends with the uninterrupted run's weights, bit for bit; a damaged or
half-written checkpoint is passed over; a checkpoint of another config is
refused; SIGTERM leaves a resumable run."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy
import pytest

from conftest import make_examples, s2e_config

REPO = Path(__file__).resolve().parents[1]
MAX_STEPS = 12
# the tiny runs are meant to be short
pytestmark = pytest.mark.filterwarnings("ignore::spacy_memcoref.pipeline.coref_component.UntrainedWarning")


def _write_config(folder: Path, *, max_steps: int = MAX_STEPS, checkpoint_every: int = 4) -> Path:
    """A small s2e (dropout on, so the random states matter) on the three
    TRAIN documents, about one document a batch: an epoch every few steps."""
    import spacy
    from spacy.tokens import DocBin

    nlp = spacy.blank("en")
    nlp.add_pipe("memcoref", config=s2e_config(dropout=0.2))
    docs = DocBin(store_user_data=True)
    for eg in make_examples(nlp):
        docs.add(eg.reference)
    docs.to_disk(folder / "train.spacy")
    config = nlp.config
    config["paths"]["train"] = str(folder / "train.spacy")
    config["paths"]["dev"] = str(folder / "train.spacy")
    config["training"]["max_steps"] = max_steps
    config["training"]["eval_frequency"] = 5
    config["training"]["dropout"] = 0.1
    config["training"]["optimizer"]["learn_rate"] = 0.003
    config["training"]["before_update"] = {
        "@callbacks": "spacy_memcoref.before_update.v1",
        "checkpoint_every": checkpoint_every,
    }
    config["training"]["batcher"] = {
        "@batchers": "spacy.batch_by_words.v1",
        "size": 12,
        "tolerance": 0.2,
        "discard_oversize": False,
    }
    path = folder / "train.cfg"
    config.to_disk(path)
    return path


def _init(config_path: Path, **overrides):
    from spacy import util
    from spacy.training.initialize import init_nlp

    return init_nlp(util.load_config(config_path, overrides=overrides, interpolate=False))


def _weights(path: Path) -> dict:
    """Every parameter of the saved pipeline's coreference model, by place."""
    import spacy

    model = spacy.load(path).get_pipe("memcoref").model
    found = {}
    for i, node in enumerate(model.walk()):
        for name in node.param_names:
            if node.has_param(name):
                found[f"{i}/{name}"] = numpy.array(node.get_param(name))
        for j, shim in enumerate(node.shims):
            for name, tensor in shim._model.state_dict().items():
                found[f"{i}/shim{j}/{name}"] = tensor.detach().cpu().numpy().copy()
    return found


def _assert_same_weights(a: Path, b: Path) -> None:
    wa, wb = _weights(a), _weights(b)
    assert wa.keys() == wb.keys()
    different = [key for key in wa if not numpy.array_equal(wa[key], wb[key])]
    assert not different, different[:5]


def _quiet_train(nlp, output, **kwargs):
    import io

    from spacy_memcoref.training.loop import train

    return train(nlp, output, stdout=io.StringIO(), stderr=io.StringIO(), **kwargs)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """The config and its uninterrupted run by memcoref's loop."""
    folder = tmp_path_factory.mktemp("resume")
    config = _write_config(folder)
    _quiet_train(_init(config), folder / "whole")
    return config, folder / "whole"


def test_the_loop_updates_as_spacy_train_does(run, tmp_path):
    """The independent reference: spaCy's own loop, same config and seed."""
    import io

    from spacy.training.loop import train as spacy_train

    config, whole = run
    spacy_train(_init(config), tmp_path, stdout=io.StringIO(), stderr=io.StringIO())
    _assert_same_weights(whole / "model-last", tmp_path / "model-last")
    _assert_same_weights(whole / "model-best", tmp_path / "model-best")
    # a whole run leaves no checkpoint behind
    assert not list(whole.glob("checkpoint-*"))


@pytest.mark.parametrize("stop_after", [1, 6, 10])
def test_a_stopped_run_resumed_ends_with_the_uninterrupted_weights(run, tmp_path, stop_after):
    from spacy_memcoref.errors import TrainingStopped

    config, whole = run
    with pytest.raises(TrainingStopped) as stopped:
        _quiet_train(_init(config), tmp_path, stop_after=stop_after)
    assert stopped.value.step == stop_after
    assert stopped.value.checkpoint.name == f"checkpoint-{stop_after:07d}"
    # model-last as it stood at the stop, loadable
    assert (tmp_path / "model-last" / "config.cfg").is_file()
    _quiet_train(_init(config), tmp_path, resume=True)
    _assert_same_weights(whole / "model-last", tmp_path / "model-last")
    # the best evaluation of the whole run, before the stop or after it
    _assert_same_weights(whole / "model-best", tmp_path / "model-best")
    meta = lambda p: json.loads((p / "meta.json").read_text())["performance"]  # noqa: E731
    assert meta(whole / "model-best") == meta(tmp_path / "model-best")


def test_a_damaged_or_half_written_checkpoint_is_passed_over(run, tmp_path):
    from spacy_memcoref.errors import TrainingStopped
    from spacy_memcoref.training import checkpoint as ckpt

    config, whole = run
    with pytest.raises(TrainingStopped):
        _quiet_train(_init(config), tmp_path, stop_after=9)
    # every 4 updates and at the stop, the last two kept
    assert [p.name for p in ckpt.complete_checkpoints(tmp_path)] == ["checkpoint-0000008", "checkpoint-0000009"]
    newest = tmp_path / "checkpoint-0000009"
    with open(newest / ckpt.OPTIMIZER, "r+b") as file_:  # cut short, as a full disk would
        file_.truncate(100)
    # a stop while writing the next one leaves a .partial folder without its marker
    (tmp_path / "checkpoint-0000012.partial" / "model").mkdir(parents=True)
    warned = []
    assert ckpt.find_checkpoint(tmp_path, warn=warned.append) == tmp_path / "checkpoint-0000008"
    assert len(warned) == 1 and "checkpoint-0000009" in warned[0] and "checksum" in warned[0]
    _quiet_train(_init(config), tmp_path, resume=True)
    _assert_same_weights(whole / "model-last", tmp_path / "model-last")


def test_a_checkpoint_of_another_config_is_refused(run, tmp_path):
    from spacy_memcoref.errors import CheckpointError, TrainingStopped

    config, _ = run
    with pytest.raises(TrainingStopped):
        _quiet_train(_init(config), tmp_path, stop_after=4)
    with pytest.raises(CheckpointError, match="another config"):
        _quiet_train(_init(config, **{"training.optimizer.learn_rate": 0.001}), tmp_path, resume=True)
    with pytest.raises(CheckpointError, match="no complete checkpoint"):
        _quiet_train(_init(config), tmp_path / "empty", resume=True)


def _as_written_by_an_older_version(checkpoint: Path, edit) -> None:
    """Rewrite the checkpoint's saved config with `edit` (text -> text) and
    its digest and checksums to match, as the older code would have."""
    import hashlib

    from spacy_memcoref.training import checkpoint as ckpt
    from spacy_memcoref.util import file_sha256

    config = checkpoint / ckpt.MODEL / "config.cfg"
    text = edit(config.read_text(encoding="utf8"))
    config.write_text(text, encoding="utf8")
    state = json.loads((checkpoint / ckpt.STATE).read_text(encoding="utf8"))
    state["config_sha256"] = hashlib.sha256(text.encode("utf8")).hexdigest()
    (checkpoint / ckpt.STATE).write_text(json.dumps(state), encoding="utf8")
    marker = json.loads((checkpoint / ckpt.MARKER).read_text(encoding="utf8"))
    marker[ckpt.STATE] = file_sha256(checkpoint / ckpt.STATE)
    (checkpoint / ckpt.MARKER).write_text(json.dumps(marker), encoding="utf8")


def _drop_setting_and_reorder(text: str) -> str:
    """The component's `entity_vectors` setting absent (a version before it
    existed) and the component's settings in another order."""
    lines = text.splitlines()
    start = lines.index("[components.memcoref]") + 1
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("["))
    settings = [line for line in lines[start:end] if line.strip() and not line.startswith("entity_vectors")]
    return "\n".join(lines[:start] + settings[::-1] + [""] + lines[end:]) + "\n"


def test_a_checkpoint_of_an_older_version_resumes_where_only_defaults_were_added(run, tmp_path):
    """A checkpoint written before the code gained a setting (filled now at
    its default) and with its settings in another order continues the same
    run, bit for bit; the log names the added setting. A value that differs
    is refused, the setting named."""
    from spacy_memcoref.errors import CheckpointError, TrainingStopped

    config, whole = run
    with pytest.raises(TrainingStopped):
        _quiet_train(_init(config), tmp_path, stop_after=6)
    _as_written_by_an_older_version(tmp_path / "checkpoint-0000006", _drop_setting_and_reorder)
    import io

    from spacy_memcoref.training.loop import train

    log = io.StringIO()
    train(_init(config), tmp_path, resume=True, stdout=log, stderr=io.StringIO())
    assert "components.memcoref.entity_vectors = True" in log.getvalue()
    _assert_same_weights(whole / "model-last", tmp_path / "model-last")

    again = tmp_path / "again"
    with pytest.raises(TrainingStopped):
        _quiet_train(_init(config), again, stop_after=6)
    _as_written_by_an_older_version(again / "checkpoint-0000006", _drop_setting_and_reorder)
    # the setting absent but the current value away from its default: a difference
    with pytest.raises(CheckpointError, match="components.memcoref.entity_vectors: \\(absent\\) -> False"):
        _quiet_train(_init(config, **{"components.memcoref.entity_vectors": False}), again, resume=True)


def test_stop_after_needs_an_output_folder(tmp_path):
    """stop_after stops with a checkpoint: without an output folder it is
    refused before the first update (it was a TypeError at the stop)."""
    from spacy_memcoref.errors import CheckpointError

    config = _write_config(tmp_path)
    with pytest.raises(CheckpointError, match="stop_after needs the output folder"):
        _quiet_train(_init(config), None, stop_after=1)


def _memcoref_train(*args, **kwargs) -> subprocess.Popen:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen(
        [sys.executable, "-m", "spacy_memcoref", "train", *map(str, args)],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        **kwargs,
    )


@pytest.mark.slow
def test_sigterm_leaves_a_resumable_run(tmp_path):
    """The CLI, stopped by SIGTERM mid-run, writes a checkpoint and exits 3;
    run again with --resume it ends with the weights of an uninterrupted run."""
    config = _write_config(tmp_path, max_steps=150, checkpoint_every=0)
    # the uninterrupted run by the CLI too: the same process settings (torch's
    # threads: the test process may run with fewer, and float sums differ)
    whole = _memcoref_train(config, "--output", tmp_path / "whole")
    out, _ = whole.communicate(timeout=300)
    assert whole.returncode == 0, out
    process = _memcoref_train(config, "--output", tmp_path / "stopped")
    deadline = time.time() + 120
    # the first evaluation's row (step 0) is printed once updates run
    for line in process.stdout:
        if line.lstrip().startswith("0 ") or time.time() > deadline:
            break
    time.sleep(1.0)
    process.send_signal(signal.SIGTERM)
    out, _ = process.communicate(timeout=120)
    assert process.returncode == 3, out
    assert "continue with the same command and --resume" in out
    from spacy_memcoref.training import checkpoint as ckpt

    found = ckpt.complete_checkpoints(tmp_path / "stopped")
    assert len(found) == 1 and 0 < int(found[0].name.split("-")[1]) < 150
    # a fresh start over it is refused, naming the way on
    refused = _memcoref_train(config, "--output", tmp_path / "stopped")
    out, _ = refused.communicate(timeout=120)
    assert refused.returncode == 1 and "--resume continues it" in out
    resumed = _memcoref_train(config, "--output", tmp_path / "stopped", "--resume")
    out, _ = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, out
    _assert_same_weights(tmp_path / "whole" / "model-last", tmp_path / "stopped" / "model-last")


def test_checkpoint_every_is_checked():
    from spacy_memcoref.training_callbacks import make_before_update

    assert make_before_update(checkpoint_every=250).checkpoint_every == 250
    for bad in (-1, 2.5, True):
        with pytest.raises(ValueError, match="checkpoint_every"):
            make_before_update(checkpoint_every=bad)


def test_the_project_train_step_resumes_by_itself(tmp_path):
    """scripts/train.py adds --resume where the output holds a complete checkpoint."""
    sys.path.insert(0, str(REPO / "scripts"))
    try:
        import train as train_script
    finally:
        sys.path.remove(str(REPO / "scripts"))
    args = ["configs/s2e.cfg", "--output", str(tmp_path), "--gpu-id", "-1"]
    assert train_script.train_argv(args)[1:] == ["-m", "spacy_memcoref", "train", *args]
    (tmp_path / "checkpoint-0000250.partial").mkdir()
    assert "--resume" not in train_script.train_argv(args)
    (tmp_path / "checkpoint-0000250").mkdir()
    (tmp_path / "checkpoint-0000250" / "COMPLETE").write_text("{}")
    assert train_script.train_argv(args)[-1] == "--resume"
