// The page's one way to the server: the bearer token kept in this tab, JSON in and out, and
// the server's error body turned into an Error whose message and fix the page shows.
import { t } from "./labels.js";
import { readProblem } from "./sse.js";

const TOKEN_KEY = "staffroom.token";

export function token() {
  return sessionStorage.getItem(TOKEN_KEY) || "";
}

export function setToken(value) {
  if (value) sessionStorage.setItem(TOKEN_KEY, value);
  else sessionStorage.removeItem(TOKEN_KEY);
}

/** The Authorization header, when there is a token (a --no-auth server needs none). */
export function authorization() {
  return token() ? { Authorization: `Bearer ${token()}` } : {};
}

/** `fetch` with the token; resolves to the JSON body, rejects with the server's problem. */
export async function api(path, { method = "GET", body = undefined } = {}) {
  const headers = { Accept: "application/json", ...authorization() };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const response = await fetch(path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    cache: "no-store",
  });
  if (!response.ok) throw await readProblem(response);
  return response.status === 204 ? null : response.json();
}

/** Show an error (or clear it with null) in element `el`: message, then the fix. */
export function showError(el, error) {
  el.replaceChildren();
  el.hidden = !error;
  if (!error) return;
  const message = document.createElement("span");
  message.className = "message";
  message.textContent = error.message || String(error);
  el.append(message);
  if (error.fix) {
    const fix = document.createElement("span");
    fix.className = "fix";
    fix.textContent = t("fix", { fix: error.fix });
    el.append(" ", fix);
  }
}

/** `h("p", {className: "x"}, "text", child)`: elements built with textContent only. */
export function h(tag, props = {}, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(props)) {
    if (name === "innerHTML" || name === "outerHTML") throw new Error("text only: use textContent");
    if (name === "dataset") Object.assign(el.dataset, value);
    else el[name] = value;
  }
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    el.append(typeof child === "string" || typeof child === "number" ? String(child) : child);
  }
  return el;
}

export function splitNames(text) {
  return text
    .split(",")
    .map((name) => name.trim())
    .filter(Boolean);
}

export function percent(rate) {
  return rate === null || rate === undefined ? "-" : `${Math.round(rate * 100)}%`;
}
