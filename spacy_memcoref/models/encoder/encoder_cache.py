"""One cache for frozen encoder outputs, bounded in bytes, least recently
used out. The frozen encoder keeps a Doc's token vectors in it (keyed by the
Doc's words); the partly frozen transformer keeps a window's bottom-layer
output (keyed by its word-piece ids). Neither imports torch here: a value is
any array with `nbytes` (numpy, cupy, torch).
"""

import hashlib
from collections import OrderedDict
from typing import Any, Hashable, Optional, Sequence

# `frozen_cache_mb`, the option of the builders (S2E, PeTra,
# EmbeddedTransformer) that bounds this cache: its one default
DEFAULT_FROZEN_CACHE_MB = 2048


def check_frozen_cache_mb(value: Any) -> int:
    """`frozen_cache_mb` checked, for the frozen encoder and the partly
    frozen transformer alike.

    RETURNS (int): the value, megabytes (0: no cache).
    RAISES ValueError: it is not an integer >= 0.
    """
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"frozen_cache_mb must be an integer >= 0, got {value!r}")
    return value


def value_nbytes(value: Any) -> int:
    """RETURNS (int): the bytes an array (numpy, cupy or torch) holds."""
    return int(value.nbytes)


def words_key(words: Sequence[str], spaces: Sequence[bool]) -> bytes:
    """A fixed-size key for a text given as words and trailing spaces: the
    BLAKE2b digest of both (16 bytes, so a key costs nothing next to its
    vectors)."""
    digest = hashlib.blake2b(digest_size=16)
    for word, space in zip(words, spaces):
        digest.update(word.encode("utf8"))
        digest.update(b"\x1f " if space else b"\x1f")
    digest.update(len(words).to_bytes(8, "little"))
    return digest.digest()


class EncoderCache:
    """Arrays by key, at most `limit_bytes` in all; putting past the bound
    drops the least recently used entries first. A value larger than the
    whole bound is not kept. limit_bytes = 0 keeps nothing.

    hits / misses count `get` calls; `used` is the bytes held now.
    """

    def __init__(self, limit_bytes: int) -> None:
        if isinstance(limit_bytes, bool) or not isinstance(limit_bytes, int) or limit_bytes < 0:
            raise ValueError(f"the cache bound must be an integer >= 0 bytes, got {limit_bytes!r}")
        self.limit = limit_bytes
        self.used = 0
        self.hits = 0
        self.misses = 0
        self._rows: "OrderedDict[Hashable, Any]" = OrderedDict()
        self._sizes: "dict[Hashable, int]" = {}

    def __len__(self) -> int:
        return len(self._rows)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._rows

    def get(self, key: Hashable) -> Optional[Any]:
        """The value stored under key (now the most recently used), or None."""
        value = self._rows.get(key)
        if value is None:
            self.misses += 1
            return None
        self._rows.move_to_end(key)
        self.hits += 1
        return value

    def put(self, key: Hashable, value: Any) -> None:
        """Store value under key, evicting least recently used entries to
        stay within the bound."""
        size = value_nbytes(value)
        if size > self.limit:
            return
        if key in self._rows:
            self.used -= self._sizes.pop(key)
            del self._rows[key]
        while self._rows and self.used + size > self.limit:
            old, _ = self._rows.popitem(last=False)
            self.used -= self._sizes.pop(old)
        self._rows[key] = value
        self._sizes[key] = size
        self.used += size

    def clear(self) -> None:
        """Drop every entry (the counters stay)."""
        self._rows.clear()
        self._sizes.clear()
        self.used = 0


class DiskStore:
    """Arrays by key as .npy files in `folder/fingerprint/`, so that later
    runs with the same frozen encoder (other seeds, other head settings)
    skip it. The fingerprint names the encoder (its weights and settings):
    another encoder never reads these vectors. Files are written to a
    temporary name and renamed, so a killed run leaves no half file.
    """

    def __init__(self, folder: str, fingerprint: str) -> None:
        from pathlib import Path

        self.path = Path(folder) / fingerprint
        self.path.mkdir(parents=True, exist_ok=True)
        self.reads = 0
        self.writes = 0

    def _file(self, key: bytes):
        return self.path / f"{key.hex()}.npy"

    def get(self, key: bytes) -> Optional[Any]:
        """The array stored under key, or None."""
        import numpy

        path = self._file(key)
        if not path.exists():
            return None
        self.reads += 1
        return numpy.load(path, allow_pickle=False)

    def put(self, key: bytes, value: Any) -> None:
        """Store a numpy array under key."""
        import os

        import numpy

        path = self._file(key)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        with open(tmp, "wb") as out:
            numpy.save(out, numpy.ascontiguousarray(value), allow_pickle=False)
        os.replace(tmp, path)
        self.writes += 1


def model_fingerprint(model: Any, *settings: Any) -> str:
    """A digest of a Thinc model's weights (its own parameters and those of
    the torch modules in its shims) and of `settings`: equal only for the same
    encoder with the same settings."""
    digest = hashlib.blake2b(digest_size=16)
    digest.update(repr(settings).encode("utf8"))
    for node in model.walk():
        digest.update(node.name.encode("utf8"))
        for name in node.param_names:
            if node.has_param(name):
                array = node.ops.to_numpy(node.get_param(name))
                digest.update(name.encode("utf8"))
                digest.update(array.tobytes())
        for shim in node.shims:
            module = getattr(shim, "_model", None)
            if module is None or not hasattr(module, "state_dict"):
                continue
            import torch  # only a model with torch shims gets here

            for name, tensor in module.state_dict().items():
                digest.update(name.encode("utf8"))
                digest.update(tensor.detach().cpu().contiguous().view(-1).view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()
