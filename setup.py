"""The package carries tfyarn's patched skein AppMaster: building tfyarn (its wheel, or an
editable install) builds the jar into tfyarn/hadoop/am/ first (tfyarn/amjarbuild.py: a JDK
and Maven where the package is built; TFYARN_AM_BUILD=skip builds none). Everything else is
in pyproject.toml."""

import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent


class BuildPyWithAppMaster(build_py):
    def run(self) -> None:
        sys.path.insert(0, str(HERE))  # this source's tfyarn, not an installed one
        try:
            from tfyarn import amjarbuild
        finally:
            sys.path.remove(str(HERE))
        amjarbuild.main(["--into", str(HERE / "tfyarn" / "hadoop" / "am")])
        super().run()


setup(cmdclass={"build_py": BuildPyWithAppMaster})
