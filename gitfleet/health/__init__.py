"""Health: is a live object what its Description asked for yet? (SEMANTICS "Health and status").

One pure judge that the agent, the hub and the dashboard share: `judge(live, rules=, now=)`.
Built-in kinds are judged as Argo CD's gitops-engine and kstatus judge them, one small module
per family (workloads, pods, batch, network, storage, autoscaling, policy, apis) behind a lookup
by group and kind; every other kind by the status conventions; health rules in CEL from the
fleet repo beat both. `phase_of` turns the objects' health into a Description's phase.
"""

from gitfleet.health.judge import BUILT_IN, group_of, judge
from gitfleet.health.owned import WITH_PODS, pod_selector, with_pods
from gitfleet.health.phases import ObjectOutcome, phase_of
from gitfleet.health.replicas import replica_status
from gitfleet.health.rules import NO_RULES, HealthRule, HealthRules, RuleProblem, check_rules
from gitfleet.health.verdict import Verdict

__all__ = ["BUILT_IN", "NO_RULES", "WITH_PODS", "HealthRule", "HealthRules", "ObjectOutcome",
           "RuleProblem", "Verdict", "check_rules", "group_of", "judge", "phase_of", "pod_selector",
           "replica_status", "with_pods"]
