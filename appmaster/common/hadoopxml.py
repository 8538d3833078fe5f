"""Reading Hadoop's *-site.xml files: shared by the client (tfyarn/hadoop/hadoopconf.py) and the
AppMaster (appmaster/common/hdfstokens.py), which is shipped without tfyarn and reads the node's
HADOOP_CONF_DIR."""

from __future__ import annotations

import xml.etree.ElementTree as ElementTree
from collections.abc import Callable
from pathlib import Path


def parse_properties(text: str) -> dict[str, str]:
    """A *-site.xml's properties, names and values stripped; {} for a file that is no XML."""
    try:
        root = ElementTree.fromstring(text)
    except ElementTree.ParseError:
        return {}
    return {name.strip(): (prop.findtext("value") or "").strip()
            for prop in root.iter("property") if (name := prop.findtext("name"))}


def site_value(conf_dir: str | None, file: str, key: str) -> str | None:
    """A property of HADOOP_CONF_DIR/<file>, or None (no such directory, file or key)."""
    path = Path(conf_dir) / file if conf_dir else None
    if path is None or not path.is_file():
        return None
    return parse_properties(path.read_text(errors="replace")).get(key)


def proxy_base(conf_dir: str | None, app_id: str) -> str | None:
    """The application's URL on YARN's web proxy (``http://host:port/proxy/<app id>``), as
    yarn-site.xml names it: the stand-alone proxy (yarn.web-proxy.address) or the
    ResourceManager's own (the first RM of an HA pair), over HTTPS where yarn.http.policy
    says HTTPS_ONLY. None where the configuration does not say."""
    def value(key: str) -> str | None:
        return site_value(conf_dir, "yarn-site.xml", key)

    https, webapp = _webapp_key(value)
    first_rm = (value("yarn.resourcemanager.ha.rm-ids") or "").split(",")[0].strip()
    address = (value("yarn.web-proxy.address")
               or (first_rm and value(f"{webapp}.{first_rm}")) or value(webapp))
    if not address or not app_id:
        return None
    return f"{'https' if https else 'http'}://{address}/proxy/{app_id}"


def rm_web_bases(conf_dir: str | None) -> list[str]:
    """Each ResourceManager's web address (every RM of an HA pair), as yarn-site.xml names
    it: [] where it does not."""
    def value(key: str) -> str | None:
        return site_value(conf_dir, "yarn-site.xml", key)

    https, webapp = _webapp_key(value)
    ids = [i.strip() for i in (value("yarn.resourcemanager.ha.rm-ids") or "").split(",")
           if i.strip()]
    addresses = [value(f"{webapp}.{i}") for i in ids] if ids else [value(webapp)]
    return [f"{'https' if https else 'http'}://{address}" for address in addresses
            if address and not address.startswith("0.0.0.0")]


def _webapp_key(value: Callable[[str], str | None]) -> tuple[bool, str]:
    """(HTTPS only?, the key of the RM's web address) as yarn.http.policy says."""
    https = (value("yarn.http.policy") or "").upper() == "HTTPS_ONLY"
    return https, ("yarn.resourcemanager.webapp.https.address" if https
                   else "yarn.resourcemanager.webapp.address")
