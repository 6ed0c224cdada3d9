// gitfleet dashboard: hash-routed views over the read-only API (or, from file://, over the
// data files of a static export). No framework, no build step; every view has its own URL.
"use strict";
(function () {
  const STATIC = location.protocol === "file:";
  const POLL_MS = 300;       // the live check; the server holds it while a rebuild runs
  const PAGE = 50;
  const view = document.getElementById("view");
  const live = document.getElementById("live");
  let etag = "";
  let route = null;           // the route being shown: re-rendered when the data moves
  let token = sessionStorage.getItem("gitfleet-token") || "";
  const loaded = {};          // static export: key -> data, filled by data/*.js

  // -- small helpers --------------------------------------------------------------------
  function h(tag, attrs, ...kids) {
    const el = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "text") el.textContent = v;
      else if (k === "on") for (const [ev, fn] of Object.entries(v)) el.addEventListener(ev, fn);
      else el.setAttribute(k, v === true ? "" : v);
    }
    for (const kid of kids.flat(Infinity)) {
      if (kid === null || kid === undefined || kid === false) continue;
      el.append(kid instanceof Node ? kid : document.createTextNode(String(kid)));
    }
    return el;
  }
  const CLASS = {
    Healthy: "ok", Success: "ok", Ready: "ok", Synced: "ok", Complete: "ok", Current: "ok",
    Progressing: "prog", Installing: "prog", Released: "prog",
    Pending: "warn", Waiting: "warn", OutOfSync: "warn", Paused: "warn", NeverReported: "warn",
    Skipped: "warn", Suspended: "warn",
    Failure: "bad", Degraded: "bad", RenderError: "bad", NotReady: "bad", Failed: "bad",
    RolledBack: "bad", Aborted: "bad", PruneRefused: "bad", Refused: "bad", Held: "bad",
    Unreachable: "bad", NotInFleet: "unk",
  };
  function badge(word, title, cls) {
    return h("span", { class: "b " + (cls || CLASS[word] || "unk"), title: title || null,
                       "data-word": word }, word || "Unknown");
  }
  function ago(s) {
    if (s === null || s === undefined) return "never";
    if (s < 120) return s + "s ago";
    if (s < 3 * 3600) return Math.floor(s / 60) + "m ago";
    if (s < 48 * 3600) return Math.floor(s / 3600) + "h ago";
    return Math.floor(s / 86400) + "d ago";
  }
  // heartbeat ages tick here, from the heartbeat's time and the server's clock (`now` in each
  // answer), so a page left open shows true ages and never a stale Ready
  let skew = 0;               // server seconds - browser seconds
  function serverNow() { return Date.now() / 1000 + skew; }
  function learnClock(d) { if (d && typeof d.now === "number") skew = d.now - Date.now() / 1000; return d; }
  // a heartbeat's tolerance: seconds of silence after which the hub judges its cluster Unknown,
  // as the server declares it (gitfleet.lifecycle.judgement.tolerance; 0: no heartbeat)
  function tolerance(c) { return c.heartbeatToleranceSeconds || 0; }
  const EXPIRED = "heartbeat older than its tolerance";
  // seconds past that before the page says so itself: heartbeat times are written to the
  // second, and the server's next answer (it re-judges as the heartbeat expires) may be a poll
  // away; the page judges alone when that answer does not come (a static export, no server)
  const SLACK = 2;
  function hbAge(hb) { const t = Date.parse(hb || ""); return isNaN(t) ? null : Math.max(0, Math.floor(serverNow() - t / 1000)); }
  function stale(c) { const a = hbAge(c.heartbeat); return a !== null && tolerance(c) > 0 && a > tolerance(c) + SLACK; }
  function ageSpan(hb, suffix) {
    return h("span", { class: "muted age", "data-heartbeat": hb || "", "data-suffix": suffix || "" },
      " " + ago(hbAge(hb)) + (suffix || ""));
  }
  function condition(c) {   // the server's judgement, unless the heartbeat expired since
    return c.condition === "Ready" && stale(c) ? "Unknown" : c.condition;
  }
  function tick() {
    for (const el of document.querySelectorAll(".age[data-heartbeat]")) {
      const text = " " + ago(hbAge(el.dataset.heartbeat)) + (el.dataset.suffix || "");
      if (el.textContent !== text) el.textContent = text;
    }
    let expired = false;
    for (const el of document.querySelectorAll("[data-expires]")) {   // Ready until then
      if (serverNow() > parseFloat(el.dataset.expires) && el.dataset.word === "Ready") {
        el.replaceWith(badge("Unknown", EXPIRED));
        expired = true;
      }
    }
    // the rest of the view (readiness facts, tiles) follows from the same judgement
    if (expired && route === location.hash) render(true);
  }
  function readyBadge(c) {
    const word = condition(c);
    const b = badge(word, word === c.condition ? c.reason : EXPIRED);
    const t = Date.parse(c.heartbeat || "");
    if (word === "Ready" && !isNaN(t) && tolerance(c) > 0) {
      b.dataset.expires = String(t / 1000 + tolerance(c) + SLACK);
    }
    return b;
  }
  function lastReported(c, t) {   // a tile of a cluster whose heartbeat expired since the answer
    if (!t || condition(c) === c.condition || t.word !== "Healthy") return t;
    return Object.assign({}, t, { word: "Unknown", health: "Unknown", message: "last reported Healthy" });
  }
  function when(ts) { return new Date(ts * 1000).toISOString().replace("T", " ").slice(0, 19); }
  function short(sha) { return (sha || "").slice(0, 10); }
  function link(hash, text, attrs) { return h("a", Object.assign({ href: hash }, attrs || {}), text); }
  function fileKey(key) {
    return key.replace(/[^A-Za-z0-9.-]/g, (c) => "_" + c.charCodeAt(0).toString(16) + "_");
  }
  function parseHash() {
    const raw = location.hash.replace(/^#\/?/, "");
    const [path, query] = raw.split("?");
    const parts = (path || "fleet").split("/").map(decodeURIComponent);
    return { parts, params: new URLSearchParams(query || ""), hash: location.hash };
  }
  function go(path, params) {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(params || {})) if (v) q.set(k, v);
    const s = q.toString();
    location.hash = "#/" + path + (s ? "?" + s : "");
  }

  // -- data ------------------------------------------------------------------------------
  window.gitfleetData = function (key, data) { loaded[key] = data; };
  function loadStatic(key) {
    if (key in loaded) return Promise.resolve(loaded[key]);
    return new Promise((resolve, reject) => {
      const s = document.createElement("script");
      s.src = "data/" + fileKey(key) + ".js";
      s.onload = () => (key in loaded ? resolve(loaded[key])
                                       : reject(new Error("not in this export: " + key)));
      s.onerror = () => reject(new Error("not in this export: " + key));
      document.head.append(s);
    });
  }
  async function api(path) {
    const headers = token ? { Authorization: "Bearer " + token } : {};
    const resp = await fetch("api/" + path, { headers, cache: "no-store" });
    if (resp.status === 401) throw Object.assign(new Error("unauthorized"), { auth: true });
    const body = await resp.json();
    if (resp.status === 503 && body.retry) throw Object.assign(new Error(body.error), { retry: true });
    if (!resp.ok) throw new Error(body.error || resp.statusText);
    return learnClock(body);
  }

  // -- the fleet grid --------------------------------------------------------------------
  function labelMatch(selector) {   // static export: k=v, k==v, k!=v, k, !k
    const terms = selector.split(",").map((t) => t.trim()).filter(Boolean);
    return (labels) => terms.every((t) => {
      let m;
      if ((m = t.match(/^([^!=]+)!=(.*)$/))) return labels[m[1].trim()] !== m[2].trim();
      if ((m = t.match(/^([^!=]+)==?(.*)$/))) return labels[m[1].trim()] === m[2].trim();
      if (t.startsWith("!")) return !(t.slice(1) in labels);
      return t in labels;
    });
  }
  async function fleetData(p) {
    const offset = Math.max(0, (parseInt(p.get("page") || "1", 10) - 1) * PAGE);
    if (!STATIC) {
      const q = new URLSearchParams({ offset, limit: PAGE });
      for (const k of ["q", "l", "since"]) if (p.get(k)) q.set(k, p.get(k));
      return api("fleet?" + q.toString());
    }
    const all = await loadStatic("fleet");
    let rows = all.clusters;
    if (p.get("q")) rows = rows.filter((c) => c.name.toLowerCase().includes(p.get("q").toLowerCase()));
    if (p.get("l")) { const m = labelMatch(p.get("l")); rows = rows.filter((c) => m(c.labels || {})); }
    return Object.assign({}, all, { clusters: rows.slice(offset, offset + PAGE), matched: rows.length,
                                    offset, changed: {} });
  }
  function filters(p) {
    const form = h("form", { class: "filters", role: "search", "aria-label": "Filter clusters" });
    const field = (name, label, hint) => h("label", {}, label,
      h("input", { name, value: p.get(name) || "", placeholder: hint, type: "search",
                   id: "f-" + name, autocomplete: "off" }));
    form.append(field("q", "Cluster name", "e.g. prod"),
                field("l", "Labels", "env=prod,tier!=small"));
    if (!STATIC) form.append(field("since", "Changed since commit", "state commit id"));
    form.append(h("button", { type: "submit" }, "Apply"));
    form.addEventListener("submit", (ev) => {
      ev.preventDefault();
      const f = new FormData(form);
      go("fleet", { q: f.get("q"), l: f.get("l"), since: f.get("since") });
    });
    return form;
  }
  function partial(p) {   // the first read of a big fleet, still under way
    return h("p", { class: "banner", role: "status", id: "partial" },
      `Reading the fleet: ${p.read} of ${p.of} clusters read so far (by name); counts and ` +
      "lists are of those, and fill in by themselves.");
  }
  function renderFleet(d, p) {
    const out = [];
    const c = d.counts;
    const counts = h("ul", { class: "counts", "aria-label": "Counts" },
      h("li", {}, h("strong", {}, c.clusters), " clusters"),
      Object.entries(c.conditions).map(([k, n]) => h("li", {}, badge(k), " ", n)),
      h("li", {}, h("strong", {}, c.apps), " applications"),
      Object.entries(c.tiles).map(([k, n]) => h("li", {}, badge(k), " ", n, " tiles")));
    out.push(counts);
    if (d.partial) out.push(partial(d.partial));
    if ((d.held || []).length) {     // the mass-deletion guard (docs/guards.md)
      out.push(h("div", { class: "banner", role: "alert", id: "held" },
        h("strong", {}, d.held.length + " cluster" + (d.held.length > 1 ? "s" : "") +
          " held (each keeps running what it runs until a source commit approves the deletion)"),
        h("ul", {}, d.held.map((x) => h("li", {}, x.message, " — approve with ", h("code", {}, x.approve))))));
    }
    if (d.errors.length) {
      out.push(h("div", { class: "banner", role: "alert" },
        h("strong", {}, d.errors.length + " render error" + (d.errors.length > 1 ? "s" : "") +
          " (the last good Descriptions are kept)"),
        h("ul", {}, d.errors.map((e) => h("li", {},
          h("code", {}, e.file + (e.line ? ":" + e.line : "")), " ",
          e.object ? e.object + ": " : "", e.message)))));
    }
    const page = Math.floor(d.offset / PAGE) + 1;
    const pages = Math.max(1, Math.ceil(d.matched / PAGE));
    const table = h("table", { id: "grid" },
      h("caption", { class: "muted" }, `Clusters × applications: ${d.matched} of ` +
        `${c.clusters} clusters` + (p.get("since") ? ` changed since ${short(p.get("since"))}` : "")),
      h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Cluster"),
        h("th", { scope: "col" }, "Readiness"),
        d.apps.map((a) => h("th", { scope: "col" },
          link("#/app/" + a.namespace + "/" + a.name, a.namespace + "/" + a.name))))),
      h("tbody", {}, d.clusters.map((cl) => h("tr", { "data-cluster": cl.name },
        h("th", { scope: "row" }, link("#/cluster/" + encodeURIComponent(cl.name), cl.name)),
        h("td", {}, readyBadge(cl), cl.heartbeat ? ageSpan(cl.heartbeat) : "",
          cl.held ? [" ", badge("Held", cl.held)] : ""),
        d.apps.map((a) => {
          const t = lastReported(cl, cl.tiles[a.key]);
          const changed = (d.changed[cl.name] || []).some((f) => f.replace(/@helm$/, "") === a.key);
          return h("td", { class: changed ? "changed" : null, "data-app": a.key },
            t ? badge(t.word, [t.phase, t.health, t.message].filter(Boolean).join(" · "))
              : h("span", { class: "muted" }, "—"),
            changed ? h("span", { class: "muted" }, " changed") : "");
        })))));
    out.push(h("div", { class: "scroll" }, table));
    const pager = h("nav", { class: "pager", "aria-label": "Pages" },
      page > 1 ? h("button", { type: "button", on: { click: () => go("fleet", pageParams(p, page - 1)) } }, "← Previous") : "",
      h("span", {}, `Page ${page} of ${pages}`),
      page < pages ? h("button", { type: "button", on: { click: () => go("fleet", pageParams(p, page + 1)) } }, "Next →") : "");
    out.push(pager);
    return out;
  }
  function pageParams(p, page) {
    return { q: p.get("q"), l: p.get("l"), since: p.get("since"), page: String(page) };
  }

  // -- a cluster -------------------------------------------------------------------------
  function facts(pairs) {
    return h("dl", { class: "facts" }, pairs.filter(([, v]) => v !== "" && v !== null && v !== undefined)
      .map(([k, v]) => [h("dt", {}, k), h("dd", {}, v)]));
  }
  function renderCluster(d) {
    const hb = d.heartbeat ? h("span", {}, h("time", { datetime: d.heartbeat }, d.heartbeat),
      ageSpan(d.heartbeat, d.heartbeatIntervalSeconds ? ` (every ${d.heartbeatIntervalSeconds}s)` : "")) : "never";
    const word = condition(d);
    if (word !== d.condition) {     // expired since the answer: what it last said is not what runs
      d = Object.assign({}, d, { descriptions: d.descriptions.map((ds) => Object.assign({}, lastReported(d, ds), {
        objects: ds.objects.map((o) => Object.assign({}, o, { health: "Unknown", lastReported: o.health })) })) });
    }
    const out = [h("h1", {}, "Cluster ", d.name, " ", readyBadge(d))];
    if (d.held) out.push(h("p", { class: "banner", role: "alert", id: "held" }, d.held,
      " — the cluster keeps running what it runs until a source commit approves it (",
      h("code", {}, "Gitfleet-Approve-Deletions: " + d.name), ")"));
    out.push(facts([["Readiness", word + (word !== d.condition ? " — " + EXPIRED
                                                         : d.reason ? " — " + d.reason : "")],
      ["Last heartbeat", hb], ["Sync", d.sync], ["Mode", d.syncMode],
      ["Applied state", d.appliedState], ["Kubernetes", d.kubernetes], ["Agent", d.agent],
      ["Labels", Object.entries(d.labels || {}).map(([k, v]) => k + "=" + v).join(", ")],
      ["Taints", d.taints.join(", ") || "none"], ["Status refused", d.statusRejected],
      ["Status warning", d.statusWarning]]));
    if (d.evictions.length) {
      out.push(h("h2", {}, "Evictions"), table(["Workload", "Reason", "Purge", "Replicas"],
        d.evictions.map((e) => [e.workload, e.reason, badge(e.purge === "Done" ? "Complete" : "Waiting"), e.replicas])));
    }
    out.push(h("h2", {}, "Descriptions"));
    out.push(h("ul", { class: "tree" }, d.descriptions.map((ds) => h("li", {},
      h("details", { open: d.descriptions.length <= 20 },
        h("summary", {}, h("strong", {}, ds.key), " ", badge(ds.word, ds.message),
          ds.message ? h("span", { class: "muted" }, " " + ds.message) : ""),
        h("ul", {}, ds.objects.map((o) => h("li", {},
          badge(o.health), " ", o.kind + " " + (o.namespace ? o.namespace + "/" : "") + o.name,
          o.lastReported ? h("span", { class: "muted" }, ` (last reported ${o.lastReported})`) : "",
          h("span", { class: "muted" }, " " + o.change),
          o.drift ? h("span", { class: "drift" }, " ⚠ drift") : "",
          o.error ? h("span", { class: "error" }, " " + o.error) : "")),
          ds.objects.length ? "" : h("li", { class: "muted" }, "no objects reported")))))));
    if (d.drift.length) {
      out.push(h("h2", {}, "Drift"), table(["Object", "Fields", "First seen"],
        d.drift.map((r) => [r.kind + " " + (r.namespace ? r.namespace + "/" : "") + r.name, r.fields, r.firstSeen])));
    }
    out.push(h("h2", {}, "Status history"));
    out.push(d.history.length ? table(["When", "By", "What"],
      d.history.map((c) => [when(c.time), c.author, c.subject])) : h("p", { class: "muted" }, "No status branch yet."));
    return out;
  }
  function table(cols, rows) {
    return h("div", { class: "scroll" }, h("table", {},
      h("thead", {}, h("tr", {}, cols.map((c) => h("th", { scope: "col" }, c)))),
      h("tbody", {}, rows.map((r) => h("tr", {}, r.map((v) => h("td", {}, v)))))));
  }

  // -- an application --------------------------------------------------------------------
  async function appData(key, parts, p) {
    const offset = Math.max(0, (parseInt(p.get("page") || "1", 10) - 1) * PAGE);
    if (!STATIC) {
      const q = new URLSearchParams({ offset, limit: PAGE });
      if (p.get("q")) q.set("q", p.get("q"));
      return api("app/" + parts.map(encodeURIComponent).join("/") + "?" + q.toString());
    }
    const all = await loadStatic("app/" + key);
    let rows = all.clusters;
    if (p.get("q")) rows = rows.filter((c) => c.cluster.toLowerCase().includes(p.get("q").toLowerCase()));
    const page = rows.slice(offset, offset + PAGE);
    const shown = new Set(page.map((c) => c.cluster));
    return Object.assign({}, all, { clusters: page, matched: rows.length, offset, total: all.clusters.length,
      rollouts: all.rollouts.map((r) => Object.assign({}, r, { waves: r.waves.map((w) =>
        Object.assign({}, w, { clusters: w.clusters.filter((c) => shown.has(c.cluster)) })) })) });
  }
  function renderApp(d, p) {
    const path = "app/" + d.namespace + "/" + d.name;
    const out = [h("h1", {}, "Application ", d.key, " ", badge(d.phase))];
    if (d.partial) out.push(partial(d.partial));
    out.push(facts([["Kind", d.kind], ["Clusters ready", d.ready],
      ["Replicas", `${d.readyReplicas} ready of ${d.replicas} desired`]]));
    if (d.errors.length) {
      out.push(h("div", { class: "banner", role: "alert" }, h("strong", {}, "Render errors"),
        h("ul", {}, d.errors.map((e) => h("li", {}, e)))));
    }
    const form = h("form", { class: "filters", role: "search", "aria-label": "Filter this application's clusters" },
      h("label", {}, "Cluster name", h("input", { name: "q", value: p.get("q") || "", type: "search",
        id: "a-q", autocomplete: "off", placeholder: "e.g. prod" })),
      h("button", { type: "submit" }, "Apply"));
    form.addEventListener("submit", (ev) => { ev.preventDefault(); go(path, { q: new FormData(form).get("q") }); });
    out.push(form);
    const page = Math.floor(d.offset / PAGE) + 1;
    const pages = Math.max(1, Math.ceil(d.matched / PAGE));
    const first = d.matched ? d.offset + 1 : 0;
    out.push(h("p", { class: "muted", id: "app-range" },
      `Clusters ${first}–${d.offset + d.clusters.length} of ${d.matched}` + (d.matched !== d.total ? ` (of ${d.total})` : "")));
    out.push(h("h2", { id: "replicas" }, "Replicas per cluster"));
    const max = Math.max(1, ...d.clusters.map((c) => Math.max(c.desired, c.ready)));
    const bars = h("div", { class: "bars", role: "list", "aria-labelledby": "replicas" });
    for (const c of d.clusters) {
      const bar = h("div", { class: "bar", "aria-hidden": "true" }, h("span", { class: "want" }), h("span", { class: "have" }));
      bar.children[0].style.width = (100 * c.desired / max) + "%";
      bar.children[1].style.width = (100 * c.ready / max) + "%";
      bars.append(h("span", { role: "listitem" }, link("#/cluster/" + encodeURIComponent(c.cluster), c.cluster)),
        bar, h("span", {}, `${c.ready} ready / ${c.desired} desired`));
    }
    out.push(bars);
    out.push(h("h2", {}, "Phase per cluster"), table(["Cluster", "Phase", "Health", "Message"],
      d.clusters.map((c) => [c.cluster, badge(c.phase), badge(c.health), c.message])));
    const pageTo = (n) => () => go(path, { q: p.get("q"), page: String(n) });
    out.push(h("nav", { class: "pager", "aria-label": "Pages of clusters" },
      page > 1 ? h("button", { type: "button", on: { click: pageTo(page - 1) } }, "← Previous") : "",
      h("span", {}, `Page ${page} of ${pages}`),
      page < pages ? h("button", { type: "button", on: { click: pageTo(page + 1) } }, "Next →") : ""));
    out.push(h("h2", {}, "Rollouts"));
    if (!d.rollouts.length) out.push(h("p", { class: "muted" }, "No RolloutPolicy governs these clusters."));
    for (const r of d.rollouts) {
      out.push(h("p", {}, h("strong", {}, r.policy), " ", badge(r.phase), ` revision ${r.revision}` +
        (r.sourceCommit ? ` from ${r.sourceCommit}` : "") + (r.reason ? ` — ${r.reason}` : "")));
      out.push(h("ol", { class: "waves", "aria-label": "Waves of " + r.policy }, r.waves.map((w) => h("li",
        { class: w.current ? "current" : null, "aria-current": w.current ? "step" : null, "data-wave": w.name },
        h("strong", {}, "Wave " + w.name), " ",
        Object.entries(w.counts).map(([k, n]) => h("span", {}, badge(k), " ", n, " ")),
        h("p", { class: "gate" }, h("span", { class: "muted" }, "Gate: "), w.gate),
        h("ul", {}, w.clusters.map((c) => h("li", {}, c.cluster, " ", badge(c.state, c.why),
          h("span", { class: "muted" }, " since " + c.since))))))));
    }
    out.push(h("h2", {}, "Autoscalers"));
    out.push(d.autoscalers.length ? table(["Name", "Target", "Min", "Max", "Current", "Desired", "Last scale"],
      d.autoscalers.map((a) => [a.name, a.target, a.minReplicas, a.maxReplicas, a.currentReplicas,
        a.desiredReplicas, a.lastScaleTime || "—"])) : h("p", { class: "muted" }, "None."));
    for (const a of d.autoscalers) {
      if (!(a.history || []).length) continue;
      const top = Math.max(1, a.maxReplicas || 0, ...a.history.map((r) => r.current || 0));
      out.push(h("h3", { id: "fhpa-" + a.name }, `${a.name}: replicas over time`));
      const rows = h("div", { class: "bars", role: "list", "aria-labelledby": "fhpa-" + a.name });
      for (const r of a.history) {
        const bar = h("div", { class: "bar", "aria-hidden": "true" }, h("span", { class: "have" }));
        bar.children[0].style.width = (100 * (r.current || 0) / top) + "%";
        rows.append(h("span", { role: "listitem" }, when(r.time)), bar,
          h("span", {}, `${r.current} current, ${r.desired} desired`));
      }
      out.push(rows);
    }
    return out;
  }

  // -- history ---------------------------------------------------------------------------
  function copyButton(text) {
    return h("button", { type: "button", "aria-label": "Copy: " + text, on: { click: async (ev) => {
      try { await navigator.clipboard.writeText(text); ev.target.textContent = "Copied"; }
      catch (e) { ev.target.textContent = "Select and copy"; }
    } } }, "Copy");
  }
  async function renderHistory(p) {
    const d = STATIC ? await loadStatic("history") : await api("history?limit=50&offset=" + (parseInt(p.get("offset") || "0", 10)));
    const out = [h("h1", {}, "History")];
    const commits = d.commits;
    const a = p.get("a"), b = p.get("b"), cluster = p.get("cluster");
    if (!STATIC && commits.length) {
      const pick = (name, label, value) => h("label", {}, label, h("select", { name, id: "h-" + name },
        commits.map((c) => h("option", { value: c.commit, selected: c.commit === value ? true : null },
          short(c.commit) + " " + (c.source.subject || c.subject)))));
      const form = h("form", { class: "filters", "aria-label": "Compare two state commits" },
        pick("a", "From state commit", a || (commits[1] || commits[0]).commit),
        pick("b", "To state commit", b || commits[0].commit),
        h("label", {}, "Cluster", h("select", { name: "cluster", id: "h-cluster" },
          d.clusters.map((n) => h("option", { value: n, selected: n === cluster ? true : null }, n)))),
        h("button", { type: "submit" }, "Show diff"));
      form.addEventListener("submit", (ev) => {
        ev.preventDefault();
        const f = new FormData(form);
        go("history", { a: f.get("a"), b: f.get("b"), cluster: f.get("cluster") });
      });
      out.push(form);
    }
    if (a && b && cluster) {
      try {
        const diff = STATIC ? await loadStatic(`diff/${a}/${b}/${cluster}`)
                            : await api(`diff?a=${a}&b=${b}&cluster=${encodeURIComponent(cluster)}`);
        out.push(h("h2", { id: "diff" }, `What ${cluster} ran: ${short(a)} → ${short(b)}`));
        if (!diff.objects.length) out.push(h("p", { class: "muted" }, "No object of this cluster changed."));
        const lineClass = (line) => (line.startsWith("+") && !line.startsWith("+++") ? "add"
          : line.startsWith("-") && !line.startsWith("---") ? "del" : null);
        const changeClass = { added: "ok", removed: "bad", changed: "warn" };
        const items = diff.objects.map((o) => h("li", { "data-path": o.path },
          h("details", { open: true },
            h("summary", {}, badge(o.change, null, changeClass[o.change]), " ",
              h("code", {}, o.path)),
            h("pre", { class: "diff" }, o.diff.map((line) => h("span", { class: lineClass(line) }, line + "\n"))))));
        out.push(h("ul", { class: "tree", "aria-labelledby": "diff", id: "diff-objects" }, items));
      } catch (e) {
        out.push(h("p", { class: "error", role: "alert" }, "Diff: " + e.message));
      }
    }
    out.push(h("h2", {}, "State commits"));
    out.push(table(["State commit", "Source commit", "Author", "Subject", "When", "Changes", "Undo"],
      commits.map((c, i) => {
        const prev = commits[i + 1];
        const changed = (c.changed || d.clusters || []).slice(0, STATIC ? 20 : 1);
        return [h("code", {}, short(c.commit)), h("code", {}, short(c.sourceCommit)),
          c.source.author || c.author, c.source.subject || c.subject, when(c.time),
          prev ? (STATIC ? changed.map((n) => link(`#/history?a=${prev.commit}&b=${c.commit}&cluster=${encodeURIComponent(n)}`, n + " "))
                         : link(`#/history?a=${prev.commit}&b=${c.commit}&cluster=${encodeURIComponent(cluster || (d.clusters[0] || ""))}`, "diff with previous")) : "",
          c.revert ? h("span", {}, h("code", { class: "cmd" }, c.revert), " ", copyButton(c.revert)) : ""];
      })));
    return out;
  }

  // -- routing, live updates, theme --------------------------------------------------------
  async function render(keepFocus) {
    const r = parseHash();
    const [kind, ...rest] = r.parts;
    for (const a of document.querySelectorAll("[data-nav]")) {
      if (a.dataset.nav === (kind === "history" ? "history" : "fleet")) a.setAttribute("aria-current", "page");
      else a.removeAttribute("aria-current");
    }
    let parts;
    try {
      if (kind === "cluster") {
        const d = STATIC ? await loadStatic("cluster/" + rest[0]) : await api("cluster/" + encodeURIComponent(rest[0]));
        parts = renderCluster(d);
        document.title = "gitfleet · cluster " + rest[0];
      } else if (kind === "app") {
        const key = rest.slice(0, 2).join("/");
        parts = renderApp(await appData(key, rest.slice(0, 2), r.params), r.params);
        document.title = "gitfleet · " + key;
      } else if (kind === "history") {
        parts = await renderHistory(r.params);
        document.title = "gitfleet · history";
      } else {
        const d = await fleetData(r.params);
        parts = [h("h1", {}, "Fleet"), filters(r.params), ...renderFleet(d, r.params)];
        document.title = "gitfleet · fleet";
      }
    } catch (e) {
      if (e.retry) {
        setTimeout(() => { if (r.hash === location.hash) render(true); }, 1000);
        parts = [h("h1", {}, "Reading the fleet…"), h("p", { role: "status" }, e.message + "; this page fills in by itself.")];
      } else if (e.auth) parts = [login()];
      else parts = [h("h1", {}, "Not available"), h("p", { class: "error", role: "alert" }, e.message)];
    }
    if (r.hash !== location.hash) return;   // the user moved on meanwhile
    // a live update keeps what the user is doing *now*, not when the update began (it waits for
    // the server meanwhile, and the user may have clicked into a filter): the focused input,
    // the scroll position, and the text typed into a filter with its caret (the new form is
    // built from the URL, which has not changed yet)
    const focused = keepFocus && document.activeElement && document.activeElement.id;
    const scroll = [window.scrollX, window.scrollY];
    const typed = keepFocus ? [...view.querySelectorAll("form.filters input")].map((i) =>
      [i.id, i.value, i.selectionStart, i.selectionEnd]) : [];
    view.replaceChildren(...parts);
    for (const [id, value, start, end] of typed) {
      const input = id && document.getElementById(id);
      if (input && input.value !== value) {
        input.value = value;
        if (id === focused && start !== null) input.setSelectionRange(start, end);
      }
    }
    if (focused && document.getElementById(focused)) document.getElementById(focused).focus();
    if (keepFocus) window.scrollTo(scroll[0], scroll[1]);
    route = r.hash;
  }
  function login() {
    const form = h("form", { class: "filters", "aria-label": "Sign in" },
      h("label", {}, "Bearer token", h("input", { type: "password", name: "token", id: "token", autocomplete: "off" })),
      h("button", { type: "submit" }, "Open"));
    form.addEventListener("submit", (ev) => {
      ev.preventDefault();
      token = new FormData(form).get("token");
      sessionStorage.setItem("gitfleet-token", token);
      render(false);
    });
    return h("section", {}, h("h1", {}, "This dashboard wants a token"), form);
  }
  async function poll() {
    try {
      const headers = token ? { Authorization: "Bearer " + token } : {};
      if (etag) headers["If-None-Match"] = etag;
      const resp = await fetch("api/version", { headers, cache: "no-store" });
      if (resp.status === 200) {
        const fresh = resp.headers.get("ETag") || "";
        const body = await resp.json();
        if (etag && fresh !== etag && route === location.hash) await render(true);
        etag = fresh;
        live.textContent = "Live · state " + short(body.stateCommit) + " · checked " + new Date().toLocaleTimeString();
      } else if (resp.status === 304) {
        live.textContent = live.textContent.replace(/checked .*$/, "checked " + new Date().toLocaleTimeString());
      }
    } catch (e) {
      live.textContent = "Disconnected: retrying";
    }
    setTimeout(poll, POLL_MS);
  }
  function theme(set) {
    const dark = set !== undefined ? set : (localStorage.getItem("gitfleet-theme") ||
      (matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light")) === "dark";
    document.documentElement.dataset.theme = dark ? "dark" : "light";
    const btn = document.getElementById("theme");
    btn.setAttribute("aria-pressed", String(dark));
    btn.textContent = dark ? "Light theme" : "Dark theme";
    return dark;
  }
  document.getElementById("theme").addEventListener("click", () => {
    const dark = document.documentElement.dataset.theme !== "dark";
    localStorage.setItem("gitfleet-theme", dark ? "dark" : "light");
    theme(dark);
  });
  document.addEventListener("keydown", (ev) => {
    if (ev.key === "/" && !/INPUT|SELECT|TEXTAREA/.test(document.activeElement.tagName)) {
      const q = document.getElementById("f-q");
      if (q) { ev.preventDefault(); q.focus(); }
    }
  });
  window.addEventListener("hashchange", () => { render(false).then(() => view.focus()); });
  theme();
  setInterval(tick, 1000);
  if (!location.hash) history.replaceState(null, "", "#/fleet");
  render(false);
  if (STATIC) {
    loadStatic("meta").then((m) => { live.textContent = "Static export of state " + short(m.stateCommit) + " · " + m.generated; })
      .catch(() => { live.textContent = "Static export"; });
  } else {
    poll();
  }
})();
