// shellgate console: load and refresh the sections, post the forms, stream session output
// (as text only), count deadlines down.
//
// Every request for data carries the session's page key in the X-Shellgate-Console header.
// The key comes once, in the login's answer, and lives in sessionStorage, which is per
// origin including the port: a service on another port of this host receives the session
// cookie (cookies ignore ports) but never the key, and a cookie without the key gets 401.
"use strict";

const KEY = "shellgate-console-key";
const KEY_HEADER = "X-Shellgate-Console";
const RETRY_MS = 3000;
// url -> AbortController of the live output stream shown in that session's row.
const streams = new Map();

function toLogin() {
  sessionStorage.removeItem(KEY);
  window.location.assign("/login");
}

// fetch with the page key; null (and off to the login page) when the session is gone.
async function keyed(url, init = {}) {
  const key = sessionStorage.getItem(KEY);
  if (!key) {
    toLogin();
    return null;
  }
  const headers = new Headers(init.headers || {});
  headers.set(KEY_HEADER, key);
  const response = await fetch(url, { ...init, headers, credentials: "same-origin", cache: "no-store" });
  if (response.redirected || response.status === 401) {
    toLogin();
    return null;
  }
  return response;
}

function streamRow(url) {
  return document.querySelector(`pre[data-stream="${CSS.escape(url)}"]`);
}

function append(url, text) {
  const pre = streamRow(url);
  if (!pre) return;
  pre.append(document.createTextNode(text));
  // Keep a bounded tail in the page.
  if (pre.textContent.length > 200000) pre.textContent = pre.textContent.slice(-100000);
  pre.scrollTop = pre.scrollHeight;
}

// One server-sent event frame: true when it is the stream's `end`.
function deliver(url, frame) {
  let event = "message";
  const data = [];
  for (const line of frame.split("\n")) {
    if (line.startsWith(":")) continue;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "event") event = value;
    else if (field === "data") data.push(value);
  }
  if (event === "end") return true;
  if (event === "message" && data.length) append(url, JSON.parse(data.join("\n")));
  return false;
}

// Read one output stream (EventSource cannot send the key header): "end", "stop" or "dropped".
async function follow(url, controller) {
  let response;
  try {
    response = await keyed(url, { signal: controller.signal });
  } catch (error) {
    return "dropped";
  }
  if (!response) return "stop";
  if (!response.ok || !response.body) return "stop";
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return "dropped";
      buffer += value;
      let cut;
      while ((cut = buffer.indexOf("\n\n")) >= 0) {
        const frame = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        if (deliver(url, frame)) {
          controller.abort();
          return "end";
        }
      }
    }
  } catch (error) {
    return "dropped";
  }
}

function openStream(url) {
  const controller = new AbortController();
  streams.set(url, controller);
  follow(url, controller).then((how) => {
    if (streams.get(url) !== controller) return; // closed or replaced meanwhile
    if (how === "end") {
      const pre = streamRow(url);
      if (pre) pre.dataset.ended = "1";
      return; // stays in the map: not opened again
    }
    if (how === "stop") return;
    // Dropped: try again later, as EventSource would.
    setTimeout(() => {
      if (streams.get(url) !== controller) return;
      streams.delete(url);
      if (streamRow(url)) openStream(url);
    }, RETRY_MS);
  });
}

function closeStream(url) {
  const controller = streams.get(url);
  streams.delete(url);
  if (controller) controller.abort();
}

function attachStreams(root) {
  for (const pre of root.querySelectorAll("pre[data-stream]")) {
    if (!streams.has(pre.dataset.stream)) openStream(pre.dataset.stream);
  }
}

function keepLiveOutput(fresh) {
  // A refreshed section keeps the output already streamed into its session rows.
  for (const pre of fresh.querySelectorAll("pre[data-stream]")) {
    const old = streamRow(pre.dataset.stream);
    if (old) pre.replaceWith(old);
  }
  for (const url of [...streams.keys()]) {
    if (!fresh.querySelector(`pre[data-stream="${CSS.escape(url)}"]`)) closeStream(url);
  }
}

// A refreshed section keeps each "show all" the operator opened or closed as it was.
function keepOpenDetails(section, fresh) {
  for (const old of section.querySelectorAll("details[data-keep]")) {
    const twin = fresh.querySelector(`details[data-keep="${CSS.escape(old.dataset.keep)}"]`);
    if (twin) twin.open = old.open;
  }
}

// A pending row that left because its deadline passed leaves a notice saying what the
// deadline decided (the row itself is gone with the next refresh).
function noteExpired(section, fresh) {
  const now = Date.now();
  for (const row of section.querySelectorAll("tr.pending-row")) {
    const id = row.dataset.approvalId;
    if (fresh.querySelector(`tr.pending-row[data-approval-id="${CSS.escape(id)}"]`)) continue;
    const countdown = row.querySelector("[data-deadline-ms]");
    if (!countdown || Number(countdown.dataset.deadlineMs) > now) continue;
    let box = document.getElementById("expired-notices");
    if (!box) {
      box = document.createElement("div");
      box.id = "expired-notices";
      section.before(box);
    }
    const notice = document.createElement("p");
    notice.className = "notice expired-notice";
    const command = row.querySelector("code.command")?.textContent || id;
    notice.textContent = `${countdown.dataset.expired || "expired"}: ${command.slice(0, 300)} ` +
      "(its deadline passed before an operator decided)";
    box.append(notice);
    while (box.children.length > 20) box.firstElementChild.remove();
  }
}

async function refresh(id) {
  const section = document.getElementById(id);
  if (!section) return;
  const response = await keyed(section.dataset.refresh);
  if (!response) return;
  if (response.status === 403) {
    toLogin();
    return;
  }
  if (!response.ok) return;
  const fresh = document.createElement("template");
  fresh.innerHTML = await response.text();
  // Never replace a form the operator is using.
  if (section.contains(document.activeElement) && document.activeElement.tagName === "BUTTON") return;
  if (section.id === "threads") keepLiveOutput(fresh.content);
  keepOpenDetails(section, fresh.content);
  if (section.id === "pending") noteExpired(section, fresh.content);
  section.replaceChildren(fresh.content);
  attachStreams(section);
  tick();
}

function tick() {
  const now = Date.now();
  for (const el of document.querySelectorAll("[data-deadline-ms]")) {
    const left = Math.max(0, Math.floor((Number(el.dataset.deadlineMs) - now) / 1000));
    if (left > 0 || !el.dataset.expired) {
      el.textContent = left + "s";
      continue;
    }
    // The deadline passed: the fallback decided; no button can decide it any more.
    el.textContent = el.dataset.expired;
    const row = el.closest("tr");
    if (row) {
      row.classList.add("expired");
      for (const button of row.querySelectorAll("button")) button.disabled = true;
    }
  }
}

// The whole page (operator, notice, every section), fetched with the key.
async function loadPage(root) {
  const response = await keyed(root.dataset.page);
  if (!response) return;
  if (!response.ok) {
    toLogin();
    return;
  }
  const html = await response.text();
  for (const url of [...streams.keys()]) closeStream(url);
  const fresh = document.createElement("template");
  fresh.innerHTML = html;
  root.replaceChildren(fresh.content);
  attachStreams(root);
  tick();
}

function showNotice(root, text) {
  let notice = document.getElementById("notice");
  if (!notice) {
    notice = document.createElement("p");
    notice.className = "notice";
    notice.id = "notice";
    root.querySelector("header")?.after(notice);
  }
  notice.textContent = text;
}

// Forms post through fetch, with the key; the page is then loaded again (its notice says
// how a decision went). Logging out ends the session on the server, then here.
async function submit(root, event) {
  const form = event.target;
  if (!(form instanceof HTMLFormElement) || form.method.toLowerCase() !== "post") return;
  event.preventDefault();
  const body = new URLSearchParams(new FormData(form));
  const button = event.submitter;
  // A decision that widens what runs unasked (the amendment) is confirmed first.
  if (button && button.dataset.confirm && !window.confirm(button.dataset.confirm)) return;
  if (button && button.name) body.set(button.name, button.value);
  const response = await keyed(form.action, { method: "POST", body, redirect: "manual" });
  if (!response) return;
  if (form.id === "logout-form") {
    toLogin();
    return;
  }
  if (response.type === "opaqueredirect" || response.ok) {
    await loadPage(root);
    return;
  }
  showNotice(root, `request refused (${response.status})`);
}

function start() {
  const handoff = document.getElementById("console-key");
  if (handoff) {
    // The login's answer: keep the key for this origin, then open the console.
    sessionStorage.setItem(KEY, handoff.dataset.key);
    handoff.removeAttribute("data-key");
    window.location.replace("/");
    return;
  }
  const root = document.getElementById("console");
  if (!root) return;
  root.addEventListener("submit", (event) => { submit(root, event).catch(() => {}); });
  loadPage(root).then(() => {
    for (const section of root.querySelectorAll("section[data-refresh]")) {
      const id = section.id;
      const every = Number(section.dataset.everyMs) || 5000;
      setInterval(() => { refresh(id).catch(() => {}); }, every);
    }
  }).catch(() => {});
  setInterval(tick, 1000);
}

document.addEventListener("DOMContentLoaded", start);
