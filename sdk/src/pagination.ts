/**
 * What a list method returns: awaited, the first page (`{ data, next_cursor }`); iterated with `for await`, every
 * item of every page, fetching the next page (`cursor` = the previous `next_cursor`) only when the items run out.
 */

export interface Page<Item> {
  data: Item[];
  next_cursor?: string | null;
}

export class PagePromise<P extends Page<Item>, Item = P['data'][number]>
  implements PromiseLike<P>, AsyncIterable<Item>
{
  private first: Promise<P> | undefined;

  constructor(private readonly fetchPage: (cursor: string | undefined) => Promise<P>) {}

  private firstPage(): Promise<P> {
    return (this.first ??= this.fetchPage(undefined));
  }

  // biome-ignore lint/suspicious/noThenProperty: deliberately a thenable: awaiting a list call gives its first page
  then<A = P, B = never>(
    onFulfilled?: ((page: P) => A | PromiseLike<A>) | null,
    onRejected?: ((reason: unknown) => B | PromiseLike<B>) | null,
  ): Promise<A | B> {
    return this.firstPage().then(onFulfilled, onRejected);
  }

  catch<B = never>(onRejected?: ((reason: unknown) => B | PromiseLike<B>) | null): Promise<P | B> {
    return this.firstPage().catch(onRejected);
  }

  /** Every page in turn. */
  async *pages(): AsyncGenerator<P> {
    let page = await this.firstPage();
    for (;;) {
      yield page;
      if (!page.next_cursor) return;
      page = await this.fetchPage(page.next_cursor);
    }
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<Item> {
    for await (const page of this.pages()) yield* page.data as Item[];
  }

  /** Every item, up to `limit` (default 10,000) so a mistake cannot load an unbounded list into memory. */
  async toArray(options: { limit?: number } = {}): Promise<Item[]> {
    const limit = options.limit ?? 10_000;
    const out: Item[] = [];
    for await (const item of this) {
      if (out.length >= limit) break;
      out.push(item);
    }
    return out;
  }
}
