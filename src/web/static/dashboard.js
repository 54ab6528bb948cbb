/* Kasse dashboard: copy buttons, local times, the link form showing the fields of the chosen kind, and a CSV file
   chosen for a disbursement read into its text box.
   Progressive enhancement only: every page and form works without this file. No dependencies. */
(() => {
  // biome-ignore lint/suspicious/noRedundantUseStrict: a classic script (<script src>), not a module: the directive applies
  'use strict';
  var d = document;
  function all(s, el) { return Array.prototype.slice.call((el || d).querySelectorAll(s)); }

  all('[data-copy]').forEach((b) => {
    b.addEventListener('click', () => {
      var text = b.getAttribute('data-copy'), label = b.textContent;
      var ok = () => { b.textContent = 'Copied'; setTimeout(() => { b.textContent = label; }, 1500); };
      if (navigator.clipboard) navigator.clipboard.writeText(text).then(ok, () => {});
    });
  });

  all('time[data-local]').forEach((t) => {
    var at = new Date(t.getAttribute('datetime'));
    if (!Number.isNaN(at.getTime())) { t.title = t.textContent; t.textContent = at.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' }); }
  });

  all('[data-link-form]').forEach((f) => {
    var kind = f.querySelector('[name=kind]');
    function show() {
      all('[data-for-kind]', f).forEach((el) => {
        el.hidden = el.getAttribute('data-for-kind').split(' ').indexOf(kind.value) < 0;
      });
    }
    kind.addEventListener('change', show);
    show();
  });

  all('[data-csv-file]').forEach((input) => {
    var box = input.parentNode.querySelector('textarea');
    input.addEventListener('change', () => {
      var file = input.files && input.files[0];
      if (!file || !window.FileReader) return;
      var reader = new FileReader();
      reader.onload = () => { box.value = String(reader.result); };
      reader.readAsText(file);
    });
  });
})();
