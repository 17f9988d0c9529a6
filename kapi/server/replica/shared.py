"""The bootstrap material replicas share through the datastore under a join token, as k3s does.

The first replica to start with a token makes the CA, the admin credentials and the
service-account signing key in its data directory as a lone server does, and stores them in
the datastore encrypted with a key derived from the token (PBKDF2-HMAC-SHA256, AES-256-GCM);
the storage key is named after a hash of the token, never the token itself. A later replica
with the same token finds that record and writes its files into its own data directory instead
of making new ones; a replica with another token finds a record it cannot read and refuses to
start. Two replicas starting together race on a create (compare-and-swap): one wins, the other
reads what the winner stored.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import os
from pathlib import Path
from typing import Awaitable, Callable

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.pbkdf2 import PBKDF2HMAC

import trio

from kapi import errors
from kapi.config import Config
from kapi.object.meta import key_root
from kapi.server.pki import SHARED_FILES, ensure_pki, ensure_service_account_key, write_private_file
from kapi.server.supervise import FatalError
from kapi.storage.base import Storage

__all__ = ["bootstrap_key", "decrypt", "encrypt", "join", "join_cluster", "join_token"]

log = logging.getLogger("kapi")

_ITERATIONS = 600_000  # OWASP's 2023 advice for PBKDF2-HMAC-SHA256; ~0.1 s, once per start
_FORMAT = "kapi-bootstrap/v1"


def bootstrap_key(root: str, token: str) -> str:
    """Where the bootstrap record of ``token`` lives: ``<root>/kapi-bootstrap/<hash of the token>``.

    No resource's key has this prefix (built-in prefixes are other words, custom ones have a dot).
    """
    return f"{_prefix(root)}{hashlib.sha256(token.encode()).hexdigest()[:16]}"


def _prefix(root: str) -> str:
    return f"{root}/kapi-bootstrap/"


def _cipher(token: str, salt: bytes, iterations: int) -> AESGCM:
    kdf = PBKDF2HMAC(algorithm=hashes.SHA256(), length=32, salt=salt, iterations=iterations)
    return AESGCM(kdf.derive(token.encode()))


def encrypt(token: str, key: str, files: dict[str, bytes]) -> bytes:
    """The record of ``files`` stored at ``key``: JSON around their AES-GCM ciphertext (``key`` authenticated too)."""
    salt, nonce = os.urandom(16), os.urandom(12)
    plain = json.dumps({name: base64.b64encode(data).decode() for name, data in files.items()}).encode()
    sealed = _cipher(token, salt, _ITERATIONS).encrypt(nonce, plain, key.encode())
    return json.dumps({"format": _FORMAT, "kdf": "pbkdf2-hmac-sha256", "iterations": _ITERATIONS,
                       "salt": _b64(salt), "nonce": _b64(nonce), "data": _b64(sealed)}).encode()


def decrypt(token: str, key: str, record: bytes) -> dict[str, bytes]:
    """The files in a record made by ``encrypt``.

    Raises:
        FatalError: the token does not open the record, or the record is not one.
    """
    try:
        doc = json.loads(record)
        if doc.get("format") != _FORMAT:
            raise ValueError(f"unknown format {doc.get('format')!r}")
        plain = _cipher(token, base64.b64decode(doc["salt"]), int(doc["iterations"])).decrypt(
            base64.b64decode(doc["nonce"]), base64.b64decode(doc["data"]), key.encode())
        return {name: base64.b64decode(data) for name, data in json.loads(plain).items()}
    except InvalidTag:
        raise FatalError(f"the token does not match the cluster's: the bootstrap data at {key} cannot be "
                         "decrypted with it") from None
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise FatalError(f"the bootstrap data at {key} is not readable: {exc}") from None


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


async def join(storage: Storage, root: str, token: str, pki_dir: Path, make_local: Callable[[], None]) -> bool:
    """Make ``pki_dir`` hold the cluster's shared files (``SHARED_FILES``); True when they came from the datastore.

    ``storage`` must be running. Without a record for ``token``: ``make_local()`` makes (or keeps)
    this data directory's files, and they are stored as the cluster's; losing that create to
    another replica, or finding a record, writes the stored files over the local ones.

    Raises:
        FatalError: the datastore holds bootstrap data under another token only (this token does
            not match the cluster's), or a record this token cannot decrypt.
    """
    key = bootstrap_key(root, token)
    while True:
        try:
            kv = await storage.get(key)
        except errors.KeyNotFound:
            others = (await storage.list(_prefix(root), limit=1)).items
            if others:
                raise FatalError("the token does not match the cluster's: the datastore holds bootstrap data "
                                 f"under another token ({others[0].key}); start with the token the first "
                                 "server was given") from None
            make_local()
            files = {name: (pki_dir / name).read_bytes() for name in SHARED_FILES}
            try:
                await storage.create(key, encrypt(token, key, files))
            except errors.KeyExists:
                continue  # another replica stored its files first: take those
            log.info("stored this server's CA and credentials as the cluster's bootstrap data (%s)", key)
            return False
        files = decrypt(token, key, kv.value)
        _write(pki_dir, files)
        return True


def _write(pki_dir: Path, files: dict[str, bytes]) -> None:
    pki_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    changed = [name for name in SHARED_FILES if name in files and _read(pki_dir / name) != files[name]]
    replaced = [name for name in changed if (pki_dir / name).exists()]
    if replaced:
        log.warning("the cluster's bootstrap data replaces %s in %s", ", ".join(replaced), pki_dir)
    for name in changed:
        write_private_file(pki_dir / name, files[name])


def _read(path: Path) -> bytes | None:
    return path.read_bytes() if path.exists() else None


async def join_cluster(storage: Storage, config: Config, data_dir: Path,
                       ready: Callable[[Storage], Awaitable[None]] | None = None) -> None:
    """``join`` with the server's flags, over ``storage`` run for the while (the server runs its own later);
    ``ready`` waits until storage answers (start-up's wait, bounded by --storage-initialization-timeout)."""
    token = join_token(config)

    def make_local() -> None:
        ensure_pki(data_dir, config.bind_address)
        ensure_service_account_key(data_dir)

    async with trio.open_nursery() as nursery:
        await nursery.start(storage.run)
        if ready is not None:
            await ready(storage)
        joined = await join(storage, key_root(config.etcd_prefix), token, data_dir / "pki", make_local)
        nursery.cancel_scope.cancel()
    if joined:
        log.info("joined the cluster: its CA and credentials are in %s", data_dir / "pki")


def join_token(config: Config) -> str:
    """--token, or the first line of --token-file (k3s's flags). ``FatalError`` when the file cannot be read."""
    if config.token or not config.token_file:
        return config.token
    try:
        token = Path(config.token_file).read_text().strip()
    except OSError as exc:
        raise FatalError(f"--token-file {config.token_file}: {exc.strerror or exc}") from None
    if not token:
        raise FatalError(f"--token-file {config.token_file} is empty")
    return token
