"""Model-agnostic training spine: strategy, trainer, gin glue, checkpoints, records, export."""
