"""Command-line interface: `python -m spacy_memcoref ...` (also `memcoref ...`).

Each command imports its implementation lazily so `--help` stays fast and no
command pays for torch unless it needs it.
"""
import json
import math
from pathlib import Path
from typing import Dict, Optional

import typer

from .errors import DataFormatError

app = typer.Typer(
    name="memcoref",
    help="spacy_memcoref: convert, export and score coreference data; train via `spacy train`.",
    no_args_is_help=True,
    add_completion=False,
)
convert_app = typer.Typer(help="Convert gold data to spaCy DocBin (.spacy) files.", no_args_is_help=True)
export_app = typer.Typer(help="Write the clusters in a DocBin back out as CoNLL-2012 or a GAP system file.", no_args_is_help=True)
score_app = typer.Typer(help="Score a response against a key, like the reference scorers.", no_args_is_help=True)
app.add_typer(convert_app, name="convert")
app.add_typer(export_app, name="export")
app.add_typer(score_app, name="score")


def _fail(err: Exception) -> "typer.Exit":
    typer.secho(f"error: {err}", fg=typer.colors.RED, err=True)
    return typer.Exit(code=1)


def _print_scores(title: str, scores: Dict[str, float], rows) -> None:
    """Print a readable table, then the scores as one JSON object on the last line."""
    typer.echo(title)
    for row in rows:
        typer.echo(row)
    # strict JSON: an undefined score (e.g. GAP bias with a zero F1) is null
    clean = {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in scores.items()}
    typer.echo(json.dumps(clean, sort_keys=True))


@convert_app.command("conll")
def convert_conll(
    input_path: Path = typer.Argument(..., help="A CoNLL-2012 file, or a directory searched recursively for *_conll / *.conll files."),
    output_path: Path = typer.Argument(..., help="The DocBin (.spacy) to write."),
    lang: str = typer.Option("en", "--lang", help="Language of the blank vocab the Docs are made with."),
) -> None:
    """Convert CoNLL-2012 to a DocBin: one Doc per (document, part), gold clusters
    in doc.spans["coref_clusters_N"], speakers in doc.spans["speakers"]."""
    from .corpora.conll import conll_to_docbin

    try:
        stats = conll_to_docbin(input_path, output_path, lang=lang)
    except (DataFormatError, OSError) as err:
        raise _fail(err)
    typer.echo(f"wrote {output_path}: {stats}")


@convert_app.command("gap")
def convert_gap(
    input_path: Path = typer.Argument(..., help="A GAP TSV (with its header row)."),
    output_path: Path = typer.Argument(..., help="The DocBin (.spacy) to write."),
    lang: str = typer.Option("en", "--lang", help="Language whose tokenizer splits the texts."),
) -> None:
    """Convert a GAP TSV to a DocBin: A/B/PRONOUN spans in doc.spans["gap"], labels
    in doc.user_data["gap"], positive links as doc.spans["coref_clusters_1"]."""
    from .corpora.gap import gap_to_docbin

    try:
        stats = gap_to_docbin(input_path, output_path, lang=lang)
    except (DataFormatError, OSError) as err:
        raise _fail(err)
    typer.echo(f"wrote {output_path}: {stats}")


@export_app.command("conll")
def export_conll(
    input_path: Path = typer.Argument(..., help="A DocBin whose Docs hold clusters."),
    output_path: Path = typer.Argument(..., help="The CoNLL-2012 file to write."),
    prefix: str = typer.Option("coref_clusters", "--prefix", help="Span-group prefix of the clusters."),
) -> None:
    """Write the clusters under PREFIX as a CoNLL-2012 file the reference scorer reads."""
    from .corpora.conll import docbin_to_conll

    try:
        n_docs = docbin_to_conll(input_path, output_path, prefix=prefix)
    except (DataFormatError, OSError) as err:
        raise _fail(err)
    typer.echo(f"wrote {output_path}: {n_docs} documents")


@export_app.command("gap")
def export_gap(
    input_path: Path = typer.Argument(..., help="A DocBin of GAP Docs (made by `convert gap`, then annotated)."),
    output_path: Path = typer.Argument(..., help="The GAP system TSV to write (ID, A-coref, B-coref; no header)."),
    prefix: str = typer.Option("coref_clusters", "--prefix", help="Span-group prefix of the clusters."),
) -> None:
    """Write a GAP system file: a candidate is linked when it overlaps a mention in
    the pronoun's cluster."""
    from .corpora.gap import docbin_to_gap_system

    try:
        n_rows = docbin_to_gap_system(input_path, output_path, prefix=prefix)
    except (DataFormatError, OSError) as err:
        raise _fail(err)
    typer.echo(f"wrote {output_path}: {n_rows} rows")


@score_app.command("conll")
def score_conll(
    key_path: Path = typer.Argument(..., help="The gold CoNLL-2012 file."),
    response_path: Path = typer.Argument(..., help="The system CoNLL-2012 file."),
) -> None:
    """MUC, B3, CEAFe, LEA and CoNLL F1, micro-averaged over documents like the
    reference scorer. The last line of output is one JSON object."""
    from .scoring.conll_files import score_conll_files

    try:
        scores, rows = score_conll_files(key_path, response_path)
    except (DataFormatError, OSError) as err:
        raise _fail(err)
    _print_scores(f"key: {key_path}  response: {response_path}", scores, rows)


@score_app.command("gap")
def score_gap(
    gold_path: Path = typer.Argument(..., help="The gold GAP TSV (with header)."),
    system_path: Path = typer.Argument(..., help="The system TSV (ID, A-coref, B-coref)."),
) -> None:
    """Overall, masculine and feminine F1 and bias (F/M), as the official GAP
    scorer computes them. The last line of output is one JSON object."""
    from .scoring.gap_metrics import score_gap_files

    try:
        scores, rows = score_gap_files(gold_path, system_path)
    except (DataFormatError, OSError) as err:
        raise _fail(err)
    _print_scores(f"gold: {gold_path}  system: {system_path}", scores, rows)


@app.command("predict")
def predict(
    model: str = typer.Argument(..., help="A trained pipeline: package name or directory."),
    input_path: Path = typer.Argument(..., help="A DocBin of gold Docs (from `convert`)."),
    output_path: Path = typer.Argument(..., help="The DocBin to write, with predicted clusters."),
    batch_size: int = typer.Option(8, "--batch-size", help="Docs a batch."),
    gpu_id: int = typer.Option(-1, "--gpu-id", help="GPU to run on; -1 for CPU."),
    prefix: str = typer.Option("coref_clusters", "--prefix", help="Span-group prefix of the gold clusters to remove."),
) -> None:
    """Run a pipeline over the Docs of a DocBin, keeping their tokens, spans and
    user data (GAP labels, doc ids) but not their gold clusters, and save the
    result for `export` and `score`."""
    import time

    import spacy
    from spacy.tokens import DocBin

    from .pipeline.gold import cluster_groups
    from .util import atomic_output

    if gpu_id >= 0:
        spacy.require_gpu(gpu_id)
    try:
        nlp = spacy.load(model)
        docs = list(DocBin().from_disk(input_path).get_docs(nlp.vocab))
    except (OSError, ValueError) as err:
        raise _fail(err)
    for doc in docs:
        for key in cluster_groups(doc, prefix):
            del doc.spans[key]
    out = DocBin(store_user_data=True)
    start = time.time()
    n_tokens = 0
    for i, doc in enumerate(nlp.pipe(docs, batch_size=batch_size), start=1):
        out.add(doc)
        n_tokens += len(doc)
        if i % 50 == 0 or i == len(docs):
            rate = n_tokens / max(time.time() - start, 1e-9)
            typer.echo(f"  {i}/{len(docs)} docs, {n_tokens} tokens, {rate:.0f} tokens/s", err=True)
    with atomic_output(output_path) as tmp:
        out.to_disk(tmp)
    typer.echo(f"wrote {output_path}: {len(docs)} docs in {time.time() - start:.1f}s")


def main() -> None:
    app()
