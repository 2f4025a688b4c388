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

// A page's stream is open only while the page is shown. A browser keeps at most six connections to one host, and
// each open stream holds one: with six tabs of the viewer open, the seventh would never load. A tab sent to the
// background closes its stream; shown again (or brought back by the back button), it opens it again from what it
// shows, and the server sends at once what was written meanwhile (harvester/web/live.py).
function whileShown(open) {
  let stream = null;
  const start = () => { if (!stream && !document.hidden) stream = open(); };
  const stop = () => { if (stream) { stream.close(); stream = null; } };
  document.addEventListener("visibilitychange", () => (document.hidden ? stop() : start()));
  window.addEventListener("pagehide", stop);
  window.addEventListener("pageshow", start);
  start();
}

function withParam(url, name, value) {
  const u = new URL(url, location.href);
  u.searchParams.set(name, value);
  return u.pathname + u.search;
}

// The sessions list: when the bank's change clock moves, fetch its rows again.
function liveSessions() {
  const table = document.getElementById("sessions");
  if (!table || !table.dataset.live || !window.EventSource) return;
  const rows = document.getElementById("session-rows");
  const note = document.getElementById("live-note");
  let live = table.dataset.live;
  whileShown(() => {
    const stream = new EventSource(live);
    stream.addEventListener("open", () => { if (note) note.hidden = false; });
    stream.addEventListener("changed", (e) => {
      live = withParam(live, "clock", e.data);  // opened again, the stream starts from the rows shown
      fetch(table.dataset.rows, { credentials: "same-origin" })
        .then((r) => (r.ok ? r.text() : Promise.reject(r.status)))
        .then((html) => { rows.innerHTML = html; document.body.dataset.updated = String(Date.now()); })
        .catch(() => {});
    });
    return stream;
  });
}

// A session's transcript: the events written past the last one shown are appended as they are captured, each once.
function liveSession() {
  const events = document.getElementById("events");
  if (!events || !events.dataset.live || !window.EventSource) return;
  const lastShown = () => {
    const last = events.querySelector("article.event:last-of-type");
    return last ? last.dataset.seq : null;
  };
  whileShown(() => {
    const shown = lastShown();
    const stream = new EventSource(shown === null ? events.dataset.live : withParam(events.dataset.live, "after", shown));
    stream.addEventListener("events", (e) => {
      const incoming = document.createElement("template");
      incoming.innerHTML = e.data;
      for (const article of incoming.content.querySelectorAll("article.event")) {
        if (document.getElementById(article.id)) article.remove();
      }
      events.appendChild(incoming.content);
      document.body.dataset.updated = String(Date.now());
    });
    stream.addEventListener("rewritten", (e) => {  // events the agent rewrote: each replaces its older version
      const incoming = document.createElement("template");
      incoming.innerHTML = e.data;
      for (const article of incoming.content.querySelectorAll("article.event")) {
        const shown = document.getElementById(article.id);
        if (shown) shown.replaceWith(article);
      }
      document.body.dataset.updated = String(Date.now());
    });
    stream.addEventListener("gone", () => {  // forgotten: the page it would be now says so (a 404)
      stream.close();
      location.reload();
    });
    stream.addEventListener("state", (e) => {
      const state = document.getElementById("session-state");
      if (!state) return;
      state.textContent = e.data;
      const word = e.data.split(" ")[0];  // "ended · 12 events": the badge takes that state's colours too
      if (["live", "ended", "abandoned", "unknown"].includes(word)) state.className = "state " + word;
    });
    return stream;
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
