"""Decoders: each model's post-prediction decisions, torch-free (numpy only).

A model's builder gives its Thinc model a decoder (``model.attrs["decoder"]``,
see models.thinc_glue) that turns one prediction of the torch head into what
is written on a Doc, and holds the settings of those decisions:

- s2e (`decoders.s2e.S2EDecoder`): the link threshold (the component's
  ``link_threshold``; while that is null, the model's, where earlier
  versions kept it);
- PeTra (`decoders.petra.PeTraDecoder`): the clusters of a memory log
  (``decode_clusters``), the calibration and the decision threshold of GAP
  link probabilities and the people-count alpha (the component's
  ``gap_calibration``, ``gap_threshold`` and ``people_alpha``).

Every setting chosen after training is a setting of the component (its
factory's argument, in its cfg and config block), read by the decoder.

The component (pipeline.coref_component) knows none of them: it hands its
cfg to ``decoder.configure`` and runs ``decoder.clusters`` and
``decoder.write`` for each Doc. Choosing the settings on validation data is
the tuning package's work.
"""
