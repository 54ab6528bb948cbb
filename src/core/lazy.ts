/**
 * Something loaded at its first use and kept (a large module few processes need). The promise is kept rather than
 * calling `import()` again: under tsx's loader a repeated `import()` of a loaded module still costs about a quarter of
 * a millisecond (a round trip to the loader thread), too much for a page render.
 */
export function loadOnce<T>(load: () => Promise<T>): () => Promise<T> {
  let loaded: Promise<T> | null = null;
  return () => {
    loaded ??= load();
    return loaded;
  };
}
