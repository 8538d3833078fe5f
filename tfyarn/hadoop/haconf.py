"""A high-availability client configuration, checked before anything is submitted.

Production clusters run two NameNodes behind a nameservice (fs.defaultFS =
hdfs://nameservice1) and two ResourceManagers (yarn.resourcemanager.ha.rm-ids). A client
configuration that names a nameservice it does not define, or an RM id without an address,
makes Hadoop's clients fail late, with an UnknownHostException or minutes of retries; these
checks name the key and the fix first. Pure functions of the configuration (and of a host
resolver, passed in).
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Mapping
from urllib.parse import urlsplit

from tfyarn.errors import TfyarnError


class HaConfigError(TfyarnError):
    """The client configuration's HA part is incomplete: which key, and how to fix it."""


def resolvable(host: str) -> bool:
    try:
        socket.getaddrinfo(host, None)
    except (socket.gaierror, UnicodeError):
        return False
    return True


def _listed(conf: Mapping[str, str], key: str) -> list[str]:
    return [item.strip() for item in conf.get(key, "").split(",") if item.strip()]


def nameservice_problem(conf: Mapping[str, str], url: str,
                        resolves: Callable[[str], bool] = resolvable) -> str | None:
    """Why hdfs://<authority> of ``url`` cannot be reached from this configuration; None if
    it can (a host[:port], or a nameservice with its NameNodes' addresses)."""
    parts = urlsplit(url)
    name = parts.netloc
    if parts.scheme != "hdfs" or not name or ":" in name:
        return None
    services = _listed(conf, "dfs.nameservices")
    if name not in services:
        if resolves(name):
            return None  # a NameNode's host name, on the default port
        return (f"{url} names {name!r}, which is neither a nameservice of the client "
                f"configuration (dfs.nameservices = {', '.join(services) or 'none'}) nor a "
                "host this machine can resolve")
    namenodes = _listed(conf, f"dfs.ha.namenodes.{name}")
    if not namenodes:
        if conf.get(f"dfs.namenode.rpc-address.{name}"):
            return None  # a federated nameservice of one NameNode
        return (f"the nameservice {name} lists no NameNodes: dfs.ha.namenodes.{name} is not "
                "set in hdfs-site.xml")
    missing = [nn for nn in namenodes if not conf.get(f"dfs.namenode.rpc-address.{name}.{nn}")]
    if missing:
        return (f"the nameservice {name}'s NameNode(s) {', '.join(missing)} have no address: "
                + ", ".join(f"dfs.namenode.rpc-address.{name}.{nn}" for nn in missing)
                + " not set in hdfs-site.xml")
    return None


def rm_ids_problem(conf: Mapping[str, str]) -> str | None:
    """Why the RM pair of an HA configuration cannot be reached; None if it can (or no HA)."""
    if conf.get("yarn.resourcemanager.ha.enabled", "false").lower() != "true":
        return None
    rm_ids = _listed(conf, "yarn.resourcemanager.ha.rm-ids")
    if not rm_ids:
        return ("yarn.resourcemanager.ha.enabled is true but yarn.resourcemanager.ha.rm-ids "
                "lists no ResourceManager")
    missing = [rm for rm in rm_ids if not conf.get(f"yarn.resourcemanager.hostname.{rm}")
               and not conf.get(f"yarn.resourcemanager.address.{rm}")]
    if missing:
        return (f"the ResourceManager id(s) {', '.join(missing)} of "
                "yarn.resourcemanager.ha.rm-ids have no address: set "
                + " or ".join(f"yarn.resourcemanager.hostname.{rm}" for rm in missing)
                + " in yarn-site.xml")
    return None


def check_client(conf: Mapping[str, str], conf_dirs: str,
                 resolves: Callable[[str], bool] = resolvable) -> None:
    """Raise HaConfigError naming every incomplete HA part of ``conf`` (read from
    ``conf_dirs``, named in the fix)."""
    default_fs = conf.get("fs.defaultFS") or conf.get("fs.default.name") or ""
    problems = [p for p in (nameservice_problem(conf, default_fs, resolves) if default_fs
                            else None, rm_ids_problem(conf)) if p]
    if problems:
        raise HaConfigError(
            "The Hadoop client configuration is incomplete: " + "; ".join(problems) + ".",
            hint=f"complete it in {conf_dirs} (the cluster's client configuration: its "
                 "administrators' copy, or HADOOP_CONF_DIR pointing at it).")
