"""``serve --schema``: queries name labels (codes keep working), answers and logs show labels, the
measurements are stored in codes (a restart replays them), and the schema is part of the state."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from starlette.testclient import TestClient

from fastmwem.data.schema import Categorical, Integer, Numeric, Schema
from fastmwem.release.pmw import PMWConfig
from fastmwem.service.app import create_app
from fastmwem.service.core import QueryService
from fastmwem.service.labels import Labels
from fastmwem.service.store import open_store

SCHEMA = Schema([Categorical("sex", ["F", "M"]), Categorical("smoker", ["no", "yes"]),
                 Numeric("age", 0, 100, bins=5), Integer("kids", 0, 2)])
CONFIG = PMWConfig(epsilon=4.0, alpha=0.1, max_updates=10, total=200)
ADMIN = "admin.secret-for-tests"


def _data():
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"sex": rng.choice(["F", "M"], 200), "smoker": rng.choice(["no", "yes"], 200),
                          "age": rng.integers(0, 101, 200), "kids": rng.integers(0, 3, 200)})
    return SCHEMA.encode(frame)


def _service(tmp_path, schema=SCHEMA, seed=0, config=CONFIG) -> QueryService:
    return QueryService(open_store(str(tmp_path / "s.db")), _data(), config, admin_token=ADMIN,
                        data_hash="h", rng=seed, schema=schema)


def test_labels_map_to_codes_and_back():
    labels = Labels(SCHEMA)
    query = {"cell": {"sex": "M", "smoker": "yes", "age": "[40, 60)", "kids": "2"}}
    coded = labels.to_codes(query)
    assert coded == {"cell": {"sex": 1, "smoker": 1, "age": 2, "kids": 2}}
    assert labels.to_labels(coded) == query
    # A number names the bin holding it (the upper bound the last bin); codes stay codes.
    assert labels.to_codes({"range": {"age": ["35", "100"], "sex": [0, "M"]}}) == \
        {"range": {"age": [1, 4], "sex": [0, 1]}}
    assert labels.to_labels({"range": {"age": [1, 4]}}) == {"range": {"age": ["[20, 40)",
                                                                              "[80, 100]"]}}
    assert labels.to_codes({"vector": [1] * 40}) == {"vector": [1] * 40}
    assert labels.describe()["columns"][0] == {"name": "sex", "type": "categorical",
                                               "labels": ["F", "M"]}


@pytest.mark.parametrize(("query", "match"), [
    ({"cell": {"sex": "X"}}, r"cell of 'sex': no label 'X'; the labels of 'sex' are \['F', 'M'\]"),
    ({"cell": {"age": "101"}}, r"a number within \[0, 100\]"),
    ({"range": {"kids": ["0", "3"]}}, r"integers 0\.\.2"),
    ({"cell": {"kids": "1.5"}}, r"integers 0\.\.2"),
])
def test_unknown_labels_are_refused_naming_the_public_labels(query, match):
    with pytest.raises(ValueError, match=match):
        Labels(SCHEMA).to_codes(query)


def test_label_and_code_queries_are_the_same_query(tmp_path):
    service = _service(tmp_path)
    who = service.authenticate(f"Bearer {service.add_analyst('ann', 4.0)['token']}")
    by_label = service.answer(who, {"cell": {"sex": "F", "smoker": "yes"}}, "r1")
    by_code = service.answer(who, {"cell": {"sex": 0, "smoker": 1}}, "r2")
    for ans in (by_label, by_code):
        assert ans["query"] == {"cell": {"sex": "F", "smoker": "yes"}}  # shown in labels
        assert ans["query_codes"] == {"cell": {"sex": 0, "smoker": 1}}
    log = service.log(None)
    assert [x["query"] for x in log] == [by_label["query"]] * 2
    before = service.store.budget("global")[1]
    with pytest.raises(ValueError, match="no label 'maybe'"):
        service.answer(who, {"cell": {"smoker": "maybe"}}, "r3")
    assert service.store.budget("global")[1] == before


def test_measurements_are_stored_in_codes_and_replayed_after_a_restart(tmp_path):
    tight = PMWConfig(epsilon=4.0, alpha=0.001, max_updates=10, total=200)  # measures them all
    service = _service(tmp_path, config=tight)
    who = service.authenticate(f"Bearer {service.add_analyst('ann', 4.0)['token']}")
    for i, sex in enumerate(["F", "M", "F", "M"]):
        service.answer(who, {"range": {"sex": [sex, sex], "age": ["0", "59"]}}, f"r{i}")
    assert service.session.updates > 0
    stored = service.store.measurements()
    assert all(isinstance(v, int) for q, _ in stored for pair in q["range"].values() for v in pair)
    distribution = service.session.distribution
    service.store.close()
    again = _service(tmp_path, config=tight)
    np.testing.assert_array_equal(again.session.distribution, distribution)
    again.store.close()


def test_the_schema_is_part_of_the_state(tmp_path):
    _service(tmp_path).store.close()
    other = Schema([Categorical("sex", ["M", "F"]), *SCHEMA.columns[1:]])  # same domain
    for schema in (None, other):
        with pytest.raises(ValueError, match="another schema"):
            _service(tmp_path, schema=schema)


def test_the_schema_and_labelled_answers_over_http(tmp_path):
    service = _service(tmp_path)
    token = service.add_analyst("ann", 4.0)["token"]
    with TestClient(create_app(service)) as http:
        headers = {"Authorization": f"Bearer {token}"}
        r = http.get("/v1/schema", headers=headers)
        assert r.status_code == 200 and r.json() == json.loads(json.dumps(Labels(SCHEMA)
                                                                          .describe()))
        r = http.post("/v1/query", headers=headers,
                      json={"query": {"cell": {"age": "[20, 40)", "kids": "0"}}})
        assert r.status_code == 200 and r.json()["query"] == {"cell": {"age": "[20, 40)",
                                                                       "kids": "0"}}
        r = http.post("/v1/query", headers=headers, json={"query": {"cell": {"sex": "x"}}})
        assert r.status_code == 400 and "no label 'x'" in r.json()["error"]
    service.store.close()
    plain = QueryService(open_store(str(tmp_path / "p.db")), _data(), CONFIG, admin_token=ADMIN,
                         data_hash="h", rng=0)
    with TestClient(create_app(plain)) as http:
        r = http.get("/v1/schema", headers={"Authorization": f"Bearer {ADMIN}"})
        assert r.status_code == 404 and "no schema" in r.json()["error"]
