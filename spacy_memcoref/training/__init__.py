"""Training that survives a stop: spaCy's training loop with checkpoints and
resume (`memcoref train`, used by the project's train steps)."""
