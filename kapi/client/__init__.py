"""kapi.client: an async Kubernetes client and informers for trio.

    from kapi.client import Client, SharedInformerFactory, PODS, load_config

Works against kapi or any Kubernetes API server: kubeconfig loading, an HTTP/1.1
and HTTP/2 client speaking JSON or protobuf, reflectors (WatchList, or LIST then
WATCH), indexed stores, informers with handlers, and a shared informer factory.
"""

from kapi.client.api import (CONFIGMAPS, DEPLOYMENTS, EVENTS, LEASES, NAMESPACES, NODES, PODS, SECRETS,
    SERVICEACCOUNTS, SERVICES, ApiError, Client, Resource, WatchEvent)
from kapi.client.backoff import Backoff
from kapi.client.config import ClientConfig, ConfigError, load_config, load_incluster_config, load_kubeconfig
from kapi.client.informer import Informer, Registration, SharedInformerFactory
from kapi.client.objects import Meta, key, split_key
from kapi.client.reflector import Reflector, ReflectorStats
from kapi.client.store import NAMESPACE_INDEX, Store

__all__ = [
    "CONFIGMAPS", "DEPLOYMENTS", "EVENTS", "LEASES", "NAMESPACES", "NODES", "PODS", "SECRETS", "SERVICEACCOUNTS",
    "SERVICES", "ApiError", "Backoff", "Client", "ClientConfig", "ConfigError", "Informer", "Meta",
    "NAMESPACE_INDEX", "Reflector", "ReflectorStats", "Registration", "Resource", "SharedInformerFactory", "Store",
    "WatchEvent", "key", "load_config", "load_incluster_config", "load_kubeconfig", "split_key",
]
