"""The encoder: the embedded transformer tok2vec (encoder.py), its frozen
(frozen_encoder.py) and partly frozen (partial_freeze.py) forms and their
cache (encoder_cache.py), bfloat16 autocast, int8 quantization and
weights-only loading of its weights. Imports nothing: import the modules."""
