"""kapi.testing.Server without the pytest plugin: unittest, synchronous and asyncio tests.

Runs with ``python -m unittest`` as well as with pytest.
"""

import unittest

from kapi.client import CONFIGMAPS
from kapi.testing import Server

server = Server()  # one server for the module; Server("--some-flag=value") passes `kapi serve` flags


def setUpModule() -> None:
    server.start()  # returns once the server is ready
    unittest.addModuleCleanup(server.stop)


class ConfigMapTest(unittest.TestCase):
    def test_create(self) -> None:
        status, body = server.request("POST", "/api/v1/namespaces/default/configmaps", {
            "metadata": {"name": "from-unittest"}, "data": {"key": "value"}})
        self.assertEqual(status, 201, body)


class AsyncClientTest(unittest.IsolatedAsyncioTestCase):
    async def test_list(self) -> None:
        async with server.client() as client:  # kapi.client, as admin
            configmaps = await client.list(CONFIGMAPS, "kube-system")
        self.assertEqual(configmaps["kind"], "ConfigMapList")
