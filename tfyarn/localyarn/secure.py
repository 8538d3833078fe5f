"""`tfyarn cluster up --secure`: the local cluster with Kerberos, as production Hadoop runs it.

A KDC (kdc.py) holds a principal per service (hdfs, yarn and HTTP, instance "localhost") and
two users: the one running the cluster, and OTHER_USER for access tests. Each daemon logs in
from its own keytab; clients use the ticket cache `up` fills from the user's keytab (`tfyarn
cluster env` exports it). The services' principals map to the OS user that runs every daemon
here, so HDFS's superuser and YARN's admin are who they are on the plain cluster; OTHER_USER is
neither. Delegation tokens live minutes, not days, so tests see them renewed and expire.

Every web UI and REST API (the ResourceManager's and its proxy to each AppMaster, the
NodeManagers', the NameNode's) wants SPNEGO: a caller shows a ticket for HTTP/<its host>, one
principal per host name a client may use (localhost, and each NodeManager's own address).
Not secured: data transfer to the DataNode, which runs on an ordinary port
(`ignore.secure.ports.for.testing`, Hadoop's way for a non-root test DataNode); its blocks
still need the NameNode's block access tokens.
Without Hadoop's native library, logs are not aggregated to HDFS (see yarn_site).
"""

from __future__ import annotations

import contextlib
import getpass
import os
import shlex
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import requests

from tfyarn.localyarn import kdc
from tfyarn.localyarn.kdc import REALM
from tfyarn.localyarn.layout import Layout
from tfyarn.localyarn.provision import ClusterError
from tfyarn.security import spnego

OTHER_USER = "bob"  # a second user, neither the job's owner nor an admin
SERVICE_HOST = "localhost"
SERVICES = ("hdfs", "yarn", "HTTP")
# Seconds: a token must be renewed within RENEW_S and dies at MAX_LIFETIME_S whatever happens
# (Hadoop's defaults: a day and a week). Minutes here, so a test's job outlives its tokens.
# A job without a keytab has its submit's tokens alone, and hdfs-native offers none within
# 60 s of its end; the ResourceManager, asked to renew a token this close to its end, gets
# the application a new one for its new containers rather than renew the old (renewed once,
# at submit): so a job's running tasks can open HDFS connections for the shorter of RENEW_S
# and MAX_LIFETIME_S - 60 after submit. Two minutes: a job started on a loaded machine has
# its tasks up in one (with 90 s it was 30 s, and a seed job under load lost HDFS).
TOKEN_RENEW_S = int(os.environ.get("TFYARN_SECURE_TOKEN_RENEW_S", "120"))
TOKEN_MAX_LIFETIME_S = int(os.environ.get("TFYARN_SECURE_TOKEN_MAX_LIFETIME_S", "180"))
# On HA, 15 minutes: hdfs-native offers no token within 60 s of its end, so with 90 s a task's
# own HDFS calls would stop 30 s in, and a job going through failovers lives minutes.
HA_TOKEN_MAX_LIFETIME_S = 900


def token_max_lifetime_s(layout: Layout) -> int:
    return max(TOKEN_MAX_LIFETIME_S, HA_TOKEN_MAX_LIFETIME_S) if layout.is_ha \
        else TOKEN_MAX_LIFETIME_S


def cluster_user() -> str:
    return getpass.getuser()


def principal(name: str) -> str:
    return f"{name}@{REALM}"


def service_principal(service: str) -> str:
    return f"{service}/{SERVICE_HOST}@{REALM}"


def config_principal(layout: Layout, service: str) -> str:
    """A service's principal as a daemon's configuration names it: on an HA cluster with
    `_HOST`, which each RM, NameNode and JournalNode (and their clients) replace by the host
    of its own address, as production writes one file for every host. Every daemon here
    listens on 127.0.0.1, whose name is "localhost", so each pair shares one principal."""
    return f"{service}/_HOST@{REALM}" if layout.is_ha else service_principal(service)


def keytab(layout: Layout, holder: str) -> Path:
    """The keytab of a user, or of a service ("hdfs", "yarn"), under the KDC's dir."""
    return layout.kdc_dir / f"{holder}.keytab"


def ticket_cache(layout: Layout, user: str | None = None) -> Path:
    return layout.kdc_dir / f"krb5cc_{user or cluster_user()}"


def _marker(layout: Layout) -> Path:
    return layout.state_dir / "secure"


def is_secure(layout: Layout) -> bool:
    return _marker(layout).is_file()


def set_secure(layout: Layout, secure: bool) -> None:
    """Remember how `up` starts this state dir; a plain one keeps no KDC files."""
    layout.state_dir.mkdir(parents=True, exist_ok=True)
    if secure:
        _marker(layout).write_text("kerberos\n")
    else:
        _marker(layout).unlink(missing_ok=True)
        shutil.rmtree(layout.kdc_dir, ignore_errors=True)


def start_kdc(layout: Layout, java_home: Path, echo=print) -> None:
    """A fresh KDC, the keytabs of each service and user, and the user's ticket cache."""
    started = time.monotonic()
    users = [cluster_user(), OTHER_USER]
    services = [f"{service}/{SERVICE_HOST}" for service in SERVICES]
    kdc.start(layout, java_home, [*users, *services, *web_principals(layout)[1:]], echo)
    # A daemon's keytab holds its service and HTTP (its web server's SPNEGO names).
    web_names = {f"{name}@{REALM}" for name in web_principals(layout)}
    for service in ("hdfs", "yarn"):
        kdc.split_keytab(kdc.all_keys(layout), keytab(layout, service),
                         {service_principal(service), *web_names})
    # Every daemon's web server accepts a ticket for any of the hosts' HTTP principals.
    kdc.split_keytab(kdc.all_keys(layout), keytab(layout, "HTTP"), web_names)
    for user in users:
        kdc.split_keytab(kdc.all_keys(layout), keytab(layout, user), {principal(user)})
    kdc.all_keys(layout).unlink()
    kinit(layout, cluster_user())
    echo(f"KDC up on 127.0.0.1:{layout.port(kdc.KDC_PORT)} (realm {REALM}), keytabs in "
         f"{layout.kdc_dir}, tickets for {principal(cluster_user())} "
         f"({time.monotonic() - started:.1f} s).")


def web_principals(layout: Layout) -> list[str]:
    """HTTP/<host> for each name a browser or tfyarn may call a daemon's web server by: the
    service host (127.0.0.1 is "localhost" to Kerberos, by its reverse lookup) and each
    other NodeManager's address (no name: Kerberos keeps the address itself). On HA, also
    127.0.0.1 itself: Hadoop's own HTTP client (a NameNode fetching the other's image or the
    JournalNode's edits) asks for HTTP/<the URL's host> without a reverse lookup."""
    hosts = [nm.host for nm in layout.node_managers if nm.host != "127.0.0.1"]
    loopback = ["127.0.0.1"] if layout.is_ha else []
    return [f"HTTP/{host}" for host in [SERVICE_HOST, *loopback, *hosts]]


def web_get(layout: Layout, url: str, **options: object) -> requests.Response:
    """GET from one of the cluster's web servers, with the user's tickets where it wants them."""
    with client_environ(layout):
        return spnego.get(url, **options)


def kinit(layout: Layout, user: str) -> Path:
    """MIT kinit from the user's keytab into its cache under the KDC's dir; returns it."""
    if shutil.which("kinit") is None:
        raise ClusterError("`kinit` is not on PATH; the secure cluster's clients need a "
                           "ticket cache. Fix: install MIT Kerberos' clients (Debian: "
                           "apt-get install krb5-user; scripts/setup.sh does).")
    cache = ticket_cache(layout, user)
    result = subprocess.run(["kinit", "-kt", str(keytab(layout, user)), principal(user)],
                            env={**os.environ, **client_env(layout, cache)},
                            capture_output=True, text=True)
    if result.returncode != 0:
        raise ClusterError(f"kinit {principal(user)} failed: {result.stderr.strip()}\n"
                           f"Fix: see {layout.daemon_out(kdc.KDC_NAME)}.")
    return cache


def client_env(layout: Layout, cache: Path | None = None) -> dict[str, str]:
    """What MIT tools, libgssapi (hdfs-native) and tfyarn read to find the KDC and tickets."""
    return {"KRB5_CONFIG": str(layout.krb5_conf),
            "KRB5CCNAME": str(cache or ticket_cache(layout))}


@contextlib.contextmanager
def client_environ(layout: Layout) -> Iterator[None]:
    """os.environ with client_env while in the block, on a secure cluster (and
    HADOOP_CONF_DIR: hdfs-native reads whether to use Kerberos from core-site.xml)."""
    saved = dict(os.environ)
    if is_secure(layout):
        os.environ.update(client_env(layout), HADOOP_CONF_DIR=str(layout.conf_dir))
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def env_lines(layout: Layout) -> list[str]:
    if not is_secure(layout):
        return []
    return [f"export {key}={shlex.quote(value)}" for key, value in client_env(layout).items()]


# ---------------------------------------------------------------- site settings

def _auth_to_local() -> str:
    """Users keep their names; every service principal is the daemons' OS user. Written for
    the realm, so a JVM that reads no krb5.conf (a container's) maps names the same."""
    escaped = REALM.replace(".", r"\.")
    return "\n".join([
        f"RULE:[1:$1@$0](.*@{escaped})s/@.*//",
        f"RULE:[2:$1@$0](.*@{escaped})s/.*/{cluster_user()}/",
        "DEFAULT",
    ])


def core_site(layout: Layout) -> dict[str, object]:
    if not is_secure(layout):
        return {}
    # The ResourceManager (its principal maps to the daemons' user) may act for the jobs'
    # users: see yarn.resourcemanager.proxy-user-privileges.enabled below.
    return {"hadoop.security.authentication": "kerberos",
            "hadoop.security.auth_to_local": _auth_to_local(),
            # SPNEGO on every daemon's web server, as on a production secure cluster: the RM
            # proxy then knows who asks for a job page, and skein's UI admits by that name.
            "hadoop.http.filter.initializers":
                "org.apache.hadoop.security.AuthenticationFilterInitializer",
            "hadoop.http.authentication.type": "kerberos",
            "hadoop.http.authentication.simple.anonymous.allowed": "false",
            "hadoop.http.authentication.kerberos.principal": "*",  # every HTTP/ in the keytab
            "hadoop.http.authentication.kerberos.keytab": str(keytab(layout, "HTTP")),
            f"hadoop.proxyuser.{cluster_user()}.hosts": "*",
            f"hadoop.proxyuser.{cluster_user()}.groups": "*"}


def hdfs_site(layout: Layout) -> dict[str, object]:
    if not is_secure(layout):
        return {}
    hdfs, http = config_principal(layout, "hdfs"), config_principal(layout, "HTTP")
    keys = str(keytab(layout, "hdfs"))
    return {
        "dfs.block.access.token.enable": "true",
        "dfs.namenode.kerberos.principal": hdfs,
        "dfs.namenode.keytab.file": keys,
        "dfs.namenode.kerberos.internal.spnego.principal": http,
        # The DataNode names its host by the machine's name (not its address): a fixed one.
        "dfs.datanode.kerberos.principal": service_principal("hdfs"),
        "dfs.datanode.keytab.file": keys,
        "dfs.web.authentication.kerberos.principal": http,
        "dfs.web.authentication.kerberos.keytab": keys,
        # The HA cluster's JournalNode: the NameNodes write their edits to it over RPC and
        # the standby reads them over HTTP, both with Kerberos.
        "dfs.journalnode.kerberos.principal": hdfs,
        "dfs.journalnode.keytab.file": keys,
        "dfs.journalnode.kerberos.internal.spnego.principal": http,
        # A DataNode not started as root on privileged ports: Hadoop's setting for tests.
        "ignore.secure.ports.for.testing": "true",
        "dfs.namenode.delegation.token.renew-interval": TOKEN_RENEW_S * 1000,
        "dfs.namenode.delegation.token.max-lifetime": token_max_lifetime_s(layout) * 1000,
    }


def yarn_site(layout: Layout) -> dict[str, object]:
    """The ResourceManager's and every NodeManager's login, ACLs on, the user as admin."""
    if not is_secure(layout):
        return {}
    yarn, keys = service_principal("yarn"), str(keytab(layout, "yarn"))
    return {
        "yarn.resourcemanager.principal": config_principal(layout, "yarn"),
        "yarn.resourcemanager.keytab": keys,
        "yarn.nodemanager.principal": yarn,
        "yarn.nodemanager.keytab": keys,
        "yarn.resourcemanager.webapp.spnego-principal": config_principal(layout, "HTTP"),
        "yarn.resourcemanager.webapp.spnego-keytab-file": keys,
        # Aggregating logs on a secure cluster opens them with SecureIOUtils, which needs
        # Hadoop's native libhadoop.so (not in Maven's jars): the NodeManager would die.
        # Each container's logs stay on its node (yarn.nodemanager.log-dirs).
        "yarn.log-aggregation-enable": "false",
        "yarn.acl.enable": "true",
        "yarn.admin.acl": cluster_user(),
        # Once a job's HDFS tokens near their maximum lifetime, the ResourceManager gets new
        # ones for the NodeManagers (YARN-2704): a container started after that point is still
        # localized from HDFS. The containers' own new tokens come from tfyarn's AppMaster
        # (appmaster/common/hdfstokens.py), for jobs submitted with a keytab.
        "yarn.resourcemanager.proxy-user-privileges.enabled": "true",
        "yarn.resourcemanager.delegation.token.renew-interval": TOKEN_RENEW_S * 1000,
        "yarn.resourcemanager.delegation.token.max-lifetime": token_max_lifetime_s(layout) * 1000,
    }


def capacity_scheduler(layout: Layout) -> dict[str, object]:
    """Anyone may submit, but only the admin administers the queues: YARN lets a queue's
    administrators kill and view every application in it, and the root queue's default
    administrators are everyone."""
    if not is_secure(layout):
        return {}
    return {"yarn.scheduler.capacity.root.acl_submit_applications": "*",
            "yarn.scheduler.capacity.root.acl_administer_queue": cluster_user()}
