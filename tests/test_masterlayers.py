"""The AppMaster's container gets the layers its own imports need, not the frameworks'."""

from __future__ import annotations

import importlib.util

import pytest

from tfyarn.submission import envlayers, envpack
from tfyarn.submission.envlayers import Layer
from tfyarn.submission.masterlayers import (
    for_master,
    needed_by_master,
    requirement_names,
)


def test_requirements_read_as_names_without_the_extras_only_ones() -> None:
    assert requirement_names([
        "grpcio (!=1.45.0,>=1.11.0)", "PyYAML", "typing_extensions>=4.13.2 ; python_version "
        "< '3.11'", "bcrypt>=3.1.5 ; extra == 'ssh'", "zope.interface[test]>=5"]) == [
        "grpcio", "pyyaml", "typing-extensions", "zope-interface"]


def test_what_the_master_needs_is_followed_through_requirements() -> None:
    graph = {"skein": ["grpcio", "cryptography"], "grpcio": ["typing-extensions"],
             "cryptography": ["cffi ; platform_python_implementation != 'PyPy'",
                              "bcrypt ; extra == 'ssh'"],
             "cffi": ["pycparser"], "pycparser": [], "typing-extensions": None}
    assert needed_by_master(["skein"], graph.__getitem__) == {
        "skein", "grpcio", "cryptography", "cffi", "pycparser", "typing-extensions"}


@pytest.mark.skipif(importlib.util.find_spec("tensorflow") is None,
                    reason="an env without TensorFlow (the thin client's)")
def test_in_this_env_the_master_gets_skein_and_hdfs_native_not_tensorflow() -> None:
    needed = needed_by_master()
    chosen = {layer.label: for_master(layer, needed)
              for layer in envlayers.split(envpack.current_env())}
    assert chosen["python"] and chosen["site"] and chosen["skein"] and chosen["grpcio"]
    assert chosen["hdfs-native"]
    assert not chosen["tensorflow-cpu"] and not chosen["numpy"]


def test_a_layer_of_several_distributions_goes_if_any_is_needed() -> None:
    layer = Layer("nvidia-x-and-1", "k" * 32, "site", dists=("nvidia-x==1", "Typing_Extensions==4"))
    assert for_master(layer, frozenset({"typing-extensions"}))
    assert not for_master(layer, frozenset({"skein"}))
