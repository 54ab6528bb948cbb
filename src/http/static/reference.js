// Starts Redoc on the API reference page (served with it from this host; see src/http/reference.ts).
(() => {
  // Redoc's sidebar footer shows a logo from its CDN. The page's CSP would block the request; this keeps the browser
  // from even trying (React sets an image's src through the property), so nothing is asked of another host.
  var foreign = (value) =>
    new URL(String(value), location.href).origin !== location.origin && !/^(data|blob):/.test(String(value));
  var src = Object.getOwnPropertyDescriptor(HTMLImageElement.prototype, 'src');
  Object.defineProperty(HTMLImageElement.prototype, 'src', {
    configurable: true,
    enumerable: src.enumerable,
    get: src.get,
    set: function (value) {
      if (!foreign(value)) src.set.call(this, value);
    },
  });
  var setAttribute = Element.prototype.setAttribute;
  Element.prototype.setAttribute = function (name, value) {
    if (this instanceof HTMLImageElement && String(name).toLowerCase() === 'src' && foreign(value)) return;
    return setAttribute.call(this, name, value);
  };

  var el = document.getElementById('reference');
  var system = 'system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif';
  var mono = 'ui-monospace, SFMono-Regular, Menlo, Consolas, "Liberation Mono", monospace';
  window.Redoc.init(
    el.getAttribute('data-spec-url'),
    {
      sanitize: true,
      requiredPropsFirst: true,
      expandResponses: '200,201,202',
      jsonSampleExpandLevel: 3,
      pathInMiddlePanel: true,
      nativeScrollbars: true,
      hideDownloadButton: false,
      theme: {
        colors: { primary: { main: '#1f4fd1' } },
        typography: {
          fontFamily: system,
          fontSize: '15px',
          headings: { fontFamily: system, fontWeight: '600' },
          code: { fontFamily: mono },
        },
        sidebar: { width: '280px' },
      },
    },
    el,
  );
})();
