"""kapi.testing: a real ``kapi serve`` for other people's tests.

    from kapi.testing import Server

    with Server() as server:          # a free port, a fresh data dir; ready here
        ...                            # server.kubeconfig, server.url, server.user("alice")

``EtcdCluster`` starts 1 or 3 etcd members on free loopback ports, for servers on
``--storage-backend etcd3``. The pytest plugin (``kapi.testing.plugin``, registered by entry point)
gives the same as fixtures: ``kapi_server``, ``kapi_namespace``, ``kapi_kubeconfig``, ``--kapi-flag`` and ``@pytest.mark.kapi_fresh``.
Uses only the CLI contract and HTTP, as kapi.client does.
"""

from kapi.testing.etcd import EtcdCluster, EtcdError, EtcdMemberTLS, EtcdTLS
from kapi.testing.server import Server, ServerError

__all__ = ["EtcdCluster", "EtcdError", "EtcdMemberTLS", "EtcdTLS", "Server", "ServerError"]
