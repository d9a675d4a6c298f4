// The manager view: the SOP library with each version's metrics, drafts with their diff
// against the best version, and approve / edit as a new version / publish / deprecate. The
// server enforces the reviewers; a refusal is shown from its JSON body (message and fix).
import { api, h, percent, showError, splitNames } from "./api.js";

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
  const best = sop.best ? `best: v${sop.best}` : "no published version";
  const trial = sop.trial ? ` · trial: v${sop.trial.version} since ${sop.trial.started_at}` : "";
  const section = h(
    "section",
    { className: "sop", dataset: { sop: sop.id } },
    h("h3", {}, sop.id, h("span", { className: "hint" }, ` ${sop.scope} · ${best}${trial}`)),
    h("p", { className: "goal" }, sop.goal),
  );
  if (sop.problem) section.append(h("p", { className: "error" }, `card not imported: ${sop.problem}`));
  const explain = h("details", { className: "explain" }, h("summary", {}, "Why the best wins"));
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
  el.dataset.ref = v.ref;
  el.dataset.status = v.status;
  const q = (selector) => el.querySelector(selector);
  q(".ref").textContent = v.ref;
  q(".status").textContent = v.status + (v.version === sop.best ? " · best" : "");
  q(".why").textContent = v.why;
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
    `runs ${m.runs}`,
    `success ${percent(m.success_rate)}`,
    `corrections ${m.corrections}`,
    `replaced ${m.replaced}×`,
    `lacking evidence ${m.lacking_evidence}/${m.runs}`,
  ];
  if (users.length) parts.push(`hit rate: ${users.join(", ")}`);
  if (v.score !== null && v.score !== undefined) parts.push(`score ${v.score.toFixed(2)}`);
  if (v.ineligible) parts.push(v.ineligible);
  return parts.join(" · ");
}

function reviewText(v) {
  const approved = v.approvals.map((a) => a.reviewer);
  const parts = [];
  if (v.reviewers.length) parts.push(`reviewers: ${v.reviewers.join(", ")}`);
  if (approved.length) parts.push(`approved by ${approved.join(", ")}`);
  if (v.awaiting.length) parts.push(`awaiting approval from ${v.awaiting.join(", ")}`);
  return parts.join(" · ");
}

async function showDiff(id, v, pre) {
  try {
    const diff = await api(`${sopPath(id)}/versions/${v.version}/diff`);
    if (!diff.against) return;
    const lines = diff.steps.length ? diff.steps : diff.card;
    pre.replaceChildren(
      h("span", { className: "diff-head" }, `against ${diff.against}\n`),
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
