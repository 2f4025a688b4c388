// harvester serve: a little progressive JavaScript over server-rendered pages. Served from this file only: the
// Content-Security-Policy allows no inline script. Everything inserted into a page was rendered (and escaped) by
// the server's templates; text from a stream is set as text.
"use strict";

function copyText(button) {
  const text = button.dataset.copy || "";
  const done = () => {
    const was = button.textContent;
    button.textContent = "copied";
    button.classList.add("copied");
    setTimeout(() => { button.textContent = was; button.classList.remove("copied"); }, 1200);
  };
  if (navigator.clipboard && window.isSecureContext) {
    navigator.clipboard.writeText(text).then(done, () => fallbackCopy(text, done));
  } else {
    fallbackCopy(text, done);
  }
}

function fallbackCopy(text, done) {
  const area = document.createElement("textarea");
  area.value = text;
  area.setAttribute("readonly", "");
  area.className = "offscreen";
  document.body.appendChild(area);
  area.select();
  try { document.execCommand("copy"); done(); } finally { area.remove(); }
}

document.addEventListener("click", (event) => {
  const button = event.target.closest("button.copy");
  if (button) copyText(button);
});

// The sessions list: when the bank's change clock moves, fetch its rows again.
function liveSessions() {
  const table = document.getElementById("sessions");
  if (!table || !table.dataset.live || !window.EventSource) return;
  const rows = document.getElementById("session-rows");
  const note = document.getElementById("live-note");
  const stream = new EventSource(table.dataset.live);
  stream.addEventListener("open", () => { if (note) note.hidden = false; });
  stream.addEventListener("changed", () => {
    fetch(table.dataset.rows, { credentials: "same-origin" })
      .then((r) => (r.ok ? r.text() : Promise.reject(r.status)))
      .then((html) => { rows.innerHTML = html; document.body.dataset.updated = String(Date.now()); })
      .catch(() => {});
  });
}

// A session's transcript: the events written past the last one shown are appended as they are captured.
function liveSession() {
  const events = document.getElementById("events");
  if (!events || !events.dataset.live || !window.EventSource) return;
  const stream = new EventSource(events.dataset.live);
  stream.addEventListener("events", (e) => {
    events.insertAdjacentHTML("beforeend", e.data);
    document.body.dataset.updated = String(Date.now());
  });
  stream.addEventListener("state", (e) => {
    const state = document.getElementById("session-state");
    if (state) state.textContent = e.data;
  });
}

document.addEventListener("DOMContentLoaded", () => {
  liveSessions();
  liveSession();
  if (location.hash) {
    const target = document.getElementById(decodeURIComponent(location.hash.slice(1)));
    if (target) target.classList.add("hit");
  }
});
