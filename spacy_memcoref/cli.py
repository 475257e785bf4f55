"""Command-line interface: `python -m spacy_memcoref ...` (also `memcoref ...`).

Each command imports its implementation lazily so `--help` stays fast and no
command pays for torch unless it needs it.
"""

import json
import math
import sys
from pathlib import Path
from typing import Dict, List, Optional

import typer
import typer.core

from .doc_helpers.clusters import CLUSTER_PREFIX
from .errors import AnnotateError, DataFormatError, shorten
from .loading import ResolvedModel, load_pipeline, resolve_model
from .pretrained import DEFAULT_MODEL

# The order of a workflow: data, then (after `spacy train`) tuning, then using a pipeline.
COMMAND_ORDER = (
    "convert",
    "export",
    "score",
    "train",
    "interpolate",
    "tune-link-threshold",
    "tune-gap-threshold",
    "resolve",
    "predict",
    "annotate",
    "quantize",
    "visualize",
    "count-people",
    "info",
    "pretrained-build",
)


# `memcoref train` stopped by a signal, a checkpoint written: resumable
EXIT_STOPPED = 3


class _WorkflowOrder(typer.core.TyperGroup):
    def list_commands(self, ctx) -> list:
        names = super().list_commands(ctx)
        return sorted(names, key=lambda n: COMMAND_ORDER.index(n) if n in COMMAND_ORDER else len(COMMAND_ORDER))


# Help is plain text (rich_markup_mode=None): "[scale, shift]" and the like print as written.
app = typer.Typer(
    name="memcoref",
    help=(
        "spacy_memcoref: coreference for spaCy. Data: convert, export, score. After `spacy train`: "
        "interpolate (a fine-tune part way back to its source), tune-link-threshold (s2e), tune-gap-threshold (PeTra). A trained pipeline: resolve (one text), predict, annotate, "
        "quantize, visualize, count-people."
    ),
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
    cls=_WorkflowOrder,
)
convert_app = typer.Typer(
    help="Convert gold data to spaCy DocBin (.spacy) files.", no_args_is_help=True, rich_markup_mode=None
)
export_app = typer.Typer(
    help="Write the clusters in a DocBin back out as CoNLL-2012 or a GAP system file.",
    no_args_is_help=True,
    rich_markup_mode=None,
)
score_app = typer.Typer(
    help="Score a response against a key, like the reference scorers.", no_args_is_help=True, rich_markup_mode=None
)
app.add_typer(convert_app, name="convert", short_help="Gold data to DocBin: conll, ontogum, gap.")
app.add_typer(export_app, name="export", short_help="DocBin clusters to CoNLL-2012 or a GAP system file.")
app.add_typer(score_app, name="score", short_help="Score a response against a key: conll, gap.")


def _fail(err: Exception) -> "typer.Exit":
    """Print one line (a message from deep inside a library may span several,
    or quote megabytes of input) and give the exit to raise."""
    message = " ".join(str(err).split()) or type(err).__name__
    typer.secho(f"error: {shorten(message, 1000)}", fg=typer.colors.RED, err=True)
    return typer.Exit(code=1)


def _check_count(option: str, value: int) -> None:
    """Refuse a count option below 1 (a batch size of 0 would silently give no Docs)."""
    if value < 1:
        raise _fail(ValueError(f"{option} must be >= 1, got {value}"))


def _print_scores(title: str, scores: Dict[str, float], rows) -> None:
    """Print a readable table, then the scores as one JSON object on the last line."""
    typer.echo(title)
    for row in rows:
        typer.echo(row)
    # strict JSON: an undefined score (e.g. GAP bias with a zero F1) is null
    clean = {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in scores.items()}
    typer.echo(json.dumps(clean, sort_keys=True))


_GUM_ENTITIES_HELP = (
    "GUM's dep/ folder (one DOC.conllu a document, MISC Entity=): every Doc also gets GUM's own mentions, "
    "singletons included, in doc.spans['gum_mentions'] (label: entity type) and doc.spans['gum_infstat'] "
    "(label: information status), for s2e's auxiliary losses. Every Doc must have its GUM document."
)


def _check_gum_entities(gum_entities: Optional[Path]) -> None:
    """Refuse a --gum-entities that is no folder before converting anything."""
    if gum_entities is not None and not gum_entities.is_dir():
        raise DataFormatError(gum_entities, None, "--gum-entities: not a folder of GUM's dep/*.conllu files")


def _attach_gum_entities(docbin: Path, gum_entities: Optional[Path]) -> None:
    """Add GUM's entity layer to a DocBin just written (in place: it is this
    command's own output, never its input)."""
    if gum_entities is None:
        return
    from .corpora.gum_entities import attach_gum_entities_docbin

    tmp = docbin.with_name(docbin.name + ".gum.tmp")
    try:
        attach_gum_entities_docbin(docbin, tmp, gum_entities)
    except BaseException:
        # no DocBin that looks converted but lacks the layer it was asked for
        docbin.unlink(missing_ok=True)
        raise
    tmp.replace(docbin)
    typer.echo(f"added GUM's entity layer from {gum_entities}")


@convert_app.command("conll")
def convert_conll(
    input_path: Path = typer.Argument(
        ..., help="A CoNLL-2012 file, or a directory searched recursively for *_conll / *.conll files."
    ),
    output_path: Path = typer.Argument(..., help="The DocBin (.spacy) to write."),
    lang: str = typer.Option("en", "--lang", help="Language of the blank vocab the Docs are made with."),
    gum_entities: Optional[Path] = typer.Option(None, "--gum-entities", help=_GUM_ENTITIES_HELP),
) -> None:
    """Convert CoNLL-2012 to a DocBin: one Doc per (document, part), gold clusters
    in doc.spans["coref_clusters_N"], speakers in doc.spans["speakers"]."""
    from .corpora.conll import conll_to_docbin

    try:
        _check_gum_entities(gum_entities)
        stats = conll_to_docbin(input_path, output_path, lang=lang)
        _attach_gum_entities(output_path, gum_entities)
    except (DataFormatError, OSError) as err:
        raise _fail(err)
    typer.echo(f"wrote {output_path}: {stats}")


@convert_app.command("ontogum")
def convert_ontogum(
    input_path: Path = typer.Argument(
        ..., help="ONTOGUM_DIR: holds conll/ and conllu/, as coref/ontogum/ in the GUM repository."
    ),
    output_path: Path = typer.Argument(..., help="The DocBin (.spacy) to write."),
    split: Optional[str] = typer.Option(
        None, "--split", help="train, dev, test or test2 (GUM's splits; needs --splits). Default: every document."
    ),
    splits: Optional[Path] = typer.Option(None, "--splits", help="GUM's splits.md."),
    lang: str = typer.Option("en", "--lang", help="Language of the blank vocab the Docs are made with."),
    gum_entities: Optional[Path] = typer.Option(None, "--gum-entities", help=_GUM_ENTITIES_HELP),
) -> None:
    """Convert OntoGUM's native files (conll/DOC.conll joined with
    conllu/DOC.conllu) to a DocBin, as `convert conll` converts OntoGUM's
    CoNLL-2012 form: sentences, speakers, clusters. Masked (Reddit)
    documents are skipped and counted."""
    from .corpora.ontogum import ontogum_to_docbin

    try:
        _check_gum_entities(gum_entities)
        stats = ontogum_to_docbin(input_path, output_path, split=split, splits_path=splits, lang=lang)
        _attach_gum_entities(output_path, gum_entities)
    except (DataFormatError, OSError, ValueError) as err:
        raise _fail(err)
    typer.echo(f"wrote {output_path}: {stats}")


@convert_app.command("gap")
def convert_gap(
    input_path: Path = typer.Argument(..., help="A GAP TSV (with its header row)."),
    output_path: Path = typer.Argument(..., help="The DocBin (.spacy) to write."),
    lang: str = typer.Option("en", "--lang", help="Language whose tokenizer splits the texts."),
    gender_swap: bool = typer.Option(
        False,
        "--gender-swap",
        help="Swap the third-person pronouns of every text (he <-> she, his <-> her, ...), keeping IDs, spans "
        "and labels: score predictions on it against the ORIGINAL TSV to see the model's own gender gap on the same texts.",
    ),
) -> None:
    """Convert a GAP TSV to a DocBin: A/B/PRONOUN spans in doc.spans["gap"], labels
    in doc.user_data["gap"], positive links as doc.spans["coref_clusters_1"]."""
    from .corpora.gap import gap_to_docbin

    try:
        stats = gap_to_docbin(input_path, output_path, lang=lang, gender_swap=gender_swap)
    except (DataFormatError, OSError) as err:
        raise _fail(err)
    typer.echo(f"wrote {output_path}: {stats}")


@export_app.command("conll")
def export_conll(
    input_path: Path = typer.Argument(..., help="A DocBin whose Docs hold clusters."),
    output_path: Path = typer.Argument(..., help="The CoNLL-2012 file to write."),
    prefix: str = typer.Option(CLUSTER_PREFIX, "--prefix", help="Span-group prefix of the clusters."),
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
    prefix: str = typer.Option(CLUSTER_PREFIX, "--prefix", help="Span-group prefix of the clusters."),
) -> None:
    """Write a GAP system file: a candidate is linked when it overlaps a mention in
    the pronoun's cluster, or, for Docs annotated by PeTra, when its link
    probability (doc.user_data["gap_probs"], else from doc._.memory_log)
    reaches the stored threshold: the rule of the GAP scorer."""
    from .scoring.gap_export import docbin_to_gap_system

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


@app.command("predict", short_help="Run a pipeline over a DocBin and save the result for export and score.")
def predict(
    model: str = typer.Argument(..., help="A trained pipeline: package name or directory."),
    input_path: Path = typer.Argument(..., help="A DocBin of gold Docs (from `convert`)."),
    output_path: Path = typer.Argument(..., help="The DocBin to write, with predicted clusters."),
    batch_size: int = typer.Option(8, "--batch-size", help="Docs a batch."),
    gpu_id: int = typer.Option(-1, "--gpu-id", help="GPU to run on; -1 for CPU."),
    prefix: str = typer.Option(CLUSTER_PREFIX, "--prefix", help="Span-group prefix of the gold clusters to remove."),
    resolved: bool = typer.Option(
        False, "--resolved", help='Also store the resolved text and its edits in each Doc\'s user_data["resolved"].'
    ),
) -> None:
    """Run a pipeline over the Docs of a DocBin, keeping their tokens, spans and
    user data (GAP labels, doc ids) but not their gold clusters, and save the
    result for `export` and `score`. With --resolved, each Doc's
    user_data["resolved"] = {"text": ..., "edits": [...]} (as annotate's records)."""
    import time

    from spacy.tokens import DocBin

    from .corpora.docbin import read_docbin
    from .doc_helpers.clusters import clear_clusters
    from .resolution import edits_as_records, resolve
    from .tuning.run import pipe_all
    from .util import atomic_output, refuse_overwriting_input

    _check_count("--batch-size", batch_size)
    try:
        refuse_overwriting_input([input_path], output_path)
        nlp = load_pipeline(model, gpu_id)
        docs = read_docbin(input_path, nlp.vocab)
    except (DataFormatError, OSError, ValueError) as err:
        raise _fail(err)
    for doc in docs:
        clear_clusters(doc, prefix)
    out = DocBin(store_user_data=True)
    start = time.time()
    n_tokens = 0
    try:
        for i, doc in enumerate(pipe_all(nlp, docs, batch_size), start=1):
            if resolved:
                result = resolve(doc, prefix=prefix)
                doc.user_data["resolved"] = {"text": result.text, "edits": edits_as_records(result)}
            out.add(doc)
            n_tokens += len(doc)
            if i % 50 == 0 or i == len(docs):
                rate = n_tokens / max(time.time() - start, 1e-9)
                typer.echo(f"  {i}/{len(docs)} docs, {n_tokens} tokens, {rate:.0f} tokens/s", err=True)
        with atomic_output(output_path) as tmp:
            out.to_disk(tmp)
    except (OSError, ValueError) as err:
        raise _fail(err)
    typer.echo(f"wrote {output_path}: {len(docs)} docs in {time.time() - start:.1f}s")


# ----- resolve: one text -------------------------------------------------------------------


def _read_text(text: Optional[str], file: Optional[Path]) -> str:
    """The text to resolve: TEXT, else --file (UTF-8), else standard input
    (TEXT "-" or none). RAISES ValueError: both given, an unreadable file,
    input that is not UTF-8, or no text at all."""
    if file is not None:
        if text not in (None, "-"):
            raise ValueError("give the text or --file, not both")
        if not file.is_file():
            raise ValueError(f"--file {file}: {'not a file' if file.exists() else 'no such file'}")
        data, where = file.read_bytes(), f"--file {file}"
    else:
        if text not in (None, "-"):
            return _require_text(text, "the text argument")
        stdin = sys.stdin
        if stdin is None:
            raise ValueError("no text: give it as an argument, with --file, or on standard input")
        if stdin.isatty():
            typer.echo("reading the text from standard input (end it with Ctrl-D)", err=True)
        buffer = getattr(stdin, "buffer", None)
        if buffer is None:  # a text stream without bytes underneath
            return _require_text(stdin.read(), "standard input")
        data, where = buffer.read(), "standard input"
    try:
        decoded = data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise ValueError(f"{where} is not UTF-8 text (byte 0x{data[err.start]:02x} at offset {err.start})") from None
    return _require_text(decoded, where)


def _require_text(text: str, where: str) -> str:
    if not text.strip():
        raise ValueError(f"no text to resolve: {where} is empty")
    return text


@app.command("resolve", short_help="Resolve one text: print its clusters and the text with pronouns replaced.")
def resolve_cmd(
    text: Optional[str] = typer.Argument(None, help='The text; "-" or none: read standard input.'),
    file: Optional[Path] = typer.Option(None, "--file", help="Read the text from this UTF-8 file."),
    model: str = typer.Option(
        DEFAULT_MODEL,
        "--model",
        help="A shipped model (memcoref info lists them), a package name or a pipeline folder.",
    ),
    as_json: bool = typer.Option(
        False,
        "--json",
        help='Print one JSON object: {"clusters": [[{"start", "end", "text"}, ...], ...], "resolved": ...} (character offsets into the text, end exclusive).',
    ),
    gpu_id: int = typer.Option(-1, "--gpu-id", help="GPU to run on; -1 for CPU."),
) -> None:
    """Run a pipeline on one text and print its coreference clusters, one line
    a cluster ("1: Alice | She"), then a blank line, then the resolved text
    (spacy_memcoref.resolve: pronouns replaced by their entity's name).

    Example: memcoref resolve "Alice met Bob. She thanked him." --model s2e-ontogum"""
    from .entities import entities
    from .resolution import resolve

    try:
        source = _read_text(text, file)
        nlp = load_pipeline(model, gpu_id)
        doc = nlp(source)
        clusters = [record.to_cluster_record()["mentions"] for record in entities(doc)]
        resolved = resolve(doc).text
    except (ValueError, OSError) as err:
        raise _fail(err)
    if as_json:
        typer.echo(json.dumps({"clusters": clusters, "resolved": resolved}, ensure_ascii=False))
        return
    if not clusters:
        typer.echo("no clusters found")
    for i, mentions in enumerate(clusters, start=1):
        typer.echo(f"{i}: " + " | ".join(" ".join(m["text"].split()) for m in mentions))
    typer.echo("")
    typer.echo(resolved.rstrip("\r\n"))  # a text ending in a line break (echo TEXT | ...) ends as it did


# ----- tuning commands: the work is in spacy_memcoref/tuning/ ------------------------


def _model_input(model: ResolvedModel) -> Optional[Path]:
    """The folder a model argument reads (as given when it is a path; a
    package's or shipped model's folder), for the output checks."""
    return Path(model.model) if model.given_path else model.folder


def _output_path(model: ResolvedModel, output: Optional[Path], inputs: List[Optional[Path]]) -> Path:
    """Where a tuning command saves the pipeline: --output, else MODEL in
    place; checked (tuning.save.check_pipeline_output) before anything is
    loaded or computed. `inputs`: the command's other inputs."""
    from .tuning.save import check_pipeline_output

    if output is not None:
        return check_pipeline_output(output, [_model_input(model), *inputs])
    if model.shipped:
        raise ValueError(
            f"{model.model} is a shipped model (its stored form, not a pipeline folder to save in place): give --output"
        )
    if Path(model.model).is_dir():
        return check_pipeline_output(Path(model.model), inputs)
    raise ValueError(f"{model.model!r} is not a directory: give --output to save the pipeline")


@app.command(
    "train",
    short_help="spacy train with checkpoints: a stopped run continues with --resume.",
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
)
def train_cmd(
    ctx: typer.Context,
    config_path: Path = typer.Argument(..., help="The training config (any `spacy train` config)."),
    output: Optional[Path] = typer.Option(
        None, "--output", "-o", help="Output folder: model-best, model-last and the checkpoints (none without it)."
    ),
    gpu_id: int = typer.Option(-1, "--gpu-id", "-g", help="GPU id, -1 for the CPU."),
    resume: bool = typer.Option(
        False,
        "--resume",
        help="Continue from the newest complete checkpoint in --output (of the same config and overrides).",
    ),
    code: Optional[Path] = typer.Option(
        None, "--code", "-c", help="A Python file with registered functions, as for spacy train."
    ),
):
    """Train as `spacy train CONFIG --output DIR [--section.key value ...]`
    does, the same updates, and write a checkpoint (weights, optimizer,
    schedules, random states, best score) every
    [training.before_update] checkpoint_every updates and at SIGTERM or
    Ctrl-C. `--resume` continues a stopped run from its last complete
    checkpoint and ends where the uninterrupted run ends. Exit code 3: stopped, resumable."""
    from spacy import util as spacy_util
    from spacy.cli._util import import_code, parse_config_overrides, setup_gpu, show_validation_error
    from spacy.training.initialize import init_nlp

    from .errors import CheckpointError, TrainingStopped
    from .training import checkpoint as ckpt
    from .training.loop import train

    overrides = parse_config_overrides(ctx.args)
    import_code(code)
    if not config_path.is_file():
        raise _fail(CheckpointError(config_path, "no such config file"))
    if output is None and resume:
        raise _fail(CheckpointError(None, "--resume needs the --output folder that holds the checkpoints"))
    existing = ckpt.complete_checkpoints(output) if output is not None else []
    if existing and not resume:
        raise _fail(
            CheckpointError(
                output,
                f"holds a checkpoint ({existing[-1].name}): --resume continues it; another --output, or removing the checkpoint-* folders, starts again",
            )
        )
    setup_gpu(gpu_id)
    with show_validation_error(config_path):
        config = spacy_util.load_config(config_path, overrides=overrides, interpolate=False)
    with show_validation_error(config_path, hint_fill=False):
        nlp = init_nlp(config, use_gpu=gpu_id)
    try:
        train(nlp, output, use_gpu=gpu_id, resume=resume)
    except CheckpointError as err:
        raise _fail(err)
    except TrainingStopped as stopped:
        typer.echo(f"stopped after {stopped.step} updates; continue with the same command and --resume")
        raise typer.Exit(code=EXIT_STOPPED)


@app.command(
    "tune-gap-threshold", short_help="PeTra: calibrate and choose the GAP decision threshold on validation data."
)
def tune_gap_threshold_cmd(
    model: str = typer.Argument(..., help="A trained PeTra pipeline: package name or directory."),
    input_path: Path = typer.Argument(..., help="GAP validation Docs (a DocBin made by `convert gap`)."),
    output: Optional[Path] = typer.Option(
        None, "--output", "-o", help="Save the pipeline here (default: in place when MODEL is a directory)."
    ),
    component: Optional[str] = typer.Option(None, "--component", help="The PeTra component (default: the first one)."),
    calibrate: bool = typer.Option(
        True,
        "--calibrate/--no-calibrate",
        help="Fit the probability calibration (Platt scaling) on these Docs first; --no-calibrate keeps the component's.",
    ),
    batch_size: int = typer.Option(16, "--batch-size", help="Docs a batch."),
    gpu_id: int = typer.Option(-1, "--gpu-id", help="GPU to run on; -1 for CPU."),
) -> None:
    """Calibrate PeTra's GAP link probabilities and choose its decision
    threshold on validation data. First Platt scaling: the (scale, shift) of
    sigmoid(scale * logit(p) + shift) with the least log loss on the A and B
    candidates (with --calibrate, the default); then the threshold of 0.01,
    0.02, ..., 1.00 with the best overall GAP F1 on the calibrated
    probabilities (the middle of a tied run). Prints reliability tables
    (before and after) and the threshold table, and stores both in the
    component's cfg (and config.cfg), so that the saved pipeline uses them."""
    from .tuning.gap import tune_pipeline_gap_threshold

    _check_count("--batch-size", batch_size)
    try:
        resolved = resolve_model(model)
        out_path = _output_path(resolved, output, [input_path])
        nlp = load_pipeline(resolved, gpu_id)
        tuned = tune_pipeline_gap_threshold(
            nlp, input_path, component=component, calibrate=calibrate, batch_size=batch_size
        )
    except (DataFormatError, OSError, ValueError) as err:
        raise _fail(err)
    for line in tuned.table_lines():
        typer.echo(line)
    try:
        tuned.save(out_path)
    except (OSError, ValueError) as err:
        raise _fail(err)
    typer.echo(tuned.stored_line(out_path))
    typer.echo(json.dumps(tuned.summary(), sort_keys=True))


@app.command("interpolate", short_help="A fine-tuned pipeline moved part of the way back to its source (WiSE-FT).")
def interpolate_cmd(
    source: str = typer.Argument(
        ..., help="The pipeline FINETUNED was fine-tuned from: a directory, package or shipped model."
    ),
    finetuned: str = typer.Argument(..., help="The fine-tuned pipeline: a directory or package name."),
    output: Path = typer.Argument(
        ..., help="The directory to write the result to (new, empty, or an earlier pipeline output)."
    ),
    weight: float = typer.Option(
        0.5, "--weight", help="The fine-tuned pipeline's share of each weight, in [0, 1]: 0 gives SOURCE, 1 FINETUNED."
    ),
) -> None:
    """Write FINETUNED with every trained weight of its coreference
    components set to (1 - weight) * SOURCE + weight * FINETUNED (WiSE-FT,
    Wortsman et al. 2022): settings and link threshold are FINETUNED's, so
    tune the result's link threshold again (tune-link-threshold). The two
    must be one architecture (the same components, layers and shapes)."""
    from .tuning.interpolate import interpolate_weights
    from .tuning.save import check_pipeline_output, pipeline_output_dir

    try:
        resolved = [resolve_model(source), resolve_model(finetuned)]
        check_pipeline_output(output, [_model_input(model) for model in resolved])
        source_nlp, finetuned_nlp = (load_pipeline(model) for model in resolved)
        differed = interpolate_weights(source_nlp, finetuned_nlp, weight)
        finetuned_nlp.meta["memcoref_interpolated"] = {
            "source": str(source),
            "finetuned": str(finetuned),
            "weight": weight,
        }
        with pipeline_output_dir(output) as tmp:
            finetuned_nlp.to_disk(tmp)
    except (DataFormatError, ValueError, OSError) as err:
        raise _fail(err)
    typer.echo(
        f"wrote {output}: {weight:g} x {finetuned} + {1 - weight:g} x {source} "
        f"({differed} weight tensors differed between the two; tune its link threshold again)"
    )


@app.command("tune-link-threshold", short_help="s2e: choose the link threshold with the best CoNLL F1 on dev data.")
def tune_link_threshold_cmd(
    model: str = typer.Argument(..., help="A trained s2e pipeline: package name or directory."),
    input_path: Path = typer.Argument(..., help="Dev Docs with gold clusters (a DocBin made by `convert conll`)."),
    output: Optional[Path] = typer.Option(
        None, "--output", "-o", help="Save the pipeline here (default: in place when MODEL is a directory)."
    ),
    component: Optional[str] = typer.Option(
        None, "--component", help="The s2e component (default: the first coreference component)."
    ),
    also: List[str] = typer.Option(
        [],
        "--also",
        help="Another checkpoint to tune the same way (e.g. model-last beside model-best; repeatable): the one with the best tuned CoNLL F1 is saved, MODEL on a tie. Needs --output.",
    ),
    gpu_id: int = typer.Option(-1, "--gpu-id", help="GPU to run on; -1 for CPU."),
) -> None:
    """Choose s2e's link threshold on dev data: the one of -6.00, -5.75, ...,
    2.00 with the best CoNLL F1 (nearest 0 on a tie), printed with the table,
    and stored as the component's link_threshold (its cfg and config.cfg) so
    the saved pipeline links with it. The pair scores are computed once.
    With --also, each checkpoint is tuned alone and the best one tuned is
    saved: `model-best` is chosen at the decision 0, which is not the
    threshold the pipeline will link with."""
    from .tuning.link_threshold import tune_pipeline_link_threshold

    chosen = None  # the best checkpoint tuned so far
    try:
        if also:
            if output is None:
                raise ValueError("--also needs --output: the checkpoint saved may not be MODEL")
            if any(Path(c).resolve() == output.resolve() for c in [model, *also]):
                raise ValueError(f"--output {output} is one of the checkpoints compared: save elsewhere")
        candidates = [resolve_model(c) for c in [model, *also]]
        out_path = _output_path(candidates[0], output, [input_path, *(_model_input(c) for c in candidates[1:])])
        for resolved in candidates:
            nlp = load_pipeline(resolved, gpu_id)
            tuned = tune_pipeline_link_threshold(nlp, input_path, component=component, model=resolved.model)
            if also:
                typer.echo(tuned.checkpoint_line())
            if chosen is None or tuned.conll_f > chosen.conll_f:
                chosen = tuned
    except (DataFormatError, OSError, ValueError) as err:
        raise _fail(err)
    assert chosen is not None  # MODEL at least was tuned
    for line in chosen.table_lines():
        typer.echo(line)
    try:
        chosen.save(out_path)
    except (OSError, ValueError) as err:
        raise _fail(err)
    typer.echo(chosen.stored_line(out_path, among_several=bool(also)))
    typer.echo(json.dumps(chosen.summary(among_several=bool(also)), sort_keys=True))


@app.command("count-people", short_help="PeTra: count the people in texts (paper §3.5) and score the counts.")
def count_people_cmd(
    model: str = typer.Argument(..., help="A trained PeTra pipeline: package name or directory."),
    input_path: Path = typer.Argument(..., help="TSV with a header row, then ID<TAB>text<TAB>count."),
    alpha: Optional[float] = typer.Option(
        None,
        "--alpha",
        help="Overwrite threshold; default: chosen on --dev / --dev-fraction, else the component's stored one, else 0.5.",
    ),
    dev_path: Optional[Path] = typer.Option(
        None, "--dev", help="A TSV (same format) to choose alpha on: the alpha with the fewest wrong counts."
    ),
    dev_fraction: Optional[float] = typer.Option(
        None,
        "--dev-fraction",
        help="Choose alpha on this leading fraction of INPUT's rows (file order); report on the rest.",
    ),
    output: Optional[Path] = typer.Option(
        None,
        "--output",
        "-o",
        help="Save the pipeline here with the chosen alpha in the component's cfg (people_alpha).",
    ),
    component: Optional[str] = typer.Option(None, "--component", help="The PeTra component (default: the first one)."),
    batch_size: int = typer.Option(16, "--batch-size", help="Docs a batch."),
    gpu_id: int = typer.Option(-1, "--gpu-id", help="GPU to run on; -1 for CPU."),
) -> None:
    """People counting (PeTra paper §3.5): predicted count = the number of
    (token, cell) with overwrite probability o_t^i >= alpha. Prints a table,
    the number of documents whose predicted count differs from the gold
    count, and (last line) one JSON object."""
    from .tuning.people import count_pipeline_people, read_people_rows
    from .tuning.save import check_pipeline_output

    _check_count("--batch-size", batch_size)
    if alpha is not None and not 0.0 <= alpha <= 1.0:
        raise _fail(ValueError(f"--alpha must be in [0, 1], got {alpha}"))
    if dev_fraction is not None and not 0.0 < dev_fraction < 1.0:
        raise _fail(ValueError(f"--dev-fraction must be in (0, 1), got {dev_fraction}"))
    if dev_path is not None and dev_fraction is not None:
        raise _fail(ValueError("give --dev or --dev-fraction, not both"))
    try:
        resolved = resolve_model(model)
        if output is not None:
            check_pipeline_output(output, [_model_input(resolved), input_path, dev_path])
        data = read_people_rows(input_path, dev_path=dev_path, dev_fraction=dev_fraction)
        nlp = load_pipeline(resolved, gpu_id)
    except (DataFormatError, OSError, ValueError) as err:
        raise _fail(err)
    try:
        counted = count_pipeline_people(nlp, data, alpha=alpha, component=component, batch_size=batch_size)
    except ValueError as err:
        raise _fail(err)
    for line in counted.table_lines():
        typer.echo(line)
    if output is not None:
        try:
            counted.save(output)
        except (OSError, ValueError) as err:
            raise _fail(err)
        typer.echo(counted.stored_line(output))
    typer.echo(json.dumps(counted.summary(), sort_keys=True))


# Docs a nlp.pipe batch when drawing: a few Docs are drawn, so memory, not speed, sets it
VISUALIZE_BATCH_SIZE = 8


@app.command("visualize", short_help="Draw PeTra's memory log and the clusters (PNG and HTML).")
def visualize_cmd(
    model: str = typer.Argument(..., help="A trained pipeline (PeTra for the memory log): package name or directory."),
    input_path: Path = typer.Argument(..., help="A DocBin of Docs to annotate and draw."),
    output_dir: Path = typer.Argument(..., help="Folder for the PNG and HTML files (created when missing)."),
    limit: int = typer.Option(3, "--limit", help="Draw the first LIMIT Docs."),
    wrap: int = typer.Option(40, "--wrap", help="Tokens a row of the picture."),
    prefix: str = typer.Option(CLUSTER_PREFIX, "--prefix", help="Span-group prefix of the clusters."),
    gpu_id: int = typer.Option(-1, "--gpu-id", help="GPU to run on; -1 for CPU."),
) -> None:
    """Draw PeTra's memory log as in the paper's Figure 5 (per cell an OW and a
    CR row over the tokens, darker = higher) as PNG and HTML, and the predicted
    clusters with displaCy's span renderer."""
    from .corpora.docbin import read_docbin
    from .tuning.run import annotate_docs
    from .visualize import visualize_docs

    _check_count("--limit", limit)
    _check_count("--wrap", wrap)
    try:
        nlp = load_pipeline(model, gpu_id)
        docs = read_docbin(input_path, nlp.vocab)[:limit]
        annotated = annotate_docs(nlp, docs, VISUALIZE_BATCH_SIZE, prefix)
        written = visualize_docs(annotated, output_dir, prefix=prefix, wrap=wrap)
    except (DataFormatError, OSError, ValueError, ImportError) as err:
        raise _fail(err)
    for path in written:
        typer.echo(f"wrote {path}")


# ----- corpus-scale annotation: the work is in spacy_memcoref/annotate/ --------------


@app.command("annotate", short_help="Annotate a corpus to JSONL / DocBin shards, resumable, on one machine or Ray.")
def annotate_cmd(
    model: str = typer.Argument(..., help="A trained pipeline: package name or directory."),
    input_path: Path = typer.Argument(
        ...,
        help='A JSONL file ({"id": ..., "text": ...} a line) or folder of them, a folder of .txt files (id = relative path), or DocBin (.spacy) files.',
    ),
    output_dir: Path = typer.Argument(..., help="Folder for the numbered shards and manifest.json (a rerun resumes)."),
    engine: str = typer.Option(
        "local",
        "--engine",
        help="local (nlp.pipe in this process or --n-process processes) or ray (Ray Data: needs the ray extra of spacy-memcoref).",
    ),
    output_format: str = typer.Option("jsonl", "--format", help="jsonl, spacy (DocBin) or jsonl,spacy."),
    text_field: str = typer.Option("text", "--text-field", help="JSONL field with the text."),
    id_field: str = typer.Option(
        "id", "--id-field", help="JSONL field with the document id (default when absent: file:line)."
    ),
    input_format: str = typer.Option("auto", "--input-format", help="auto (by suffix), jsonl, txt or spacy."),
    encoding: str = typer.Option("utf-8", "--encoding", help="Encoding of JSONL and txt files."),
    shard_size: int = typer.Option(
        1000, "--shard-size", help="Documents a shard (the unit of output, resume and parallel work)."
    ),
    batch_size: int = typer.Option(8, "--batch-size", help="Documents a nlp.pipe batch."),
    skip_errors: bool = typer.Option(
        False,
        "--skip-errors",
        help="Record bad lines and bad files (unreadable, symlink loops, truncated DocBins: one error each) in shard-*.errors.jsonl and go on (default: stop at the first).",
    ),
    resolved: bool = typer.Option(
        False,
        "--resolved",
        help='Add "resolved" (the text with pronouns replaced by their entity) and "edits" (source and target offsets) to each JSONL record; with --format spacy, store them in each Doc\'s user_data["resolved"], as predict --resolved does.',
    ),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace the output of another run in OUTPUT_DIR."),
    prefix: Optional[str] = typer.Option(
        None, "--prefix", help="Span-group prefix of the clusters (default: the pipeline's memcoref component's)."
    ),
    n_process: Optional[int] = typer.Option(None, "--n-process", help="local: worker processes (default 1)."),
    threads: Optional[int] = typer.Option(
        None, "--threads", help="local: torch threads a process (default: the cores shared out)."
    ),
    gpu_id: Optional[int] = typer.Option(None, "--gpu-id", help="local: GPU to run on (default -1: CPU)."),
    workers: Optional[int] = typer.Option(
        None, "--workers", help="ray: actors (default: as many as the cluster's CPUs, or GPUs, allow)."
    ),
    gpus_per_worker: Optional[float] = typer.Option(None, "--gpus-per-worker", help="ray: GPUs an actor (default 0)."),
    cpus_per_worker: Optional[float] = typer.Option(
        None, "--cpus-per-worker", help="ray: CPUs an actor, also its torch threads (default 1)."
    ),
    address: Optional[str] = typer.Option(
        None, "--address", help="ray: the cluster to join (default $RAY_ADDRESS, else a new local cluster)."
    ),
    progress: Optional[bool] = typer.Option(
        None, "--progress/--no-progress", help="Progress bar (default: when stderr is a terminal)."
    ),
) -> None:
    """Annotate a corpus: numbered shards of JSONL (id, clusters as character
    offsets and mention texts, a name a cluster) and/or DocBin, each written
    atomically, plus manifest.json; a rerun resumes where a run stopped. The
    last line of output is the summary as one JSON object."""
    from .annotate import AnnotateOptions, annotate_corpus, format_summary

    options = AnnotateOptions(
        engine=engine,
        formats=output_format,
        text_field=text_field,
        id_field=id_field,
        input_format=input_format,
        encoding=encoding,
        shard_size=shard_size,
        batch_size=batch_size,
        skip_errors=skip_errors,
        resolved=resolved,
        overwrite=overwrite,
        prefix=prefix,
        n_process=n_process,
        threads=threads,
        gpu_id=gpu_id,
        workers=workers,
        gpus_per_worker=gpus_per_worker,
        cpus_per_worker=cpus_per_worker,
        address=address,
        progress=progress,
    )
    try:
        summary = annotate_corpus(
            model, input_path, output_dir, options, log=lambda message: typer.echo(message, err=True)
        )
    except (DataFormatError, OSError, ValueError, ImportError, AnnotateError) as err:
        raise _fail(err)
    for line in format_summary(summary):
        typer.echo(line)
    typer.echo(json.dumps(summary.to_dict(), sort_keys=True))


def _dir_size(path: Path) -> int:
    return sum(f.stat().st_size for f in Path(path).rglob("*") if f.is_file())


def _quantize_pipeline(nlp, model: str) -> Dict[str, int]:
    """Quantize the encoder of each memcoref component of `nlp`, in place.

    RETURNS (Dict[str, int]): component name -> Linear layers made int8.
    RAISES ValueError: naming the pipeline when it is already int8 (its meta
        says so, or a component's encoder is: quantizing twice would only
        lose more precision) or has no memcoref transformer to quantize.
    """
    from .models.encoder.int8 import quantize_encoders
    from .pipeline.coref_component import coref_components

    done = nlp.meta.get("memcoref_int8")
    if done:
        layers = ", ".join(f"{name}: {n}" for name, n in (done.get("linear_layers") or {}).items())
        raise ValueError(
            f"{model} is already an int8 pipeline (made by `quantize`; meta.json memcoref_int8: {layers or done}): "
            "quantize its float32 source instead"
        )
    counts = {}
    for name, pipe in coref_components(nlp):
        try:
            counts[name] = quantize_encoders(pipe.model)
        except ValueError as err:
            raise ValueError(f"{model}: component {name!r}: {err}: quantize its float32 source instead") from err
    if not any(counts.values()):
        raise ValueError(f"{model}: no memcoref component with a transformer encoder: nothing to quantize")
    return counts


@app.command("quantize", short_help="Write an int8 copy of a pipeline for CPU inference.")
def quantize_cmd(
    model: str = typer.Argument(..., help="A trained pipeline: a directory or an installed package name."),
    output: Path = typer.Argument(
        ..., help="The directory to write the int8 pipeline to (new, empty, or an earlier pipeline output)."
    ),
) -> None:
    """Write a copy of a pipeline whose encoder runs in int8 on CPU: dynamic
    quantization of every Linear layer of each memcoref component's
    transformer (weights int8 per output channel, activations quantized on
    the fly). spacy.load and spacy package take the copy as any pipeline; it
    runs on CPU only. The heads stay float32; bfloat16 autocast, if the
    config asks for it, leaves the int8 encoder alone."""
    from .tuning.save import check_pipeline_output, pipeline_output_dir

    try:
        resolved = resolve_model(model)
        check_pipeline_output(output, [_model_input(resolved)])
        nlp = load_pipeline(resolved)
        counts = _quantize_pipeline(nlp, model)
        nlp.meta["memcoref_int8"] = {"linear_layers": counts, "scheme": "dynamic, per-channel qint8 weights"}
        with pipeline_output_dir(output) as tmp:
            nlp.to_disk(tmp)
    except (ValueError, OSError) as err:
        raise _fail(err)
    for name, n in counts.items():
        typer.echo(f"{name}: {n} Linear layers of the encoder in int8")
    source_size = _dir_size(Path(model)) if Path(model).is_dir() else None
    size = f"{_dir_size(output) / 1e6:.0f} MB" + (f" (float32: {source_size / 1e6:.0f} MB)" if source_size else "")
    typer.echo(f"wrote {output}: {size}; it runs on CPU only")
    # measured: a frozen-encoder PeTra lost 8.7 GAP F1 points (benchmarks/README.md)
    typer.echo(
        "int8 changes the encoder's vectors: score the copy on your dev data before you use it "
        "(python benchmarks/s2e_speed.py --precision --model MODEL --dev DEV.spacy)"
    )


@app.command("info", short_help="List the trained models shipped with the package: data, licences, recipe, scores.")
def info_cmd(
    name: Optional[str] = typer.Argument(None, help="One shipped model (default: all of them)."),
    as_json: bool = typer.Option(False, "--json", help="Print the metadata as JSON."),
) -> None:
    """What each trained model inside the package is: what it was trained on
    and under which licences, the recipe and seed, its scores and size.
    Load one with spacy_memcoref.load(NAME)."""
    from . import pretrained

    try:
        names = [name] if name else pretrained.available()
        metas = [pretrained.info(n) for n in names]
    except ValueError as err:
        raise _fail(err)
    if as_json:
        typer.echo(json.dumps(metas, indent=2, sort_keys=True))
        return
    if not metas:
        typer.echo("no trained model ships with this installation")
    for meta in metas:
        for line in pretrained.describe(meta):
            typer.echo(line)


@app.command(
    "pretrained-build", short_help="Store a trained pipeline as a shipped model (what training changed, checksummed)."
)
def pretrained_build_cmd(
    model: Path = typer.Argument(
        ...,
        help="A trained pipeline folder: its encoder the embedded all-MiniLM-L6-v2, or a local folder of the encoder --encoder names.",
    ),
    output: Path = typer.Argument(..., help="The folder to write (config.cfg, weights.safetensors, meta.json)."),
    name: str = typer.Option(..., "--name", help="The model's name, e.g. s2e-ontogum."),
    meta_file: Optional[Path] = typer.Option(
        None, "--meta", help="A JSON file of what to record: description, sources, recipe."
    ),
    dev: Optional[Path] = typer.Option(
        None, "--dev", help="A DocBin to score the STORED form on; the scores go into meta.json."
    ),
    dtype: str = typer.Option("bfloat16", "--dtype", help="bfloat16, float16 or float32."),
    form: str = typer.Option(
        "full",
        "--form",
        help="How the tuned encoder matrices are stored: full, int8 (8-bit weight-only) or lowrank (what training added, as a rank-r product).",
    ),
    rank: int = typer.Option(64, "--rank", help="The rank of --form lowrank."),
    encoder: Optional[str] = typer.Option(
        None,
        "--encoder",
        help="The Hugging Face name of the pipeline's encoder (e.g. sentence-transformers/all-mpnet-base-v2), when it is not the embedded MiniLM: load() finds it by that name.",
    ),
) -> None:
    """Write what training changed relative to the base encoder (the
    fine-tuned layers, the head) as safetensors with a SHA-256 each, then
    load the stored form back and score it on --dev, so the recorded scores
    are those of what ships."""
    from . import pretrained
    from .corpora.docbin import read_docbin
    from .tuning.save import check_pipeline_output

    try:
        check_pipeline_output(output, [model, meta_file, dev])
        extra = json.loads(meta_file.read_text(encoding="utf8")) if meta_file else {}
        record = pretrained.build(
            model, output, name=name, dtype=dtype, form=form, rank=rank, encoder=encoder, meta=extra
        )
        if dev is not None:
            from spacy.training import Example

            nlp = pretrained.load(output)
            gold = read_docbin(dev, nlp.vocab)
            scores = nlp.evaluate([Example(nlp.make_doc(doc.text), doc) for doc in gold])
            kept = {
                key: round(float(value), 4)
                for key, value in scores.items()
                if isinstance(value, (int, float)) and key.startswith(("coref_", "gap_"))
            }
            record["scores"] = {
                **record.get("scores", {}),
                **{f"{dev.name}: {key}": value for key, value in kept.items()},
            }
            pretrained.write_meta(output, record)
    except (ValueError, OSError) as err:
        raise _fail(err)
    for line in pretrained.describe(record):
        typer.echo(line)


def main() -> None:
    app()
