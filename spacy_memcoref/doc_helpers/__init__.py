"""Doc conventions and helpers that every other layer reads: the cluster span
groups, the GAP spans, gold targets aligned to predicted tokens and PeTra's
memory log. spaCy only, never torch; nothing here imports the models,
scoring, the pipeline or the corpora."""

# The arrays of PeTra's memory log, in this order: entity [T], overwrite,
# coref and usage [T, N]. Here, importing nothing, so that both the log's
# Doc helpers (memory_log, spaCy) and the pure-torch model that writes the
# log (models.petra.pytorch_petra, no spaCy) read the one tuple.
LOG_KEYS = ("entity", "overwrite", "coref", "usage")
