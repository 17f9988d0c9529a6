"""Several ``kapi serve`` replicas on one datastore: shared bootstrap material (``shared``), each
replica's identity Lease and its address in the ``kubernetes`` Endpoints, and the leader Lease
under which the controllers that write cluster state run once."""
