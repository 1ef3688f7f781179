// The NodePool/NodeClass form's "Preview" button: POST the same form data to the what-if view and
// show the result below the form, with a progress indicator while the engines run. Without JS the
// button still works (formaction opens the full preview page).
(function () {
  "use strict";
  const button = document.getElementById("whatif-preview-button");
  if (!button) return;
  const progress = document.getElementById("whatif-preview-progress");
  const result = document.getElementById("whatif-preview-result");
  // The include sits among the form's buttons; show the indicator and the result below the form.
  if (button.form) {
    button.form.insertAdjacentElement("afterend", result);
    button.form.insertAdjacentElement("afterend", progress);
  }
  button.addEventListener("click", async (event) => {
    event.preventDefault();
    const data = new FormData(button.form);
    button.disabled = true;
    progress.hidden = false;
    result.innerHTML = "";
    try {
      const response = await fetch(button.dataset.url, {
        method: "POST", body: data, credentials: "same-origin",
        headers: { "X-Requested-With": "fetch" },
      });
      if (response.ok || response.status === 400) {
        result.innerHTML = await response.text();  // the result, or the form's errors at their fields
      } else {
        result.textContent = "Preview failed: the server answered " + response.status + " " + response.statusText + ".";
      }
    } catch (err) {
      result.textContent = "Preview failed: " + err;
    } finally {
      progress.hidden = true;
      button.disabled = false;
      result.scrollIntoView({ block: "nearest" });
    }
  });
})();
