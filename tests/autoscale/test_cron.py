"""CronFederatedHPA rules in virtual time: when they fire, across time zones and DST, missed
runs, suspend, and the bounded history."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from gitfleet.autoscale.cron import (
    FAILED,
    SUCCEEDED,
    CronRule,
    Execution,
    RuleRecord,
    plan,
    record,
    rules_of,
)
from gitfleet.errors import InputError

BERLIN = ZoneInfo("Europe/Berlin")


def at(*args: int, zone: ZoneInfo | None = None) -> float:
    return datetime(*args, tzinfo=zone or UTC).timestamp()  # type: ignore[misc]


def fires(rule: CronRule, start: float, end: float, step: float = 60.0) -> list[float]:
    """Every scheduled time the rule fires for, polled every `step` seconds from start to end
    (a hub round per minute), its record carried from one poll to the next."""
    records = plan([rule], {}, now=start).records
    out = []
    now = start
    while now <= end:
        now += step
        result = plan([rule], records, now=now)
        records = dict(result.records)
        for due in result.due:
            out.append(due.scheduled)
            records[rule.name] = record(records[rule.name], rule, Execution(
                rule=rule.name, scheduled=due.scheduled, executed=now, result=SUCCEEDED))
    return out


def test_a_rule_fires_at_its_scheduled_time_in_its_time_zone() -> None:
    rule = CronRule.from_spec({"name": "morning", "schedule": "0 8 * * *",
                               "timeZone": "Asia/Tokyo", "targetReplicas": 5})
    got = fires(rule, at(2026, 1, 1), at(2026, 1, 3), 600)
    # 08:00 in Tokyo is 23:00 UTC the day before
    assert got == [at(2026, 1, 1, 23), at(2026, 1, 2, 23)]


def test_utc_is_the_default_time_zone() -> None:
    rule = CronRule.from_spec({"name": "r", "schedule": "30 6 * * *", "targetReplicas": 1})
    assert rule.time_zone == "UTC"
    assert fires(rule, at(2026, 1, 1), at(2026, 1, 2), 600) == [at(2026, 1, 1, 6, 30)]


def test_spring_forward_a_0230_rule_fires_once_right_after_the_gap() -> None:
    # 2026-03-29 in Berlin: 02:00 CET jumps to 03:00 CEST; 02:30 does not exist that day
    rule = CronRule.from_spec({"name": "night", "schedule": "30 2 * * *",
                               "timeZone": "Europe/Berlin", "targetReplicas": 2})
    got = fires(rule, at(2026, 3, 28, 12, zone=BERLIN), at(2026, 3, 30, 12, zone=BERLIN), 600)
    assert got == [at(2026, 3, 29, 3, 0, zone=BERLIN), at(2026, 3, 30, 2, 30, zone=BERLIN)]


def test_fall_back_a_0230_rule_fires_once_on_the_day_0230_happens_twice() -> None:
    # 2026-10-25 in Berlin: 03:00 CEST goes back to 02:00 CET; 02:30 happens twice
    rule = CronRule.from_spec({"name": "night", "schedule": "30 2 * * *",
                               "timeZone": "Europe/Berlin", "targetReplicas": 2})
    got = fires(rule, at(2026, 10, 24, 12, zone=BERLIN), at(2026, 10, 26, 12, zone=BERLIN),
                600)
    first_0230 = datetime(2026, 10, 25, 0, 30, tzinfo=UTC).timestamp()   # 02:30 CEST
    assert got == [first_0230, at(2026, 10, 26, 2, 30, zone=BERLIN)]


def test_time_zones_on_either_side_of_utc_agree_on_the_instant() -> None:
    ny = CronRule.from_spec({"name": "a", "schedule": "0 9 * * 1", "timeZone": "America/New_York",
                             "targetReplicas": 1})
    # Monday 2026-01-05 09:00 EST = 14:00 UTC
    assert ny.next_after(at(2026, 1, 1)) == at(2026, 1, 5, 14)


def test_runs_missed_while_the_hub_was_down_collapse_into_the_latest_one() -> None:
    rule = CronRule.from_spec({"name": "hourly", "schedule": "0 * * * *", "targetReplicas": 3})
    records = plan([rule], {}, now=at(2026, 1, 1, 0, 30)).records
    # the hub was down from 00:30 to 05:10: 01:00..05:00 were missed
    result = plan([rule], records, now=at(2026, 1, 1, 5, 10))
    assert [d.scheduled for d in result.due] == [at(2026, 1, 1, 5)]
    done = record(result.records["hourly"], rule, Execution(
        rule="hourly", scheduled=at(2026, 1, 1, 5), executed=at(2026, 1, 1, 5, 10),
        result=SUCCEEDED, replicas=3))
    # and it does not fire again for the same time
    assert plan([rule], {"hourly": done}, now=at(2026, 1, 1, 5, 20)).due == ()


def test_a_new_rule_never_fires_for_times_before_it_existed() -> None:
    rule = CronRule.from_spec({"name": "r", "schedule": "0 * * * *", "targetReplicas": 3})
    first = plan([rule], {}, now=at(2026, 1, 1, 5, 10))
    assert first.due == ()
    assert first.records["r"].since == at(2026, 1, 1, 5, 10)


def test_a_suspended_rule_does_not_fire_and_resuming_does_not_replay_the_pause() -> None:
    spec = {"name": "r", "schedule": "0 * * * *", "targetReplicas": 3}
    suspended = CronRule.from_spec({**spec, "suspend": True})
    records = plan([suspended], {}, now=at(2026, 1, 1)).records
    assert fires(suspended, at(2026, 1, 1), at(2026, 1, 1, 5), 600) == []
    records = plan([suspended], records, now=at(2026, 1, 1, 5, 30)).records
    resumed = CronRule.from_spec(spec)
    result = plan([resumed], records, now=at(2026, 1, 1, 5, 31))
    assert result.due == ()                       # 05:00 happened while suspended
    later = plan([resumed], result.records, now=at(2026, 1, 1, 6, 0, 30))
    assert [d.scheduled for d in later.due] == [at(2026, 1, 1, 6)]


def test_a_changed_schedule_starts_counting_again() -> None:
    old = CronRule.from_spec({"name": "r", "schedule": "0 * * * *", "targetReplicas": 3})
    records = plan([old], {}, now=at(2026, 1, 1)).records
    new = CronRule.from_spec({"name": "r", "schedule": "30 * * * *", "targetReplicas": 3})
    assert plan([new], records, now=at(2026, 1, 1, 2, 45)).due == ()


def test_two_rules_due_together_apply_in_schedule_order() -> None:
    a = CronRule.from_spec({"name": "b-late", "schedule": "10 1 * * *", "targetReplicas": 1})
    b = CronRule.from_spec({"name": "a-early", "schedule": "5 1 * * *", "targetReplicas": 9})
    records = plan([a, b], {}, now=at(2026, 1, 1)).records
    due = plan([a, b], records, now=at(2026, 1, 1, 2)).due
    assert [d.rule.name for d in due] == ["a-early", "b-late"]


def test_history_keeps_the_newest_executions_within_each_limit() -> None:
    rule = CronRule.from_spec({"name": "r", "schedule": "* * * * *", "targetReplicas": 1,
                               "successfulHistoryLimit": 2, "failedHistoryLimit": 1})
    rec = RuleRecord(since=at(2026, 1, 1), fingerprint=rule.fingerprint)
    for minute in range(1, 6):
        result = SUCCEEDED if minute % 2 else FAILED
        rec = record(rec, rule, Execution(rule="r", scheduled=at(2026, 1, 1, 0, minute),
                                          executed=at(2026, 1, 1, 0, minute), result=result,
                                          message="" if minute % 2 else "target missing"))
    assert [e.scheduled for e in rec.successes] == [at(2026, 1, 1, 0, 3), at(2026, 1, 1, 0, 5)]
    assert [e.scheduled for e in rec.failures] == [at(2026, 1, 1, 0, 4)]
    assert rec.since == at(2026, 1, 1, 0, 5)


def test_default_history_limits_are_karmadas_three() -> None:
    rule = CronRule.from_spec({"name": "r", "schedule": "* * * * *", "targetReplicas": 1})
    assert (rule.successful_history_limit, rule.failed_history_limit) == (3, 3)
    got = fires(rule, at(2026, 1, 1), at(2026, 1, 1, 0, 10))
    assert len(got) == 11


def test_a_zero_limit_keeps_no_history() -> None:
    rule = CronRule.from_spec({"name": "r", "schedule": "* * * * *", "targetReplicas": 1,
                               "successfulHistoryLimit": 0})
    rec = record(RuleRecord(since=0, fingerprint=rule.fingerprint), rule,
                 Execution(rule="r", scheduled=60, executed=60, result=SUCCEEDED))
    assert rec.successes == ()


def test_records_survive_a_round_trip_through_their_persisted_form() -> None:
    rule = CronRule.from_spec({"name": "r", "schedule": "* * * * *", "targetMinReplicas": 4})
    rec = record(RuleRecord(since=at(2026, 1, 1), fingerprint=rule.fingerprint), rule,
                 Execution(rule="r", scheduled=at(2026, 1, 1, 0, 1), executed=at(2026, 1, 1, 0, 1),
                           result=SUCCEEDED, min_replicas=4))
    assert RuleRecord.from_dict(rec.to_dict()) == rec


@pytest.mark.parametrize(("field", "value", "text"), [
    ("schedule", "61 * * * *", "five-field cron"),
    ("schedule", "@every 5m", "five-field cron"),
    ("schedule", "0 0 * * * *", "five-field cron"),
    ("timeZone", "Mars/Olympus", "IANA time zone"),
])
def test_a_bad_schedule_or_time_zone_is_an_error_naming_the_field(field: str, value: str,
                                                                    text: str) -> None:
    spec = {"rules": [{"name": "ok", "schedule": "0 * * * *"},
                      {"name": "bad", "schedule": "0 * * * *", field: value}]}
    with pytest.raises(InputError) as err:
        rules_of(spec)
    assert f"spec.rules[1].{field}" in str(err.value) and text in str(err.value)
    assert "rule bad" in str(err.value)


def test_a_rule_name_used_twice_is_an_error() -> None:
    with pytest.raises(InputError, match="used twice"):
        rules_of({"rules": [{"name": "a", "schedule": "0 * * * *"},
                            {"name": "a", "schedule": "5 * * * *"}]})
