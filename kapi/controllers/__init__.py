"""Built-in controllers, in-process on the registry: namespace lifecycle and garbage collection."""
