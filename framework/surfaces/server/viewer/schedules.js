// The schedules view: each schedule's next fire, paused or not, its last fires with their
// outcome and how many it missed, and run now / pause / resume. The server decides who may
// steer (a token granted `schedule`); a refusal is shown from its JSON body (message and fix).
import { api, h, showError } from "./api.js";
import { t } from "./labels.js";

const $ = (id) => document.getElementById(id);
const schedulePath = (name) => `/api/schedules/${encodeURIComponent(name)}`;
const POLL_MS = 2000;
let poll = null;

export async function loadSchedules() {
  clearTimeout(poll);
  try {
    const body = await api("/api/schedules");
    const fileError = $("schedule-file-error");
    fileError.textContent = body.file_error ? t("schedules.file_error", { error: body.file_error }) : "";
    fileError.hidden = !body.file_error;
    $("scheduler-health").textContent = healthText(body.scheduler);
    const items = body.schedules.map(renderSchedule);
    $("schedule-list").replaceChildren(...(items.length ? items : [h("p", { className: "hint" }, t("schedules.none"))]));
    showError($("schedule-error"), null);
    // A fire under way: look again shortly, while the view is open, to show how it ended.
    const running = body.schedules.some((s) => s.last_fires.some((f) => f.state === "running"));
    if (running && !$("schedules-view").hidden) poll = setTimeout(loadSchedules, POLL_MS);
  } catch (error) {
    showError($("schedule-error"), error);
  }
}

function healthText(scheduler) {
  const parts = [scheduler.runs_here ? label("schedules.health", scheduler.health) : t("schedules.not_here")];
  const stalled = scheduler.heartbeats.filter((b) => b.stalled).length;
  if (stalled) parts.push(t("schedules.stalled_beats", { n: stalled }));
  return parts.join(" ");
}

/** A label of the family `prefix` for `code`; a code the table lacks is shown as it is. */
function label(prefix, code) {
  const key = `${prefix}.${code}`;
  return t(key) === key ? String(code ?? "") : t(key);
}

/** An instant on the schedule's own clock, as the server gives it: "2026-03-30 09:30". */
function onClock(moment) {
  return moment ? moment.local.slice(0, 16).replace("T", " ") : "";
}

function renderSchedule(s) {
  const state = !s.enabled
    ? t("schedules.disabled")
    : s.paused
      ? t("schedules.paused", { since: onClock(s.paused_since) })
      : t("schedules.active");
  const next = s.next_fire ? t("schedules.next", { at: onClock(s.next_fire) }) : t("schedules.no_next");
  const fires = h("ol", { className: "fires" }, ...s.last_fires.map(fireItem));
  if (!s.last_fires.length) fires.append(h("li", { className: "hint" }, t("schedules.no_fires")));
  const said = h("p", { className: "said status", role: "status" });
  const error = h("p", { className: "error", role: "alert", hidden: true });
  const button = (action, key) => {
    const el = h("button", { type: "button", className: action }, t(key));
    el.addEventListener("click", () => act(s.name, action, said, error));
    return el;
  };
  return h(
    "section",
    { className: "schedule", dataset: { schedule: s.name, paused: String(s.paused) } },
    h("h3", {}, s.name, " ", h("span", { className: "badge state" }, state)),
    h("p", { className: "when hint" }, t("schedules.when", { when: s.when, zone: s.zone })),
    h("p", { className: "next" }, next),
    h("p", { className: "missed" }, t("schedules.missed", { n: s.missed })),
    fires,
    h(
      "div",
      { className: "actions" },
      button("run-now", "schedules.run_now"),
      s.paused ? button("resume", "schedules.resume") : button("pause", "schedules.pause"),
    ),
    said,
    error,
  );
}

function fireItem(f) {
  const kind = f.kind === "due" ? null : h("span", { className: "kind hint" }, ` ${label("fire.kind", f.kind)}`);
  const session = f.session
    ? h("a", { className: "session", href: `#${encodeURIComponent(f.session)}` }, f.session)
    : null;
  return h(
    "li",
    { dataset: { fire: f.fire_id, state: f.state } },
    h("span", { className: "ts" }, onClock(f.due)),
    " ",
    h("span", { className: `badge outcome ${f.state}` }, label("fire", f.state)),
    kind,
    session ? " " : null,
    session,
    f.detail ? h("span", { className: "detail hint" }, ` ${f.detail}`) : null,
  );
}

async function act(name, action, said, error) {
  showError(error, null);
  try {
    // No id for run-now: the server names the run by the minute, so a double click starts one.
    const out = await api(`${schedulePath(name)}/${action}`, { method: "POST" });
    if (action === "run-now") {
      const key = out.duplicate ? "schedules.ran_already" : "schedules.started";
      said.textContent = t(key, { fire: out.fire.fire_id, state: label("fire", out.fire.state) });
    }
    await loadSchedules();
    if (action === "run-now") {
      // The list was drawn anew: say it again on the schedule's fresh section.
      const fresh = document.querySelector(`section.schedule[data-schedule="${CSS.escape(name)}"] .said`);
      if (fresh) fresh.textContent = said.textContent;
    }
  } catch (problem) {
    showError(error, problem);
  }
}
