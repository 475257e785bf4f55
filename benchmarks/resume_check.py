"""A preset trained twice by `memcoref train`: once straight through, once
stopped by SIGTERM after about `--stop-after-s` seconds of updates and
resumed with `--resume`; the dev scores of both runs side by side, whether
the final weights are the same, and the checkpoint's size and the time it
took to write.

    python benchmarks/resume_check.py configs/s2e.cfg OUT_DIR --train corpus/ontogum/train.spacy \\
        --dev corpus/ontogum/dev.spacy --max-steps 200 --eval-frequency 50 --stop-after-s 120
"""

import argparse
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy

from _common import machine_line, set_threads

ROW = re.compile(r"^\s*(\d+)\s+(\d+)\s+[\d.]+\s+([\d.]+)")  # epoch, step, loss, first score column
CHECKPOINT = re.compile(r"(checkpoint-\d+): (\d+) MiB in ([\d.]+) s")


def _train(config, output, overrides, resume=False, stop_after_s=None):
    command = [sys.executable, "-m", "spacy_memcoref", "train", config, "--output", str(output), *overrides]
    if resume:
        command.append("--resume")
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    started = None
    lines = []
    for line in process.stdout:
        lines.append(line)
        if started is None and ROW.match(line):
            started = time.time()  # the step-0 evaluation is done: updates run
        if stop_after_s is not None and started is not None and time.time() - started > stop_after_s:
            process.send_signal(signal.SIGTERM)
            stop_after_s = None
    process.wait()
    return process.returncode, lines


def _scores(lines):
    return {int(m.group(2)): float(m.group(3)) for m in map(ROW.match, lines) if m}


def _weights(path):
    import spacy

    model = spacy.load(path).components[0][1].model
    found = {}
    for i, node in enumerate(model.walk()):
        for name in node.param_names:
            if node.has_param(name):
                found[f"{i}/{name}"] = numpy.array(node.get_param(name))
        for j, shim in enumerate(node.shims):
            for name, tensor in shim._model.state_dict().items():
                found[f"{i}/{j}/{name}"] = tensor.detach().float().cpu().numpy()
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("config")
    parser.add_argument("out")
    parser.add_argument("--train", required=True)
    parser.add_argument("--dev", required=True)
    parser.add_argument("--max-steps", type=int, default=200)
    parser.add_argument("--eval-frequency", type=int, default=50)
    parser.add_argument("--stop-after-s", type=float, default=120)
    args = parser.parse_args()
    print(machine_line(set_threads(None)), flush=True)
    out = Path(args.out)
    shutil.rmtree(out, ignore_errors=True)
    overrides = [
        "--paths.train",
        args.train,
        "--paths.dev",
        args.dev,
        "--training.max_steps",
        str(args.max_steps),
        "--training.eval_frequency",
        str(args.eval_frequency),
        "--gpu-id",
        "-1",
    ]
    t0 = time.time()
    rc, whole = _train(args.config, out / "whole", overrides)
    whole_s = time.time() - t0
    assert rc == 0, "".join(whole[-20:])
    t0 = time.time()
    rc, first = _train(args.config, out / "stopped", overrides, stop_after_s=args.stop_after_s)
    assert rc == 3, "".join(first[-20:])
    rc, second = _train(args.config, out / "stopped", overrides, resume=True)
    split_s = time.time() - t0
    assert rc == 0, "".join(second[-20:])
    stopped_at = next(int(m.group(1)) for m in map(re.compile(r"Stopped after (\d+) updates").search, first) if m)
    a, b = _scores(whole), {**_scores(first), **_scores(second)}
    print(f"{args.config}: {args.max_steps} steps, stopped by SIGTERM after {stopped_at} updates and resumed")
    print("| step | uninterrupted | stopped and resumed |")
    print("| --: | --: | --: |")
    for step in sorted(set(a) | set(b)):
        print(f"| {step} | {a.get(step, float('nan')):.2f} | {b.get(step, float('nan')):.2f} |")
    wa, wb = _weights(out / "whole" / "model-last"), _weights(out / "stopped" / "model-last")
    worst = max(float(numpy.abs(wa[k] - wb[k]).max()) for k in wa)
    print(
        f"model-last: {len(wa)} arrays, largest difference {worst:.3g} ({'identical' if worst == 0 else 'different'})"
    )
    for m in filter(None, map(CHECKPOINT.search, first + second)):
        print(f"{m.group(1)}: {m.group(2)} MiB written in {m.group(3)} s")
    print(f"wall time: uninterrupted {whole_s:.0f} s, stopped + resumed {split_s:.0f} s")


if __name__ == "__main__":
    main()
