"""kapi's benchmarks; ``python -m bench`` runs the compiled-against-pure harness."""
