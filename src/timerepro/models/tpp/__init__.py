"""models/tpp."""
