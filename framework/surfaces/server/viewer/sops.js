// The manager view: the SOP library with each version's metrics, drafts with their diff
// against the best version, and approve / edit as a new version / publish / deprecate. The
// server enforces the reviewers; a refusal is shown from its JSON body (message and fix).
import { api, h, percent, showError, splitNames } from "./api.js";
import { applyLabels, localTime, names, t } from "./labels.js";

const $ = (id) => document.getElementById(id);
const sopPath = (id) => `/api/sops/${encodeURIComponent(id)}`;

export async function loadLibrary() {
  try {
    const { sops } = await api("/api/sops");
    const blocks = await Promise.all(sops.map((sop) => renderSop(sop)));
    $("sop-library").replaceChildren(...blocks);
    showError($("sop-error"), null);
  } catch (error) {
    showError($("sop-error"), error);
  }
}

async function renderSop(sop) {
  const best = sop.best ? t("library.best", { n: sop.best }) : t("library.no_best");
  const since = sop.trial ? localTime(sop.trial.started_at).short : "";
  const trial = sop.trial ? ` · ${t("library.trial", { n: sop.trial.version, since })}` : "";
  const section = h(
    "section",
    { className: "sop", dataset: { sop: sop.id } },
    h("h3", {}, sop.id, h("span", { className: "hint" }, ` ${sop.scope} · ${best}${trial}`)),
    h("p", { className: "goal" }, sop.goal),
  );
  if (sop.problem) {
    section.append(h("p", { className: "error" }, t("library.problem", { problem: sop.problem })));
  }
  const explain = h("details", { className: "explain" }, h("summary", {}, t("library.explain")));
  section.append(explain);
  explain.addEventListener("toggle", () => explainSop(sop.id, explain), { once: true });
  for (const v of [...sop.versions].reverse()) section.append(await renderVersion(sop, v));
  return section;
}

async function explainSop(id, el) {
  try {
    const { lines } = await api(`${sopPath(id)}/explain`);
    el.append(h("pre", {}, lines.join("\n")));
  } catch (error) {
    el.append(h("p", { className: "error" }, error.message));
  }
}

async function renderVersion(sop, v) {
  const el = $("version-template").content.firstElementChild.cloneNode(true);
  applyLabels(el);
  el.dataset.ref = v.ref;
  el.dataset.status = v.status;
  const q = (selector) => el.querySelector(selector);
  q(".ref").textContent = v.ref;
  const status = t(`status.${v.status}`) === `status.${v.status}` ? v.status : t(`status.${v.status}`);
  q(".status").textContent = status + (v.version === sop.best ? ` · ${t("status.best")}` : "");
  q(".why").textContent = v.why;
  // Why it was retired: its newest deprecation note (the change log keeps it).
  const retired = [...(v.change_log || [])].reverse().find((e) => String(e.why).startsWith("deprecated: "));
  if (v.status === "deprecated" && retired) {
    q(".retired").textContent = t("library.retired", { reason: retired.why.slice("deprecated: ".length) });
    q(".retired").hidden = false;
  }
  q(".metrics").textContent = metricsText(v);
  q(".review").textContent = reviewText(v);
  if (v.status === "draft") await showDiff(sop.id, v, q(".diff"));
  q(".draft-only").hidden = v.status !== "draft";
  q(".live-only").hidden = v.status === "deprecated";
  const fail = (error) => showError(q(".error"), error);
  const act = (action, body) =>
    api(`${sopPath(sop.id)}/versions/${v.version}/${action}`, { method: "POST", body })
      .then(() => loadLibrary())
      .catch(fail);
  q(".approve").addEventListener("click", () => act("approve", { reviewer: q(".reviewer").value.trim() }));
  q(".publish").addEventListener("click", () => act("publish", { require: splitNames(q(".require").value) }));
  q(".deprecate").addEventListener("click", () => act("deprecate", { reason: q(".reason").value.trim() }));
  q(".edit").addEventListener("click", () => openEditor(sop.id, v, el).catch(fail));
  q(".cancel").addEventListener("click", () => (q(".editor").hidden = true));
  q(".editor").addEventListener("submit", (e) => {
    e.preventDefault();
    const body = {
      base: v.version,
      card: q(".card").value,
      note: q(".note").value,
      author: q(".author").value.trim(),
      reviewers: splitNames(q(".reviewers").value),
    };
    api(`${sopPath(sop.id)}/versions`, { method: "POST", body }).then(() => loadLibrary()).catch(fail);
  });
  return el;
}

function metricsText(v) {
  const m = v.metrics;
  const users = Object.entries(m.hit_rate_by_user || {}).map(([u, r]) => `${u} ${percent(r)}`);
  const parts = [
    t("metrics.runs", { n: m.runs }),
    t("metrics.success", { rate: percent(m.success_rate) }),
    t("metrics.corrections", { n: m.corrections }),
    t("metrics.replaced", { n: m.replaced }),
    t("metrics.lacking", { n: m.lacking_evidence, runs: m.runs }),
  ];
  if (users.length) parts.push(t("metrics.hit_rate", { users: users.join(t("list.sep")) }));
  if (typeof v.score === "number") parts.push(t("metrics.score", { score: v.score.toFixed(2) }));
  if (v.ineligible) parts.push(v.ineligible);
  return parts.join(" · ");
}

function reviewText(v) {
  const approved = v.approvals.map((a) => a.reviewer);
  const parts = [];
  if (v.reviewers.length) parts.push(t("review.reviewers", { names: names(v.reviewers) }));
  if (approved.length) parts.push(t("review.approved", { names: names(approved) }));
  if (v.awaiting.length) parts.push(t("review.awaiting", { names: names(v.awaiting) }));
  return parts.join(" · ");
}

async function showDiff(id, v, pre) {
  try {
    const diff = await api(`${sopPath(id)}/versions/${v.version}/diff`);
    if (!diff.against) return;
    const lines = diff.steps.length ? diff.steps : diff.card;
    pre.replaceChildren(
      h("span", { className: "diff-head" }, `${t("diff.against", { ref: diff.against })}\n`),
      ...lines.map((line) => h("span", { className: diffClass(line) }, `${line}\n`)),
    );
    pre.hidden = false;
  } catch (error) {
    pre.textContent = error.message;
    pre.hidden = false;
  }
}

function diffClass(line) {
  if (line.startsWith("+++") || line.startsWith("---")) return "diff-head";
  if (line.startsWith("+")) return "diff-add";
  if (line.startsWith("-")) return "diff-del";
  return "diff-same";
}

async function openEditor(id, v, el) {
  const full = await api(`${sopPath(id)}/versions/${v.version}`);
  const editor = el.querySelector(".editor");
  el.querySelector(".card").value = full.card;
  editor.hidden = false;
  el.querySelector(".card").focus();
}
