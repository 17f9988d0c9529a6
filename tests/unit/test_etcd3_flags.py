"""kapi serve's etcd3 flags (kube-apiserver's): parsed, checked at start-up, made into the storage they name."""

from __future__ import annotations

from pathlib import Path

import pytest

from kapi.__main__ import build_parser, config_from_args
from kapi.config import Config
from kapi.server.serve import make_storage
from kapi.server.supervise import FatalError
from kapi.storage.etcd3.store import EtcdStorage
from kapi.storage.routed import RoutedStorage


def config(*flags: str) -> Config:
    return config_from_args(build_parser().parse_args(["serve", "--storage-backend", "etcd3", *flags]))


def test_flags_set_the_config() -> None:
    c = config("--etcd-servers", "http://10.0.0.1:2379, http://10.0.0.2:2379", "--etcd-cafile", "ca.pem",
               "--etcd-certfile", "c.pem", "--etcd-keyfile", "k.pem", "--etcd-readycheck-timeout", "3s",
               "--storage-initialization-timeout", "1m",
               "--etcd-servers-overrides", "/events#http://10.0.0.3:2379;http://10.0.0.4:2379,apps/deployments#h:1")
    assert c.etcd_servers == ("http://10.0.0.1:2379", "http://10.0.0.2:2379")
    assert (c.etcd_cafile, c.etcd_certfile, c.etcd_keyfile) == ("ca.pem", "c.pem", "k.pem")
    assert (c.etcd_readycheck_timeout_s, c.storage_initialization_timeout_s) == (3.0, 60.0)
    assert c.etcd_servers_overrides == (("", "events", ("http://10.0.0.3:2379", "http://10.0.0.4:2379")),
                                        ("apps", "deployments", ("h:1",)))


@pytest.mark.parametrize("override", ["events#http://h:1", "/events", "/events#", "a/b/c#http://h:1",
                                      "/events#http://h:1#x", "/#http://h:1"])
def test_a_malformed_override_is_refused_with_kube_format(override: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        config("--etcd-servers", "http://h:1", "--etcd-servers-overrides", override)
    assert exit_.value.code == 2
    assert "must be of format: group/resource#servers" in capsys.readouterr().err


@pytest.mark.parametrize(("flags", "message"), [
    ((), "--etcd-servers must be specified"),
    (("--etcd-servers", "ftp://h:1"), "--etcd-servers: etcd endpoint 'ftp://h:1'"),
    (("--etcd-servers", "http://h"), "expected host:port"),
    (("--etcd-servers", "http://h:1", "--etcd-servers-overrides", "/widgets#http://h:2"),
     "--etcd-servers-overrides /widgets: no built-in resource 'widgets'"),
    (("--etcd-servers", "http://h:1", "--etcd-servers-overrides", "/events#http://h:2,events.k8s.io/events#http://h:3"),
     "already given other servers"),
])
def test_wrong_flags_stop_start_up_saying_which(tmp_path: Path, flags: tuple[str, ...], message: str) -> None:
    with pytest.raises(FatalError, match=message.replace("/", ".").replace("'", ".")):
        make_storage(config(*flags), tmp_path)


def test_overrides_route_a_resource_to_its_cluster(tmp_path: Path) -> None:
    storage = make_storage(config("--etcd-servers", "http://127.0.0.1:1", "--etcd-prefix", "/kapi",
                                  "--etcd-servers-overrides", "/events#http://127.0.0.1:2,"
                                  "events.k8s.io/events#http://127.0.0.1:2,/nodes#http://127.0.0.1:2,"
                                  "apps/deployments#http://127.0.0.1:1"), tmp_path)
    assert isinstance(storage, RoutedStorage)
    # events.k8s.io's events are core events'; nodes are stored as minions; deployments stay on the default
    assert set(storage.routes) == {"/kapi/events/", "/kapi/minions/"}
    [events] = {id(b): b for b in storage.routes.values()}.values()
    assert isinstance(events, EtcdStorage) and events is not storage.default


@pytest.mark.parametrize("backend", ["sqlite", "memory"])
def test_etcd_flags_without_etcd3_are_refused(tmp_path: Path, backend: str) -> None:
    c = config("--etcd-servers", "http://127.0.0.1:1", "--etcd-cafile", "ca.pem", "--storage-backend", backend)
    with pytest.raises(FatalError, match=f"--etcd-servers, --etcd-cafile need --storage-backend etcd3 .it is {backend}"):
        make_storage(c, tmp_path)


def test_without_overrides_the_storage_is_one_cluster(tmp_path: Path) -> None:
    assert isinstance(make_storage(config("--etcd-servers", "http://127.0.0.1:1"), tmp_path), EtcdStorage)
