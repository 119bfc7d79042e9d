"""The Rust extension (crates/py). Every function returns the contract's JSON as a string."""

from typing import List, Optional, Sequence, Tuple

__version__: str

def diagnose(
    text: str,
    examples: Sequence[Tuple[Optional[str], int]] = ...,
    shapes: Sequence[Tuple[str, Sequence[int]]] = ...,
    spec: Optional[str] = ...,
    z3: str = ...,
    z3_timeout_ms: int = ...,
    ranges: Sequence[Tuple[str, Tuple[int, int]]] = ...,
    shapes_spec: Optional[str] = ...,
    cover: Optional[int] = ...,
) -> str: ...
def readable(text: str) -> str: ...
def read_spec(text: str) -> str: ...
def spec_code(sheet: str) -> str: ...
def narrow(sheet: str, items: str) -> str: ...
def verify(guards: str, spec: str, z3_timeout_ms: int = ...) -> str: ...
def check(data: bytes, label: str = ..., sizes: bool = ...) -> str: ...
def profile(
    source: Optional[bytes] = ...,
    path: Optional[str] = ...,
    dims: List[str] = ...,
    examples: List[str] = ...,
    format: str = ...,
    profiles: int = ...,
    spec: Optional[str] = ...,
    cover: Optional[int] = ...,
) -> str: ...
def z3_version() -> str: ...
def set_budget(time: float, output: int, memory: int = ...) -> None: ...
def html(report: str, title: str) -> str:
    """The self-contained HTML page of a report's JSON."""
    ...
