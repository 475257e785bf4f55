"""`annotate` under load: many short documents through the local engine with
N worker processes, the workers' RSS and the throughput sampled as the
shards come in, side by side for the first, a middle and the last 1,000
documents (the last window holds the end, where one worker may finish
before the other). Each window's rate is from the manifest's count of
finished shards, sampled every 0.5 s.

The documents are the sentences of the everyday-text set (tests/data/everyday),
cycled, each with its own id: short real text, nothing to download.

    python benchmarks/annotate_soak.py [--model s2e-ontogum] [--docs 20000] [--n-process 2] [--shard-size 250]
"""

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import machine_line, set_threads

REPO = Path(__file__).resolve().parents[1]
EVERYDAY = REPO / "tests" / "data" / "everyday" / "everyday.txt"


def sentences():
    """The everyday texts' lines without their markup, split at sentence ends."""
    import re

    lines = [line for line in EVERYDAY.read_text(encoding="utf8").splitlines() if line and not line.startswith("#")]
    text = re.sub(r"\|[a-z0-9_]+\]", "", "\n".join(lines)).replace("[", "")
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+", text) if len(s.split()) >= 4]


def rss_of_children(pid: int):
    """RSS in MiB of each live child process of `pid` (Linux /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text()
        except OSError:
            continue
        fields = dict(line.split(":\t", 1) for line in status.splitlines() if ":\t" in line)
        if fields.get("PPid", "").strip() == str(pid) and "VmRSS" in fields:
            found.append(int(fields["VmRSS"].split()[0]) / 1024)
    return found


def done_docs(out: Path) -> int:
    try:
        manifest = json.loads((out / "manifest.json").read_text())
    except (OSError, ValueError):
        return 0
    shards = manifest.get("shards", {})
    return sum(
        int(s.get("docs", s.get("n_docs", 0))) for s in (shards.values() if isinstance(shards, dict) else shards)
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="s2e-ontogum")
    parser.add_argument("--docs", type=int, default=20000)
    parser.add_argument("--n-process", type=int, default=2)
    parser.add_argument("--shard-size", type=int, default=250)
    parser.add_argument("--window", type=int, default=1000)
    args = parser.parse_args()
    print(machine_line(set_threads(None)), flush=True)
    work = Path(tempfile.mkdtemp(prefix="annotate_soak_"))
    try:
        pool = sentences()
        with open(work / "input.jsonl", "w", encoding="utf8") as f:
            for i in range(args.docs):
                f.write(json.dumps({"id": f"d{i}", "text": pool[i % len(pool)]}) + "\n")
        out = work / "out"
        command = [
            sys.executable,
            "-m",
            "spacy_memcoref",
            "annotate",
            args.model,
            str(work / "input.jsonl"),
            str(out),
            "--n-process",
            str(args.n_process),
            "--shard-size",
            str(args.shard_size),
        ]
        started = time.time()
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        samples = []  # (seconds, docs done, [worker RSS MiB])
        while process.poll() is None:
            samples.append((time.time() - started, done_docs(out), rss_of_children(process.pid)))
            time.sleep(0.5)
        err = process.stderr.read()
        if process.returncode != 0:
            raise SystemExit(f"annotate failed ({process.returncode}): {err[-2000:]}")
        total_s = time.time() - started
        busy = [s for s in samples if s[2]]

        def window(lo, hi):
            inside = [s for s in busy if lo <= s[1] <= hi]
            if len(inside) < 2:
                return float("nan"), float("nan")
            rss = max(max(s[2]) for s in inside)
            rate = (inside[-1][1] - inside[0][1]) / max(1e-9, inside[-1][0] - inside[0][0])
            return rss, rate

        first = window(1, args.window)
        middle = window(args.docs // 2, args.docs // 2 + args.window)
        last = window(args.docs - args.window, args.docs - 1)
        print(
            f"annotate {args.model}: {args.docs} documents, {args.n_process} processes, shards of {args.shard_size}, {total_s:.0f} s in all"
        )
        print("| documents | largest worker RSS, MiB | documents/s |")
        print("| --- | --: | --: |")
        print(f"| first {args.window} | {first[0]:.0f} | {first[1]:.1f} |")
        print(f"| {args.window} from the middle | {middle[0]:.0f} | {middle[1]:.1f} |")
        print(f"| last {args.window} | {last[0]:.0f} | {last[1]:.1f} |")
        print(f"| last / first | {last[0] / first[0]:.3f} | {last[1] / first[1]:.3f} |")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
