"""The reliability battery as tests: every bad input is refused clearly, every valid case is ok.

Each case runs in a forked child of a case server (``_server``) with a memory cap and a timeout;
see the package's docstring for the categories. Cases that take more than about two seconds are
marked slow.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from . import all_cases
from ._server import CaseServer

CASES = all_cases()


def _params(valid: bool) -> list[object]:
    params = []
    for case in CASES:
        if case.valid != valid:
            continue
        marks = [pytest.mark.slow] if case.slow else []
        if case.known_failure:
            marks.append(pytest.mark.xfail(strict=True, reason=case.known_failure))
        params.append(pytest.param(case.name, id=case.name, marks=marks))
    return params


@pytest.fixture(scope="module")
def battery(request: pytest.FixtureRequest,
            tmp_path_factory: pytest.TempPathFactory) -> Iterator[CaseServer]:
    """A case server given every case this run selected, in the order the tests ask for them."""
    names = [item.callspec.params["name"] for item in request.session.items
             if item.module is request.module and hasattr(item, "callspec")]
    with CaseServer(names, tmp_path_factory.mktemp("reliability")) as server:
        yield server


def _explain(result: dict[str, object]) -> str:
    text = f"{result['category']}: {result['message']}"
    if result.get("log"):
        text += f"\n--- the case's output (end) ---\n{result['log']}"
    return text


@pytest.mark.parametrize("name", _params(valid=False))
def test_bad_input_is_refused_clearly(battery: CaseServer, name: str) -> None:
    result = battery.result(name)
    assert result["category"] == "clear", _explain(result)


@pytest.mark.parametrize("name", _params(valid=True))
def test_valid_case_is_ok(battery: CaseServer, name: str) -> None:
    result = battery.result(name)
    assert result["category"] == "ok", _explain(result)

