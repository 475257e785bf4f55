"""scripts/convert_corpus.py: its report says, per split, how many documents
were converted and how many were skipped as masked (GUM's Reddit documents)."""

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEMO = REPO / "assets" / "demo" / "ontogum"


def _manifest(path: Path) -> Path:
    """A manifest as check-data writes it, for the demo's native OntoGUM copy."""
    splits = {
        role: {"format": "ontogum", "path": str(DEMO), "split": role, "splits_md": str(DEMO / "splits.md")}
        for role in ("train", "dev", "test")
    }
    path.write_text(json.dumps({"name": "demo OntoGUM", "license": "CC-BY-4.0", "splits": splits}), encoding="utf8")
    return path


def test_the_report_counts_converted_and_masked_documents_per_split(tmp_path):
    proc = subprocess.run(
        [
            sys.executable,
            str(REPO / "scripts" / "convert_corpus.py"),
            str(_manifest(tmp_path / "m.json")),
            str(tmp_path / "out"),
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr + proc.stdout
    summary = proc.stdout[proc.stdout.index("documents per split:") :].splitlines()[1:]
    assert [line.strip() for line in summary] == [
        "train: 6 documents converted, 1 skipped as masked (GUM_reddit_demo)",
        "dev: 2 documents converted, 0 skipped as masked",
        "test: 2 documents converted, 0 skipped as masked",
        "GUM's entity layer: not asked for (--gum-entities)",
    ]


def test_a_missing_gum_folder_is_said_not_hidden(tmp_path):
    proc = subprocess.run(
        [
            sys.executable,
            str(REPO / "scripts" / "convert_corpus.py"),
            str(_manifest(tmp_path / "m.json")),
            str(tmp_path / "out"),
            "--gum-entities",
            str(tmp_path / "no_gum"),
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr + proc.stdout
    assert f"GUM's entity layer: not added ({tmp_path / 'no_gum'} does not exist)" in proc.stdout
    assert "--gum-entities" not in proc.stdout.split("documents per split:")[0]  # no converter was asked for it
