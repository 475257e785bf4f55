"""Helpers shared by the benchmark scripts (not a test module, not part of
the package). The scripts put this folder on sys.path by being run as
``python benchmarks/<name>.py``.

Everything here works without a trained model: speed and memory do not
depend on the weights, so the pipeline is ``spacy.blank("en")`` +
``nlp.add_pipe("memcoref")`` + ``nlp.initialize()``.
"""

import ctypes
import gc
import json
import os
import platform
import resource
import subprocess
import sys
import time
import warnings
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

REPO = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("MEMCOREF_SHARED", REPO.parent / "shared"))
LITBANK = SHARED / "data" / "litbank"

# Filler text for long documents when ../shared is absent (same shape as
# prose: sentences of ~20 tokens with names and pronouns).
FALLBACK_TEXT = (
    "Alice walked down to the old harbour with her brother Tom , and she told him "
    "that the captain had promised them a place on his ship . "
    "He laughed at her , but the captain , a tall man with a grey beard , kept his word "
    "and waved to them from the deck when they arrived . "
    "Tom said that he had never seen the sea so calm , and Alice agreed with him . "
)


def quiet() -> None:
    """Silence the library warnings that would break up the tables."""
    warnings.filterwarnings("ignore")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")


def n_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def set_threads(threads: Optional[int]) -> int:
    import torch

    threads = threads or n_cores()
    torch.set_num_threads(threads)
    return threads


def machine_line(threads: int) -> str:
    import spacy
    import torch

    return (
        f"{time.strftime('%Y-%m-%d')} | {platform.processor() or platform.machine()}, "
        f"{n_cores()} cores, torch {torch.__version__} ({threads} threads), "
        f"spaCy {spacy.__version__}, Python {platform.python_version()}; {load_line()}"
    )


def cpu_flags() -> List[str]:
    """The low-precision instruction sets this CPU has (Linux /proc/cpuinfo):
    bfloat16 is fast with avx512_bf16 / amx_bf16, int8 with avx512_vnni /
    avx_vnni / amx_int8 (without them int8 runs on AVX2)."""
    from spacy_memcoref.models.encoder.bf16_autocast import NATIVE_BF16_FLAGS, cpu_flags as all_flags

    wanted = NATIVE_BF16_FLAGS + ("amx_int8", "avx512_vnni", "avx_vnni")
    flags = all_flags()
    return [f for f in wanted if f in flags]


def load_line() -> str:
    """The machine's load average: timings on a shared machine are only as
    good as this is low (about 0 besides the benchmark itself)."""
    try:
        one, five, _ = os.getloadavg()
    except OSError:  # pragma: no cover
        return "load average unknown"
    return f"load average {one:.2f} (1 min), {five:.2f} (5 min)"


def litbank_dir(path: Optional[str] = None) -> Optional[Path]:
    """The LitBank folder, or None when it is absent."""
    p = Path(path) if path else LITBANK
    if p.is_dir() and any(p.glob("*.conll")):
        return p
    return None


def build_pipeline(
    max_antecedents: Optional[int] = None,
    chunk_size: Optional[int] = None,
    hidden_size: Optional[int] = None,
    bfloat16: bool = False,
    encoder: Optional[str] = None,
):
    """spacy.blank("en") + memcoref (s2e over the embedded MiniLM), initialized;
    the arguments override the component's model config when given
    (bfloat16: the encoder under bfloat16 autocast, as configs/s2e.cfg;
    encoder: a Hugging Face name or path in place of the MiniLM)."""
    import spacy

    model: Dict[str, Any] = {}
    if hidden_size is not None:
        model["hidden_size"] = hidden_size
    if max_antecedents is not None:
        model["max_antecedents"] = max_antecedents
    if chunk_size is not None:
        model["chunk_size"] = chunk_size
    if bfloat16 or encoder:
        model["tok2vec"] = {
            "@architectures": "spacy_memcoref.EmbeddedTransformer.v1",
            "bfloat16": bfloat16,
            "name": encoder,
        }
    nlp = spacy.blank("en")
    nlp.add_pipe("memcoref", config={"model": model} if model else {})
    nlp.initialize()
    return nlp


def build_encoder(bfloat16: bool = False):
    """The component's tok2vec (the embedded MiniLM), initialized, and the vocab.
    Built through the pipeline so that it is exactly the encoder s2e uses
    (bfloat16: under bfloat16 autocast, as configs/s2e.cfg and petra_gap.cfg)."""
    nlp = build_pipeline(bfloat16=bfloat16)
    return nlp, nlp.get_pipe("memcoref").model.layers[0]


def read_litbank(vocab, n_docs: Optional[int], path: Optional[Path] = None) -> List[Any]:
    from spacy_memcoref.corpora.conll import read_conll_docs

    docs = []
    for doc in read_conll_docs(path or LITBANK, vocab):
        docs.append(doc)
        if n_docs is not None and len(docs) >= n_docs:
            break
    return docs


def long_doc(vocab, n_tokens: int, path: Optional[Path] = None):
    """A Doc of exactly n_tokens words with sentence boundaries: LitBank
    documents' words concatenated (repeated if needed), or FALLBACK_TEXT
    repeated when LitBank is absent.

    RETURNS (Tuple[Doc, str]): the doc and where its words came from.
    """
    from spacy.tokens import Doc

    words: List[str] = []
    sent_starts: List[bool] = []
    if path is not None:
        from spacy_memcoref.corpora.conll import read_conll_docs

        while len(words) < n_tokens:
            before = len(words)
            for doc in read_conll_docs(path, vocab):
                for tok in doc:
                    words.append(tok.text)
                    sent_starts.append(bool(tok.is_sent_start) or tok.i == 0)
                if len(words) >= n_tokens:
                    break
            if len(words) == before:
                break
        source = "LitBank words"
    if len(words) < n_tokens:
        base = FALLBACK_TEXT.split()
        words, sent_starts = [], []
        prev = "."
        while len(words) < n_tokens:
            for w in base:
                words.append(w)
                sent_starts.append(prev == ".")
                prev = w
        source = "repeated filler text (no LitBank)"
    words, sent_starts = words[:n_tokens], sent_starts[:n_tokens]
    sent_starts[0] = True
    return Doc(vocab, words=words, sent_starts=sent_starts), source


# ----- memory --------------------------------------------------------------


def rss_mb() -> float:
    """Current resident set size (VmRSS), MB."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return float("nan")


def peak_rss_mb() -> float:
    """Peak RSS of this process so far, MB: getrusage(RUSAGE_SELF).ru_maxrss
    (KiB on Linux), but read as VmHWM from /proc/self/status where there is
    one. Both are the kernel's high-water mark of this address space, but
    ru_maxrss is also floored at the *spawning parent's* peak (Linux records
    the pre-exec address space's peak in ru_maxrss, and Python spawns with
    vfork), so a child started by a parent holding an encoder would report
    at least the parent's peak; VmHWM has no such floor and is what
    /proc/self/clear_refs resets."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def release_memory() -> None:
    """Free what Python and glibc hold on to, so the next baseline is the
    memory actually in use."""
    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def reset_peak() -> bool:
    """Reset the kernel's peak-RSS counter (VmHWM, which ru_maxrss reads) to
    the current RSS (Linux >= 4.0). RETURNS (bool): whether it worked."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        return False
    return peak_rss_mb() <= rss_mb() + 1.0


def run_child(argv: Sequence[str], timeout: float) -> Dict[str, Any]:
    """Run `python <argv>` in a fresh process; its last stdout line is JSON."""
    cmd = [sys.executable, *argv]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f}s"}
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-5:]
        return {"error": f"exit {proc.returncode}: " + " | ".join(tail)}
    return json.loads(lines[-1])


# ----- output ----------------------------------------------------------------


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A Markdown table (readable in a terminal, pastable in README.md)."""

    def fmt(v: Any) -> str:
        if isinstance(v, float):
            if v != v:
                return "-"
            return f"{v:,.2f}" if abs(v) < 100 else f"{v:,.0f}"
        if isinstance(v, int):
            return f"{v:,}"
        return str(v)

    cells = [[fmt(v) for v in row] for row in rows]
    left = [all(isinstance(row[i], str) for row in rows) for i in range(len(headers))]
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(headers)]
    out = ["| " + " | ".join(h.ljust(w) for h, w in zip(headers, widths)) + " |"]
    out.append("|" + "|".join(("-" * (w + 2)) if lf else ("-" * (w + 1) + ":") for w, lf in zip(widths, left)) + "|")
    for r in cells:
        out.append("| " + " | ".join(c.ljust(w) if lf else c.rjust(w) for c, w, lf in zip(r, widths, left)) + " |")
    return "\n".join(out)
