"""The dashboard in a real headless Chromium, against a hub serving a live fleet (agents and
kubesim clusters): what a person sees, checked against what `gitfleet get` prints.

Few tests, one browser: the grid and its shareable filters; a push seen live, then its diff in
history; a stopped agent seen as Unknown; an axe-core scan of every view in both themes; the
static export opened from file://. The screenshots in docs/img/ are made here.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from gitfleet.clock import parse_iso
from tests.dashboard.conftest import ATTACKER, AXE, WAIT_MS, shot
from tests.dashboard.livefleet import LiveFleet, git
from tests.harness import gitfleet_here, wait_for

# the module's first test carries the live fleet's start; at load average 8 a test here may
# take minutes waiting on its conditions, each bounded on its own
pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

WEB = "templates/web/web.yaml"
WEB_TILE = 'tr[data-cluster="prod-east"] td[data-app="web/web"] .b'


def cli(*args: str) -> Any:
    """The JSON a `gitfleet` command prints, run in this process (`gitfleet.cli.main`): the
    live fleet polls on while a test waits, so a new process's imports cost twice."""
    done = gitfleet_here(*args)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def words(page: Any, selector: str) -> list[str]:
    return page.locator(selector).evaluate_all("els => els.map(e => e.dataset.word)")


def converged(fleet: LiveFleet) -> None:
    """Every tile Healthy and every cluster Ready, as the API says."""
    def done() -> bool:
        data = fleet.api("fleet?limit=500")
        return bool(data) and bool(data["clusters"]) and all(
            c["condition"] == "Ready" and all(t["word"] == "Healthy" for t in c["tiles"].values())
            for c in data["clusters"])
    assert fleet.supervisor is not None
    wait_for(done, timeout=180, step=fleet.supervisor.check, what="the fleet converged")


def open_grid(page: Any, fleet: LiveFleet, query: str = "") -> None:
    page.goto(f"{fleet.url}#/fleet{query}")
    page.wait_for_selector("#grid tbody tr")


def test_the_grid_shows_every_cluster_and_application_and_filters_by_url(
        fleet: LiveFleet, page: Any) -> None:
    converged(fleet)
    clusters = sorted(r["name"] for r in cli("get", "clusters", "--repo", str(fleet.bare),
                                             "-o", "json"))
    apps = sorted(f"{r['namespace']}/{r['name']}" for r in cli(
        "get", "subscriptions", "--repo", str(fleet.bare), "-o", "json"))
    open_grid(page, fleet)
    rows = page.locator("#grid tbody tr").evaluate_all("rs => rs.map(r => r.dataset.cluster)")
    assert sorted(rows) == clusters
    assert sorted(page.locator("#grid thead th a").all_inner_texts()) == apps
    # colour is never the only signal: every tile and readiness badge carries its word
    badges = page.locator("#grid .b")
    assert badges.count() > len(clusters)
    assert all(t.strip().endswith(w) for t, w in zip(badges.all_inner_texts(),
                                                     words(page, "#grid .b"), strict=True))
    # every tile Healthy as the page judges it: under load a heartbeat comes late and the page
    # shows its cluster Unknown a moment (as it should), so wait, bounded, for the page to agree
    page.wait_for_function("""() => { const w = [...document.querySelectorAll(
        '#grid td[data-app] .b')].map(b => b.dataset.word);
        return w.length > 0 && w.every(x => x === 'Healthy'); }""")
    shot(page, "fleet")

    # a label filter typed in the page is a URL that shows the same rows to anyone
    prod = sorted(r["name"] for r in cli("get", "clusters", "--repo", str(fleet.bare),
                                         "-l", "env=prod", "-o", "json"))
    assert 0 < len(prod) < len(clusters)
    # a live update (the next heartbeat) that began before the user clicked into the filter ends
    # while they type: its answer is held until the text is typed, then the page is rebuilt -
    # the text stays and so does the focus (Enter still applies the filter)
    held: list[Any] = []

    def hold_first(route: Any) -> None:
        if held:
            route.continue_()
        else:
            held.append(route)

    page.route("**/api/fleet?*", hold_first)
    wait_for(lambda: held, step=lambda: page.wait_for_timeout(50), timeout=WAIT_MS / 1000,
             what="a live update of the grid")
    page.fill("#f-l", "env=prod")
    page.evaluate("() => { window.typedInto = document.querySelector('form.filters'); }")
    held[0].continue_()
    page.wait_for_function("() => document.querySelector('form.filters') !== window.typedInto")
    assert page.input_value("#f-l") == "env=prod"
    assert page.evaluate("() => document.activeElement && document.activeElement.id") == "f-l"
    page.unroute("**/api/fleet?*", hold_first)
    page.keyboard.press("Enter")
    page.wait_for_function(f"() => document.querySelectorAll('#grid tbody tr').length == "
                           f"{len(prod)}")
    assert "l=env%3Dprod" in page.url
    shared = page.context.new_page()
    open_grid(shared, fleet, page.url.split("#/fleet", 1)[1])
    assert sorted(shared.locator("#grid tbody tr").evaluate_all(
        "rs => rs.map(r => r.dataset.cluster)")) == prod
    # the name search, reached from the keyboard with "/"
    shared.keyboard.press("/")
    shared.keyboard.type("west")
    shared.keyboard.press("Enter")
    shared.wait_for_function("() => document.querySelectorAll('#grid tbody tr').length == 1")
    assert shared.locator("#grid tbody tr").get_attribute("data-cluster") == "prod-west"


def test_a_push_shows_live_then_its_diff_in_history(fleet: LiveFleet, page: Any) -> None:
    converged(fleet)
    open_grid(page, fleet)
    # every word the web tile of prod-east shows from now on, and a mark a reload would lose
    page.evaluate("""(sel) => {
        window.sameDocument = true; window.seen = [];
        const note = () => { const t = document.querySelector(sel);
            if (t && window.seen[window.seen.length - 1] !== t.dataset.word)
                window.seen.push(t.dataset.word); };
        note();
        new MutationObserver(note).observe(document.getElementById('view'),
                                           {childList: true, subtree: true});
    }""", WEB_TILE)
    before_state = git(fleet.bare, "rev-parse", "gitfleet/state")
    text = (fleet.work / WEB).read_text()
    old = int(re.search(r"replicas: (\d+) ", text)[1])   # type: ignore[index]
    fleet.push(WEB, f"replicas: {old} ", f"replicas: {old + 3} ", f"web: {old + 3} replicas")
    page.wait_for_function("() => window.seen.includes('Progressing') && "
                           "window.seen[window.seen.length - 1] === 'Healthy' && "
                           "window.seen.lastIndexOf('Progressing') < window.seen.length - 1")
    assert page.evaluate("window.sameDocument") is True     # no reload
    seen = page.evaluate("window.seen")
    assert seen[0] == "Healthy" and "Progressing" in seen, seen

    # history: the newest state commit against the one before, for prod-east
    after_state = git(fleet.bare, "rev-parse", "gitfleet/state")
    assert after_state != before_state
    path = "clusters/prod-east/web/web/apps_Deployment_web_web.yaml"

    def replicas(state: str) -> int:
        return int(re.search(r"^  replicas: (\d+)$", git(fleet.bare, "show", f"{state}:{path}"),
                             re.M)[1])  # type: ignore[index]

    page.click("a[data-nav=history]")
    page.wait_for_selector("text=diff with previous")
    assert page.evaluate("window.sameDocument") is True
    row = page.locator("tbody tr").first
    assert "web: " in row.inner_text() and "git revert --no-edit" in row.inner_text()
    row.locator("text=diff with previous").click()
    page.wait_for_selector("#diff-objects")
    assert page.url.endswith(f"a={before_state}&b={after_state}&cluster=prod-east") or \
        f"b={after_state}" in page.url
    entry = page.locator('#diff-objects > li[data-path="web/web/apps_Deployment_web_web.yaml"]')
    lines = entry.locator("pre").inner_text().splitlines()
    assert f"-  replicas: {replicas(before_state)}" in lines
    assert f"+  replicas: {replicas(after_state)}" in lines
    shot(page, "history")


def test_a_stopped_agent_turns_its_cluster_unknown(fleet: LiveFleet, page: Any) -> None:
    converged(fleet)
    page.goto(f"{fleet.url}#/cluster/prod-west")
    page.wait_for_selector("h1 .b[data-word=Ready]")
    fleet.stop_agent("prod-west")
    try:
        page.wait_for_selector("h1 .b[data-word=Unknown]")
        assert "heartbeat older than" in page.locator("dl.facts").inner_text()
        shot(page, "cluster")
        page.click("a[data-nav=fleet]")
        page.wait_for_selector('#grid tr[data-cluster="prod-west"]')
        row = page.locator('#grid tr[data-cluster="prod-west"]')
        assert words(page, '#grid tr[data-cluster="prod-west"] td:nth-child(2) .b') == ["Unknown"]
        tiles = words(page, '#grid tr[data-cluster="prod-west"] td[data-app] .b')
        assert tiles and "Healthy" not in tiles, tiles          # never shown as running well
        assert row.locator("text=Ready").count() == 0
        assert words(page, '#grid tr[data-cluster="prod-east"] td:nth-child(2) .b') == ["Ready"]
    finally:
        fleet.start_agent("prod-west")


def test_a_dns_rebinding_page_reads_nothing_from_the_hub(fleet: LiveFleet, page: Any) -> None:
    """A page from attacker.example whose name then resolves to 127.0.0.1 (the browser's
    resolver plays the rebinding DNS server) is same-origin with the hub's dashboard: what it
    fetches says `Host: attacker.example`, and gets 403 and no fleet data."""
    port = fleet.url.rstrip("/").rsplit(":", 1)[1]
    wait_for(lambda: fleet.api("version"), what="the dashboard answering")
    response = page.goto(f"http://{ATTACKER}:{port}/")
    assert response is not None and response.status == 403
    status, body = page.evaluate("""async () => {
        const r = await fetch('/api/fleet?limit=500');
        return [r.status, await r.text()]; }""")
    assert status == 403 and "prod-east" not in body and "clusters" not in body
    assert "prod-east" not in page.content()
    page.goto(fleet.url + "#/fleet")                       # by its own name it answers
    page.wait_for_selector('#grid tr[data-cluster="prod-east"]')


SERIOUS = """() => axe.run(document, {resultTypes: ['violations']}).then(r => r.violations
    .filter(v => v.impact === 'serious' || v.impact === 'critical')
    .map(v => v.id + ': ' + v.nodes.map(n => n.target.join(' ')).slice(0, 3).join(', ')))"""


def test_axe_finds_no_serious_violation_in_any_view_or_theme(fleet: LiveFleet,
                                                             browser: Any) -> None:
    if not AXE.exists():
        pytest.fail(f"{AXE} is missing: run `bash tools/setup --test`")
    converged(fleet)
    state = git(fleet.bare, "rev-parse", "gitfleet/state")
    parent = git(fleet.bare, "rev-parse", "gitfleet/state~1") if git(
        fleet.bare, "rev-list", "--count", "gitfleet/state") != "1" else state
    views = {"fleet": ("#/fleet", "#grid"), "cluster": ("#/cluster/prod-east", "ul.tree"),
             "app": ("#/app/web/web", ".bars"),
             "history": (f"#/history?a={parent}&b={state}&cluster=prod-east", "h2")}
    # axe is injected as a script of its own: this context alone lets it past the page's CSP
    context = browser.new_context(viewport={"width": 1280, "height": 800}, bypass_csp=True)
    context.set_default_timeout(WAIT_MS)
    try:
        page = context.new_page()
        page.emulate_media(color_scheme="light")
        for theme in ("light", "dark"):
            if theme == "dark":      # the theme button, from the keyboard
                page.focus("#theme")
                page.keyboard.press("Enter")
                assert page.get_attribute("#theme", "aria-pressed") == "true"
            for name, (where, ready) in views.items():
                # a whole load, not a hash change: the previous view's elements cannot answer
                # `ready`, and no late render of it moves the focus away from the theme button
                page.goto(fleet.url + where)
                page.reload()
                page.wait_for_selector(ready)
                assert page.evaluate("document.documentElement.dataset.theme") == theme
                page.add_script_tag(path=str(AXE))
                assert page.evaluate(SERIOUS) == [], (theme, name)
                if theme == "dark" and name == "fleet":
                    shot(page, "fleet-dark")
                if theme == "light" and name == "app":
                    shot(page, "app")
    finally:
        context.close()


def test_the_static_export_renders_from_file(fleet: LiveFleet, page: Any,
                                             tmp_path: Path) -> None:
    converged(fleet)
    if git(fleet.bare, "rev-list", "--count", "gitfleet/state") == "1":   # run alone
        state = git(fleet.bare, "rev-parse", "gitfleet/state")
        text = (fleet.work / WEB).read_text()
        old = int(re.search(r"replicas: (\d+) ", text)[1])   # type: ignore[index]
        fleet.push(WEB, f"replicas: {old} ", f"replicas: {old + 1} ", "web: one more")
        wait_for(lambda: git(fleet.bare, "rev-parse", "gitfleet/state") != state,
                 what="a new state")
    site = tmp_path / "site"
    written = gitfleet_here("dashboard", "--repo", str(fleet.bare), "--out", str(site))
    assert written.returncode == 0, written.stderr
    clusters = sorted(r["name"] for r in cli("get", "clusters", "--repo", str(fleet.bare),
                                             "-o", "json"))
    # heartbeat ages tick in the page, from the heartbeat's time: the browser's clock is
    # installed at a Ready cluster's last heartbeat, then moved on (no server, no new data)
    exported = (site / "data" / "fleet.js").read_text()
    data = json.loads(exported[exported.index(",") + 1:exported.rindex(");")])
    ready = next(c for c in data["clusters"] if c["condition"] == "Ready")
    row = f'#grid tr[data-cluster="{ready["name"]}"] td:nth-child(2)'
    beat = parse_iso(ready["heartbeat"])
    # installed a minute early and held at the heartbeat once the page is up: the page clock
    # runs while the page loads, and a slow load must not age the heartbeat under our eyes
    page.clock.install(time=beat - 60)
    page.goto((site / "index.html").as_uri() + "#/fleet")
    page.wait_for_selector("#grid tbody tr")
    page.clock.pause_at(beat)
    assert page.locator(row + " .age").inner_text().strip() == "0s ago"
    assert words(page, row + " .b") == ["Ready"]
    # Unknown past the heartbeat's tolerance and the page's 2 s slack (app.js SLACK)
    grace = int(ready["heartbeatToleranceSeconds"]) + 2
    page.clock.run_for(1000 * (grace - 1))
    assert page.locator(row + " .age").inner_text().strip() == f"{grace - 1}s ago"
    assert words(page, row + " .b") == ["Ready"]
    page.clock.run_for(2000)              # past it: Unknown, never a stale Ready
    assert words(page, row + " .b") == ["Unknown"]
    assert page.locator(row + " .age").inner_text().strip() == f"{grace + 1}s ago"
    assert "Healthy" not in words(page, f'#grid tr[data-cluster="{ready["name"]}"] td[data-app] .b')
    assert sorted(page.locator("#grid tbody tr").evaluate_all(
        "rs => rs.map(r => r.dataset.cluster)")) == clusters
    assert "Static export of state" in page.locator("#live").inner_text()
    page.fill("#f-q", "east")
    page.keyboard.press("Enter")
    page.wait_for_function("() => document.querySelectorAll('#grid tbody tr').length == 1")
    page.click("#grid thead th a >> text=web/web")
    page.wait_for_selector(".bars")
    assert "Application web/web" in page.locator("h1").inner_text()
    page.click('.bars a >> text=prod-east')
    page.wait_for_selector("ul.tree")
    assert "Cluster prod-east" in page.locator("h1").inner_text()
    page.click("a[data-nav=history]")
    page.wait_for_selector("tbody tr")
    # each state commit links the clusters it changed to their diffs, written by the export
    page.locator("tbody tr td a").first.click()
    page.wait_for_selector("#diff-objects > li")
