"""The fleet-repo YAML the end-to-end tests commit: ManagedClusters, the `app` Subscription,
its Namespace and ConfigMaps. One definition, so a change of the format is one edit, and each
test still spells out what differs (labels, sync mode, keys, feeds)."""

from __future__ import annotations

NAMESPACE = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: app\n"


def managed_cluster(name: str, uid: str, *, labels: str = "env: test", namespace: bool = True,
                    sync_mode: str | None = "Pull", **spec: str) -> str:
    """clusters/<name>.yaml: a ManagedCluster in `gitfleet-<name>` (unless not `namespace`);
    `spec` adds fields after clusterId and syncMode (ageRecipient=..., signingKey=...)."""
    ns = f"  namespace: gitfleet-{name}\n" if namespace else ""
    sync = f"  syncMode: {sync_mode}\n" if sync_mode else ""
    extra = "".join(f"  {key}: {value}\n" for key, value in spec.items())
    return (f"apiVersion: clusters.clusternet.io/v1beta1\nkind: ManagedCluster\nmetadata:\n"
            f"  name: {name}\n{ns}  labels: {{{labels}}}\nspec:\n  clusterId: {uid}\n"
            f"{sync}{extra}")


def feed(kind: str, name: str, *, api_version: str = "v1", namespace: str = "") -> str:
    """One line of a Subscription's feeds."""
    ns = f"namespace: {namespace}, " if namespace else ""
    return f"    - {{apiVersion: {api_version}, kind: {kind}, {ns}name: {name}}}\n"


def subscription(*feeds: str, labels: str = "") -> str:
    """policies/app.yaml: Subscription app/app for every `env: test` cluster, feeding the
    `app` Namespace and then `feeds` (see `feed`)."""
    meta = f"  labels: {{{labels}}}\n" if labels else ""
    return ("apiVersion: apps.clusternet.io/v1alpha1\nkind: Subscription\nmetadata:\n"
            f"  name: app\n  namespace: app\n{meta}spec:\n  subscribers:\n"
            "    - clusterAffinity:\n        matchLabels: {env: test}\n  feeds:\n"
            + feed("Namespace", "app") + "".join(feeds))


def config_map(name: str, data: str) -> str:
    """templates/<name>.yaml: ConfigMap app/<name> whose data is the one line `data`."""
    return (f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: app\n"
            f"data:\n  {data}\n")
