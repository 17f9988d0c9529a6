"""The built-in admission plugins, one module each (``kapi.admission.chain.BUILT`` names them)."""
