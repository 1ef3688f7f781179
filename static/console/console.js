// Inline rows: "+ add" clones the formset's empty row and bumps TOTAL_FORMS, as Django formsets expect.
document.querySelectorAll("fieldset.rows").forEach((fieldset) => {
  const prefix = fieldset.dataset.prefix;
  const button = fieldset.querySelector(".add-row");
  const template = fieldset.querySelector("template");
  const total = fieldset.querySelector(`input[name="${prefix}-TOTAL_FORMS"]`);
  if (!button || !template || !total) return;
  button.addEventListener("click", () => {
    const index = parseInt(total.value, 10);
    const html = template.innerHTML.replace(/__prefix__/g, String(index));
    fieldset.querySelector("tbody").insertAdjacentHTML("beforeend", html);
    total.value = String(index + 1);
  });
});
