"""Pictures of PeTra's memory log (the paper's Figure 5) and of clusters.

- Memory log: for each memory cell i an OW row (o_t^i, overwrite) and a CR
  row (c_t^i, coref) over the tokens, darker = higher (0 white, 1 black);
  tokens on the x axis, wrapped into rows of ``wrap`` tokens so long
  documents stay readable. As a PNG (matplotlib, the `viz` extra, imported
  lazily and used without pyplot's global state) and as a self-contained
  HTML page (a table per row of tokens, the value in each cell's tooltip).
- Clusters: displaCy's span renderer over one span group that holds every
  predicted cluster's mentions, labelled by cluster number; for GAP Docs a
  second rendering shows the A, B and PRONOUN spans.
"""

import html
import re
import warnings
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

import numpy
from spacy.tokens import Doc, Span

from .doc_helpers.clusters import CLUSTER_PREFIX, cluster_span_groups
from .doc_helpers.gap_annotation import GAP_PROBS_KEY, GAP_SPANS_KEY, GAP_USER_DATA_KEY
from .doc_helpers.memory_log import get_memory_log

DISPLAY_KEY = "memcoref_clusters"
DEFAULT_WRAP = 40
# displaCy colours for cluster labels, cycled.
PALETTE = (
    "#7aecec",
    "#bfeeb7",
    "#feca74",
    "#ff9561",
    "#aa9cfc",
    "#c887fb",
    "#9cc9cc",
    "#ffeb80",
    "#ff8197",
    "#f0d0ff",
    "#bfe1d9",
    "#e4e7d2",
)


def _chunks(n_tokens: int, wrap: int) -> List[range]:
    if wrap < 1:
        raise ValueError(f"wrap must be a positive number of tokens, got {wrap}")
    return [range(start, min(start + wrap, n_tokens)) for start in range(0, n_tokens, wrap)]


def _grid(log: Mapping[str, Any]) -> numpy.ndarray:
    """[2N, T] rows OW 1, CR 1, OW 2, CR 2, ..."""
    over = numpy.asarray(log["overwrite"], dtype=numpy.float32)
    coref = numpy.asarray(log["coref"], dtype=numpy.float32)
    n_tokens, n_cells = over.shape
    grid = numpy.empty((2 * n_cells, n_tokens), dtype=numpy.float32)
    grid[0::2] = over.T
    grid[1::2] = coref.T
    return grid


def _row_labels(n_cells: int) -> List[str]:
    labels = []
    for i in range(1, n_cells + 1):
        labels.extend([f"OW {i}", f"CR {i}"])
    return labels


def doc_name(doc: Doc, index: int) -> str:
    """A file-name-safe name for a Doc: its GAP id or doc_id, else its index."""
    name = None
    gap = doc.user_data.get(GAP_USER_DATA_KEY)
    if isinstance(gap, dict) and gap.get("id"):
        name = str(gap["id"])
    elif doc.user_data.get("doc_id"):
        name = str(doc.user_data["doc_id"])
        if doc.user_data.get("part") is not None:
            name += f"_{doc.user_data['part']}"
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", name or "")[:60].strip("._")
    return f"{index:03d}_{safe}" if safe else f"{index:03d}"


# ----- PNG ---------------------------------------------------------------------------


def memory_figure(
    tokens: Sequence[str], log: Mapping[str, Any], *, wrap: int = DEFAULT_WRAP, title: Optional[str] = None
):
    """A matplotlib Figure of a memory log (paper Figure 5).

    tokens (Sequence[str]): the token texts (T).
    log (Mapping[str, Any]): overwrite and coref [T, N].
    wrap (int): tokens a row of the picture.
    title (Optional[str]): the figure's title.
    RETURNS (matplotlib.figure.Figure): the figure (no pyplot state).
    """
    try:
        from matplotlib.figure import Figure
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError("visualize needs matplotlib: pip install 'spacy-memcoref[viz]'") from err

    grid = _grid(log)
    n_rows, n_tokens = grid.shape
    if n_tokens != len(tokens):
        raise ValueError(f"the log has {n_tokens} tokens, {len(tokens)} token texts given")
    wrap = max(1, min(wrap, n_tokens))
    chunks = _chunks(n_tokens, wrap) or [range(0, 0)]
    cell_w, cell_h = 0.24, 0.2
    longest = max((len(t) for t in tokens), default=1)
    label_h = 0.35 + 0.075 * min(longest, 20)  # room for the rotated token texts
    width = max(4.0, 1.6 + cell_w * wrap)
    panel_h = cell_h * n_rows + label_h + 0.3
    height = panel_h * len(chunks) + (0.4 if title else 0.1)
    fig = Figure(figsize=(width, height), dpi=100, layout="constrained")
    axes = fig.subplots(len(chunks), 1, squeeze=False)[:, 0]
    labels = _row_labels(n_rows // 2)
    image = None
    for ax, chunk in zip(axes, chunks):
        block = numpy.zeros((n_rows, wrap), dtype=numpy.float32)
        block[:, : len(chunk)] = grid[:, chunk.start : chunk.stop]
        image = ax.imshow(block, cmap="Greys", vmin=0.0, vmax=1.0, aspect="auto", interpolation="nearest")
        ax.set_yticks(range(n_rows))
        ax.set_yticklabels(labels, fontsize=7)
        ax.set_xticks(range(len(chunk)))
        ax.set_xticklabels([tokens[t] for t in chunk], rotation=90, fontsize=7)
        ax.set_xlim(-0.5, wrap - 0.5)
        ax.tick_params(length=0)
        # a line between cells (pairs of rows), a faint one between tokens
        for boundary in range(2, n_rows, 2):
            ax.axhline(boundary - 0.5, color="#b0b0b0", linewidth=0.6)
        for t in range(1, len(chunk)):
            ax.axvline(t - 0.5, color="#eeeeee", linewidth=0.4, zorder=0.5)
        for side in ("top", "right", "bottom", "left"):
            ax.spines[side].set_color("#b0b0b0")
            ax.spines[side].set_linewidth(0.6)
        if len(chunk) < wrap:
            ax.spines["right"].set_visible(False)
            for side in ("top", "bottom"):
                ax.spines[side].set_bounds(-0.5, len(chunk) - 0.5)
            ax.axvline(len(chunk) - 0.5, color="#b0b0b0", linewidth=0.6)
            ax.axvspan(len(chunk) - 0.5, wrap - 0.5, color="white", zorder=2)
        if len(chunks) > 1:
            ax.set_title(
                f"tokens {chunk.start}-{max(chunk.stop - 1, chunk.start)}", fontsize=7, loc="left", color="#606060"
            )
    if title:
        fig.suptitle(title, fontsize=9)
    if image is not None:
        bar = fig.colorbar(image, ax=list(axes), fraction=0.02, pad=0.01, shrink=min(1.0, 6.0 / height + 0.2))
        bar.ax.tick_params(labelsize=6)
    return fig


def render_memory_png(
    doc: Doc, path: Union[str, Path], *, wrap: int = DEFAULT_WRAP, title: Optional[str] = None
) -> Path:
    """Write the memory-log picture of a Doc as a PNG.

    doc (Doc): a Doc with doc._.memory_log.
    path (Union[str, Path]): the PNG to write.
    wrap (int): tokens a row.
    title (Optional[str]): the title.
    RETURNS (Path): the path.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    log = get_memory_log(doc)
    if log is None:
        raise ValueError("the Doc has no doc._.memory_log (run a PeTra pipeline, or s2e with memory_cells, over it)")
    fig = memory_figure([t.text for t in doc], log, wrap=wrap, title=title)
    FigureCanvasAgg(fig)
    path = Path(path)
    fig.savefig(path, format="png", bbox_inches="tight")
    return path


# ----- HTML --------------------------------------------------------------------------

_PAGE_STYLE = """
body { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 1.5em; color: #222; }
table.memlog { border-collapse: collapse; margin: 0 0 1.2em 0; font-size: 11px; }
table.memlog th { font-weight: normal; padding: 1px 3px; }
table.memlog th.tok { writing-mode: vertical-rl; transform: rotate(180deg); text-align: left;
  height: 7em; vertical-align: bottom; white-space: nowrap; }
table.memlog th.row { text-align: right; color: #555; white-space: nowrap; }
table.memlog td { width: 18px; height: 14px; border: 1px solid #eee; padding: 0; }
table.memlog tr.cr td { border-bottom: 2px solid #bbb; }
.meta { color: #555; font-size: 13px; }
"""


def _cell(value: float) -> str:
    v = float(numpy.clip(value, 0.0, 1.0))
    shade = int(round(255 * (1.0 - v)))
    return f'<td style="background:rgb({shade},{shade},{shade})" title="{v:.3f}"></td>'


def memory_table_html(doc: Doc, *, wrap: int = DEFAULT_WRAP) -> str:
    """The memory log of a Doc as HTML tables (one a row of tokens).

    RETURNS (str): an HTML fragment.
    """
    log = get_memory_log(doc)
    if log is None:
        raise ValueError("the Doc has no doc._.memory_log (run a PeTra pipeline, or s2e with memory_cells, over it)")
    grid = _grid(log)
    labels = _row_labels(grid.shape[0] // 2)
    parts = []
    for chunk in _chunks(len(doc), wrap):
        rows = ["<tr><th></th>" + "".join(f'<th class="tok">{html.escape(doc[t].text)}</th>' for t in chunk) + "</tr>"]
        for r, label in enumerate(labels):
            css = "cr" if label.startswith("CR") else "ow"
            cells = "".join(_cell(grid[r, t]) for t in chunk)
            rows.append(f'<tr class="{css}"><th class="row">{label}</th>{cells}</tr>')
        parts.append(f'<table class="memlog">{"".join(rows)}</table>')
    return "\n".join(parts)


def _display_doc(doc: Doc, prefix: str) -> Doc:
    """A copy of the Doc with every cluster mention in one span group,
    labelled by cluster number."""
    copy = doc.copy()
    spans: List[Span] = []
    for i, group in enumerate(cluster_span_groups(doc, prefix), start=1):
        spans.extend(Span(copy, span.start, span.end, label=f"cluster {i}") for span in group)
    copy.spans[DISPLAY_KEY] = spans
    return copy


def clusters_html(doc: Doc, *, prefix: str = CLUSTER_PREFIX, page: bool = False) -> str:
    """The predicted clusters through displaCy's span renderer.

    doc (Doc): the Doc with clusters in doc.spans[f"{prefix}_N"].
    prefix (str): the cluster prefix.
    page (bool): a whole HTML page rather than a fragment.
    RETURNS (str): the markup.
    """
    from spacy import displacy

    shown = _display_doc(doc, prefix)
    labels = sorted({span.label_ for span in shown.spans[DISPLAY_KEY]}, key=lambda s: int(s.split()[-1]))
    colors = {label: PALETTE[i % len(PALETTE)] for i, label in enumerate(labels)}
    with warnings.catch_warnings():
        # W117 ("no spans to render in doc.spans['memcoref_clusters']") would name a
        # key of this function's own copy; the page says it in the user's terms
        if not labels:
            warnings.filterwarnings("ignore", message=r"\[W117\]")
        markup = displacy.render(
            shown, style="span", page=page, jupyter=False, options={"spans_key": DISPLAY_KEY, "colors": colors}
        )
    if not labels:
        note = (
            f'<p class="memcoref-note">No coreference clusters in this document (doc.spans["{prefix}_*"] is empty).</p>'
        )
        markup = note + markup if not page else markup.replace("<figure", note + "<figure", 1)
    return markup


def gap_spans_html(doc: Doc) -> Optional[str]:
    """The GAP A, B and PRONOUN spans through displaCy (None for other Docs)."""
    from spacy import displacy

    if GAP_SPANS_KEY not in doc.spans:
        return None
    colors = {"A": "#7aecec", "B": "#feca74", "PRONOUN": "#c887fb"}
    return displacy.render(doc, style="span", jupyter=False, options={"spans_key": GAP_SPANS_KEY, "colors": colors})


def _gap_summary(doc: Doc) -> str:
    gap = doc.user_data.get(GAP_USER_DATA_KEY)
    probs = doc.user_data.get(GAP_PROBS_KEY)
    if not isinstance(gap, dict):
        return ""
    line = f"GAP {html.escape(str(gap.get('id')))}: gold A-coref={gap.get('A-coref')}, B-coref={gap.get('B-coref')}"
    if isinstance(probs, dict):
        line += f"; P(A, pronoun) = {float(probs['A']):.3f}, P(B, pronoun) = {float(probs['B']):.3f}"
        if "threshold" in probs:
            line += f", threshold {float(probs['threshold']):.2f}"
    return f'<p class="meta">{line}</p>'


def memory_page_html(doc: Doc, *, prefix: str = CLUSTER_PREFIX, wrap: int = DEFAULT_WRAP, title: str = "") -> str:
    """A self-contained HTML page: the memory log (OW/CR rows per cell,
    darker = higher), the clusters and, for GAP Docs, the A/B/pronoun spans.

    RETURNS (str): the page.
    """
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{html.escape(title or 'memory log')}</title>",
        f"<style>{_PAGE_STYLE}</style></head><body>",
        f"<h2>{html.escape(title)}</h2>" if title else "",
        _gap_summary(doc),
    ]
    if get_memory_log(doc) is not None:
        parts.append(
            '<h3>Memory log</h3><p class="meta">For each memory cell i: OW i = overwrite probability '
            "o<sub>t</sub><sup>i</sup>, CR i = coref probability c<sub>t</sub><sup>i</sup>; "
            "darker = higher (white 0, black 1). Hover a cell for its value.</p>"
        )
        parts.append(memory_table_html(doc, wrap=wrap))
    parts.append("<h3>Clusters</h3>")
    parts.append(clusters_html(doc, prefix=prefix))
    gap_html = gap_spans_html(doc)
    if gap_html is not None:
        parts.append("<h3>GAP spans</h3>")
        parts.append(gap_html)
    parts.append("</body></html>")
    return "\n".join(p for p in parts if p)


def visualize_docs(
    docs: Sequence[Doc],
    output_dir: Union[str, Path],
    *,
    prefix: str = CLUSTER_PREFIX,
    wrap: int = DEFAULT_WRAP,
    png: bool = True,
) -> List[Path]:
    """Write, for every Doc, NAME.memory.png (when it has a memory log),
    NAME.html (memory log, clusters, GAP spans) and NAME.clusters.html
    (displaCy page); and an index.html linking them.

    docs (Sequence[Doc]): annotated Docs.
    output_dir (Union[str, Path]): created when missing.
    prefix (str): the cluster prefix.
    wrap (int): tokens a row.
    png (bool): write the PNGs (needs matplotlib).
    RETURNS (List[Path]): the files written.
    """
    out = Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    written: List[Path] = []
    index: List[str] = []
    for i, doc in enumerate(docs):
        name = doc_name(doc, i)
        links = []
        if png and get_memory_log(doc) is not None:
            png_path = render_memory_png(doc, out / f"{name}.memory.png", wrap=wrap, title=name)
            written.append(png_path)
            links.append(png_path.name)
        page = out / f"{name}.html"
        page.write_text(memory_page_html(doc, prefix=prefix, wrap=wrap, title=name), encoding="utf-8")
        written.append(page)
        links.append(page.name)
        cl_page = out / f"{name}.clusters.html"
        cl_page.write_text(clusters_html(doc, prefix=prefix, page=True), encoding="utf-8")
        written.append(cl_page)
        links.append(cl_page.name)
        items = " | ".join(f'<a href="{html.escape(link)}">{html.escape(link)}</a>' for link in links)
        index.append(f"<li>{html.escape(name)}: {items}</li>")
    index_path = out / "index.html"
    index_path.write_text(
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>memcoref visualize</title></head>'
        f"<body><h2>memcoref visualize</h2><ul>{''.join(index)}</ul></body></html>",
        encoding="utf-8",
    )
    written.append(index_path)
    return written
