"""What a worker hands the writer for one shard (every engine: in this
process, from the process pool, from a Ray actor, so it pickles: a
top-level dataclass of plain values)."""

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

# the counts of a shard that the manifest records
COUNTS = ("n_items", "n_docs", "n_errors", "n_tokens", "n_clusters")


@dataclass
class ShardResult:
    """One annotated shard.

    index (int): the shard number.
    digest (str): the digest of its input (ShardPlan.digest), for resume.
    n_items (int): input items (documents, good or bad).
    n_docs, n_errors, n_tokens, n_clusters (int): documents annotated, bad
        items, and their tokens and clusters.
    files (Dict[str, bytes]): output file contents by name suffix ("jsonl",
        "spacy", "errors.jsonl").
    ids (List[str]): ids of the documents written, in order (the writer
        counts duplicates across shards).
    fatal (Optional[str]): the first bad item's "file:line: reason" when
        errors are not skipped (then nothing else is filled in), else None.
    pid (int): the worker process.
    t_start, t_end (Optional[float]): when the worker started and finished
        the shard (time.time(); None for a fatal result).
    peak_rss_mb (float): the worker's peak resident memory so far.
    """

    index: int
    digest: str
    n_items: int
    n_docs: int = 0
    n_errors: int = 0
    n_tokens: int = 0
    n_clusters: int = 0
    files: Dict[str, bytes] = field(default_factory=dict)
    ids: List[str] = field(default_factory=list)
    fatal: Optional[str] = None
    pid: Optional[int] = None
    t_start: Optional[float] = None
    t_end: Optional[float] = None
    peak_rss_mb: float = 0.0

    def manifest_entry(self) -> Dict[str, Any]:
        """The counts and digest the manifest records (without the file names)."""
        entry: Dict[str, Any] = {key: getattr(self, key) for key in COUNTS}
        entry["digest"] = self.digest
        return entry
