"""A bounded fuzz of the extender's request decoders through real HTTP (hypothesis, fixed
seed, 200 examples per verb: a few seconds in CI).

Every body kube-scheduler's four verbs could be sent (any JSON value, deeply nested
arrays and objects, a valid ExtenderArgs or ExtenderBindingArgs with any part replaced
by any JSON, bytes that are not JSON) gets an answer that is not a 5xx and carries no
traceback; nothing is bound that the request did not name validly; and the service
answers a valid filter and /healthz afterwards.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from extender.app import OPS_APP, create_app
from extender.config import ExtenderConfig
from tests.extender.builders import JSON_HEADERS, args_body, make_node, make_pod
from tests.extender.test_app import RecordingBinder, build_cache

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False)
    | st.text(max_size=12),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.text(max_size=12), children, max_size=4),
    max_leaves=25)
VALID = {
    "filter": json.loads(args_body(make_pod("w", gpus=1, job="j", role="worker"),
                                   names=["n1", "ghost"])),
    "prioritize": json.loads(args_body(make_pod("w", gpus=1, job="j", role="worker"),
                                       names=["n1"])),
    "bind": {"PodName": "w", "PodNamespace": "team", "PodUID": "uid-team-w", "Node": "n1"},
    "preempt": {"Pod": make_pod("w", gpus=1, job="j", role="worker"),
                "NodeNameToMetaVictims": {"n1": {"Pods": [{"UID": "x"}],
                                                 "NumPDBViolations": 0}}},
}
FUZZ = settings(max_examples=200, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow])


def replaced(document: Any, path: list[int], value: Any) -> Any:
    """`document` with the container entry `path` walks to replaced by `value` (each
    index picks among the keys or items there, modulo their count)."""
    if not path or not isinstance(document, dict | list) or not document:
        return value
    keys = list(document) if isinstance(document, dict) else list(range(len(document)))
    key = keys[path[0] % len(keys)]
    copy = dict(document) if isinstance(document, dict) else list(document)
    copy[key] = replaced(document[key], path[1:], value)
    return copy


BODIES = st.one_of(
    JSON.map(lambda value: json.dumps(value).encode()),
    st.tuples(st.sampled_from(sorted(VALID)), st.lists(st.integers(0, 50), max_size=6),
              JSON).map(lambda t: json.dumps(replaced(VALID[t[0]], t[1], t[2])).encode()),
    st.binary(max_size=200),
    st.integers(1, 3000).map(lambda depth: (b"[" * depth) + (b"]" * depth)),
    st.integers(1, 3000).map(lambda depth: (b'{"a":' * depth) + b"1" + (b"}" * depth)),
)


async def answer_all(verb: str, body: bytes) -> list[str]:
    """Post `body` to `verb` on a fresh app, then a valid filter and /healthz; the
    problems seen (empty: all well)."""
    binder = RecordingBinder()
    cache = build_cache([make_node("n1")], [make_pod("w", gpus=1, job="j", role="worker")])
    app = create_app(ExtenderConfig(), cache, binder=binder)
    problems = []
    async with TestClient(TestServer(app)) as client, \
            TestClient(TestServer(app[OPS_APP])) as ops:
        response = await client.post(f"/{verb}", data=body, headers=JSON_HEADERS)
        text = await response.text()
        if response.status >= 500 or "Traceback" in text:
            problems.append(f"{verb}: {response.status} {text[:200]}")
        if verb == "bind":
            named = [c for c in binder.calls if (c.pod_name, c.pod_namespace, c.node) !=
                     ("w", "team", "n1")]
            if named:
                problems.append(f"bound what the request did not name validly: {named}")
        good = await client.post("/filter", data=json.dumps(VALID["filter"]).encode(),
                                 headers=JSON_HEADERS)
        if good.status != 200:
            problems.append(f"a valid filter afterwards: {good.status}")
        if (await ops.get("/healthz")).status != 200:
            problems.append("/healthz afterwards")
    return problems


def check(verb: str, body: bytes) -> None:
    problems = asyncio.run(answer_all(verb, body))
    assert problems == [], problems


@pytest.mark.parametrize("verb", ["filter", "prioritize", "bind", "preempt"])
@seed(28)
@FUZZ
@given(body=BODIES)
def test_no_body_gets_a_5xx_a_traceback_or_an_unnamed_bind(verb, body):
    check(verb, body)
