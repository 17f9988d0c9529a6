"""The etcd3 backend: etcd's v3 API over grpcio (``client``), with stubs generated into ``_pb``."""
