"""Unit tests for the layers' shared directory (tfyarn/submission/sharedlayers.py): whose
subdirectories a submit looks in, which copy of a layer it uses, what it refuses and says,
and the two settings as a cluster's defaults file gives them. No HDFS: the yarn test
(tests/test_shared_layers_yarn.py) proves the same on the local cluster."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from jobtools import write_doc

from appmaster.common.storage import RemoteFile
from tfyarn.jobconfig import JobConfigError, envvalues, load_job
from tfyarn.submission import sharedlayers
from tfyarn.submission.sharedlayers import Subdir, choose, subdir_problem, writers

LAYER = "layer-numpy-0123abcd.tar"


def listing(writer: str, owner: str, name: str = LAYER) -> dict[str, RemoteFile]:
    path = f"{writer}/{name}"
    return {path: RemoteFile(path, 10, 1, 0o644, owner)}


def test_a_submit_looks_in_its_own_subdir_then_in_those_it_trusts() -> None:
    assert writers("bob", None, "hadoop") == ("bob", "hadoop")  # the directory's owner
    assert writers("bob", ("alice", "bob", "carol"), "hadoop") == ("bob", "alice", "carol")
    assert writers("bob", (), "hadoop") == ("bob",)  # trusting nobody
    assert writers("hadoop", None, "hadoop") == ("hadoop",)


def test_its_own_copy_first_then_the_first_trusted_writers() -> None:
    both = {**listing("bob", "bob"), **listing("alice", "alice")}
    assert choose(LAYER, ("bob", "alice"), {"bob": listing("bob", "bob"),
                                            "alice": listing("alice", "alice")}) == ("bob", [])
    assert choose(LAYER, ("bob", "alice"), {"bob": {}, "alice": both}) == ("alice", [])
    assert choose(LAYER, ("bob", "alice"), {"alice": listing("alice", "alice")}) == (
        "alice", [])
    assert choose("layer-other-1.tar", ("bob", "alice"), {"alice": both}) == (None, [])


def test_a_file_someone_else_wrote_in_a_writers_subdir_is_passed_over_with_a_line() -> None:
    planted = {"alice": listing("alice", "mallory"), "carol": listing("carol", "carol")}
    assert choose(LAYER, ("bob", "alice", "carol"), planted) == (
        "carol", [f"alice/{LAYER}: written by mallory, not alice"])
    assert choose(LAYER, ("bob", "alice"), planted) == (
        None, [f"alice/{LAYER}: written by mallory, not alice"])


def test_a_layer_others_may_write_is_passed_over_and_ones_own_refused() -> None:
    open_file = {f"alice/{LAYER}": RemoteFile(f"alice/{LAYER}", 10, 1, 0o666, "alice")}
    assert choose(LAYER, ("bob", "alice"), {"alice": open_file}) == (
        None, [f"alice/{LAYER}: others than alice may write it (mode 0666)"])
    text = sharedlayers.bad_own_layer("hdfs:///l", f"bob/{LAYER}: written by mallory, not "
                                      "bob").describe()
    assert f"your environment layer hdfs:///l/bob/{LAYER} cannot be trusted: written by " \
        "mallory" in text
    assert f"hdfs dfs -rm -f 'hdfs:///l/bob/{LAYER}*'" in text


def test_a_subdir_is_trusted_only_when_its_writer_owns_it_and_nobody_else_may_write() -> None:
    assert subdir_problem("alice", Subdir("alice", 0o755)) is None
    assert subdir_problem("alice", Subdir("mallory", 0o755)) == (
        "it belongs to mallory, not alice")
    for mode in (0o775, 0o757, 0o777):
        assert subdir_problem("alice", Subdir("alice", mode)) == (
            f"others than alice may write in it (mode {mode:04o}: group or others may write)")


def test_user_names() -> None:
    for good in ("alice", "hadoop", "svc_ml-01", "j.doe", "1234"):
        assert envvalues.user_name_problem(good) is None, good
    for bad in ("", "../alice", "a/b", ".hidden", "-x", "two words", 3, None):
        assert "is not a user name" in (envvalues.user_name_problem(bad) or ""), bad


def test_layers_settings() -> None:
    d, t = envvalues.DIR_KEY, envvalues.TRUST_KEY
    assert envvalues.layers_settings({}) == (None, None, [])
    assert envvalues.layers_settings({d: " hdfs:///tfyarn/layers/ ", t: "alice, hadoop"}) == (
        "hdfs:///tfyarn/layers", ("alice", "hadoop"), [])
    assert envvalues.layers_settings({d: "hdfs:///l", t: []}) == ("hdfs:///l", (), [])
    for url in ("/tfyarn/layers", "file:///tmp/layers", "hdfs:///${USER_NAME}/l", 3):
        _, _, problems = envvalues.layers_settings({d: url})
        assert [p[0] for p in problems] == [d], url
        assert "hdfs:// or viewfs:// URL" in problems[0][1]
    _, trusted, problems = envvalues.layers_settings({t: ["alice", "../bob"]})
    assert trusted is None and [(p[0], p[3]) for p in problems] == [(t, "../bob")]
    _, _, problems = envvalues.layers_settings({t: {"alice": 1}})
    assert "must be a list of user names" in problems[0][1]


def test_the_directory_is_named_alike_by_every_user() -> None:
    """YARN's caches know a file by its URL as written: hdfs:/// gets the authority."""
    nn = "hdfs://nn:8020"
    assert sharedlayers.qualified("hdfs:///tfyarn/layers/", nn) == f"{nn}/tfyarn/layers"
    assert sharedlayers.qualified("hdfs://other:9000/l", nn) == "hdfs://other:9000/l"
    assert sharedlayers.qualified("viewfs:///l", nn) == "viewfs:///l"


def test_the_errors_name_the_key_and_the_fix() -> None:
    url = "hdfs://nn:8020/tfyarn/layers"
    missing = sharedlayers.missing_dir(url).describe()
    assert envvalues.DIR_KEY in missing and f"{url} does not exist" in missing
    assert f"hdfs dfs -mkdir -p {url} && hdfs dfs -chmod 1777 {url}" in missing
    closed = sharedlayers.may_not_write(url, "bob", "Permission denied: user=bob").describe()
    assert "bob may not write in" in closed and f"hdfs dfs -chmod 1777 {url}" in closed
    squatted = sharedlayers.bad_own_subdir(url, "bob", "it belongs to mallory, not bob")
    assert f"hdfs dfs -rm -r {url}/bob" in squatted.describe()
    opened = sharedlayers.bad_own_subdir(url, "bob", subdir_problem(
        "bob", Subdir("bob", 0o777)) or "")
    assert f"hdfs dfs -chmod 755 {url}/bob" in opened.describe()


def test_an_administrator_sets_the_directory_once_in_the_cluster_defaults(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cluster = tmp_path / "etc" / "tfyarn.yaml"
    cluster.parent.mkdir()
    cluster.write_text(yaml.safe_dump({"site.global.python.layers.dir": "hdfs:///tfyarn/layers",
                                       "site.global.python.layers.trust": ["hadoop"]}))
    monkeypatch.setenv("TFYARN_SYSTEM_CONFIG", str(cluster))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text("print('training')\n")
    write_doc(tmp_path / "resources.json", {"global": {}, "components": {
        "worker": {"yarn.role.priority": "1", "yarn.component.instances": "1"}}})
    app = {"site.global.user.scripts.entry": "train.py"}
    write_doc(tmp_path / "appConfig.json", {"global": app})
    job = load_job("resources.json", "appConfig.json")
    assert (job.spec.layers_dir, job.spec.layers_trust) == ("hdfs:///tfyarn/layers", ("hadoop",))
    write_doc(tmp_path / "appConfig.json", {"global": {
        **app, "site.global.python.layers.trust": ["alice", "a/b"]}})
    with pytest.raises(JobConfigError) as raised:
        load_job("resources.json", "appConfig.json")
    assert 'global."site.global.python.layers.trust"' in str(raised.value)
    assert "'a/b' is not a user name" in str(raised.value)
