// The room viewer: sessions, a live transcript (SSE over fetch), the SOP in use, the outcome,
// and a box to post as one of the room's people. Room text is untrusted: it is only ever set
// with textContent (see h() in api.js), never parsed as HTML.
import { api, authorization, h, percent, setToken, showError, token } from "./api.js";
import { follow } from "./sse.js";
import { loadLibrary } from "./sops.js";

const $ = (id) => document.getElementById(id);

const view = {
  key: null, // the open session
  stream: null, // AbortController of its event stream
  seen: new Set(), // event ids shown: a replayed event is never shown twice
  state: null, // the session's last status (humans, display names)
  sop: null, // the ref shown in the SOP panel
  ready: false, // the server answers us (a token, or a --no-auth server)
  lastKind: null, // the kind of the newest event shown
};

function start() {
  $("token-form").addEventListener("submit", (e) => {
    e.preventDefault();
    setToken($("token-input").value.trim());
    $("token-input").value = "";
    boot();
  });
  $("forget-token").addEventListener("click", () => {
    setToken("");
    closeSession();
    boot();
  });
  $("tab-rooms").addEventListener("click", () => tab("rooms"));
  $("tab-sops").addEventListener("click", () => tab("sops"));
  $("refresh-sessions").addEventListener("click", () => loadSessions());
  $("refresh-sops").addEventListener("click", () => loadLibrary());
  $("open-form").addEventListener("submit", (e) => {
    e.preventDefault();
    openRoom();
  });
  $("post-form").addEventListener("submit", (e) => {
    e.preventDefault();
    post();
  });
  window.addEventListener("hashchange", () => openFromHash());
  boot();
}

async function boot() {
  const known = Boolean(token()) || (await needsNoToken());
  view.ready = known;
  $("token-form").hidden = known;
  $("forget-token").hidden = !token();
  if (!known) {
    $("token-input").focus();
    return;
  }
  loadSessions();
  loadScenarios();
  if (sessionStorage.getItem("staffroom.tab") === "sops") tab("sops");
  openFromHash();
}

/** A server started with --no-auth (127.0.0.1 only) answers without a token. */
async function needsNoToken() {
  try {
    return (await fetch("/api/sessions", { cache: "no-store" })).ok;
  } catch {
    return false;
  }
}

function tab(name) {
  sessionStorage.setItem("staffroom.tab", name);
  $("rooms-view").hidden = name !== "rooms";
  $("sops-view").hidden = name !== "sops";
  $("tab-rooms").setAttribute("aria-pressed", String(name === "rooms"));
  $("tab-sops").setAttribute("aria-pressed", String(name === "sops"));
  if (name === "sops") loadLibrary();
}

/** A 401 means the token is wrong: ask for it again. Anything else is shown. */
export function notice(error) {
  if (error && error.status === 401) {
    setToken("");
    view.ready = false;
    $("token-form").hidden = false;
    $("forget-token").hidden = true;
  }
  showError($("notice"), error);
}

async function loadSessions() {
  try {
    const body = await api("/api/sessions");
    const list = Array.isArray(body) ? body : body.sessions || [];
    $("sessions").replaceChildren(
      ...list.map((item) => {
        const key = typeof item === "string" ? item : item.session || item.key;
        const link = h("a", { href: `#${encodeURIComponent(key)}`, textContent: key });
        const label = item.scenario ? h("span", { className: "hint" }, ` ${item.scenario}`) : null;
        return h("li", { dataset: { session: key } }, link, label);
      }),
    );
    notice(null);
  } catch (error) {
    notice(error);
  }
}

async function loadScenarios() {
  try {
    const { scenarios } = await api("/api/scenarios");
    $("open-form").hidden = false;
    $("open-scenario").replaceChildren(
      ...scenarios.map((s) => h("option", { value: s.id, textContent: `${s.title} (${s.id})` })),
    );
  } catch {
    $("open-form").hidden = true; // a token without `read` on the catalog opens nothing
  }
}

async function openRoom() {
  const id = $("open-id").value.trim();
  try {
    const body = { scenario: $("open-scenario").value };
    const state = await api(`/api/rooms/${encodeURIComponent(id)}`, { method: "PUT", body });
    $("open-id").value = "";
    showError($("open-error"), null);
    await loadSessions();
    location.hash = encodeURIComponent(state.session);
  } catch (error) {
    showError($("open-error"), error);
  }
}

function openFromHash() {
  let key = "";
  try {
    key = decodeURIComponent(location.hash.slice(1));
  } catch {
    return; // a hand-typed, malformed address: stay on the list
  }
  if (key && key !== view.key && view.ready) openSession(key);
}

function closeSession() {
  if (view.stream) view.stream.abort();
  Object.assign(view, { key: null, stream: null, seen: new Set(), state: null, sop: null, lastKind: null });
  $("room").hidden = true;
}

async function openSession(key) {
  closeSession();
  view.key = key;
  $("room").hidden = false;
  $("room-title").textContent = key;
  $("transcript").replaceChildren();
  $("sop-panel").hidden = true;
  $("outcome").hidden = true;
  showError($("post-error"), null);
  await refreshStatus();
  view.stream = new AbortController();
  const url = `/api/sessions/${encodeURIComponent(key)}/events`;
  follow(url, {
    auth: authorization,
    signal: view.stream.signal,
    onEvent: (event) => receive(key, event),
    onState: (state, final) => streamState(key, state, final),
  });
}

function streamState(key, state, final) {
  if (key !== view.key) return;
  const text = typeof state === "string" ? state : `stream: ${state.message}`;
  $("stream-state").textContent = text;
  $("stream-state").dataset.state = typeof state === "string" ? state : "error";
  if (final) notice(state);
}

let statusAsked = 0;

async function refreshStatus(again = 0) {
  const key = view.key;
  const asked = ++statusAsked;
  try {
    const state = await api(`/api/sessions/${encodeURIComponent(key)}/status`);
    if (key !== view.key || asked !== statusAsked) return; // a newer answer is coming
    // A pause is logged (and streamed) a moment before the room's checkpoint says so: a
    // status still "running" after a wait event is asked again shortly.
    const paused = state.room && state.room.waiting;
    if (view.lastKind === "wait" && !paused && again < 20) {
      setTimeout(() => refreshStatus(again + 1), 250);
    }
    view.state = state;
    $("room-status").textContent = describeStatus(state);
    const humans = state.humans && state.humans.length ? state.humans : [];
    const picker = $("post-author");
    const chosen = picker.value;
    picker.replaceChildren(
      ...humans.map((name) => h("option", { value: name, textContent: displayName(name) })),
    );
    if (humans.includes(chosen)) picker.value = chosen;
    if (state.sop || (state.room && state.room.sop)) showSop(state.sop || state.room.sop);
  } catch (error) {
    notice(error);
  }
}

function describeStatus(state) {
  const room = state.room || {};
  const parts = [state.scenario ? `scenario ${state.scenario}` : null];
  if (room.sop) parts.push(`step ${room.step}/${room.steps_total} of ${room.sop}`);
  if (room.waiting) parts.push(`waiting for ${(room.waiting_for || []).join(", ") || "people"}`);
  if (room.wait_reason === "model_error" && room.error) parts.push(`model error: ${room.error}`);
  if (room.stop_reason) parts.push(`ended: ${room.stop_reason}`);
  if (state.busy) parts.push("running");
  if (state.queued) parts.push(`${state.queued} queued`);
  if (state.policy) parts.push(`double texting: ${state.policy}`);
  return parts.filter(Boolean).join(" · ");
}

function displayName(name) {
  const names = (view.state && view.state.display_names) || {};
  return names[name] && names[name] !== name ? `${names[name]} (${name})` : name;
}

function receive(key, raw) {
  if (key !== view.key) return;
  let event;
  try {
    event = JSON.parse(raw.data);
  } catch {
    return; // not an event (a comment or a keep-alive the server sent as data)
  }
  const id = event.id || raw.id;
  if (!id || view.seen.has(id)) return;
  view.seen.add(id);
  const entry = render(event);
  entry.dataset.eventId = id;
  entry.dataset.kind = event.kind;
  $("transcript").append(entry);
  entry.scrollIntoView({ block: "nearest" });
  view.lastKind = event.kind;
  if (["wait", "outcome", "feedback", "plan", "session_end"].includes(event.kind)) refreshStatus();
}

function render(event) {
  const c = event.content;
  const meta = event.meta || {};
  const who = h("span", { className: "who" }, displayName(event.author));
  const when = h("time", { className: "ts", dateTime: event.ts }, (event.ts || "").slice(11, 19));
  const line = (...parts) => h("li", { className: `event ${event.kind}` }, when, ...parts);
  switch (event.kind) {
    case "message": {
      const badge = meta.model === "simulated" ? h("span", { className: "badge sim" }, "simulated") : null;
      const why = meta.why ? h("span", { className: "why" }, whyText(meta)) : null;
      const text = h("div", { className: "text" }, typeof c === "string" ? c : JSON.stringify(c));
      return line(who, badge, why, text);
    }
    case "sop_step":
      return line(h("span", { className: "step" }, `Step ${c.n}: ${(c.speakers || []).join(", ")} — ${c.do}`));
    case "plan":
      if (meta.entry || c.announcement) {
        if (c.sop) showSop(c.sop, meta.steps);
        return line(h("div", { className: "text announcement" }, c.announcement || "entered"));
      }
      return line(who, h("span", { className: "text" }, JSON.stringify(c)));
    case "tool_call":
      return line(who, h("span", { className: "tool" }, `→ ${c.name}(${toolArgs(c.args)})`));
    case "tool_result":
      return line(who, h("span", { className: `tool ${c.ok ? "ok" : "failed"}` }, `← ${c.name}: ${c.output}`));
    case "wait":
      return line(h("span", { className: "wait" }, `waiting for ${(c.waiting_for || []).join(", ")} (${c.reason})`));
    case "feedback":
      showOutcome("run", c);
      return line(h("span", { className: "feedback" }, feedbackText(c)));
    case "outcome":
      showOutcome("end", c);
      return line(h("span", { className: "outcome" }, `run ended: ${c.reason} (${c.steps_done}/${c.steps_total} steps, ${c.turns} turns)`));
    case "revision":
      return line(h("span", { className: "revision" }, `SOP ${c.sop}: ${c.status} — ${c.why || ""}`));
    case "error":
    case "fallback":
      return line(who, h("span", { className: event.kind }, typeof c === "string" ? c : JSON.stringify(c)));
    default:
      return line(who, h("span", { className: "text" }, `${event.kind}: ${typeof c === "string" ? c : JSON.stringify(c)}`));
  }
}

function whyText(meta) {
  const step = meta.step ? ` step ${meta.step}` : "";
  return `${meta.why}${step}${meta.sop ? ` · ${meta.sop}` : ""}`;
}

function toolArgs(args) {
  if (!args || typeof args !== "object") return "";
  return args.path !== undefined ? String(args.path) : Object.keys(args).join(", ");
}

function feedbackText(c) {
  const result = c.success ? "succeeded" : "did not succeed";
  const failures = c.failures && c.failures.length ? `; ${c.failures.join("; ")}` : "";
  return `${c.sop} ${result}: ${c.corrections} corrections, ${c.human_interventions} interventions${failures}`;
}

function showOutcome(part, c) {
  const facts = $("outcome-facts");
  if (part === "run") facts.replaceChildren();
  const add = (name, value) => facts.append(h("dt", {}, name), h("dd", {}, String(value)));
  if (part === "run") {
    add("SOP", c.sop);
    add("success", c.success ? "yes" : "no");
    add("corrections", c.corrections);
    add("duration", `${Number(c.duration_s || 0).toFixed(1)} s`);
    if (c.failures && c.failures.length) add("lacking evidence", c.failures.join("; "));
  } else {
    add("ended", c.reason);
    add("steps", `${c.steps_done}/${c.steps_total}`);
    if (c.sop) showMetrics(c.sop, add);
  }
  $("outcome").hidden = false;
}

async function showMetrics(ref, add) {
  const [id, n] = ref.split("@");
  try {
    const v = await api(`/api/sops/${encodeURIComponent(id)}/versions/${n}`);
    const m = v.metrics;
    add(`${ref} runs`, m.runs);
    add(`${ref} success`, percent(m.success_rate));
    const users = Object.entries(m.hit_rate_by_user || {}).map(([u, r]) => `${u} ${percent(r)}`);
    if (users.length) add("hit rate per user", users.join(", "));
  } catch {
    // A token without sop.read sees the run's own facts only.
  }
}

async function showSop(ref, steps) {
  if (!ref || ref === view.sop) return;
  view.sop = ref;
  $("sop-panel").hidden = false;
  $("sop-ref").textContent = ref;
  const list = (items) =>
    $("sop-steps").replaceChildren(
      ...items.map((s) => h("li", {}, `${(s.speakers || []).join(", ")}: ${s.do}`)),
    );
  if (steps) list(steps);
  const [id, n] = ref.split("@");
  try {
    const v = await api(`/api/sops/${encodeURIComponent(id)}/versions/${n}`);
    if (ref !== view.sop) return;
    list(v.steps);
    $("sop-changes").replaceChildren(
      ...v.change_log.map((e) => h("li", {}, `v${e.version}: ${e.why}${e.by ? ` — ${e.by}` : ""}`)),
    );
  } catch {
    $("sop-changes").replaceChildren(h("li", { className: "hint" }, "change log needs sop.read"));
  }
}

function messageId() {
  const bytes = crypto.getRandomValues(new Uint8Array(12));
  return `web-${Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("")}`;
}

async function post() {
  const text = $("post-text").value;
  const key = view.key;
  if (!key || !text.trim()) return;
  const button = $("post-send");
  button.disabled = true;
  showError($("post-error"), null);
  // One id per message typed: a resent request is answered once (the server's ledger).
  const id = $("post-text").dataset.messageId || messageId();
  $("post-text").dataset.messageId = id;
  try {
    const body = { text, author: $("post-author").value || undefined, message_id: id, wait: false };
    // 202 once stored; the replies arrive on the stream. A busy room whose policy is
    // `reject` answers 409, shown like any other refusal.
    await api(`/api/sessions/${encodeURIComponent(key)}/messages`, { method: "POST", body });
    $("post-text").value = "";
    delete $("post-text").dataset.messageId;
  } catch (error) {
    showError($("post-error"), error);
  } finally {
    button.disabled = false;
    refreshStatus();
  }
}

start();
