"""The environment in content-addressed layers (tfyarn/submission/envlayers.py, issue 37):
what each layer carries, what changes its key, and that the layers, unpacked side by side
as YARN does, are one environment to ./pyenv/bin/python. Pure logic on small made-up
environments and on pieces of this interpreter's; the whole of it is shipped to the local
YARN by tests/test_env_layers_yarn.py."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import time
from pathlib import Path

import pytest
from test_envpack import dist, made_up_env

from tfyarn.submission import envlayers, envpack, layership
from tfyarn.submission.environments import JobEnvironment, JobEnvironmentError

LARGE = 7  # bytes: in the made-up env, "large" is tensorflow alone (numpy: 5)


@pytest.fixture
def env(tmp_path: Path) -> envpack.EnvSource:
    return made_up_env(tmp_path)


def by_label(layers: list[envlayers.Layer]) -> dict[str, envlayers.Layer]:
    return {layer.label: layer for layer in layers}


def names(layer: envlayers.Layer, source: envpack.EnvSource) -> set[str]:
    return {arcname for _, arcname in envlayers.members(layer, source)}


def test_the_layers_carry_the_whole_env_once(env: envpack.EnvSource) -> None:
    layers = envlayers.split(env, LARGE)
    assert [layer.label for layer in layers] == ["python", "tensorflow", "site"]
    assert [layer.link for layer in layers] == ["pyenv", "pyenv-site-tensorflow",
                                                "pyenv-site-site"]
    found = by_label(layers)
    assert names(found["tensorflow"], env) == {
        "tensorflow/__init__.py", "tensorflow-2.21.0.dist-info/METADATA",
        "tensorflow-2.21.0.dist-info/RECORD"}  # its C++ headers left out
    assert names(found["site"], env) >= {"numpy/__init__.py", "mylib/__init__.py",
                                         "otherlib/__init__.py", "helper.py"}
    assert not [n for n in names(found["site"], env) if "tfyarn" in n or "__editable__" in n
                or n.endswith((".pyc", "otherlib.pth"))]
    assert found["site"].dists == ("mylib==1.0", "numpy==2.0.0", "otherlib==0.1")
    # together, what the one pack of the whole env held (less the launchers)
    site = f"{env.lib}/site-packages/"
    joined = {n if layer.kind == "python" else site + n
              for layer in layers for n in names(layer, env)}
    assert joined == {n for _, n in envpack.pack_members(env)}


def test_a_key_changes_with_its_layer_alone(env: envpack.EnvSource) -> None:
    keys = {layer.label: layer.key for layer in envlayers.split(env, LARGE)}
    assert keys == {layer.label: layer.key for layer in envlayers.split(env, LARGE)}
    site = env.site_dirs[0]
    (site / "numpy-2.0.0.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: numpy\nVersion: 2.0.1\n")
    after_numpy = {layer.label: layer.key for layer in envlayers.split(env, LARGE)}
    assert [k for k in keys if keys[k] != after_numpy[k]] == ["site"]
    # the same version reinstalled with other files: its RECORD says so
    record = site / "tensorflow-2.21.0.dist-info" / "RECORD"
    record.write_text(record.read_text() + "tensorflow/extra.py,,3\n")
    after_tf = {layer.label: layer.key for layer in envlayers.split(env, LARGE)}
    assert [k for k in keys if after_numpy[k] != after_tf[k]] == ["tensorflow"]
    (env.editable["mylib"] / "__init__.py").write_text("VALUE = 2\n")
    after_source = {layer.label: layer.key for layer in envlayers.split(env, LARGE)}
    assert [k for k in keys if after_tf[k] != after_source[k]] == ["site"]
    (env.editable["mylib"] / "__pycache__" / "y.pyc").write_text("compiled: no source")
    assert {layer.label: layer.key for layer in envlayers.split(env, LARGE)} == after_source


def test_what_no_distribution_owns_goes_with_the_site_layer(env: envpack.EnvSource) -> None:
    site = env.site_dirs[0]
    (site / "copied_by_hand.py").write_text("A = 1\n")
    before = by_label(envlayers.split(env, LARGE))["site"]
    assert "copied_by_hand.py" in names(before, env)
    (site / "copied_by_hand.py").write_text("A = 22\n")
    os.utime(site / "copied_by_hand.py", ns=(time.time_ns(), time.time_ns() + 10**9))
    assert by_label(envlayers.split(env, LARGE))["site"].key != before.key


def test_a_shared_namespace_keeps_one_layer_per_distribution(tmp_path: Path,
                                                             env: envpack.EnvSource) -> None:
    """The CUDA wheels share nvidia/ with an empty __init__.py: each stays a layer of its
    own, the empty __init__.py left out, so Python joins nvidia/ across them (PEP 420)."""
    site = env.site_dirs[0]
    dist(site, "nvidia-cublas", "12.9", {"nvidia/__init__.py": "",
                                         "nvidia/cublas/lib/libcublas.so.12": "x" * 40})
    dist(site, "nvidia-cudnn", "9.10", {"nvidia/__init__.py": "",
                                        "nvidia/cudnn/lib/libcudnn.so.9": "y" * 40})
    found = by_label(envlayers.split(env, LARGE))
    assert names(found["nvidia-cublas"], env) == {
        "nvidia/cublas/lib/libcublas.so.12", "nvidia-cublas-12.9.dist-info/METADATA",
        "nvidia-cublas-12.9.dist-info/RECORD"}
    assert "nvidia/cudnn/lib/libcudnn.so.9" in names(found["nvidia-cudnn"], env)
    assert not [n for layer in found.values() for n in names(layer, env)
                if n == "nvidia/__init__.py"]


def test_distributions_sharing_code_travel_together(env: envpack.EnvSource) -> None:
    """A package with code in its __init__.py that two distributions fill cannot be
    joined across layers: they go as one."""
    site = env.site_dirs[0]
    dist(site, "plugin-core", "1.0", {"plugin/__init__.py": "REGISTRY = {}\n",
                                      "plugin/core.py": "x" * 40})
    dist(site, "plugin-extra", "1.0", {"plugin/__init__.py": "REGISTRY = {}\n",
                                       "plugin/extra.py": "y" * 40})
    found = by_label(envlayers.split(env, LARGE))
    assert found["plugin-core-and-1"].dists == ("plugin-core==1.0", "plugin-extra==1.0")
    assert {"plugin/__init__.py", "plugin/core.py", "plugin/extra.py"} <= names(
        found["plugin-core-and-1"], env)


def test_a_distribution_without_a_version(env: envpack.EnvSource) -> None:
    info = env.site_dirs[0] / "broken-0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: broken\n")
    with pytest.raises(JobEnvironmentError, match="has no name or version in its METADATA"):
        envlayers.split(env)


def test_this_interpreter_is_split_quickly() -> None:
    """The running env: the interpreter first, TensorFlow a layer of its own, no tfyarn."""
    started = time.monotonic()
    layers = envlayers.split(envpack.current_env())
    elapsed = time.monotonic() - started
    found = by_label(layers)
    assert layers[0].label == "python" and "site" in found
    if importlib.util.find_spec("tensorflow"):  # the thin client's venvs have none
        assert "tensorflow-cpu" in found
    assert not [d for layer in layers for d in layer.dists if d.startswith("tfyarn==")]
    assert [layer.key for layer in layers] == [
        layer.key for layer in envlayers.split(envpack.current_env())]
    print(f"{len(layers)} layers in {elapsed:.2f} s")


def lay_out(members, added, into: Path) -> None:
    """A layer as YARN unpacks it, quickly: the interpreter copied (Python finds its
    prefix from its binary's real place), the rest linked."""
    for file, arcname in members:
        (into / arcname).parent.mkdir(parents=True, exist_ok=True)
        if arcname.startswith("bin/"):
            (into / arcname).write_bytes(file.read_bytes())
            (into / arcname).chmod(0o755)
        elif not (into / arcname).exists():
            (into / arcname).symlink_to(file)
    for arcname, data, mode in added:
        (into / arcname).parent.mkdir(parents=True, exist_ok=True)
        if data is None:
            (into / arcname).symlink_to("python")
        else:
            (into / arcname).write_bytes(data)
            (into / arcname).chmod(mode)


def test_layers_side_by_side_are_one_env(tmp_path: Path) -> None:
    """The interpreter's layer and site layers unpacked as YARN does (each its own
    directory beside ./pyenv): ./pyenv/bin/python imports from each, joins a namespace
    package across two, and puts their nvidia/*/lib on LD_LIBRARY_PATH."""
    source = envpack.current_env()
    python = envlayers.python_layer(source)
    lay_out(envlayers.members(python, source), envpack.launchers(source.version, source.lib),
            tmp_path / "filecache" / "python")
    container = tmp_path / "container"
    (container).mkdir()
    (container / "pyenv").symlink_to(tmp_path / "filecache" / "python")
    for label, files in {"a": {"nsx/a.py": "A = 1\n", "nvidia/cu/lib/libcu.so": ""},
                         "b": {"nsx/b.py": "B = 2\n", "only_b.py": "C = 3\n"}}.items():
        layer = tmp_path / "filecache" / label
        for relative, text in files.items():
            (layer / relative).parent.mkdir(parents=True, exist_ok=True)
            (layer / relative).write_text(text)
        (container / f"pyenv-site-{label}").symlink_to(layer)
    environ = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    run = subprocess.run(
        ["./pyenv/bin/python", "-c", "import os, sys, nsx.a, nsx.b, only_b; "
         "print(nsx.a.A + nsx.b.B + only_b.C); print(os.environ['LD_LIBRARY_PATH']); "
         "print(sys.prefix)"],
        cwd=container, env=environ, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    total, libraries, prefix = run.stdout.splitlines()
    assert total == "6"
    assert f"{container}/pyenv-site-a/nvidia/cu/lib" in libraries.split(":")
    assert Path(prefix) == (tmp_path / "filecache" / "python").resolve()


def test_the_local_cache_keeps_the_newest_other_pack(tmp_path: Path) -> None:
    suffix, record = layership.SUFFIX, layership.RECORD_SUFFIX
    for age, key in enumerate(("k3", "k2", "k1")):
        pack = tmp_path / f"layer-numpy-{key}{suffix}"
        pack.write_bytes(b"x")
        pack.with_name(pack.name + record).write_text("{}")
        os.utime(pack, (time.time() - 100 * age, time.time() - 100 * age))
    (tmp_path / f"layer-other-k9{suffix}").write_bytes(b"x")
    (tmp_path / "env-0123.tar.gz").write_bytes(b"the whole env, before issue 37")
    layership.prune_cache({f"layer-numpy-k1{suffix}"}, tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([
        f"layer-numpy-k1{suffix}", f"layer-numpy-k1{suffix}{record}",
        f"layer-numpy-k3{suffix}", f"layer-numpy-k3{suffix}{record}",
        f"layer-other-k9{suffix}"])


def test_two_submits_at_once_pack_a_layer_once(env: envpack.EnvSource, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Two processes (two lanes' clusters, two terminals) ask for the same layer at once:
    one packs it, the other waits and takes that pack."""
    from concurrent.futures import ProcessPoolExecutor

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    pack = envpack.pack

    def slow_pack(*args, **kwargs):  # a real layer takes seconds: both ask while one packs
        time.sleep(0.5)
        return pack(*args, **kwargs)

    monkeypatch.setattr(envpack, "pack", slow_pack)  # the forked workers inherit it
    layer = by_label(envlayers.split(env, large_bytes=LARGE))["tensorflow"]
    with ProcessPoolExecutor(2) as pool:
        results = list(pool.map(_pack_quietly, [layer, layer], [env, env]))
    assert sorted(packed for _, packed in results) == [False, True]
    assert results[0][0] == results[1][0]


def _pack_quietly(layer: envlayers.Layer, env: envpack.EnvSource) -> tuple[Path, bool]:
    archive, _, packed = layership.local_pack(layer, env, lambda _: None)
    return archive, packed


def test_each_layer_is_an_archive_in_every_container() -> None:
    environment = JobEnvironment(layers=(
        ("pyenv", "hdfs://nn:8020/user/a/.tfyarn/envs/layer-python-1.tar.gz", "public"),
        ("pyenv-site-site", "hdfs://nn:8020/user/a/.tfyarn/envs/layer-site-2.tar.gz",
         "private")))
    files = environment.files()
    assert sorted(files) == ["pyenv", "pyenv-site-site"]
    assert str(files["pyenv"].type) == "ARCHIVE" and str(files["pyenv"].visibility) == "PUBLIC"
    assert str(files["pyenv-site-site"].visibility) == "PRIVATE"
    assert files["pyenv"].source.endswith("layer-python-1.tar.gz")
