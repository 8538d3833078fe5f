"""Application reports from the ResourceManager's REST API, for the read-only commands.

`tfyarn status`, `list` and `logs` need only YARN's application reports. skein's driver is a
JVM that takes seconds to start; the RM's REST API answers in milliseconds. It is used when
the client configuration (HADOOP_CONF_DIR) names the RM's web address; a Kerberos cluster's
web UI is answered with the user's tickets (SPNEGO, spnego.py). Where the RM does not answer,
the commands use skein's driver.
"""

from __future__ import annotations

import re
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from datetime import datetime

import requests

from tfyarn.errors import TfyarnError
from tfyarn.hadoop import hadoopconf
from tfyarn.security import spnego

TIMEOUT_S = 5.0
# An HA pair between an active RM's end and the standby's election: seconds, in production.
FAILOVER_WAIT_S = 20.0
FAILOVER_POLL_S = 0.5


class RestError(TfyarnError, RuntimeError):
    """The RM answered with an error (an unknown application, say)."""


class StandbyError(RestError):
    """The RM is the standby of an HA pair: it redirects to the active one, which is asked
    directly instead (its address is in the configuration too)."""


class NoActiveResourceManager(TfyarnError):
    """An HA client configuration whose ResourceManagers all answer as standbys, or none
    answers at all: named before anything is submitted."""


@dataclass(frozen=True)
class AppReport:
    """The fields of skein's ApplicationReport that tfyarn reads, from the RM's JSON."""

    id: str
    name: str
    user: str
    queue: str
    tags: frozenset[str]
    state: str
    final_status: str
    tracking_url: str | None
    diagnostics: str
    start_time: datetime | None
    finish_time: datetime | None

    @classmethod
    def from_json(cls, app: dict) -> AppReport:
        def when(millis: int | None) -> datetime | None:
            return datetime.fromtimestamp(millis / 1000) if millis else None

        tags = app.get("applicationTags") or ""
        return cls(
            id=app["id"], name=app.get("name", ""), user=app.get("user", ""),
            queue=app.get("queue", ""), tags=frozenset(t for t in tags.split(",") if t),
            state=app["state"], final_status=app.get("finalStatus", "UNDEFINED"),
            tracking_url=app.get("trackingUrl"), diagnostics=app.get("diagnostics", ""),
            start_time=when(app.get("startedTime")), finish_time=when(app.get("finishedTime")),
        )


class RestReports:
    """Answers application_report/get_applications like skein's Client, over REST."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url

    def __enter__(self) -> RestReports:
        return self

    def __exit__(self, *exc_info: object) -> None:
        pass

    def _get(self, path: str, **params: str) -> dict:
        response = spnego.get(f"{self.base_url}/ws/v1/cluster/{path}", params=params,
                              headers={"Accept": "application/json"}, timeout=TIMEOUT_S,
                              allow_redirects=False)
        if response.is_redirect:
            raise StandbyError(f"{self.base_url} is a standby ResourceManager (it redirects "
                               f"to {response.headers.get('Location', 'the active one')})")
        if response.status_code != 200:
            raise _refusal(response)
        return response.json()

    def get(self, path: str, **params: str) -> dict:
        """Any answer of the RM's /ws/v1/cluster/ resources (scheduler, nodes, ...)."""
        return self._get(path, **params)

    def conf_value(self, name: str) -> str | None:
        """A property of the RM's own configuration (its /conf page); None where it does
        not say."""
        conf = spnego.get(f"{self.base_url}/conf", params={"name": name},
                          headers={"Accept": "application/json"}, timeout=TIMEOUT_S)
        if not conf.ok:
            return None
        value = conf.json().get("property", {}).get("value")
        return None if value is None else str(value)

    def may_submit(self, queue: str, user: str) -> bool | None:
        """Whether the RM lets ``user`` submit to ``queue``; None where it enforces no ACLs.

        The answer comes as XML: Hadoop 3.5's RM fails to write this resource as JSON.
        """
        if (self.conf_value("yarn.acl.enable") or "").lower() == "false":
            return None
        response = spnego.get(
            f"{self.base_url}/ws/v1/cluster/queues/{queue}/access",
            params={"user": user, "queue-acl-type": "SUBMIT_APPLICATIONS"},
            headers={"Accept": "application/xml"}, timeout=TIMEOUT_S)
        try:
            root = ET.fromstring(response.text)
        except ET.ParseError:
            raise RestError(f"{response.status_code}: {response.text[:300]}") from None
        if response.status_code != 200:
            raise RestError(f"{response.status_code}: {root.findtext('message') or ''}")
        return root.findtext("allowed", "").strip().lower() == "true"

    def set_priority(self, app_id: str, priority: int, user: str) -> int:
        """YARN's application priority of ``app_id`` set to ``priority``; the one the RM
        gave (it lowers one above the queue's or the cluster's maximum). ``user`` names the
        caller where the web UI takes a name (simple authentication); Kerberos' is its own."""
        response = spnego.put(f"{self.base_url}/ws/v1/cluster/apps/{app_id}/priority",
                              params={"user.name": user}, json={"priority": priority},
                              headers={"Accept": "application/json"}, timeout=TIMEOUT_S,
                              allow_redirects=False)
        if response.status_code != 200:
            raise _refusal(response)
        return int(response.json().get("priority", priority))

    def application_report(self, app_id: str) -> AppReport:
        return AppReport.from_json(self._get(f"apps/{app_id}")["app"])

    def get_applications(self, states: list[str]) -> list[AppReport]:
        apps = (self._get("apps", states=",".join(states)).get("apps") or {}).get("app") or []
        return [AppReport.from_json(app) for app in apps]


def _refusal(response: requests.Response) -> RestError:
    """The RM's error answer, in its own words where it gave them."""
    try:
        message = response.json()["RemoteException"]["message"]
    except (ValueError, KeyError, TypeError):
        message = response.text[:300]
    return RestError(f"{response.status_code}: {message}")


def reports_reader(failover_wait_s: float = FAILOVER_WAIT_S) -> RestReports | None:
    """A reader for the RM that answers first, or None where REST is not an option.

    Where RMs answer but only as standbys, a failover is under way: they are asked again
    for up to ``failover_wait_s``, which beats starting skein's driver to wait for it."""
    deadline = time.monotonic() + failover_wait_s
    while True:
        standby = False
        for url in web_urls(hadoopconf.client_configuration()):
            reader = RestReports(url)
            try:
                # The apps resource itself: a web UI that wants a login answers 401 here.
                reader._get("apps", limit="1")
            except StandbyError:
                standby = True
                continue
            except (requests.RequestException, RestError, ValueError):
                continue  # a stopped RM, or one we may not read: try the next one
            return reader
        if not standby or time.monotonic() > deadline:
            return None
        time.sleep(FAILOVER_POLL_S)


def web_urls(conf: dict[str, str]) -> list[str]:
    """The RMs' web addresses the configuration names, every RM of an HA pair included."""
    return list(web_urls_by_id(conf).values())


def web_urls_by_id(conf: dict[str, str]) -> dict[str, str]:
    """Each RM's web address by its id in yarn.resourcemanager.ha.rm-ids ("" without HA)."""
    https = conf.get("yarn.http.policy", "HTTP_ONLY") == "HTTPS_ONLY"
    key = "yarn.resourcemanager.webapp." + ("https.address" if https else "address")
    port = 8090 if https else 8088
    rm_ids = [""]
    if conf.get("yarn.resourcemanager.ha.enabled") == "true":
        rm_ids = [f".{i.strip()}" for i in conf.get("yarn.resourcemanager.ha.rm-ids", "").split(",")
                  if i.strip()]
    urls = {}
    for suffix in rm_ids:
        host = conf.get(f"yarn.resourcemanager.hostname{suffix}")
        address = conf.get(f"{key}{suffix}") or (f"{host}:{port}" if host else None)
        if address:
            address = _expand(address, conf)
            if not address.startswith("0.0.0.0"):  # a bind address, not one to connect to
                urls[suffix.lstrip(".")] = f"{'https' if https else 'http'}://{address}"
    return urls


def no_active_rm(conf: dict[str, str],
                 failures: dict[str, Exception]) -> NoActiveResourceManager | None:
    """On an HA configuration where no RM answered as the active one (``failures``: why each
    web address did not), the error that names each rm-id; None without HA, or where some
    RM's answer was an error of its own (a Kerberos login, say: pre-flight is skipped)."""
    if conf.get("yarn.resourcemanager.ha.enabled", "false").lower() != "true":
        return None
    urls = web_urls_by_id(conf)
    if not urls or set(urls.values()) - set(failures):
        return None
    standby = all(isinstance(failures[url], StandbyError) for url in urls.values())
    unanswered = all(isinstance(failures[url], requests.RequestException)
                     for url in urls.values())
    if not standby and not unanswered:
        return None
    each = "; ".join(f"{rm} at {url}: {failures[url]}" for rm, url in urls.items())
    if standby:
        return NoActiveResourceManager(
            f"Every ResourceManager of yarn.resourcemanager.ha.rm-ids is a standby, none is "
            f"active ({each}).",
            hint="the RMs elect the active one through ZooKeeper (hadoop.zk.address): ask "
                 "the cluster's administrators; `yarn rmadmin -getAllServiceState` shows "
                 "the states.")
    return NoActiveResourceManager(
        f"No ResourceManager of yarn.resourcemanager.ha.rm-ids answers ({each}).",
        hint="check yarn.resourcemanager.webapp.address.<id> (or hostname.<id>) of each "
             "rm-id in yarn-site.xml (HADOOP_CONF_DIR), and that the RMs are up.")


def _expand(value: str, conf: dict[str, str]) -> str:
    """Hadoop's ${name} substitution, from the configuration itself."""
    return re.sub(r"\$\{([^}]+)\}", lambda m: conf.get(m.group(1), m.group(0)), value)
