"""models/seq."""
