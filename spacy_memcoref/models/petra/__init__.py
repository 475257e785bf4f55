"""The PeTra head: its Thinc builder (petra_model.py, spacy_memcoref.PeTra.v1),
the pure torch model (pytorch_petra.py) and the head around it
(pytorch_petra_head.py). Imports nothing: import the modules."""
