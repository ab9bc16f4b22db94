"""Tasks shared by several model families (core knows no model: models are passed in)."""
