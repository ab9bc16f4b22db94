"""Converters from raw public dataset layouts to the schemas models/data reads."""
