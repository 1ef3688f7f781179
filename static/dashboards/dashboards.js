// Changing the window or the NodePool reloads the page with the new query: the server builds the figures.
(function () {
  var form = document.getElementById("dash-filters");
  if (form) {
    form.querySelectorAll("select").forEach(function (el) {
      el.addEventListener("change", function () { form.submit(); });
    });
  }
  // Plots draw before the grid has settled its column widths; fit them to their cards once it has.
  function fit() {
    if (!window.Plotly) return;
    document.querySelectorAll(".js-plotly-plot").forEach(function (el) { window.Plotly.Plots.resize(el); });
  }
  window.addEventListener("load", function () { fit(); setTimeout(fit, 150); });
})();
