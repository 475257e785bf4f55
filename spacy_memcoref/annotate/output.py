"""OUTPUT_DIR of `annotate`: numbered shard files, each written atomically,
and manifest.json, the record of what is done.

A shard's files (shard-000003.jsonl, .spacy, .errors.jsonl) are written to a
temporary name and renamed; then the manifest, also atomically, records the
shard as done with its counts and the digest of its input. A run killed at
any moment leaves whole files only: a shard the manifest does not list is
done again (and its files replaced), never appended to, so a rerun neither
loses nor duplicates a document. Only one run writes a folder at a time (a
lock file).
"""

import contextlib
import glob
import hashlib
import json
import os
from pathlib import Path
from typing import IO, Any, Dict, Optional, Union

from ..loading import ResolvedModel
from ..util import atomic_output
from .results import COUNTS, ShardResult

MANIFEST = "manifest.json"
MANIFEST_FORMAT = "spacy_memcoref.annotate.v1"
LOCK = ".annotate.lock"
SHARD_GLOBS = ("shard-*.jsonl", "shard-*.spacy")


class OutputMismatch(ValueError):
    """OUTPUT_DIR holds the output of another input, model or settings."""


def shard_name(index: int, suffix: str) -> str:
    return f"shard-{index:06d}.{suffix}"


def model_identity(resolved: ResolvedModel) -> Dict[str, Any]:
    """What identifies a pipeline for resume: loading.resolve_model's
    identity (a folder's absolute path, a package's name, a shipped model's
    name, whether named or given as its folder), its meta name and version,
    and, for a folder or shipped model, a fingerprint of its files (names,
    sizes, modification times).

    resolved (ResolvedModel): the model, as resolve_model found it.
    RETURNS (Dict[str, Any]): the manifest's "model" entry.
    """
    info: Dict[str, Any] = {"model": resolved.identity}
    if resolved.folder is not None and resolved.folder.is_dir() and not resolved.package:
        path = resolved.folder
        digest = hashlib.sha1()
        for root, dirs, files in os.walk(path):
            dirs.sort()
            for name in sorted(files):
                full = os.path.join(root, name)
                stat = os.stat(full)
                digest.update(f"{os.path.relpath(full, path)}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode("utf-8"))
        info["fingerprint"] = digest.hexdigest()
    meta = resolved.meta
    if meta:
        info["pipeline"] = f"{meta.get('lang', '')}_{meta.get('name', '')}-{meta.get('version', '')}"
    return info


class OutputDir:
    """The output folder of one run: checks, resume state, atomic writes.

    path (Union[str, Path]): OUTPUT_DIR (created when missing).
    identity (Dict[str, Any]): input, model and settings that decide the
        output; a manifest with another identity is refused unless overwrite.
    overwrite (bool): start afresh: remove the manifest and shard files.
    """

    def __init__(self, path: Union[str, Path], identity: Dict[str, Any], *, overwrite: bool = False) -> None:
        self.path = Path(path)
        if self.path.exists() and not self.path.is_dir():
            raise ValueError(f"OUTPUT_DIR {self.path} exists and is not a folder")
        self._created = not self.path.exists()
        self.path.mkdir(parents=True, exist_ok=True)
        if not os.access(self.path, os.W_OK):
            raise ValueError(f"OUTPUT_DIR {self.path} is not writable")
        self.identity = json.loads(json.dumps(identity))  # plain JSON types, as read back
        self._lock_file: Optional[IO[str]] = None
        self._lock()
        try:
            self._clean_temporary_files()
            self.manifest = self._load(overwrite)
        except BaseException:
            self.close(failed=True)
            raise

    # ----- setup --------------------------------------------------------------

    def _lock(self) -> None:
        try:
            import fcntl
        except ImportError:  # pragma: no cover - not POSIX
            return
        self._lock_file = open(self.path / LOCK, "w")
        try:
            fcntl.flock(self._lock_file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            self._lock_file.close()
            self._lock_file = None
            raise ValueError(f"another `annotate` run is writing to {self.path}") from None

    def close(self, *, failed: bool = False) -> None:
        """Release the lock. After a failed run that wrote nothing, leave no
        trace: the lock file goes, and the folder too when this run made it."""
        if self._lock_file is None:
            return
        self._lock_file.close()
        self._lock_file = None
        if failed and not self._shard_files() and not (self.path / MANIFEST).exists():
            with contextlib.suppress(OSError):
                (self.path / LOCK).unlink()
                if self._created:
                    self.path.rmdir()  # only when empty

    def __enter__(self) -> "OutputDir":
        return self

    def __exit__(self, exc_type, *exc) -> None:
        self.close(failed=exc_type is not None)

    def _clean_temporary_files(self) -> None:
        """Remove what a killed run left half-written (atomic_output's temps)."""
        for tmp in glob.glob(str(self.path / ".shard-*.tmp")) + glob.glob(str(self.path / f".{MANIFEST}.*.tmp")):
            os.unlink(tmp)

    def _shard_files(self):
        found = []
        for pattern in SHARD_GLOBS:
            found.extend(glob.glob(str(self.path / pattern)))
        return sorted(found)

    def _load(self, overwrite: bool) -> Dict[str, Any]:
        manifest_path = self.path / MANIFEST
        if overwrite:
            for name in self._shard_files():
                os.unlink(name)
            if manifest_path.exists():
                manifest_path.unlink()
        fresh = {
            "format": MANIFEST_FORMAT,
            "identity": self.identity,
            "complete": False,
            "n_shards": None,
            "shards": {},
        }
        if not manifest_path.exists():
            leftovers = self._shard_files()
            if leftovers:
                raise OutputMismatch(
                    f"{self.path} holds shard files ({os.path.basename(leftovers[0])}, ...) but no {MANIFEST}: "
                    "choose another OUTPUT_DIR or pass --overwrite to replace them"
                )
            return fresh
        try:
            manifest = json.loads(manifest_path.read_text(encoding="utf8"))
            if manifest.get("format") != MANIFEST_FORMAT or not isinstance(manifest.get("shards"), dict):
                raise ValueError("unknown format")
        except (OSError, ValueError) as err:
            raise OutputMismatch(
                f"{manifest_path} is not a manifest of `annotate` ({err}): pass --overwrite to start afresh"
            ) from None
        old = manifest.get("identity", {})
        diffs = [key for key in sorted(set(old) | set(self.identity)) if old.get(key) != self.identity.get(key)]
        if diffs:
            details = "; ".join(f"{key}: {old.get(key)!r} there, {self.identity.get(key)!r} now" for key in diffs)
            raise OutputMismatch(
                f"{self.path} holds the output of a different run ({details}): "
                "choose another OUTPUT_DIR, or pass --overwrite to replace it"
            )
        return manifest

    # ----- resume -------------------------------------------------------------

    def done(self, index: int) -> Optional[Dict[str, Any]]:
        """The manifest entry of a finished shard, or None."""
        return self.manifest["shards"].get(str(index))

    def check_unchanged(self, index: int, digest: str) -> None:
        """Refuse to resume when the input of a finished shard has changed."""
        entry = self.done(index)
        if entry is not None and entry.get("digest") != digest:
            raise OutputMismatch(
                f"the input of shard {index} changed since {self.path} was written "
                "(other documents, or the same ones in another order): pass --overwrite to annotate it afresh"
            )

    # ----- writing ------------------------------------------------------------

    def write_shard(self, result: ShardResult) -> None:
        """Write a shard's files atomically, then record it in the manifest."""
        index = result.index
        names = []
        for suffix, data in sorted(result.files.items()):
            name = shard_name(index, suffix)
            with atomic_output(self.path / name) as tmp:
                tmp.write_bytes(data)
            names.append(name)
        stale = self.path / shard_name(index, "errors.jsonl")
        if "errors.jsonl" not in result.files and stale.exists():
            stale.unlink()  # a former run's errors for this shard, now fixed
        entry = result.manifest_entry()
        entry["files"] = names
        self.manifest["shards"][str(index)] = entry

    def save(self) -> None:
        with atomic_output(self.path / MANIFEST) as tmp:
            tmp.write_text(json.dumps(self.manifest, indent=1, sort_keys=True) + "\n", encoding="utf8")

    def record_shard(self, result: ShardResult) -> None:
        self.write_shard(result)
        self.manifest["complete"] = False
        self.save()

    def finish(self, n_shards: int) -> None:
        """Mark the output complete: shards 0 .. n_shards-1, no others."""
        extra = sorted(int(k) for k in self.manifest["shards"] if int(k) >= n_shards)
        if extra:
            raise OutputMismatch(
                f"{self.path} holds shard {extra[0]} but the input now has only {n_shards} shards "
                "(documents were removed from it): pass --overwrite to annotate it afresh"
            )
        missing = [i for i in range(n_shards) if str(i) not in self.manifest["shards"]]
        if missing:
            raise RuntimeError(f"shards {missing[:5]} were not written")
        self.manifest["complete"] = True
        self.manifest["n_shards"] = n_shards
        self.manifest["totals"] = self.totals()
        self.save()

    def totals(self) -> Dict[str, int]:
        totals = dict.fromkeys(COUNTS, 0)
        for entry in self.manifest["shards"].values():
            for key in totals:
                totals[key] += int(entry.get(key, 0))
        totals["n_shards"] = len(self.manifest["shards"])
        return totals
