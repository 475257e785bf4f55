"""Tuning: choosing a decoder's settings on validation data, and saving them.

- grid: the grids tried and the one selection rule (best score; ties by a
  stated rule);
- save: `check_pipeline_output`, the one rule of where a command may write
  a pipeline (checked before it computes), and `save_with_settings`, which
  applies new settings to a component's decoder and saves the pipeline
  with them in its cfg and config.cfg;
- run: a pipeline over validation data (every Doc back, gold clusters
  dropped first) and the component tuned, by name or kind;
- link_threshold (s2e), gap (PeTra's calibration and GAP threshold), people
  (PeTra's people-count alpha): the values chosen; and, for each command, a
  function that takes the loaded pipeline and the data and returns a result
  dataclass (the values, the tables as lines, the summary, and `save`):
  tune_pipeline_link_threshold, tune_pipeline_gap_threshold,
  read_people_rows + count_pipeline_people.

The commands (`tune-link-threshold`, `tune-gap-threshold`, `count-people`)
only check their options and outputs, load the pipeline, call these, print
and save (as `annotate` calls annotate_corpus).
"""
