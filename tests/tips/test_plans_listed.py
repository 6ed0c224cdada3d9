"""Tip documents list the plan requests waiting for their cluster (`plans`), for the agents
that read the field: a real hub reading real status branches and plan refs signs them; the
field is strict; a document without it reads as before."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from gitfleet.hub.hub import Hub
from gitfleet.hub.settings import HubSettings
from gitfleet.layout import Branches
from gitfleet.state.git import Git, RefUpdate
from gitfleet.state.signing import SigningKey, TrustedKeys
from gitfleet.state.store import open_store
from gitfleet.wire.plans import plan_id
from gitfleet.wire.tips import MAX_PLANS, Tip, TipError, decode, encode
from tests.harness import example_repo
from tests.tips.servers import beat

REF = Branches().cluster("c1")
KEY = SigningKey.generate()
CLUSTERS = ("prod-east", "prod-west", "staging")
PLAN = "20990101T000000Z-3f2a9c0d11e2-a41c07"


def _tip(plans: tuple[str, ...] | None) -> Tip:
    return Tip(cluster="c1", ref=REF, commit="a" * 40, state="", issued_at=1e9, plans=plans)


def _payload_with(value: object, name: str = "plans") -> bytes:
    doc = json.loads(encode(_tip(None), None))
    payload = json.loads(doc["tip"])
    payload[name] = value
    doc["tip"] = json.dumps(payload)
    return json.dumps(doc).encode()


# -- the document ----------------------------------------------------------------------------

def test_listed_plans_read_back_and_a_document_without_them_says_nothing() -> None:
    for plans in ((), (PLAN,), (PLAN, PLAN.replace("a41c07", "b41c07"))):
        reading = decode(encode(_tip(plans), KEY), cluster="c1", ref=REF,
                         trusted=TrustedKeys.of(KEY))
        assert reading.tip.plans == plans
    assert "plans" not in json.loads(_tip(None).payload())     # the format older agents read
    assert decode(encode(_tip(None), KEY), cluster="c1", ref=REF,
                  trusted=TrustedKeys.of(KEY)).tip.plans is None


@pytest.mark.parametrize("value, message", [
    ("x", "must be a list"),
    ([PLAN] * 2, "twice"),
    (["../../etc"], "not a plan id"),
    ([7], "not a plan id"),
    ([f"20990101T000000Z-{i:012x}-a41c07" for i in range(MAX_PLANS + 1)], "at most"),
])
def test_a_bad_plan_listing_is_refused_naming_it(value: object, message: str) -> None:
    with pytest.raises(TipError, match=message):
        decode(_payload_with(value), cluster="c1", ref=REF, trusted=None)


def test_a_misspelt_plans_field_is_named() -> None:
    with pytest.raises(TipError, match="did you mean `plans`"):
        decode(_payload_with([PLAN], "plan"), cluster="c1", ref=REF, trusted=None)


# -- the hub -----------------------------------------------------------------------------------

def _request(repo: Path, cluster: str, plan: str) -> None:
    """A plan request ref (its tree: the cluster's own, as `gitfleet plan` writes them)."""
    git = Git(repo)
    branch = git.resolve(Branches().cluster(cluster))
    assert branch is not None
    git.update_refs([RefUpdate(Branches().plan(cluster, plan), branch, None)])


def test_the_hub_lists_waiting_plans_only_to_agents_that_read_them(tmp_path: Path) -> None:
    repo = example_repo(tmp_path / "fleet")
    key, folder = SigningKey.generate(), tmp_path / "tips"
    hub = Hub(open_store(str(repo)), settings=HubSettings(interval=15, signing_key=key,
                                                          tips_dir=folder))
    hub.run_once()
    beat(repo, "prod-east", "0.2.0")
    beat(repo, "prod-west", "0.1.0")          # staging: no heartbeat yet

    def listed() -> dict[str, tuple[str, ...] | None]:
        return {c: decode((folder / f"{c}.json").read_bytes(), cluster=c,
                          ref=Branches().cluster(c), trusted=TrustedKeys.of(key)).tip.plans
                for c in CLUSTERS}

    hub.run_once()
    assert listed() == {"prod-east": (), "prod-west": None, "staging": None}
    assert hub.tips is not None
    signed = hub.tips.issued

    now = time.time()
    fresh = plan_id("c" * 40, now + 3600)
    older = plan_id("d" * 40, now + 1800)
    for cluster in CLUSTERS:
        _request(repo, cluster, fresh)
    _request(repo, "prod-east", older)
    _request(repo, "prod-east", plan_id("e" * 40, now - 1))        # expired
    _request(repo, "prod-east", "not-a-plan-id")                    # someone else's ref
    hub.run_once()
    assert listed() == {"prod-east": (older, fresh), "prod-west": None, "staging": None}
    assert hub.tips.issued == signed + 1        # prod-east's document alone was re-signed

    hub.run_once()                              # nothing new: nothing re-signed
    assert hub.tips.issued == signed + 1
    beat(repo, "staging", "0.2.0")             # staging's agent reports: its document lists
    hub.run_once()
    assert listed()["staging"] == (fresh,)
    git = Git(repo)
    git.update_refs([RefUpdate(Branches().plan("prod-east", fresh), None,
                               git.resolve(Branches().plan("prod-east", fresh)))])
    hub.run_once()
    assert listed()["prod-east"] == (older,)    # a plan removed (--gc, the TTL) is unlisted
