// shellgate console: refresh sections, count deadlines down, stream session output (text only).
"use strict";

const streams = new Map();

function attachStreams(root) {
  for (const pre of root.querySelectorAll("pre[data-stream]")) {
    const url = pre.dataset.stream;
    if (streams.has(url)) continue;
    const source = new EventSource(url);
    streams.set(url, source);
    source.onmessage = (event) => {
      pre.append(document.createTextNode(JSON.parse(event.data)));
      // Keep a bounded tail in the page.
      if (pre.textContent.length > 200000) pre.textContent = pre.textContent.slice(-100000);
      pre.scrollTop = pre.scrollHeight;
    };
    source.addEventListener("end", () => { source.close(); pre.dataset.ended = "1"; });
  }
}

function keepLiveOutput(fresh) {
  // A refreshed section keeps the output already streamed into its session rows.
  for (const pre of fresh.querySelectorAll("pre[data-stream]")) {
    const old = document.querySelector(`pre[data-stream="${CSS.escape(pre.dataset.stream)}"]`);
    if (old) pre.replaceWith(old);
  }
  for (const [url, source] of streams) {
    if (!fresh.querySelector(`pre[data-stream="${CSS.escape(url)}"]`)) {
      source.close();
      streams.delete(url);
    }
  }
}

async function refresh(section) {
  const response = await fetch(section.dataset.refresh, { credentials: "same-origin", cache: "no-store" });
  if (response.redirected || response.status === 401 || response.status === 403) {
    window.location.assign("/login");
    return;
  }
  if (!response.ok) return;
  const fresh = document.createElement("template");
  fresh.innerHTML = await response.text();
  // Never replace a form the operator is using.
  if (section.contains(document.activeElement) && document.activeElement.tagName === "BUTTON") return;
  if (section.id === "threads") keepLiveOutput(fresh.content);
  section.replaceChildren(fresh.content);
  attachStreams(section);
  tick();
}

function tick() {
  const now = Date.now();
  for (const el of document.querySelectorAll("[data-deadline-ms]")) {
    const left = Math.max(0, Math.floor((Number(el.dataset.deadlineMs) - now) / 1000));
    el.textContent = left + "s";
  }
}

function start() {
  attachStreams(document);
  for (const section of document.querySelectorAll("section[data-refresh]")) {
    const every = Number(section.dataset.everyMs) || 5000;
    setInterval(() => { refresh(section).catch(() => {}); }, every);
  }
  setInterval(tick, 1000);
}

document.addEventListener("DOMContentLoaded", start);
