"""ServiceAccounts."""

from __future__ import annotations

from typing import Final

from kapi.encoding.tables import core as tables
from kapi.registry.resources import Resource
from kapi.registry.strategy import Strategy


class ServiceAccountStrategy(Strategy):
    delete_returns_object = True
    printer = tables.SERVICE_ACCOUNT


SERVICE_ACCOUNTS: Final = Resource(group="", version="v1", resource="serviceaccounts", kind="ServiceAccount",
                                   short_names=("sa",), strategy=ServiceAccountStrategy())
