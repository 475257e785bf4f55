"""What a piece costs as a conversation grows: `spacy_memcoref.Stream`
(a bounded window and entity table) against re-reading the whole history
at every piece (what a user does without a stream), side by side in one run.

The conversation is the filler prose cut into sentences, one a piece, two
speakers taking turns; the pieces past the first are read in blocks and
each block's mean time a piece is printed, with the stream's saved state
and the process's RSS at the block's end. Every piece is timed, so one run
also gives the mean of the first --edge pieces against the last --edge (the
ratio: 1.0 when a piece costs the same after the whole conversation; the
first pieces, before the window is full, are cheaper) and the peak memory
(the kernel's high-water mark, VmHWM, and getrusage's ru_maxrss, which is
floored at the spawning parent's peak; both include the whole-history
reads: --full-history-up-to 0 leaves only the stream's). A warm-up call
before the first piece keeps one-time costs out of piece 1.

    python benchmarks/stream.py [--model s2e-ontogum] [--pieces 400]
        [--window-tokens 512] [--blocks 1,50,100,200,400] [--threads 2]
    python benchmarks/stream.py --pieces 2000 --blocks 10,100,500,1000,2000 --full-history-up-to 200
"""

import argparse
import resource
import time

import spacy_memcoref
from spacy_memcoref.stream import Stream

from _common import FALLBACK_TEXT, load_line, machine_line, peak_rss_mb, quiet, rss_mb, set_threads, table


def sentences():
    """The filler text's sentences, forever."""
    parts = [s.strip() + " ." for s in FALLBACK_TEXT.split(" . ") if s.strip(" .")]
    while True:
        yield from parts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="s2e-ontogum", help="a shipped model's name or a pipeline folder")
    parser.add_argument("--pieces", type=int, default=400)
    parser.add_argument("--window-tokens", type=int, default=512)
    parser.add_argument("--blocks", default="1,50,100,200,400", help="measure the 10 pieces ending at each of these")
    parser.add_argument(
        "--full-history-up-to", type=int, default=200, help="re-read the whole history only this far (it grows)"
    )
    parser.add_argument(
        "--edge", type=int, default=100, help="compare the first and the last this many pieces (at most half each)"
    )
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args()
    quiet()
    threads = set_threads(args.threads)
    print(machine_line(threads))
    nlp = spacy_memcoref.load(args.model)
    nlp(FALLBACK_TEXT)  # warm-up: one-time costs out of piece 1
    stream = Stream(nlp, window_tokens=args.window_tokens)
    ends = sorted({int(b) for b in args.blocks.split(",") if int(b) <= args.pieces})
    if not ends:
        parser.error(f"--blocks {args.blocks}: no block ends at or before --pieces {args.pieces}")
    measure = {i for end in ends for i in range(max(1, end - 9), end + 1)}
    history, times, full_times, sizes, rss = [], {}, {}, {}, {}
    every = []  # each piece's seconds
    for i, text in zip(range(1, args.pieces + 1), sentences()):
        speaker = "Ann" if i % 2 else "Ben"
        t0 = time.perf_counter()
        stream.add(text, speaker=speaker)
        every.append(time.perf_counter() - t0)
        if i in measure:
            times[i] = every[-1]
        history.append(text)
        if i in measure and i <= args.full_history_up_to:
            t0 = time.perf_counter()
            nlp(" ".join(history))
            full_times[i] = time.perf_counter() - t0
        if i in ends:
            sizes[i] = len(stream.to_bytes())
            rss[i] = rss_mb()
    rows = []
    for end in ends:
        block = [i for i in range(max(1, end - 9), end + 1)]
        s_mean = sum(times[i] for i in block) / len(block)
        f = [full_times[i] for i in block if i in full_times]
        f_mean = sum(f) / len(f) if len(f) == len(block) else None
        rows.append(
            [
                end,
                f"{s_mean * 1000:.0f}",
                "-" if f_mean is None else f"{f_mean * 1000:.0f}",
                "-" if f_mean is None else f"{f_mean / s_mean:.1f}x",
                sizes[end],
                f"{rss[end]:.0f}",
                len(stream.entities) if end == ends[-1] else "",
            ]
        )
    print(f"model {args.model}, window {args.window_tokens} tokens; ms a piece, mean of the 10 pieces up to each")
    print(
        table(
            ["pieces read", "stream ms", "whole history ms", "history / stream", "state bytes", "RSS MB", "entities"],
            rows,
        )
    )
    edge = max(1, min(args.edge, len(every) // 2))
    first, last = sum(every[:edge]) / edge, sum(every[-edge:]) / edge
    print(
        f"{len(every)} pieces: the first {edge} {first * 1000:.0f} ms a piece, the last {edge} (pieces "
        f"{len(every) - edge + 1}-{len(every)}) {last * 1000:.0f} ms: last / first {last / first:.2f}"
    )
    ru_maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    print(
        f"memory: peak RSS {peak_rss_mb():.0f} MB (VmHWM; getrusage ru_maxrss {ru_maxrss:.0f} MB), "
        f"RSS {rss[ends[0]]:.0f} MB at piece {ends[0]} and {rss[ends[-1]]:.0f} MB at piece {ends[-1]}"
        + (f" (whole-history reads up to piece {args.full_history_up_to})" if args.full_history_up_to else "")
    )
    print(f"at the end: {load_line()}")


if __name__ == "__main__":
    main()
