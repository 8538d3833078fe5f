"""Issue 37 on the real local YARN: the shipped env in layers. A one-package change (a tiny
distribution pip installs beside this env) packs, uploads and localizes one new layer;
the node takes every other layer from its cache. And a layer on HDFS that is not what its
record says is refused by name. The session's warm-up (tests/barenodes.py) has every layer
of this env on every node already."""

from __future__ import annotations

import subprocess
import sys
import uuid
from dataclasses import replace
from pathlib import Path

import pytest
from barenodes import pinned_service, run_services

from tfyarn.submission import envlayers, envpack, layership
from tfyarn.submission.environments import JobEnvironmentError, cache_url

pytestmark = pytest.mark.yarn

PROBE = "tfyarn_layer_probe"


def localized_layers(layout, nm) -> set[Path]:
    """The layers a NodeManager holds, each unpacked once in its cache: YARN's public cache
    (local/filecache) or a user's private one (local/usercache/<user>/filecache)."""
    node = layout.node_dir(nm)
    return {*node.glob("local/filecache/*/layer-*"),
            *node.glob("local/usercache/*/filecache/*/layer-*")}


def tiny_distribution(into: Path, token: str) -> Path:
    """A real distribution, installed by pip into a site dir of its own (its RECORD names
    the token's file, so its key is new in every run)."""
    project = into / "project"
    (project / PROBE).mkdir(parents=True)
    (project / PROBE / "__init__.py").write_text(f"TOKEN = {token!r}\n")
    (project / "pyproject.toml").write_text(
        f'[project]\nname = "{PROBE}"\nversion = "1.0"\n'
        '[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n')
    site = into / "site-packages"
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                    "--no-index", "--no-build-isolation", "--disable-pip-version-check",
                    "--target", str(site), str(project)], check=True, timeout=300)
    return site


def run_on_node(nm, files: dict, script: str, timeout_s: float = 300) -> tuple[str, str]:
    """A one-container skein application on ``nm``; (application id, final status)."""
    app_id, report = run_services("tfyarn-test-env-layers",
                                  {"probe": pinned_service(nm, files, script)}, timeout_s,
                                  "the probe did not end")
    return app_id, f"{report.final_status}: {report.diagnostics}"


def test_a_one_package_change_ships_one_layer(yarn_cluster, tmp_path: Path) -> None:
    layout = yarn_cluster.layout
    base = envpack.current_env()
    unchanged = layership.ship(base, echo=lambda _: None)
    assert unchanged.packed == unchanged.uploaded == ()  # the warm-up shipped them all
    token = uuid.uuid4().hex
    changed = replace(base, site_dirs=(*base.site_dirs, tiny_distribution(tmp_path, token)))
    keys = {layer.label: layer.key for layer in envlayers.split(base)}
    new = [layer.label for layer in envlayers.split(changed) if keys.get(layer.label) !=
           layer.key]
    assert new == ["site"]
    lines: list[str] = []
    shipped = layership.ship(changed, echo=lines.append)
    assert (shipped.packed, shipped.uploaded) == (("site",), ("site",)), lines
    print("\n".join(lines))  # what the change cost, for `pytest -s`
    site_url = next(url for link, url, _ in shipped.layers if link == "pyenv-site-site")
    nm = next(n for n in layout.node_managers if not n.partition)
    before = localized_layers(layout, nm)
    assert {p.name for p in before} >= {url.rsplit("/", 1)[1] for _, url, _ in
                                        unchanged.layers}, "the warm-up left layers out"
    try:
        app_id, outcome = run_on_node(nm, shipped.files(), (
            f"./pyenv/bin/python -c 'import {PROBE}, numpy, skein; "
            f"assert {PROBE}.TOKEN == \"{token}\", {PROBE}.TOKEN'"))
        assert outcome.startswith("SUCCEEDED"), f"{app_id}: {outcome}"
        # the new layer alone; the interpreter, numpy's, skein's... from the node's cache
        added = localized_layers(layout, nm) - before
        assert [p.name for p in added] == [site_url.rsplit("/", 1)[1]], sorted(added)
    finally:
        from appmaster.common.storage import RemoteDir

        directory, name = site_url.rsplit("/", 1)
        for old in (name, name + layership.RECORD_SUFFIX):
            RemoteDir(directory).delete(old)


def test_a_layer_not_as_its_record_says_is_refused(yarn_cluster) -> None:
    """A layer cut short or replaced on HDFS (its size not its record's), or one without a
    record: refused before anything is submitted, naming the file and the fix."""
    from appmaster.common.storage import RemoteDir

    directory = cache_url(f"layers-check-{uuid.uuid4().hex[:8]}")
    remote = RemoteDir(directory)
    remote.write_bytes("layer-x-1.tar.gz", b"cut short")
    remote.write_bytes("layer-x-1.tar.gz.json", b'{"size": 1000, "sha256": "00"}')
    remote.write_bytes("layer-y-2.tar.gz", b"no record")
    try:
        found = remote.list_files()
        verified = layership.Verified(Path("/nonexistent/verified.json"))
        with pytest.raises(JobEnvironmentError) as cut:
            layership.check_remote(remote, "layer-x-1.tar.gz", found["layer-x-1.tar.gz"],
                                   f"{directory}/layer-x-1.tar.gz", verified)
        text = cut.value.describe()
        assert f"{directory}/layer-x-1.tar.gz is 9 bytes, its record says 1000" in text
        assert f"hdfs dfs -rm -f {directory}/layer-x-1.tar.gz" in text
        with pytest.raises(JobEnvironmentError, match="has no record beside it"):
            layership.check_remote(remote, "layer-y-2.tar.gz", found["layer-y-2.tar.gz"],
                                   f"{directory}/layer-y-2.tar.gz", verified, wait_s=0.5)
    finally:
        for name in ("layer-x-1.tar.gz", "layer-x-1.tar.gz.json", "layer-y-2.tar.gz"):
            remote.delete(name)
