"""Kerberos on the client side: keytabs, and a ticket cache for tfyarn's own HDFS checks.

skein's driver logs in from ``--principal/--keytab`` itself (Java), but tfyarn's checks
before submitting (the work dir, data entries) use hdfs-native, which reads a ticket cache
through libgssapi. So a keytab login first checks the keytab holds the principal, then fills
a cache private to this process with MIT's kinit, and points KRB5CCNAME at it.
"""

from __future__ import annotations

import atexit
import os
import re
import shutil
import socket
import struct
import subprocess
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from urllib.parse import urlsplit

from tfyarn.errors import TfyarnError

KEYTAB_VERSION = b"\x05\x02"  # MIT's keytab format, what MiniKdc, ktutil and kadmin write
# Hadoop RPC's connection header: magic, version 9, service class 0, auth protocol NONE.
RPC_HEADER_WITHOUT_SASL = b"hrpc\x09\x00\x00"
NAMENODE_RPC_PORT = 8020


class KerberosError(TfyarnError, RuntimeError):
    """A login that cannot work: the message says why and how to fix it."""


def keytab_entries(data: bytes) -> Iterator[tuple[str, bytes]]:
    """("name/instance@REALM", the entry's bytes with its length) for each live entry."""
    if data[:2] != KEYTAB_VERSION:
        raise ValueError("not an MIT keytab (version 0x502)")
    offset = 2
    while offset + 4 <= len(data):
        (size,) = struct.unpack_from(">i", data, offset)
        if offset + 4 + abs(size) > len(data):
            raise ValueError("truncated keytab")
        if size > 0:  # a negative size is a hole left by a deleted entry
            yield _principal_of(data[offset + 4:offset + 4 + size]), data[offset:offset + 4 + size]
        offset += 4 + abs(size)


def _principal_of(entry: bytes) -> str:
    (count,) = struct.unpack_from(">H", entry, 0)
    offset, parts = 2, []
    for _ in range(count + 1):  # the realm, then each component of the name
        (size,) = struct.unpack_from(">H", entry, offset)
        parts.append(entry[offset + 2:offset + 2 + size].decode())
        offset += 2 + size
    realm, *names = parts
    return "/".join(names) + "@" + realm


def keytab_principals(keytab: Path) -> set[str]:
    try:
        return {name for name, _ in keytab_entries(keytab.read_bytes())}
    except (OSError, ValueError, struct.error, UnicodeDecodeError) as exc:
        raise KerberosError(f"--keytab {keytab}: cannot be read as a keytab ({exc}).",
                            "give the keytab file your Kerberos admin issued (`klist -kt "
                            f"{keytab}` lists what it holds).") from None


def login_from_keytab(principal: str, keytab: Path) -> Path:
    """A ticket cache of this process's own for ``principal`` (KRB5CCNAME points at it,
    deleted at exit); KerberosError if the keytab or the KDC says no."""
    held = keytab_principals(keytab)
    wanted = principal if "@" in principal else None
    if not any(name == wanted or name.split("@")[0] == principal for name in held):
        raise KerberosError(
            f"--keytab {keytab} holds no key for --principal {principal} (it holds "
            f"{', '.join(sorted(held)) or 'nothing'}).",
            "give the principal the keytab was made for, or that principal's keytab.")
    if shutil.which("kinit") is None:
        raise KerberosError("--principal/--keytab need MIT Kerberos' kinit for tfyarn's own "
                            "HDFS checks.", "install it (Debian: apt-get install krb5-user).")
    fd, cache = tempfile.mkstemp(prefix="tfyarn-krb5cc-")
    os.close(fd)
    atexit.register(Path(cache).unlink, missing_ok=True)
    result = subprocess.run(["kinit", "-kt", str(keytab), "-c", cache, principal],
                            capture_output=True, text=True)
    if result.returncode != 0:
        raise KerberosError(f"Kerberos refused --principal {principal} with --keytab {keytab}: "
                            f"{result.stderr.strip()}",
                            "check the principal's name and realm, and that the keytab is "
                            "current (a re-keyed principal needs a new keytab).")
    os.environ["KRB5CCNAME"] = cache
    return Path(cache)


def check_login(conf: Mapping[str, str]) -> None:
    """On a cluster that uses Kerberos, a valid (unexpired) ticket must be in the cache
    before anything is asked of it; MIT's `klist -s` tells (without klist, the cluster's own
    refusal is what the user sees)."""
    if conf.get("hadoop.security.authentication", "simple").lower() != "kerberos":
        return
    if shutil.which("klist") is None:
        return
    if subprocess.run(["klist", "-s"], capture_output=True).returncode != 0:
        cache = os.environ.get("KRB5CCNAME") or "the default ticket cache"
        why, owner = expiry()
        raise KerberosError(
            f"No valid Kerberos ticket in {cache} ({why}), and the cluster uses "
            "Kerberos (hadoop.security.authentication in HADOOP_CONF_DIR).",
            f"run `kinit {owner or '<you>@<REALM>'}` first, or give `tfyarn --principal P "
            "--keytab K` (TFYARN_PRINCIPAL/TFYARN_KEYTAB).")


def namenode_refuses_simple(host: str, port: int, timeout_s: float = 2.0) -> str | None:
    """The NameNode's own words where it wants Kerberos from a client that offers none.

    Hadoop's RPC server answers a connection header with auth protocol NONE at once, with
    "SIMPLE authentication is not enabled.  Available:[TOKEN, KERBEROS]", when security is
    on; an open one waits for the rest of the connection, and the wait times out (None).
    """
    reply = b""
    try:
        with socket.create_connection((host, port), timeout=timeout_s) as conn:
            conn.sendall(RPC_HEADER_WITHOUT_SASL)
            while chunk := conn.recv(4096):
                reply += chunk
    except OSError:
        pass  # refused, reset or no answer in time: nothing to say about Kerberos
    words = re.search(rb"SIMPLE authentication is not enabled\.\s+Available:\[[^\]]*\]", reply)
    return words[0].decode() if words else None


def check_cluster_wants_no_kerberos(url: str, conf: Mapping[str, str],
                                    core_site: Path | None) -> None:
    """Where HDFS could not be reached with a configuration that says "simple": whether the
    cluster's NameNode wants Kerberos, which then is what the user must be told."""
    if conf.get("hadoop.security.authentication", "simple").lower() != "simple":
        return
    parts = urlsplit(url)
    if not parts.hostname:
        return
    refusal = namenode_refuses_simple(parts.hostname, parts.port or NAMENODE_RPC_PORT)
    if refusal:
        raise KerberosError(
            f"The cluster's NameNode ({parts.netloc}) wants Kerberos (\"{refusal}\"), and "
            "the client configuration says hadoop.security.authentication = simple "
            f"({core_site or 'no core-site.xml found'}).",
            "use the cluster's own client configuration (HADOOP_CONF_DIR), whose "
            "core-site.xml sets hadoop.security.authentication = kerberos, then kinit.")


def expiry() -> tuple[str, str | None]:
    """Why the ticket cache holds no valid ticket, as `klist` shows it (whose ticket expired
    when, or that there is none), and whose cache it is."""
    listing = subprocess.run(["klist"], capture_output=True, text=True).stdout
    owner = re.search(r"^Default principal: (\S+)", listing, re.MULTILINE)
    # "Valid starting     Expires            Service principal": the TGT's line
    tgt = re.search(r"^(\S+ \S+)\s+(\S+ \S+)\s+krbtgt/", listing, re.MULTILINE)
    if owner and tgt:
        return f"the ticket of {owner.group(1)} expired {tgt.group(2)}", owner.group(1)
    return "no ticket", owner.group(1) if owner else None


def default_principal() -> str | None:
    """The ticket cache's default principal, as `klist` shows it (None without klist or a
    cache)."""
    if shutil.which("klist") is None:
        return None
    listing = subprocess.run(["klist"], capture_output=True, text=True).stdout
    owner = re.search(r"^Default principal: (\S+)", listing, re.MULTILINE)
    return owner.group(1) if owner else None


def short_name(principal: str) -> str:
    """A principal's short name, as Hadoop's default auth_to_local rule maps it to a user:
    alice/host.example.com@EXAMPLE.COM -> alice."""
    return re.split(r"[/@]", principal, maxsplit=1)[0]
