"""Authentication and authorization."""
