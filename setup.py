"""Only what pyproject.toml cannot say: the repository's top-level ``data/`` (with its
checksums) goes into the wheel as the package folder ``companion/_data/``, so that an
installed package finds its data wherever it lives (``companion.data.data_dir``).
pyproject.toml's package-data names the files."""
from setuptools import find_packages, setup

setup(
    packages=find_packages(include=["companion", "companion.*"]) + ["companion._data"],
    package_dir={"companion._data": "data"},
)
