"""Tuning: choosing a decoder's settings on validation data, and saving them.

- grid: the grids tried and the one selection rule (best score; ties by a
  stated rule);
- save: `check_pipeline_output`, the one rule of where a command may write
  a pipeline (checked before it computes), and `save_with_settings`, which
  applies new settings to a component's decoder and saves the pipeline
  with them in its cfg and config.cfg;
- link_threshold (s2e), gap (PeTra's calibration and GAP threshold), people
  (PeTra's people-count alpha): the tables the commands print and the values
  they choose.

The commands (`tune-link-threshold`, `tune-gap-threshold`, `count-people`)
only read files, print and call these.
"""
