"""The agent's tip poller: ask a small HTTP document, not Git, whether the branch moved.

`gitfleet agent --tips-url URL` polls `URL/<cluster>.json` (gitfleet.wire.tips) with
`If-None-Match`, asking the server to hold the request until the tip changes (`Prefer:
wait=N`; the hub's listener does, a static store or CDN answers at once and is polled every
interval). Its `hint()` is the agent's `branch_hint`: the tip the hub signed, so the agent
skips its Git fetch while that equals what it last fetched, and fetches at once when it
changes (the poller wakes the agent's wait).

Trust: a tip document only decides *when* the agent fetches. With trusted hub keys it must be
signed by one of them, else it is refused like an unreachable one. Whatever is fetched is
applied only when the Git commit itself is signed by the hub (agent.clusterbranch), so a forged
document can at worst cause a fetch. Fallback: while the document cannot be had or used, the
hint is None and the agent polls Git at its normal interval (logged once per outage); the
poller retries with backoff and jitter and the agent goes back to tips when they answer again.
A safety fetch bounds how long a stuck tip server that keeps serving an old, well-signed
document can hide a change. Its interval: the operator's `--tips-safety-interval` when given
(an override, whatever the documents say); else the `safetySeconds` the hub signed into the
document (chosen from the fleet's size, gitfleet.hub.tipsafety), never below the agents'
default of 10 min (the floor, also used when the document says nothing) nor above 6 h. It is
jittered (+-10 %), and the first one comes at a random point of the first interval, so a fleet
of agents started together does not fetch Git in the same second every interval.
"""

from __future__ import annotations

import http.client
import logging
import random
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass

from gitfleet.backoff import Backoff
from gitfleet.errors import InputError
from gitfleet.logs import log
from gitfleet.wire.tips import (
    MAX_SIZE,
    MEDIA_TYPE,
    SAFETY_CEILING,
    SAFETY_FLOOR,
    TipError,
    Verifier,
    decode,
    file_name,
    folder_url_problem,
)

LOG = logging.getLogger("gitfleet.agent.tips")

# two documents that wake the agent (a Git fetch each) within this many seconds: a rush
WAKE_RUSH = 2.0


@dataclass(frozen=True)
class TipSettings:
    url: str                  # the folder of tip documents: URL/<cluster>.json
    cluster: str
    ref: str                  # the cluster branch, refs/heads/<prefix>/clusters/<cluster>
    interval: float = 10.0    # between requests when the server does not hold them
    wait: int = 25            # asked of the server: hold the request this long (0: never)
    safety: float | None = None   # the operator's override; None: the hub's, floor 10 min
    safety_jitter: float = 0.1    # +-share of each safety interval; 0: exact, no first phase
    # retries of an unusable document (cheap: no Git); the agent polls Git meanwhile
    backoff: Backoff = Backoff(base=2.0, maximum=60.0, jitter=0.25)


def document_url(base: str, cluster: str) -> str:
    """`base/<cluster>.json`; a base with credentials is refused (they would sit in argv and
    in logs)."""
    problem = folder_url_problem(base)
    if problem:
        raise InputError(f"--tips-url {problem}")
    return base.rstrip("/") + "/" + urllib.parse.quote(file_name(cluster))


class TipWatcher:
    """Polls one cluster's tip document on its own thread; `hint()` for the agent."""

    def __init__(self, settings: TipSettings, *, trusted: Verifier | None,
                 last_fetched: Callable[[], str | None], wake: Callable[[], None],
                 notice: Callable[[], None] = lambda: None,
                 rng: random.Random | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.settings = settings
        self.url = document_url(settings.url, settings.cluster)
        self.trusted = trusted
        self.last_fetched, self.wake, self.notice = last_fetched, wake, notice
        self.rng = rng or random.Random()
        self.clock = clock
        self.tip: str | None = None        # the last good document's commit
        self.problem = "no answer yet"     # why tips are not used now ("" when they are)
        self.failures = 0
        self.requests = 0
        self._etag: str | None = None
        self._answered = 0.0               # when the last answer came
        self._woke_at = -60.0              # when an answer last woke the agent (a Git fetch)
        self._rushed = False               # ... and it was asked again at once
        self.asked = 0                     # `safetySeconds` of the last good document
        self._plans: frozenset[str] | None = None   # its `plans` (None: it says nothing)
        self._safety_from = clock()        # the last safety fetch (or the start)
        # the first safety fetch at a random point of the first interval (spread starts)
        self._safety_share = self.rng.uniform(0.0, 1.0) if settings.safety_jitter else 1.0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # -- the agent's side -------------------------------------------------------------------

    def hint(self) -> str | None:
        """The tip the hub published, or None when the agent should ask Git (no usable
        document, or the safety fetch is due)."""
        now = self.clock()
        with self._lock:
            due = self._safety_from + self.safety() * self._safety_share
            if self.problem or self.tip is None or now >= due:
                self._safety_from = now
                jitter = self.settings.safety_jitter
                self._safety_share = 1.0 + self.rng.uniform(-jitter, jitter)
                return None
            return self.tip

    def plans(self) -> frozenset[str] | None:
        """The plan requests the hub says wait for this cluster, or None when no usable
        document says (the agent then looks for them at its --plan-interval)."""
        with self._lock:
            return None if self.problem else self._plans

    def safety(self) -> float:
        """Seconds between safety fetches: the operator's flag, else the hub's (floor 10 min,
        ceiling 6 h)."""
        if self.settings.safety is not None:
            return self.settings.safety
        return float(min(max(self.asked, SAFETY_FLOOR), SAFETY_CEILING))

    # -- the poller ----------------------------------------------------------------------------

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name=f"gitfleet-tips-{self.settings.cluster}")
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=0.5)   # a held request ends with the process (daemon)
            self._thread = None

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                delay = self.poll()
            except Exception as exc:   # noqa: BLE001 (a dead poller would leave a stale tip)
                delay = self._failed(f"tip poller: {exc!r}")
            if delay > 0 and self._stop.wait(delay):
                return

    def poll(self) -> float:
        """One request; returns the seconds until the next."""
        started = self.clock()
        headers = {"Accept": MEDIA_TYPE, "Cache-Control": "no-cache"}
        if self.settings.wait > 0:
            headers["Prefer"] = f"wait={self.settings.wait}"
        if self._etag and not self.problem:
            headers["If-None-Match"] = self._etag
        request = urllib.request.Request(self.url, headers=headers)
        self.requests += 1
        try:
            with urllib.request.urlopen(request, timeout=self.settings.wait + 10) as response:
                body = response.read(MAX_SIZE + 1)
                etag, held = response.headers.get("ETag"), response.headers.get(
                    "Preference-Applied")
                reading = decode(body, cluster=self.settings.cluster, ref=self.settings.ref,
                                 trusted=self.trusted)
        except urllib.error.HTTPError as exc:
            with exc:
                if exc.code != 304 or self.tip is None:
                    return self._failed(f"HTTP {exc.code} from the tip server")
                etag, held = exc.headers.get("ETag") or self._etag, exc.headers.get(
                    "Preference-Applied")
                return self._good(self.tip, etag, held, started, self.asked, self._plans)
        except TipError as exc:
            return self._failed(str(exc))
        except (OSError, ValueError, http.client.HTTPException) as exc:
            # unreachable, timed out, a broken answer (a cut body, a garbage status line)
            return self._failed(f"tip server unreachable: {type(exc).__name__}: {exc}")
        plans = None if reading.tip.plans is None else frozenset(reading.tip.plans)
        return self._good(reading.tip.commit, etag, held, started, reading.tip.safety_seconds,
                          plans)

    def _good(self, commit: str, etag: str | None, held: str | None, started: float,
              asked: int, plans: frozenset[str] | None) -> float:
        with self._lock:
            changed = commit != self.tip
            was = self.problem
            fresh = changed or plans != self._plans
            new_plans = plans is not None and (bool(was) or bool(plans - (self._plans or set())))
            self.tip, self._etag, self.problem, self.failures = commit, etag, "", 0
            asked, self.asked = self.asked, asked
            self._plans = plans
        if asked != self.asked:
            log(LOG, logging.INFO, "safety fetch interval", cluster=self.settings.cluster,
                asked_by_hub=f"{self.asked}s" if self.asked else "nothing",
                used=f"{self.safety():.0f}s",
                why="--tips-safety-interval" if self.settings.safety is not None else "hub")
        if was and was != "no answer yet":
            log(LOG, logging.INFO, "tip documents answer again: Git is fetched only when the "
                "tip moves", cluster=self.settings.cluster, url=self.url)
        woke = changed and commit != self.last_fetched()
        if woke:
            self.wake()
        if new_plans:
            self.notice()       # a plan request may wait: the agent's plan part looks at once
        # Ask again at once after a new document (the next request, with its ETag, is held if
        # the server holds requests) and after a held request; a request answered at once with
        # nothing new (a static store, a busy hub) waits the interval. Only a document that
        # wakes the agent makes it ask Git; a server that flips tips at once, again and again,
        # gets one quick round per interval: two wakes within WAKE_RUSH seconds, and the next
        # request waits the interval, so it cannot make the agent ask Git more than twice an
        # interval. A document that cannot wake the agent (its tip is the one fetched, or only
        # its plans or safety interval changed: the hub re-signs a document when a plan is
        # listed or its agent upgrades) neither counts towards that nor waits the interval: a
        # tip that moves right after it is seen within one held request. Two such documents in
        # a row within a second wait a second (a flipping server gets no busy loop).
        now = self.clock()
        quick = started - self._answered < 1.0 and now - started < 1.0
        self._answered = now
        if woke:
            rushed = self._rushed and now - self._woke_at < WAKE_RUSH
            self._woke_at, self._rushed = now, not rushed
            return 0.0 if not rushed else self._spread(self.settings.interval)
        if fresh:
            return 1.0 if quick else 0.0
        if held and now - started >= self.settings.wait / 2:
            return 0.0
        return self._spread(self.settings.interval)

    def _failed(self, why: str) -> float:
        with self._lock:
            first = not self.problem or self.problem == "no answer yet"
            self.problem = why
            self.failures += 1
            failures = self.failures
        delay = self.settings.backoff.delay(failures, self.rng)
        if first:
            log(LOG, logging.WARNING, "tip documents unusable; polling Git every interval "
                "until they answer again", cluster=self.settings.cluster, url=self.url,
                error=why, retry_in=f"{delay:.1f}s")
        return delay

    def _spread(self, delay: float) -> float:
        """±10% so a fleet of agents polling a static store does not poll in step."""
        return delay * self.rng.uniform(0.9, 1.1)
