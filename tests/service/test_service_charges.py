"""Who pays what: an epoch's sparse vector is charged to the query that opens it, its measurement
to the query that triggers it (the answer that says ``measured``), never to a later answer."""

from __future__ import annotations

from fractions import Fraction

import pytest

from fastmwem.accounting import BudgetExceededError
from fastmwem.data import Dataset, Domain
from fastmwem.release.pmw import PMWConfig, PMWRecord, PMWSession
from fastmwem.release.pmw.plan import paid_from_labels
from fastmwem.service.core import QueryService
from fastmwem.service.store import open_store

DOMAIN = Domain(["a", "b"], [2, 3])
DATA = Dataset([[0, 1], [1, 2], [1, 0]] * 30, DOMAIN)
ADMIN = "admin.secret-for-tests"
STREAM = [{"cell": {"a": 1}}, {"cell": {"b": 1}}, {"cell": {"a": 0, "b": 1}}, {"cell": {"b": 2}},
          {"cell": {"a": 1, "b": 1}}] * 2
CONFIG = {"epsilon": 4.0, "alpha": 0.1, "max_updates": 4, "total": 90}


def _split() -> tuple[float, float]:
    split = PMWConfig(**CONFIG).split()
    return split["sv"], split["measure"]


def _service(tmp_path, seed: int = 0) -> QueryService:
    return QueryService(open_store(str(tmp_path / "s.db")), DATA, PMWConfig(**CONFIG),
                        admin_token=ADMIN, data_hash="h", rng=seed)


def test_a_measured_answer_carries_its_measurements_charge():
    # The original session charged the whole epoch to the query opening it: a measured answer
    # that did not open its epoch said charged 0, and the next answer paid for the next epoch.
    sv, measure = _split()
    s = PMWSession(DATA, rng=1, **CONFIG)
    answers, opened = [], []
    for query in STREAM:
        if not s.updates_left:
            break
        opens = s.record().epochs_paid == s.updates
        answers.append(s.answer(query))
        opened.append(opens)
    late = [a for a, o in zip(answers, opened) if a.source == "measured" and not o]
    assert late, "the stream must hold a measurement in an epoch opened by an earlier query"
    for ans, opens in zip(answers, opened):
        expected = (sv if opens else 0.0) + (measure if ans.source == "measured" else 0.0)
        assert ans.charged == pytest.approx(expected, rel=1e-12)
    assert sum(a.charged for a in answers) == pytest.approx(float(s.accountant.spent().epsilon))


def test_the_analyst_whose_query_is_measured_pays_for_the_measurement(tmp_path):
    service = _service(tmp_path)
    sv, measure = _split()
    ann = service.authenticate(f"Bearer {service.add_analyst('ann', 2.0)['token']}")
    ben = service.authenticate(f"Bearer {service.add_analyst('ben', 2.0)['token']}")
    seen = []
    for i, query in enumerate(STREAM[:6]):
        who = (ann, ben)[i % 2]
        seen.append((who.analyst_id, service.answer(who, query, f"r{i}")))
    spent = {who: float(service.store.budget(f"analyst:{who}")[1]) for who in (1, 2)}
    paid = {1: 0.0, 2: 0.0}
    for who, ans in seen:
        paid[who] += ans["charged"]
        if ans["source"] == "measured":
            assert ans["charged"] >= measure * (1 - 1e-12)
        elif ans["charged"]:
            assert ans["charged"] == pytest.approx(sv)
    assert paid == pytest.approx(spent)
    assert any(a["source"] == "measured" and a["charged"] == pytest.approx(measure)
               for _, a in seen)


def test_a_paid_measurement_lost_in_a_crash_is_not_charged_again(tmp_path, monkeypatch):
    sv, measure = _split()
    service = _service(tmp_path)
    analyst = service.authenticate(f"Bearer {service.add_analyst('cal', 3.0)['token']}")
    first = service.answer(analyst, STREAM[0], "r0")  # opens and measures epoch 1
    assert first["source"] == "measured"
    spent = service.store.budget("global")[1]

    def crash(*args, **kwargs):
        raise OSError("disk gone")

    # Epoch 2: every query is tested until one is measured; that one's answer is never stored.
    monkeypatch.setattr(service.store, "save_answer", crash)
    for i, query in enumerate(STREAM[1:], 1):
        with pytest.raises(OSError):
            service.answer(analyst, query, f"c{i}")
        labels = [e.label for e, _, _ in service.store.ledger()]
        if labels[-1].endswith("measurement"):
            break
    assert labels[-2:] == ["PMW epoch 2 sparse vector", "PMW epoch 2 measurement"]
    assert service.store.budget("global")[1] == spent + Fraction(sv) + Fraction(measure)
    monkeypatch.undo()
    service.store.close()

    service = _service(tmp_path)  # a restart: the paid run and measurement are used, not repaid
    assert service.session.charges_due() == []
    for i, query in enumerate(STREAM[1:], 1):
        ans = service.answer(analyst, query, f"after{i}")
        assert ans["charged"] == 0.0
        if ans["source"] == "measured":
            break
    assert ans["source"] == "measured"
    assert service.store.budget("global")[1] == spent + Fraction(sv) + Fraction(measure)


def test_an_analyst_who_cannot_pay_a_measurement_is_refused_before_the_test(tmp_path):
    sv, measure = _split()
    service = _service(tmp_path)
    rich = service.authenticate(f"Bearer {service.add_analyst('rich', 3.0)['token']}")
    poor = service.authenticate(f"Bearer {service.add_analyst('poor', measure / 2)['token']}")
    with pytest.raises(BudgetExceededError, match="analyst's budget would be exceeded"):
        service.answer(poor, STREAM[0], "p0")  # would open the run and might be measured
    service.answer(rich, STREAM[0], "r0")
    service.answer(rich, STREAM[1], "r1")  # epoch 2 is open (its run paid by rich)
    assert service.session.record().epochs_paid == 2
    before = service.store.ledger_head()
    with pytest.raises(BudgetExceededError, match="may cost epsilon"):
        service.answer(poor, STREAM[2], "p1")  # cannot pay the measurement it might trigger
    assert service.store.ledger_head() == before and service.log(poor.analyst_id) == []


def test_whole_epoch_labels_of_older_ledgers_pay_for_run_and_measurement():
    assert paid_from_labels(["PMW record count", "PMW epoch 1", "PMW epoch 2 sparse vector",
                             "PMW epoch 2 measurement", "PMW epoch 3 sparse vector", "other"]) \
        == (True, 3, 2)
    record = PMWSession(DATA, rng=0, **CONFIG).record().to_dict()
    record["epochs_paid"] = 1
    del record["measurement_paid"]  # as written before the split: the open epoch was paid whole
    old = PMWRecord.from_dict(record)
    assert old.measurement_paid and old.charges_due() == []
