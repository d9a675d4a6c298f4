// One transcript line per event, written as a sentence for people: every kind the framework
// logs (framework/sessions/events.py), every shape it writes (older logs too). A field a log
// lacks is left out of the sentence, never shown as "undefined" or "null", and no content is
// ever shown as raw JSON. Room text is set with textContent only (see h() in api.js).
import { h } from "./api.js";
import { duration, localTime, names, reason, t } from "./labels.js";

const TEXT_CHARS = 4000; // a message longer than this is cut (the log has all of it)
const SHORT_CHARS = 300; // a tool's output, an error's detail

/** The `<li>` for `event`; `name(author)` gives a person's or employee's display name. */
export function renderEvent(event, name = (x) => x) {
  const c = event.content;
  const meta = event.meta || {};
  const fields = c && typeof c === "object" && !Array.isArray(c) ? c : {};
  const ctx = { event, c: fields, text: typeof c === "string" ? c : "", meta, name };
  const kind = String(event.kind || "");
  const render = KINDS[kind] || other;
  const parts = render(ctx);
  const { short, long } = localTime(event.ts);
  const when = h("time", { className: "ts", dateTime: event.ts || "", title: long }, short);
  return h("li", { className: `event ${kind}` }, when, ...parts);
}

const KINDS = {
  message,
  sop_step: ({ c, text }) => {
    const said = t("step", { n: c.n, speakers: names(c.speakers), do: c.do ?? text });
    return [line("step", said)];
  },
  plan,
  tool_call: ({ event, c, name }) => {
    const args = toolArgs(c.args);
    const said = args ? t("tool.call", { name: c.name, args }) : t("tool.call_bare", { name: c.name });
    return [who(event, name), line("tool", said)];
  },
  tool_result: ({ c }) => {
    const key = c.ok ? "tool.ok" : "tool.failed";
    const said = t(key, { name: c.name, output: clip(c.output, SHORT_CHARS) });
    return [line(`tool ${c.ok ? "ok" : "failed"}`, said)];
  },
  wait,
  outcome,
  feedback: ({ c }) => feedback(c),
  revision: ({ c }) => revision(c),
  error,
  fallback: ({ event, c, text, name }) => [who(event, name), line("fallback", fallbackText(c, text))],
  extraction: ({ c }) => extraction(c),
  knowledge,
  session_end: ({ c }) => {
    const key = `session_end.${["closed", "idle"].includes(c.reason) ? c.reason : "other"}`;
    return [line("session-end", t(key, { reason: c.reason, events: count(c.events) }))];
  },
  consolidation,
  remark,
};

function message({ event, text, c, meta, name }) {
  const body = text || (typeof c.text === "string" ? c.text : "");
  const parts = [who(event, name)];
  if (meta.human) parts.push(h("span", { className: "why" }, t("who.human")));
  if (!meta.human && meta.why) parts.push(h("span", { className: "why" }, whyText(meta)));
  parts.push(modelBadge(meta));
  parts.push(h("div", { className: "text" }, clip(body, TEXT_CHARS)));
  return parts;
}

/** Which model wrote a reply: "simulated" for the offline double, else its label. */
export function modelBadge(meta) {
  const model = typeof meta.model === "string" ? meta.model : "";
  if (!model) return null;
  if (model === "simulated") return h("span", { className: "badge sim" }, t("badge.simulated"));
  const usage = meta.usage && typeof meta.usage === "object" ? meta.usage : {};
  const took = Number(usage.model_s) > 0 ? duration(usage.model_s) : "";
  const text = took ? t("badge.took", { model, seconds: took }) : model;
  return h("span", { className: "badge model", title: t("badge.model", { model }) }, text);
}

function whyText(meta) {
  const key = `why.${meta.why}`;
  if (meta.why === "sop_step") return t(key, { step: meta.step ?? "" });
  if (meta.why === "delivered") {
    const from = meta.delivered && typeof meta.delivered === "object" ? meta.delivered : {};
    return t(key, { schedule: String(from.schedule ?? "") });
  }
  return key in LABEL_KEYS ? t(key) : String(meta.why);
}

const LABEL_KEYS = { "why.mention": 1, "why.selector": 1, "why.direct": 1 };

function plan({ c, meta }) {
  if ("outcome" in c) return [...feedback(c.outcome || {}), ...(c.revision ? revision(c.revision) : [])];
  if ("extracted" in c) return extraction(c);
  if (!meta.entry) return [line("text", t("plan.changed"))];
  const title = c.title || c.scenario || "";
  const sop = meta.sop || c.sop;
  const parts = [line("entered", sop ? t("entered", { title, sop }) : t("entered.no_sop", { title }))];
  if (c.announcement) {
    parts.push(h("div", { className: "text announcement" }, clip(c.announcement, TEXT_CHARS)));
  }
  return parts;
}

function wait({ c }) {
  const people = names(c.waiting_for) || t("status.people");
  const why = c.reason;
  let said;
  if (why === "waits_for_input") {
    said = c.after_step
      ? t("wait.waits_for_input", { people, step: c.after_step })
      : t("wait.waits_for_input_any", { people });
  } else if (why === "model_error") {
    said = t("wait.model_error", { people, error: clip(c.error || "", SHORT_CHARS) });
  } else if (why === "confirm_remark" || why === "interrupted") {
    said = t(`wait.${why}`, { people });
  } else {
    said = t("wait.other", { people, reason: why || "" });
  }
  const parts = [line("wait", said)];
  if (Array.isArray(c.dropped) && c.dropped.length) {
    parts.push(sub(t("wait.dropped", { names: names(c.dropped) })));
  }
  return parts;
}

function outcome({ c }) {
  const values = {
    reason: reason(c.reason),
    done: count(c.steps_done),
    total: count(c.steps_total),
    turns: count(c.turns),
  };
  let key = "outcome.other";
  if (!c.steps_total) key = "outcome.free";
  else if (["sop_complete", "stop_word", "max_turns"].includes(c.reason)) key = `outcome.${c.reason}`;
  return [line("outcome", t(key, values))];
}

/** A run's measured result: only the facts the event holds (late feedback holds fewer). */
function feedback(c) {
  const sop = c.sop || "";
  const head = `feedback.${c.late ? "late_" : ""}${c.success ? "success" : "failure"}`;
  const facts = [];
  if (isNumber(c.score)) facts.push(t("feedback.score", { score: score(c.score) }));
  if (isNumber(c.corrections)) facts.push(corrections(c.corrections));
  if (isNumber(c.human_interventions) && c.human_interventions > 0) {
    const n = c.human_interventions;
    facts.push(n === 1 ? t("feedback.intervention") : t("feedback.interventions", { n }));
  }
  if (isNumber(c.off_sop_turns) && c.off_sop_turns > 0) {
    facts.push(t("feedback.off_sop", { n: c.off_sop_turns }));
  }
  if (isNumber(c.duration_s) && c.duration_s > 0) {
    facts.push(t("feedback.duration", { duration: duration(c.duration_s) }));
  }
  const said = t(head, { sop });
  const sentence = facts.length
    ? t("feedback.with_facts", { head: said, facts: facts.join(t("list.sep")) })
    : t("feedback.bare", { head: said });
  const parts = [line("feedback", sentence)];
  for (const failure of list(c.failures)) {
    parts.push(sub(t("feedback.lacking", { failure: clip(failure, SHORT_CHARS) }), "failed"));
  }
  return parts;
}

function revision(c) {
  const status = statusWord(c.status);
  const parts = [];
  if (c.reselected) parts.push(line("revision", t("revision.reselected", { sop: c.sop, status })));
  else if ("edits" in c) {
    const key = c.why ? "revision.proposed" : "revision.proposed_bare";
    parts.push(line("revision", t(key, { sop: c.sop, status, why: c.why })));
  }
  for (const edit of list(c.edits)) parts.push(sub(plain(edit)));
  const conflicts = list(c.conflicts);
  if (conflicts.length && !("edits" in c)) {
    parts.push(line("revision", t("revision.conflicts", { sop: c.sop })));
  }
  for (const conflict of conflicts) parts.push(sub(plain(conflict), "conflict"));
  if (list(c.reviewers).length) parts.push(sub(t("revision.reviewers", { names: names(c.reviewers) })));
  return parts.length ? parts : [line("revision", t("revision.proposed_bare", { sop: c.sop, status }))];
}

function extraction(c) {
  if (!c.extracted) return [line("extraction", t("extraction.none", { why: c.why || "" }))];
  const said = t("extraction.done", { ref: c.extracted, status: statusWord(c.status) });
  const parts = [line("extraction", said)];
  for (const step of list(c.steps)) parts.push(sub(plain(step)));
  if (c.review) parts.push(sub(t("extraction.review", { review: c.review })));
  if (c.why) parts.push(sub(t("extraction.why", { why: c.why })));
  return parts;
}

function knowledge({ c }) {
  const journals = Object.values(c.journals && typeof c.journals === "object" ? c.journals : {}).reduce(
    (sum, n) => sum + (isNumber(n) ? n : 0),
    0,
  );
  const routed = list(c.routed).filter((r) => r && typeof r === "object");
  const parts = [];
  if (!journals && !routed.length) parts.push(line("knowledge", t("knowledge.nothing")));
  else parts.push(line("knowledge", t("knowledge.summary", { journals, items: routed.length })));
  for (const r of routed) {
    const text = clip(r.text, SHORT_CHARS);
    parts.push(sub(t("knowledge.item", { category: r.category, to: r.to, outcome: r.outcome, text })));
  }
  const gate = c.gate && typeof c.gate === "object" ? c.gate : {};
  if (gate.fired) parts.push(sub(t("knowledge.gate", { reasons: list(gate.reasons).join(t("items.sep")) })));
  for (const why of list(c.fallbacks)) parts.push(sub(t("knowledge.fallback", { reason: why }), "fallback"));
  return parts;
}

function consolidation({ c }) {
  const summary = { messages: count(c.messages), lines: count(c.history_lines) };
  const parts = [line("consolidation", t("consolidation.summary", summary))];
  const facts = list(c.facts).map(plain);
  const kept = facts.join(t("items.sep"));
  parts.push(sub(facts.length ? t("consolidation.facts", { facts: kept }) : t("consolidation.no_facts")));
  return parts;
}

function remark({ c, name }) {
  const by = c.by ? name(String(c.by)) : "";
  const status = String(c.status || "");
  let said;
  if (typeof c.text === "string" && c.text) {
    said = status === "understood" && by ? t("remark.by", { by, text: c.text }) : c.text;
  } else if (status === "none") said = t("remark.none", { by });
  else said = t("remark.status", { by, status: t(`remark.${status}`) });
  const parts = [line(`remark ${status}`, said)];
  if (typeof c.ask === "string" && c.ask) parts.push(sub(c.ask));
  return parts;
}

function error({ event, c, text, name }) {
  const code = c.error;
  const detail = clip(c.detail ?? text, SHORT_CHARS);
  const known = [
    "model_error",
    "empty_reply",
    "tool_loop_limit",
    "malformed_tool_call",
    "unknown_tool",
    "hook_failed",
  ];
  const key = known.includes(code) ? `error.${code}` : "error.other";
  const values = {
    error: code || "",
    detail,
    kind: c.kind || "",
    attempts: count(c.attempts),
    hook: c.hook || "",
  };
  const said = text && !code ? text : t(key, values);
  return [who(event, name), line("error", said)];
}

function fallbackText(c, text) {
  if (text) return text;
  const whatKey = `fallback.what.${c.what}`;
  const what = t(whatKey) === whatKey ? String(c.what || "") : t(whatKey);
  return c.reason
    ? t("fallback.sentence", { what, used: c.used, reason: clip(c.reason, SHORT_CHARS) })
    : t("fallback.short", { what, used: c.used });
}

/** A kind this page does not know yet: its name and its plain fields, never raw JSON. */
function other({ event, c, text, name }) {
  const parts = [who(event, name), line("text", t("event.other", { kind: event.kind }))];
  if (text) parts.push(h("div", { className: "text" }, clip(text, TEXT_CHARS)));
  for (const [key, value] of Object.entries(c)) {
    if (["string", "number", "boolean"].includes(typeof value)) {
      parts.push(sub(`${key}: ${clip(String(value), SHORT_CHARS)}`));
    }
  }
  return parts;
}

function who(event, name) {
  if (!event.author || event.author === "system") return null;
  return h("span", { className: "who" }, name(String(event.author)));
}

function line(className, text) {
  return h("span", { className: `said ${className}` }, text);
}

function sub(text, className = "") {
  return h("div", { className: `detail ${className}`.trim() }, text);
}

function toolArgs(args) {
  if (!args || typeof args !== "object") return "";
  if (typeof args.path === "string") return args.path;
  return Object.entries(args)
    .map(([key, value]) => `${key}=${clip(value, 40)}`)
    .join(", ");
}

function corrections(n) {
  if (n === 0) return t("feedback.no_corrections");
  return n === 1 ? t("feedback.correction") : t("feedback.corrections", { n });
}

function statusWord(status) {
  const key = `status.${status}`;
  return t(key) === key ? String(status || "") : t(key);
}

function score(value) {
  return Number.isInteger(value) ? String(value) : value.toFixed(2);
}

function isNumber(value) {
  return typeof value === "number" && Number.isFinite(value);
}

function count(value) {
  return isNumber(value) ? value : 0;
}

function list(value) {
  return Array.isArray(value) ? value.filter((x) => x !== null && x !== undefined) : [];
}

function clip(value, limit) {
  const text = plain(value);
  return text.length > limit ? `${text.slice(0, limit - 1)}…` : text;
}

/** Any value as words: a list joined, an object as "key: value" pairs (never JSON). */
function plain(value) {
  if (value === null || value === undefined) return "";
  if (typeof value === "string") return value;
  if (Array.isArray(value)) return value.map(plain).filter(Boolean).join(t("items.sep"));
  if (typeof value === "object") {
    return Object.entries(value)
      .filter(([, v]) => v !== null && v !== undefined)
      .map(([k, v]) => `${k}: ${plain(v)}`)
      .join(t("items.sep"));
  }
  return String(value);
}
