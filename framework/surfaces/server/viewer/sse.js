// A server-sent events reader over fetch(): EventSource cannot send an Authorization header,
// so the page reads the stream itself, sends `Authorization: Bearer` and `Last-Event-ID`, and
// reconnects from the last id it saw (the server replays only what came after it).

/** Parse SSE text into events; returns the events and the unparsed rest of the buffer. */
export function parseSse(buffer) {
  const events = [];
  // Blocks end with a blank line; CRLF, CR and LF all end a line (the SSE grammar). A CR at
  // the end waits for the next chunk: it may be the first half of a CRLF split between them.
  const held = buffer.endsWith("\r") ? "\r" : "";
  const text = buffer.slice(0, buffer.length - held.length).replace(/\r\n?/g, "\n");
  let start = 0;
  let end;
  while ((end = text.indexOf("\n\n", start)) !== -1) {
    const block = text.slice(start, end);
    start = end + 2;
    const event = { id: null, event: "message", data: [], retry: null };
    for (const line of block.split("\n")) {
      if (line === "" || line.startsWith(":")) continue; // comments are keep-alive pings
      const colon = line.indexOf(":");
      const field = colon === -1 ? line : line.slice(0, colon);
      let value = colon === -1 ? "" : line.slice(colon + 1);
      if (value.startsWith(" ")) value = value.slice(1);
      if (field === "data") event.data.push(value);
      else if (field === "id") event.id = value;
      else if (field === "event") event.event = value;
      else if (field === "retry" && /^\d+$/.test(value)) event.retry = Number(value);
    }
    if (event.data.length || event.id !== null || event.retry !== null) {
      events.push({ ...event, data: event.data.join("\n") });
    }
  }
  return { events, rest: text.slice(start) + held };
}

/**
 * Follow `url` until `signal` aborts. `onEvent({id, event, data})` gets every event;
 * `onState(text)` hears "live", "reconnecting" and errors; `auth()` gives the headers that
 * authorize the request (read on each reconnect: the token may have changed).
 * An HTTP error that a retry cannot fix (401, 403, 404) stops the stream and is reported.
 */
export async function follow(url, { auth, onEvent, onState, signal, lastId = null }) {
  let retry = 1000;
  while (!signal.aborted) {
    let stopped = null;
    try {
      const headers = { Accept: "text/event-stream", ...auth() };
      if (lastId) headers["Last-Event-ID"] = lastId;
      const response = await fetch(url, { headers, signal, cache: "no-store" });
      if (!response.ok) {
        const problem = await readProblem(response);
        if ([401, 403, 404].includes(response.status)) stopped = problem;
        throw problem;
      }
      onState("live");
      const reader = response.body.getReader();
      const decoder = new TextDecoder();
      let buffer = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += decoder.decode(value, { stream: true });
        const parsed = parseSse(buffer);
        buffer = parsed.rest;
        for (const event of parsed.events) {
          if (event.retry !== null) retry = event.retry;
          if (event.id) lastId = event.id;
          if (event.data) onEvent(event);
        }
      }
    } catch (error) {
      if (signal.aborted) return;
      if (stopped) {
        onState(stopped, true);
        return;
      }
      onState(error, false);
    }
    if (signal.aborted) return;
    onState("reconnecting");
    await sleep(retry, signal);
  }
}

/** The server's error body `{"error": {type, message, field, fix}}` as an Error. */
export async function readProblem(response) {
  let body = null;
  try {
    body = await response.json();
  } catch {
    body = null;
  }
  const problem = (body && body.error) || {};
  const error = new Error(problem.message || `${response.status} ${response.statusText}`);
  error.status = response.status;
  error.type = problem.type || "http_error";
  error.field = problem.field || null;
  error.fix = problem.fix || null;
  error.body = body;
  return error;
}

function sleep(ms, signal) {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => {
      clearTimeout(timer);
      resolve();
    });
  });
}
