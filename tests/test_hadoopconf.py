"""One reader of the Hadoop client configuration, for the default file system, the name
services and the ResourceManager's web address alike."""

from __future__ import annotations

from pathlib import Path

from tfyarn.hadoop import rmrest
from tfyarn.hadoop.hadoopconf import (
    SYSTEM_CONF_DIR,
    client_configuration,
    conf_dirs,
    parse_properties,
)
from tfyarn.submission import environments, workdir


def write(conf_dir: Path, name: str, **properties: str) -> None:
    conf_dir.mkdir(parents=True, exist_ok=True)
    body = "".join(f"<property><name>{k}</name><value> {v} </value></property>"
                   for k, v in properties.items())
    (conf_dir / name).write_text(f"<?xml version='1.0'?><configuration>{body}</configuration>")


def test_where_the_configuration_is_looked_for(tmp_path: Path) -> None:
    environ = {"YARN_CONF_DIR": "/y", "HADOOP_CONF_DIR": "/h", "HADOOP_HOME": "/opt/hadoop"}
    assert conf_dirs(environ) == [Path("/y"), Path("/h"), Path("/opt/hadoop/etc/hadoop"),
                                  SYSTEM_CONF_DIR]
    assert conf_dirs({}) == [SYSTEM_CONF_DIR]


def test_parse_properties() -> None:
    assert parse_properties("<configuration><property><name> a.b </name><value> 1 </value>"
                            "</property><property><name>c</name></property></configuration>"
                            ) == {"a.b": "1", "c": ""}
    assert parse_properties("<configuration>") == {}


def test_each_file_from_the_first_directory_that_has_it(tmp_path: Path) -> None:
    yarn_dir, hadoop_dir = tmp_path / "yarn", tmp_path / "hadoop"
    write(yarn_dir, "yarn-site.xml", **{"yarn.resourcemanager.hostname": "rm.from-yarn-dir"})
    write(hadoop_dir, "yarn-site.xml", **{"yarn.resourcemanager.hostname": "rm.shadowed"})
    write(hadoop_dir, "core-site.xml", **{"fs.defaultFS": "hdfs://nn:8020"})
    write(hadoop_dir, "hdfs-site.xml", **{"dfs.nameservices": "ns1, ns2"})
    environ = {"YARN_CONF_DIR": str(yarn_dir), "HADOOP_CONF_DIR": str(hadoop_dir)}
    conf = client_configuration(environ)
    assert conf["yarn.resourcemanager.hostname"] == "rm.from-yarn-dir"
    assert conf["fs.defaultFS"] == "hdfs://nn:8020"
    # every reader sees the same configuration
    assert rmrest.web_urls(conf) == ["http://rm.from-yarn-dir:8088"]
    assert environments.default_fs(environ) == "hdfs://nn:8020"
    assert workdir._name_services(environ) == {"ns1", "ns2"}


def test_viewfs_mount_tables_are_name_services(tmp_path: Path) -> None:
    write(tmp_path, "core-site.xml", **{"fs.defaultFS": "viewfs://cluster",
                                         "fs.viewfs.mounttable.cluster.link./data": "hdfs://a/d"})
    assert workdir._name_services({"HADOOP_CONF_DIR": str(tmp_path)}) == {"cluster"}
