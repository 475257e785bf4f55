"""Decoders: each model's post-prediction decisions, torch-free (numpy only).

A model's builder gives its Thinc model a decoder (``model.attrs["decoder"]``,
see models.thinc_glue) that turns one prediction of the torch head into what
is written on a Doc, and holds the settings of those decisions:

- s2e (`decoders.s2e.S2EDecoder`): the link threshold (the model's
  ``link_threshold``);
- PeTra (`decoders.petra.PeTraDecoder`): the calibration and the decision
  threshold of GAP link probabilities and the people-count alpha (the
  component's ``gap_calibration``, ``gap_threshold`` and ``people_alpha``).

The component (pipeline.coref_component) knows none of them: it hands its
cfg to ``decoder.configure`` and runs ``decoder.clusters`` and
``decoder.write`` for each Doc. Choosing the settings on validation data is
the tuning package's work.
"""
