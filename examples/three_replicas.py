"""Three kapi replicas on a three-member etcd, behind HAProxy, driven with kubectl.

    python examples/three_replicas.py            # start it all, run kubectl through it, stop
    python examples/three_replicas.py --keep     # ... and keep it running until Ctrl-C

What it starts, all on 127.0.0.1 with free ports, in a temporary directory:

- a three-member etcd cluster (``kapi.testing.EtcdCluster``: the ``etcd`` of ``kapi[test]``);
- three ``kapi serve --storage-backend etcd3`` replicas sharing one join token, so that the
  second and third read the first one's CA, service-account key and admin credentials from etcd;
- HAProxy (Debian's ``haproxy``) in TCP mode in front of them: TLS passes through to the replicas,
  whose serving certificates name the balancer's address (``--tls-san``), so kubectl verifies them.

Then kubectl, through the balancer: every request may land on another replica, and it cannot tell.
"""

from __future__ import annotations

import argparse
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from kapi.testing import EtcdCluster, Server
from kapi.testing.etcd import free_port

HAPROXY_CONFIG = """\
global
    maxconn 4096
defaults
    mode tcp
    timeout connect 5s
    timeout client 1h
    timeout server 1h
frontend kapi
    bind 127.0.0.1:{port}
    default_backend replicas
backend replicas
    balance roundrobin
    option httpchk GET /readyz
{servers}
"""


def start_haproxy(directory: Path, port: int, replicas: list[Server]) -> subprocess.Popen[bytes]:
    """HAProxy on ``port``, TCP mode, round robin over the replicas, checked on /readyz over TLS."""
    haproxy = shutil.which("haproxy") or "/usr/sbin/haproxy"
    if not os.path.exists(haproxy):
        sys.exit("haproxy is not installed (Debian: apt-get install haproxy)")
    servers = "\n".join(f"    server r{i} {r.url.removeprefix('https://')} check check-ssl verify none"
                        for i, r in enumerate(replicas))
    config = directory / "haproxy.cfg"
    config.write_text(HAPROXY_CONFIG.format(port=port, servers=servers))
    with open(directory / "haproxy.log", "wb") as log:
        proc = subprocess.Popen([haproxy, "-f", str(config), "-db"], stdout=subprocess.DEVNULL, stderr=log)
    time.sleep(0.3)
    if proc.poll() is not None:
        sys.exit(f"haproxy exited: {(directory / 'haproxy.log').read_text()}")
    return proc


def balanced_kubeconfig(replica: Server, port: int, path: Path) -> Path:
    """The first replica's admin kubeconfig, pointed at the balancer."""
    config = yaml.safe_load(Path(replica.kubeconfig).read_text())
    config["clusters"][0]["cluster"]["server"] = f"https://127.0.0.1:{port}"
    path.write_text(yaml.safe_dump(config))
    path.chmod(0o600)
    return path


def kubectl(kubeconfig: Path, *args: str) -> str:
    out = subprocess.run(["kubectl", "--kubeconfig", str(kubeconfig), *args], capture_output=True, text=True,
                         timeout=60)
    print(f"$ kubectl {' '.join(args)}\n{out.stdout}{out.stderr}", end="")
    if out.returncode != 0:
        raise SystemExit(f"kubectl {' '.join(args)} failed ({out.returncode})")
    return out.stdout


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--keep", action="store_true", help="keep everything running until Ctrl-C")
    args = parser.parse_args(argv)
    directory = Path(tempfile.mkdtemp(prefix="kapi-replicas-"))
    token = secrets.token_hex(16)
    port = free_port()
    replicas: list[Server] = []
    haproxy = None
    try:
        with EtcdCluster(members=3, directory=directory / "etcd") as etcd:
            for i in range(3):
                replicas.append(Server("--etcd-servers", etcd.servers, "--token", token, "--tls-san", "127.0.0.1",
                                       data_dir=directory / f"replica-{i}", storage="etcd3").start())
            haproxy = start_haproxy(directory, port, replicas)
            kubeconfig = balanced_kubeconfig(replicas[0], port, directory / "balanced.kubeconfig")
            kubectl(kubeconfig, "create", "configmap", "hello", "--from-literal=greeting=hi")
            for _ in range(3):  # round robin: each read on another replica
                kubectl(kubeconfig, "get", "configmap", "hello", "-o", "jsonpath={.data.greeting}{'\\n'}")
            # One APIServerIdentity lease per replica, and the controllers' leader-election lease.
            kubectl(kubeconfig, "get", "leases", "-n", "kube-system")
            if args.keep:
                print(f"\nkubectl --kubeconfig {kubeconfig} ...   (Ctrl-C stops everything)")
                try:
                    while True:
                        time.sleep(3600)
                except KeyboardInterrupt:
                    pass
    finally:
        if haproxy is not None:
            haproxy.terminate()
            haproxy.wait(10)
        for r in replicas:
            r.stop()
        shutil.rmtree(directory, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
