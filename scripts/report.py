"""Merge the JSON results of the evaluation steps into one report:

    python scripts/report.py [--corpus corpus/ontogum/sources.json] metrics/report.json metrics/report.md \
        metrics/s2e/ontogum_test.json metrics/petra/gap_test.json ...

writes the JSON report ({model: {evaluation: scores}}, the model and
evaluation taken from each input's folder and file name; with --corpus, a
"data" entry: s2e's corpus as check-data described it) and a Markdown table,
and prints the table. Scores in [0, 1] are shown as
percentages in the table and kept as fractions in the JSON.
"""

import json
import sys
from pathlib import Path

# what the table shows for each kind of result, in this order (others: all keys)
SHOWN = {
    "coref_conll_f": "CoNLL F1",
    "coref_muc_f": "MUC F1",
    "coref_b3_f": "B3 F1",
    "coref_ceafe_f": "CEAFe F1",
    "coref_lea_f": "LEA F1",
    "gap_f": "GAP F1",
    "gap_f_masc": "F1 masc",
    "gap_f_fem": "F1 fem",
    "gap_bias": "bias F/M",
    "threshold": "threshold",
    "alpha": "alpha",
    "errors": "wrong counts",
    "docs": "docs",
    "mae": "mean abs. error",
}
PERCENT = {k for k in SHOWN if k.endswith("_f") or k.endswith("_masc") or k.endswith("_fem")}


def fmt(key, value) -> str:
    if value is None:
        return "n/a"
    if key in PERCENT and isinstance(value, (int, float)):
        return f"{100 * value:.2f}"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def main(argv) -> int:
    corpus = None
    if argv[:1] == ["--corpus"] and len(argv) > 1:
        corpus = json.loads(Path(argv[1]).read_text(encoding="utf8"))
        argv = argv[2:]
    if len(argv) < 3 or not argv[0].endswith(".json") or not argv[1].endswith(".md"):
        print(__doc__, file=sys.stderr)
        return 2
    output, markdown = Path(argv[0]), Path(argv[1])
    report = {}
    for name in argv[2:]:
        path = Path(name)
        data = json.loads(path.read_text(encoding="utf8"))
        report.setdefault(path.parent.name, {})[path.stem] = data
    lines = ["# Evaluation report", ""]
    if corpus is not None:
        test = corpus["splits"]["test"]
        test_name = test.get("split", "test")
        lines += [
            f"s2e's corpus: **{corpus['name']}** ({corpus['license']}); "
            f"scored on its {test_name} split"
            + (" (dev scores: dev also chose the checkpoint)" if corpus.get("test_is_dev") else "")
            + ".",
            "PeTra: GAP (development: training; validation: checkpoint and threshold).",
            "",
        ]
        report["data"] = {"s2e": {k: corpus[k] for k in ("corpus", "name", "url", "license", "test_is_dev", "digest")}}
    for model, results in report.items():
        if model == "data":
            continue
        lines.append(f"## {model}")
        lines.append("")
        for evaluation, scores in results.items():
            keys = [k for k in SHOWN if k in scores] or sorted(scores)
            lines.append(f"**{evaluation}**")
            lines.append("")
            lines.append("| " + " | ".join(SHOWN.get(k, k) for k in keys) + " |")
            lines.append("|" + " --- |" * len(keys))
            lines.append("| " + " | ".join(fmt(k, scores[k]) for k in keys) + " |")
            lines.append("")
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(report, indent=2, sort_keys=True) + "\n", encoding="utf8")
    table = "\n".join(lines)
    markdown.parent.mkdir(parents=True, exist_ok=True)
    markdown.write_text(table + "\n", encoding="utf8")
    print(table)
    print(f"wrote {output} and {markdown}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
