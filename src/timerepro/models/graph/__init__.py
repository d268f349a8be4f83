"""models/graph."""
