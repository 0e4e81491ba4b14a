# The `dice` Python package is used from the source tree.
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))


def pytest_configure(config):
    # Most of the suite's time: `-m "not shipped_model"` leaves them out.
    config.addinivalue_line(
        "markers", "shipped_model: decodes with the shipped model on the CPU")
