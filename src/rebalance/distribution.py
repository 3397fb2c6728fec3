"""The distribution these packages ship in: its name (what `pip` installs; `rebalance` on PyPI is
an unrelated project) and its version, the one place both are written (pyproject.toml reads the
version from here)."""

DISTRIBUTION = "rebalance-kafka"
__version__ = "0.1.0"
