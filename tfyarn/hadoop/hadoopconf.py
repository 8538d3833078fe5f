"""The Hadoop client configuration: the one place that says where it comes from.

Hadoop's launchers put one configuration directory on the client's class path: YARN_CONF_DIR
where set (the `yarn` command's, which skein's driver asks for its class path), else
HADOOP_CONF_DIR, else $HADOOP_HOME/etc/hadoop; distributions install /etc/hadoop/conf. Each
*-site.xml is read from the first of these directories that has it, as a class path lookup
finds it. The default file system, the name services and the ResourceManager's web address
all come from here.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from appmaster.common.hadoopxml import parse_properties
from tfyarn.errors import TfyarnError

__all__ = ["SITE_FILES", "HadoopConfError", "check_present", "client_configuration",
           "conf_dirs", "parse_properties", "site_file", "web_login"]
SITE_FILES = ("core-site.xml", "hdfs-site.xml", "yarn-site.xml")
NEEDED_FILES = ("core-site.xml", "yarn-site.xml")  # the file system; the ResourceManager
CONF_FIX = ("set HADOOP_CONF_DIR to the cluster's client configuration, the directory that "
            "holds its core-site.xml and yarn-site.xml (a cluster node's /etc/hadoop/conf, "
            "or what the cluster's administrators hand out). For a dry run away from any "
            "cluster, add --skip-preflight.")
SYSTEM_CONF_DIR = Path("/etc/hadoop/conf")


def conf_dirs(environ: Mapping[str, str] | None = None) -> list[Path]:
    """Where the client configuration is looked for, in order."""
    environ = os.environ if environ is None else environ
    dirs = [Path(environ[name]) for name in ("YARN_CONF_DIR", "HADOOP_CONF_DIR")
            if environ.get(name)]
    if environ.get("HADOOP_HOME"):
        dirs.append(Path(environ["HADOOP_HOME"]) / "etc" / "hadoop")
    dirs.append(SYSTEM_CONF_DIR)
    return dirs


class HadoopConfError(TfyarnError):
    """No usable Hadoop client configuration: the message names the directories searched."""


def check_present(environ: Mapping[str, str] | None = None) -> None:
    """Refuse a configuration directory named but absent, and a configuration without
    core-site.xml or yarn-site.xml: tfyarn would not know which cluster to ask."""
    environ = os.environ if environ is None else environ
    for name in ("YARN_CONF_DIR", "HADOOP_CONF_DIR"):
        value = environ.get(name)
        if value and not Path(value).is_dir():
            raise HadoopConfError(f"{name}={value}: no such directory.", hint=CONF_FIX)
    absent = [name for name in NEEDED_FILES if site_file(name, environ) is None]
    if absent:
        searched = ", ".join(map(str, conf_dirs(environ)))
        raise HadoopConfError(
            f"no Hadoop client configuration: {' and '.join(absent)} not found in "
            f"{searched} (searched in this order).", hint=CONF_FIX)


def site_file(name: str, environ: Mapping[str, str] | None = None) -> Path | None:
    """Where the client reads ``name`` (core-site.xml, ...) from, or None."""
    return next((d / name for d in conf_dirs(environ) if (d / name).is_file()), None)


def client_configuration(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The properties of core-site.xml, hdfs-site.xml and yarn-site.xml, each file from the
    first directory of `conf_dirs` that has it."""
    conf: dict[str, str] = {}
    for name in SITE_FILES:
        path = site_file(name, environ)
        if path is not None:
            try:
                conf.update(parse_properties(path.read_text(errors="replace")))
            except OSError:
                continue  # an unreadable file counts as absent
    return conf


def web_login(conf: Mapping[str, str]) -> bool:
    """Whether the cluster's web UIs log users in with Kerberos (SPNEGO): the RM and its
    proxy then know who asks."""
    return conf.get("hadoop.http.authentication.type", "simple") == "kerberos"
