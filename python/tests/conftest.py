"""Shared helpers for the Python suite. Fixtures come from the repository's tests/data."""

import math
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"


@pytest.fixture
def messages():
    return DATA / "messages"


@pytest.fixture
def programs():
    return DATA / "pt2"


class FakeDim:
    """A stand-in for ``torch.export.Dim`` (name, bounds, ``m*d + r``), so printed specs can be
    executed without torch."""

    AUTO = "AUTO"
    STATIC = "STATIC"

    def __init__(self, name, min=None, max=None, root=None, coef=1, offset=0):
        self.name, self.min, self.max = name, min, max
        self.root, self.coef, self.offset = root or self, coef, offset

    def __rmul__(self, k):
        return FakeDim(self.name, root=self.root, coef=self.coef * k, offset=self.offset * k)

    def __add__(self, c):
        return FakeDim(self.name, root=self.root, coef=self.coef, offset=self.offset + c)

    def values(self):
        r = self.root
        return [self.coef * k + self.offset for k in range(r.min, r.max + 1)]


def run_spec(code):
    """Executes a printed spec with :class:`FakeDim`; returns its ``dynamic_shapes``."""
    code = code.replace("from torch.export import Dim", "")
    ns = {"Dim": FakeDim}
    exec(code, ns)  # noqa: S102 - our own printed spec
    return ns["dynamic_shapes"]


def guard_env(sizes):
    """Globals to evaluate guard text (sympy or guard-code syntax) with Python semantics."""

    class _T:
        def __init__(self, shape):
            self._shape = shape

        def size(self):
            return self._shape

    return {
        "L": {name: _T(shape) for name, shape in sizes.items()},
        "Eq": lambda a, b: a == b,
        "Ne": lambda a, b: a != b,
        "Mod": lambda a, b: a % b,
        "FloorDiv": lambda a, b: a // b,
        "Max": max,
        "Min": min,
        "math": math,
        "torch": type(
            "torch", (), {"sym_max": staticmethod(max), "sym_min": staticmethod(min), "sym_float": staticmethod(float)}
        ),
    }
