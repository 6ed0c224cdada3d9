"""Registration requests the golden test writes: every field, with and without an answer."""

from __future__ import annotations

from gitfleet.registration.request import Answer, Request, document


def texts() -> list[bytes]:
    """The documents of tests/wire/data/registration.golden (separated by `---`)."""
    small = Request(name="edge-1", cluster_id="3f1c")
    full = Request(name="prod-east", cluster_id="8a7e-11", labels={"zone": "b", "env": "prod"},
                   sync_mode="Push", cluster_type="EdgeCluster", kubernetes_version="v1.30.2",
                   platform="linux/amd64", requested_at="2026-11-27T02:00:00Z",
                   age_recipient="age1qyqszqgpqyqszqgpqyqszqgpqyqszqgpqyqszqgpqyqszqgpqyqs3290gq",
                   signing_key="ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9"
                               "okWi0dh2l9GKJl agent")
    return [document(small), document(full),
            document(full, Answer("Approved", "labels match rule prod", full.digest(),
                                  "2026-11-27T02:00:05Z")),
            document(small, Answer("Pending", ""))]
