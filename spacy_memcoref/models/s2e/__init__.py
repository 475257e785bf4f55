"""The s2e head: its Thinc builder (s2e_model.py, spacy_memcoref.S2E.v1) and
its pure torch module (pytorch_s2e.py). Imports nothing: import the modules."""
