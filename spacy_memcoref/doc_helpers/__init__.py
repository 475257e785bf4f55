"""Doc conventions and helpers that every other layer reads: the cluster span
groups, the GAP spans, gold targets aligned to predicted tokens and PeTra's
memory log. spaCy only, never torch; nothing here imports the models,
scoring, the pipeline or the corpora."""
