// The replay page's progress bar: polls the small JSON endpoint while the replay runs, reloads when it ends.
(function () {
  "use strict";
  const box = document.getElementById("replay-progress");
  if (!box || box.dataset.finished === "1") return;
  const bar = document.getElementById("replay-bar");
  const percent = document.getElementById("replay-percent");
  const label = document.getElementById("replay-status");
  function poll() {
    fetch(box.dataset.url, {headers: {"Accept": "application/json"}, credentials: "same-origin"})
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (s) {
        if (!s) { setTimeout(poll, 5000); return; }
        if (bar) bar.value = s.progress;
        if (percent) percent.textContent = Math.round(100 * s.progress) + "%";
        if (label) label.textContent = s.status;
        if (s.finished) { window.location.reload(); return; }
        setTimeout(poll, 1000);
      })
      .catch(function () { setTimeout(poll, 5000); });
  }
  setTimeout(poll, 1000);
})();
