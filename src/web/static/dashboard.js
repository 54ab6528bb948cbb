/* Kasse dashboard: copy buttons, local times, and the link form showing the fields of the chosen kind.
   Progressive enhancement only: every page and form works without this file. No dependencies. */
(function () {
  'use strict';
  var d = document;
  function all(s, el) { return Array.prototype.slice.call((el || d).querySelectorAll(s)); }

  all('[data-copy]').forEach(function (b) {
    b.addEventListener('click', function () {
      var text = b.getAttribute('data-copy'), label = b.textContent;
      var ok = function () { b.textContent = 'Copied'; setTimeout(function () { b.textContent = label; }, 1500); };
      if (navigator.clipboard) navigator.clipboard.writeText(text).then(ok, function () {});
    });
  });

  all('time[data-local]').forEach(function (t) {
    var at = new Date(t.getAttribute('datetime'));
    if (!isNaN(at)) { t.title = t.textContent; t.textContent = at.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' }); }
  });

  all('[data-link-form]').forEach(function (f) {
    var kind = f.querySelector('[name=kind]');
    function show() {
      all('[data-for-kind]', f).forEach(function (el) {
        el.hidden = el.getAttribute('data-for-kind').split(' ').indexOf(kind.value) < 0;
      });
    }
    kind.addEventListener('change', show);
    show();
  });
})();
