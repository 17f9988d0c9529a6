"""The core group (``/api/v1``): one module per kind, each with its strategy and its Resource."""
