// The room viewer: sessions, a live transcript (SSE over fetch), the SOP in use, the outcome,
// and a box to post as one of the room's people. Room text is untrusted: it is only ever set
// with textContent (see h() in api.js), never parsed as HTML. Labels come from labels.js.
import { api, authorization, h, percent, setToken, showError, token } from "./api.js";
import { renderEvent } from "./events.js";
import { applyLabels, chooseLanguage, duration, names, reason, setLanguage, t } from "./labels.js";
import { follow } from "./sse.js";
import { loadSchedules } from "./schedules.js";
import { loadLibrary } from "./sops.js";

const $ = (id) => document.getElementById(id);

const view = {
  key: null, // the open session
  stream: null, // AbortController of its event stream
  seen: new Set(), // event ids shown: a replayed event is never shown twice
  state: null, // the session's last status (humans, display names)
  sop: null, // the ref shown in the SOP panel
  entered: false, // an entry event set the panel: the version this room ran, not today's best
  busySince: 0, // when the page started waiting for a reply (0: not waiting)
  heard: false, // the room said something since the last post
  ready: false, // the server answers us (a token, or a --no-auth server)
  lastKind: null, // the kind of the newest event shown
};

/** The project's language (the server's /viewer/settings.json), else the browser's. */
async function loadLanguage() {
  let project = null;
  try {
    const response = await fetch("/viewer/settings.json", { cache: "no-store" });
    if (response.ok) project = (await response.json()).language;
  } catch {
    project = null; // an older server: the browser's language
  }
  setLanguage(chooseLanguage(project));
  applyLabels();
}

async function start() {
  await loadLanguage();
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
  $("tab-schedules").addEventListener("click", () => tab("schedules"));
  $("refresh-sessions").addEventListener("click", () => loadSessions());
  $("refresh-sops").addEventListener("click", () => loadLibrary());
  $("refresh-schedules").addEventListener("click", () => loadSchedules());
  $("open-form").addEventListener("submit", (e) => {
    e.preventDefault();
    openRoom();
  });
  $("post-form").addEventListener("submit", (e) => {
    e.preventDefault();
    post();
  });
  window.addEventListener("hashchange", () => {
    // A session linked from another view (a schedule's fire) opens in the rooms view.
    if (location.hash.length > 1) tab("rooms");
    openFromHash();
  });
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
  const shown = sessionStorage.getItem("staffroom.tab");
  if (shown === "sops" || shown === "schedules") tab(shown);
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

const TABS = { rooms: null, sops: loadLibrary, schedules: loadSchedules };

function tab(name) {
  sessionStorage.setItem("staffroom.tab", name);
  for (const each of Object.keys(TABS)) {
    $(`${each}-view`).hidden = name !== each;
    $(`tab-${each}`).setAttribute("aria-pressed", String(name === each));
  }
  if (TABS[name]) TABS[name]();
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
    // The form starts hidden: submitted before the list came, it sent no scenario (a 422).
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
  Object.assign(view, {
    key: null,
    stream: null,
    seen: new Set(),
    state: null,
    sop: null,
    entered: false,
    lastKind: null,
  });
  busy(false);
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
  const text =
    typeof state === "string" ? t(`stream.${state}`) : t("stream.error", { message: state.message });
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
    // A run that just paused or ended may still count as busy for a moment: its last event
    // settles the sign, and a status asked right after a post cannot clear it.
    const settled = ["wait", "outcome", "session_end"].includes(view.lastKind);
    if (state.queued || (state.busy && !settled)) busy(true);
    else if (view.busySince && !posting && view.heard) busy(false);
    const humans = state.humans && state.humans.length ? state.humans : [];
    const picker = $("post-author");
    const chosen = picker.value;
    picker.replaceChildren(
      ...humans.map((name) => h("option", { value: name, textContent: displayName(name) })),
    );
    if (humans.includes(chosen)) picker.value = chosen;
    // The version this run entered on (its checkpoint), never the plan's: a room reopened
    // after a newer version was published still ran the one its entry event names.
    if (!view.entered && state.room && state.room.sop) showSop(state.room.sop);
  } catch (error) {
    notice(error);
  }
}

function describeStatus(state) {
  const room = state.room || {};
  const parts = [state.scenario ? t("status.scenario", { scenario: state.scenario }) : null];
  if (room.sop) parts.push(t("status.step", { step: room.step, total: room.steps_total, sop: room.sop }));
  if (room.waiting) {
    const people = names((room.waiting_for || []).map(displayName)) || t("status.people");
    parts.push(t("status.waiting", { people }));
  }
  if (room.wait_reason === "model_error" && room.error) {
    parts.push(t("status.model_error", { error: room.error }));
  }
  if (room.stop_reason) parts.push(t("status.ended", { reason: reason(room.stop_reason) }));
  if (state.busy) parts.push(t("status.running"));
  if (state.queued) parts.push(t("status.queued", { n: state.queued }));
  if (state.policy) {
    const key = `policy.${state.policy}`;
    parts.push(t("status.policy", { policy: t(key) === key ? state.policy : t(key) }));
  }
  return parts.filter(Boolean).join(" · ");
}

let posting = false; // a post is on its way to the server
let ticker = null;

/** The busy sign: shown from a post until the room waits, ends or goes idle again. */
function busy(on) {
  if (on && !view.busySince) view.busySince = Date.now();
  if (!on) view.busySince = 0;
  $("busy").hidden = !on;
  clearInterval(ticker);
  ticker = on ? setInterval(tick, 1000) : null;
  if (on) tick();
}

function tick() {
  if (!view.busySince) return;
  const seconds = (Date.now() - view.busySince) / 1000;
  const key = posting ? "busy.posting" : seconds >= 20 ? "busy.slow" : "busy.working";
  $("busy-text").textContent = t(key, { elapsed: duration(seconds) });
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
  if (event.kind === "plan" && (event.meta || {}).entry) view.entered = true;
  if (!(event.meta || {}).human) view.heard = true;
  view.seen.add(id);
  const entry = render(event);
  entry.dataset.eventId = id;
  entry.dataset.kind = event.kind;
  $("transcript").append(entry);
  entry.scrollIntoView({ block: "nearest" });
  view.lastKind = event.kind;
  const settles = ["wait", "outcome", "feedback", "plan", "session_end"].includes(event.kind);
  // A free-chat reply ends its run without a wait: ask whether the room is idle again.
  const replied = event.kind === "message" && !(event.meta || {}).human && view.busySince;
  if (["wait", "outcome", "session_end"].includes(event.kind) && !posting) busy(false);
  if (settles || replied) refreshStatus();
}

function render(event) {
  const meta = event.meta || {};
  const c = event.content && typeof event.content === "object" ? event.content : {};
  if (event.kind === "plan" && meta.entry) showSop(meta.sop || c.sop, meta.steps, trialOf(meta, c));
  if (event.kind === "feedback") showOutcome(c.late ? "late" : "run", c);
  if (event.kind === "outcome") showOutcome("end", c);
  return renderEvent(event, displayName);
}

/** Whether the room's run is on trial: the entry's `sop_trial`, else its trial record. */
function trialOf(meta, c) {
  const sop = meta.sop || c.sop;
  const records = c.sop_trials && typeof c.sop_trials === "object" ? Object.values(c.sop_trials) : [];
  const record = records.find((r) => r && (r.trial === sop || r.best === sop)) || null;
  const on = typeof meta.sop_trial === "boolean" ? meta.sop_trial : record ? record.arm === "trial" : null;
  return { on, record };
}

function trialText(sop, trial) {
  if (!trial || trial.on === null) return "";
  const r = trial.record;
  const share = r && Number(r.share) > 0 ? percent(Number(r.share)) : "";
  if (trial.on) return r ? t("sop.trial.on", { ref: sop, best: r.best, share }) : t("sop.trial.yes");
  return r ? t("sop.trial.best", { trial: r.trial, share }) : t("sop.trial.off");
}

function showOutcome(part, c) {
  const facts = $("outcome-facts");
  if (part === "run") facts.replaceChildren();
  const add = (name, value) => {
    if (value === null || value === undefined || value === "") return;
    const old = facts.querySelector(`dt[data-fact="${name}"]`);
    if (old) old.nextElementSibling.textContent = String(value);
    else facts.append(h("dt", { dataset: { fact: name } }, t(`fact.${name}`)), h("dd", {}, String(value)));
  };
  const number = (v) => (typeof v === "number" && Number.isFinite(v) ? v : null);
  if (part === "run" || part === "late") {
    add("sop", c.sop);
    add("success", c.success ? t("yes") : t("no"));
    add("score", number(c.score));
    add("corrections", number(c.corrections));
    if (number(c.duration_s)) add("duration", duration(c.duration_s));
    if (Array.isArray(c.failures) && c.failures.length) add("lacking", c.failures.join(t("items.sep")));
  } else {
    add("ended", reason(c.reason));
    if (c.steps_total) add("steps", `${c.steps_done ?? 0}/${c.steps_total}`);
    if (c.sop) showMetrics(c.sop, facts);
  }
  $("outcome").hidden = false;
}

async function showMetrics(ref, facts) {
  const [id, n] = ref.split("@");
  const add = (label, value) => facts.append(h("dt", {}, label), h("dd", {}, String(value)));
  try {
    const v = await api(`/api/sops/${encodeURIComponent(id)}/versions/${n}`);
    const m = v.metrics;
    add(t("fact.runs", { sop: ref }), m.runs);
    add(t("fact.rate", { sop: ref }), percent(m.success_rate));
    const users = Object.entries(m.hit_rate_by_user || {}).map(([u, r]) => `${displayName(u)} ${percent(r)}`);
    if (users.length) add(t("fact.hit_rate"), users.join(t("list.sep")));
  } catch {
    // A token without sop.read sees the run's own facts only.
  }
}

async function showSop(ref, steps, trial = null) {
  if (!ref) return;
  $("sop-trial").textContent = trialText(ref, trial);
  $("sop-trial").hidden = !$("sop-trial").textContent;
  if (ref === view.sop) return;
  view.sop = ref;
  $("sop-panel").hidden = false;
  $("sop-ref").textContent = ref;
  const list = (items) =>
    $("sop-steps").replaceChildren(
      ...items.map((s) => h("li", {}, t("sop.step", { speakers: names(s.speakers), do: s.do }))),
    );
  if (Array.isArray(steps)) list(steps);
  const [id, n] = ref.split("@");
  try {
    const v = await api(`/api/sops/${encodeURIComponent(id)}/versions/${n}`);
    if (ref !== view.sop) return;
    list(v.steps);
    $("sop-changes").replaceChildren(
      ...v.change_log.map((e) => h("li", {}, t(e.by ? "sop.change_by" : "sop.change", e))),
    );
  } catch {
    $("sop-changes").replaceChildren(h("li", { className: "hint" }, t("sop.changes_need_read")));
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
  posting = true;
  view.heard = false;
  busy(true);
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
    tick();
  } catch (error) {
    showError($("post-error"), error);
    busy(false);
  } finally {
    posting = false;
    button.disabled = false;
    refreshStatus();
  }
}

start();
