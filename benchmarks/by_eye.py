"""Short everyday texts written for the project, and each model's clusters
on them, printed to be read by eye (the clusters a user sees first; the
scored everyday set is benchmarks/everyday.py's).

    python benchmarks/by_eye.py petra-ontogum s2e-ontogum [s2e-ontogum-base ...]
"""

import sys

import spacy_memcoref
from spacy_memcoref.doc_helpers.clusters import numbered_clusters

texts = [
    "Maria hired a new assistant, Tom, in May. He answers the phones, and she handles the clients. They get along well.",
    "Marie Sklodowska was born in Warsaw in 1867. Her father, Wladyslaw, taught mathematics and physics, and he encouraged his daughter to study. In Paris she met Pierre Curie. They married in 1895 and worked together on radioactivity.",
    "The chief hired the assistant because she needed help with the accounts. The assistant thanked her for the job.",
    "My grandfather grew up on a farm in Ohio. He left school at fourteen to help his father, and he never went back. Years later he told me it was the best decision he ever made.",
    "The mayor met the reporters outside city hall and told them the bridge would reopen in March. One of them asked her about the cost.",
    "Preheat the oven to 200 degrees. Peel the potatoes and cut them into wedges. Toss them with oil and salt, then roast them until they are golden.",
    "Sam and Priya moved to Leeds last year. They found a flat near the station. Priya works at the hospital, and Sam teaches at a school nearby; he walks there every morning.",
    "The nurse called the doctor and asked him to come quickly. The doctor said he was on his way.",
]
for name in sys.argv[1:]:
    nlp = spacy_memcoref.load(name)
    print("==", name)
    for t in texts:
        doc = nlp(t)
        print("  ", [[m.text for m in g] for _, g in numbered_clusters(doc)])
