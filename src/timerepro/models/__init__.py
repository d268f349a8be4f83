"""Models, one module each, registered by name in `timerepro.models.registry`."""
