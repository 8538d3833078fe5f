"""Issue 37 on the real local YARN: one copy of each environment layer per cluster, not per
user. In the shared directory `tfyarn cluster up` makes (/tfyarn/layers, 1777) the cluster's
user A ships an environment; user B (another HDFS user, HADOOP_USER_NAME on this non-secure
cluster), trusting A, ships the same one: nothing uploaded, B's job runs from A's layers,
and the NodeManager that ran both jobs holds one copy of each, in its public cache. B
trusting nobody uploads its own copy into its subdirectory; a file in A's subdirectory that
someone else owns is not used.

Lean: the environment is this interpreter's layer (packed by the session's warm-up) and a
tiny distribution of its own, not the suite's 18 layers twice over."""

from __future__ import annotations

import getpass
import time
import uuid
from dataclasses import replace
from pathlib import Path

import pytest
from test_env_layers_yarn import localized_layers, run_on_node, tiny_distribution

from tfyarn.localyarn import hdfs as local_hdfs
from tfyarn.submission import envpack, layership, sharedlayers
from tfyarn.submission.environments import JobEnvironmentError

pytestmark = pytest.mark.yarn

B = "tfyarn-test-bob"
PROBE = "tfyarn_layer_probe"


def as_user(monkeypatch: pytest.MonkeyPatch, user: str | None) -> None:
    """hdfs-native and skein's driver (started anew) act as ``user``; None: the cluster's."""
    if user is None:
        monkeypatch.delenv("HADOOP_USER_NAME", raising=False)
    else:
        monkeypatch.setenv("HADOOP_USER_NAME", user)


def test_one_copy_of_each_layer_per_cluster(yarn_cluster, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    layout = yarn_cluster.layout
    a = getpass.getuser()  # the cluster's user: the shared directory's owner
    local_hdfs.prepare_directories(layout)  # as `tfyarn cluster up` does: a cluster made before
    admin = local_hdfs.client(layout)  # A is HDFS's superuser here: an administrator's chores
    admin.mkdirs(f"/user/{B}", create_parent=True)  # B's home, where skein stages B's app
    admin.set_owner(f"/user/{B}", B)
    shared = f"{layout.default_fs}{local_hdfs.SHARED_LAYERS_DIR}"
    token = uuid.uuid4().hex
    env = replace(envpack.current_env(), editable={}, dropped=frozenset(),
                  site_dirs=(tiny_distribution(tmp_path, token),))
    script = (f"./pyenv/bin/python -c 'import {PROBE}; "
              f"assert {PROBE}.TOKEN == \"{token}\", {PROBE}.TOKEN'")
    nm = next(n for n in layout.node_managers if not n.partition)
    timings: dict[str, float] = {}
    site_a = ""  # A's copy of the tiny distribution's layer: this run's alone
    try:
        started = time.monotonic()
        shipped_a = layership.ship(env, echo=print, shared_url=shared)
        timings["A ships"] = time.monotonic() - started
        site_a = next(url for link, url, _ in shipped_a.layers if link == "pyenv-site-site")
        assert "site" in shipped_a.uploaded  # its new distribution's layer
        assert all(url.startswith(f"{shared}/{a}/layer-") and visibility == "public"
                   for _, url, visibility in shipped_a.layers), shipped_a.layers
        before = localized_layers(layout, nm)
        app_a, outcome = run_on_node(nm, shipped_a.files(), script)
        assert outcome.startswith("SUCCEEDED"), f"{app_a}: {outcome}"
        after_a = localized_layers(layout, nm)

        as_user(monkeypatch, B)
        lines: list[str] = []
        started = time.monotonic()
        # hdfs:///…, as a defaults file says it: the same URLs as A's, or YARN caches twice
        shipped_b = layership.ship(env, echo=lines.append, trusted=(a,),
                                   shared_url=f"hdfs://{local_hdfs.SHARED_LAYERS_DIR}")
        timings["B ships, trusting A"] = time.monotonic() - started
        assert (shipped_b.uploaded, shipped_b.layers) == ((), shipped_a.layers), lines
        assert f"2 there already, 0 uploaded now; public in the NodeManagers' cache; from " \
               f"{shared}: 0 of {B}'s, 2 of {a}'s" in lines[-1], lines
        # B's use of A's layers, for `tfyarn env prune`: a marker each in B's subdirectory
        marks = admin.list_status(f"{local_hdfs.SHARED_LAYERS_DIR}/{B}/.used/{a}")
        assert {(m.path.rsplit("/", 1)[1], m.owner) for m in marks} == {
            (url.rsplit("/", 1)[1], B) for _, url, _ in shipped_a.layers}
        app_b, outcome = run_on_node(nm, shipped_b.files(), script)
        assert outcome.startswith("SUCCEEDED"), f"{app_b}: {outcome}"
        # One copy of each layer on the node that ran both jobs: A's job put it in the
        # public cache (the interpreter's may be there from an earlier run), B's job none.
        assert localized_layers(layout, nm) == after_a
        node = layout.node_dir(nm)
        names = sorted(url.rsplit("/", 1)[1] for _, url, _ in shipped_a.layers)
        assert sorted(p.name for p in after_a - before) in (names, names[1:]), after_a - before
        assert all(p.relative_to(node).parts[:2] == ("local", "filecache")
                   for p in after_a - before), after_a - before
        assert (node / "local" / "usercache" / B).is_dir()  # B's job ran there, as B
        assert not list(node.glob(f"local/usercache/{B}/filecache/*/layer-*"))

        lines.clear()
        shipped_own = layership.ship(env, echo=lines.append, shared_url=shared, trusted=())
        assert sorted(shipped_own.uploaded) == ["python", "site"], lines
        assert all(url.startswith(f"{shared}/{B}/layer-") for _, url, _ in shipped_own.layers)
        assert any(line.startswith(f"  uploaded site to {shared}/{B}/layer-site-")
                   for line in lines), lines

        planted = "layer-planted-0.tar"
        as_user(monkeypatch, None)
        admin.create(f"{local_hdfs.SHARED_LAYERS_DIR}/{a}/{planted}").close()
        admin.set_owner(f"{local_hdfs.SHARED_LAYERS_DIR}/{a}/{planted}", "tfyarn-test-mallory")
        as_user(monkeypatch, B)
        lines.clear()
        store = sharedlayers.SharedStore(shared, B, (a,), lines.append)
        assert store.find(planted) is None
        assert lines == [f"  not using {shared}/{a}/{planted}: written by "
                         f"tfyarn-test-mallory, not {a}"], lines
    finally:
        as_user(monkeypatch, None)
        admin.delete(f"{local_hdfs.SHARED_LAYERS_DIR}/{B}", recursive=True)
        for path in (f"{local_hdfs.SHARED_LAYERS_DIR}/{a}/layer-planted-0.tar",
                     *([site_a[len(layout.default_fs):], site_a[len(layout.default_fs):]
                        + layership.RECORD_SUFFIX] if site_a else [])):
            admin.delete(path)
        print(", ".join(f"{what}: {seconds:.2f} s" for what, seconds in timings.items()))


def test_a_directory_missing_or_closed_is_refused_with_the_fix(
        yarn_cluster, monkeypatch: pytest.MonkeyPatch) -> None:
    """Before anything is submitted: no such directory; one B may not write in (A's home)."""
    fs = yarn_cluster.layout.default_fs
    as_user(monkeypatch, B)
    with pytest.raises(JobEnvironmentError) as missing:
        sharedlayers.SharedStore(f"{fs}/no/such/layers", B, None, print)
    assert f"hdfs dfs -mkdir -p {fs}/no/such/layers && hdfs dfs -chmod 1777 " in \
        missing.value.describe()
    home = f"{fs}/user/{getpass.getuser()}"
    store = sharedlayers.SharedStore(home, B, None, print)  # read: fine; written: refused
    with pytest.raises(JobEnvironmentError) as closed:
        store.upload_to("layer-x-0.tar")
    text = closed.value.describe()
    assert f"{B} may not write in {home} (Permission denied: user={B}" in text, text
    assert f"hdfs dfs -chmod 1777 {home}" in text, text
