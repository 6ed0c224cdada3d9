"""URLs lose their credentials where they enter gitfleet; any text is redacted before it is
shown; error texts name the Git command, not its options."""

from __future__ import annotations

from gitfleet.state.git import command_name
from gitfleet.state.remoteerrors import (
    AuthenticationFailed,
    PermissionDenied,
    RepositoryNotFound,
    ServerUnreachable,
    classify,
)
from gitfleet.state.urls import UrlCredentials, credential_scope, redact, split_credentials


def test_split_credentials_of_https_urls_only() -> None:
    assert split_credentials("https://bot:s3cr%2Ft@git.example.com:8443/org/fleet.git") == (
        "https://git.example.com:8443/org/fleet.git", UrlCredentials("bot", "s3cr/t"))
    assert split_credentials("https://ghp_abc@github.com/o/r") == (
        "https://github.com/o/r", UrlCredentials("ghp_abc", ""))
    for plain in ("https://github.com/o/r", "ssh://git@host:22/o/r", "git@host:o/r.git",
                  "file:///srv/fleet.git", "/srv/fleet.git", "git://127.0.0.1:9418/fleet.git"):
        assert split_credentials(plain) == (plain, UrlCredentials())
    assert not UrlCredentials() and UrlCredentials("u", "")


def test_redact_hides_userinfo_of_http_urls_in_any_text() -> None:
    text = ("fatal: unable to access 'https://bot:tok@h/x.git/': 403; "
            "see http://tok2@proxy:3128 and ssh://git@host/x")
    assert redact(text) == ("fatal: unable to access 'https://***@h/x.git/': 403; "
                            "see http://***@proxy:3128 and ssh://git@host/x")
    assert credential_scope("https://u:p@h:8443/a/b.git") == "https://h:8443/"
    assert credential_scope("ssh://git@h/a") == ""


def test_error_texts_name_the_git_command() -> None:
    assert command_name(["-c", "fetch.unpackLimit=1", "fetch", "--quiet", "--", "u"]) == \
        "git fetch"
    assert command_name(["push", "--atomic"]) == "git push"
    assert command_name(["ls-remote", "--refs"]) == "git ls-remote"


def test_each_hosts_words_map_to_one_cause() -> None:
    url = "https://h/x.git"
    cases = {
        "remote: HTTP Basic: Access denied\nfatal: Authentication failed for 'https://h/x.git/'":
            AuthenticationFailed,       # GitLab
        "remote: Permission to o/x.git denied to bot.\nfatal: unable to access "
        "'https://h/x.git/': The requested URL returned error: 403": PermissionDenied,  # GitHub
        "FATAL: W refs/heads/main fleet c1 DENIED by fallthru\n(or you mis-spelled the reponame)":
            PermissionDenied,           # gitolite
        "remote: Repository not found.\nfatal: repository 'https://h/x.git/' not found":
            RepositoryNotFound,
        "fatal: remote error: access denied or repository not exported: /x.git":
            RepositoryNotFound,         # git daemon
        "fatal: unable to access 'https://h/x.git/': Could not resolve host: h":
            ServerUnreachable,
        "fatal: unable to access 'https://h/x.git/': Failed to connect to h port 443":
            ServerUnreachable,
    }
    for stderr, kind in cases.items():
        error = classify("git fetch", url, stderr)
        assert type(error) is kind, stderr
        assert str(error).startswith(f"git fetch {url}: {kind.reason}; ")
    assert classify("git fetch", url, "fatal: bad object 1234") is None
    # the credentials of a URL in Git's words never reach the message
    leaked = classify("git fetch", "https://u:s3cr3t@h/x", "fatal: Authentication failed for "
                      "'https://u:s3cr3t@h/x/'")
    assert leaked is not None and "s3cr3t" not in str(leaked)
