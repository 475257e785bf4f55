"""Run a command that ends its output with one JSON line (`score conll`,
`score gap`, `tune-gap-threshold`, `count-people`), show its output as it
comes, and save that JSON object to a file. A project command cannot
redirect stdout (spaCy projects run commands without a shell), hence this.

    python scripts/json_report.py OUTPUT.json python -m spacy_memcoref score gap GOLD.tsv SYSTEM.tsv

The file is written only when the command succeeds and its last line is a
JSON object; otherwise this exits non-zero and leaves no file. A leading
`python` is the interpreter running this script, as in `spacy project run`.
"""

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path


def main(argv) -> int:
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    output = Path(argv[0])
    command = list(argv[1:])
    if command[0] in ("python", "python3"):
        command[0] = sys.executable
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    last = ""
    assert proc.stdout is not None
    for line in proc.stdout:
        sys.stdout.write(line)
        sys.stdout.flush()
        if line.strip():
            last = line.strip()
    code = proc.wait()
    if code != 0:
        print(f"json_report: the command failed (exit {code}); {output} not written", file=sys.stderr)
        return code
    try:
        data = json.loads(last)
    except ValueError:
        data = None
    if not isinstance(data, dict):
        print(
            f"json_report: the last line of output is not a JSON object: {last!r}; {output} not written",
            file=sys.stderr,
        )
        return 1
    output.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{output.name}.", dir=output.parent)
    with os.fdopen(fd, "w", encoding="utf8") as file_:
        json.dump(data, file_, indent=2, sort_keys=True)
        file_.write("\n")
    os.replace(tmp, output)
    print(f"json_report: wrote {output}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
