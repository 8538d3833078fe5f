"""Reading Hadoop's *-site.xml files: shared by the client (tfyarn/hadoop/hadoopconf.py) and the
AppMaster (appmaster/hdfstokens.py), which is shipped without tfyarn and reads the node's
HADOOP_CONF_DIR."""

from __future__ import annotations

import xml.etree.ElementTree as ElementTree
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
