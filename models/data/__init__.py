"""Model-agnostic input pipelines, one per data schema."""
