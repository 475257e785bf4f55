"""Shared fixtures. Tests that need ../shared (data, reference scorers) skip,
saying why, when it is absent."""
import os
import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("MEMCOREF_SHARED", REPO.parent / "shared"))


def _require(path: Path, what: str) -> Path:
    if not path.exists():
        pytest.skip(f"{what} not found at {path} (set MEMCOREF_SHARED to the shared/ folder)")
    return path


@pytest.fixture(scope="session")
def shared_data() -> Path:
    return _require(SHARED / "data", "shared data")


@pytest.fixture(scope="session")
def conll_scorer() -> Path:
    scorer = _require(SHARED / "tools" / "conll-scorer" / "scorer.pl", "CoNLL-2012 reference scorer")
    if shutil.which("perl") is None:
        pytest.skip("perl is not installed; the CoNLL-2012 reference scorer needs it")
    return scorer


@pytest.fixture(scope="session")
def gap_scorer() -> Path:
    return _require(SHARED / "tools" / "gap-scorer" / "gap_scorer.py", "official GAP scorer")


@pytest.fixture(scope="module")
def one_torch_thread():
    """Tiny tensors: threads only add contention on a shared machine."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
