from __future__ import annotations
import time
from kapi.cacher.watcher import Filter
from kapi.listopts import ListOptions
from tests.cacher.conftest import names

async def test_smoke(env):
    t = time.perf_counter()
    for i in range(5):
        await env.put("default", f"p{i}", node=f"node-{i%2}")
    await env.synced()
    got = await env.cacher.list(ListOptions(), Filter(env.registry.prefix(env.res, "")))
    print(names(got.items), got, time.perf_counter() - t)
