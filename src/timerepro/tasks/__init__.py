"""Task families: each turns one resolved config into metrics (see `timerepro.tasks.registry`)."""
