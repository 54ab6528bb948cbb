/**
 * Layout checks in real Chromium, for what axe does not look at: how the page is laid out at the size it is shown.
 * Each check measures the rendered boxes and returns what a reader would see as broken, one line per problem naming
 * the element, so a test asserts the list is empty:
 *
 * - a word broken across lines inside a table's header or body cell (a word is a run of 2 to 24 letters and digits,
 *   so a line may end at `@`, `.` or `-`; longer runs, and text in `code`, `pre` and `.d-mono`, are ids, hashes and
 *   addresses, which may break anywhere);
 * - buttons closer than 8 px to each other or to a panel they are not in;
 * - form fields closer than 8 px to each other;
 * - a select whose chosen option's text does not fit its box;
 * - text inside an SVG that is stretched (`preserveAspectRatio="none"`), which draws its glyphs distorted;
 * - a page wider than the window, or a navigation entry cut off by its edge.
 */
import type { Page } from 'playwright-core';

export const MIN_GAP_PX = 8;

/** The layout problems of the page as it is now (empty when there are none). */
export async function layoutProblems(page: Page): Promise<string[]> {
  // Run from the sources (tsx), named functions in the page function are wrapped in esbuild's `__name`, which the
  // page does not have.
  await page.evaluate('globalThis.__name ??= (f) => f');
  return page.evaluate((minGap) => {
    const problems: string[] = [];
    /** Rendered and seen: not in a closed `details`, not hidden, not clipped to a pixel (text for screen readers). */
    const visible = (el: Element) => {
      const r = el.getBoundingClientRect();
      return r.width > 1 && r.height > 1 && el.checkVisibility({ visibilityProperty: true, opacityProperty: true });
    };
    const name = (el: Element) => {
      const text = (el as HTMLElement).innerText?.trim().replace(/\s+/g, ' ').slice(0, 40);
      const cls = el.getAttribute('class');
      return `<${el.tagName.toLowerCase()}${cls ? ` class="${cls}"` : ''}> "${text ?? ''}"`;
    };
    /** The gap between two boxes: 0 when they touch or overlap, else the larger of the two axes' distances. */
    const gap = (a: DOMRect, b: DOMRect) =>
      Math.max(0, b.left - a.right, a.left - b.right, b.top - a.bottom, a.top - b.bottom);

    // Words broken inside table cells.
    const MAY_BREAK = 'code, pre, .d-mono, .d-pre';
    for (const cell of Array.from(document.querySelectorAll('th, td'))) {
      if (!visible(cell)) continue;
      const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
      for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        const parent = node.parentElement;
        if (!parent || parent.closest(MAY_BREAK) || parent.closest('select') || !visible(parent)) continue;
        const text = node.textContent ?? '';
        for (const m of text.matchAll(/(?<![\p{L}\p{N}])[\p{L}\p{N}]{2,24}(?![\p{L}\p{N}])/gu)) {
          const range = document.createRange();
          range.setStart(node, m.index!);
          range.setEnd(node, m.index! + m[0].length);
          const lines = new Set(
            Array.from(range.getClientRects())
              .filter((r) => r.width > 0)
              .map((r) => Math.round(r.top)),
          );
          if (lines.size > 1) problems.push(`word "${m[0]}" broken across lines in ${name(cell)}`);
        }
      }
    }

    // Buttons: apart from each other, and from panels they are not in.
    const buttons = Array.from(
      document.querySelectorAll('button, .d-btn, input[type=submit], input[type=button], input[type=reset]'),
    ).filter(visible);
    const boxes = buttons.map((b) => b.getBoundingClientRect());
    for (let i = 0; i < buttons.length; i++) {
      for (let j = i + 1; j < buttons.length; j++) {
        if (buttons[i]!.contains(buttons[j]!) || buttons[j]!.contains(buttons[i]!)) continue;
        const g = gap(boxes[i]!, boxes[j]!);
        if (g < minGap)
          problems.push(`buttons ${g.toFixed(1)} px apart: ${name(buttons[i]!)} and ${name(buttons[j]!)}`);
      }
    }
    const panels = Array.from(document.querySelectorAll('.d-panel, .d-stat, .d-card')).filter(visible);
    for (let i = 0; i < buttons.length; i++) {
      for (const p of panels) {
        if (p.contains(buttons[i]!)) continue;
        const g = gap(boxes[i]!, p.getBoundingClientRect());
        if (g < minGap) problems.push(`button ${name(buttons[i]!)} ${g.toFixed(1)} px from the panel ${name(p)}`);
      }
    }

    // Fields apart from each other.
    const fields = Array.from(document.querySelectorAll('.d-field')).filter(visible);
    for (let i = 0; i < fields.length; i++) {
      for (let j = i + 1; j < fields.length; j++) {
        if (fields[i]!.contains(fields[j]!) || fields[j]!.contains(fields[i]!)) continue;
        const g = gap(fields[i]!.getBoundingClientRect(), fields[j]!.getBoundingClientRect());
        if (g < minGap) problems.push(`fields ${g.toFixed(1)} px apart: ${name(fields[i]!)} and ${name(fields[j]!)}`);
      }
    }

    // Selects whose chosen text is cut: the text measured in the select's font against its box less padding and arrow.
    const measure = document.createElement('span');
    measure.style.cssText = 'position:absolute;visibility:hidden;white-space:pre;left:-9999px;top:0';
    document.body.append(measure);
    for (const s of Array.from(document.querySelectorAll('select')).filter(visible)) {
      const chosen = s.selectedOptions[0]?.textContent ?? '';
      const st = getComputedStyle(s);
      measure.style.font = st.font;
      measure.style.letterSpacing = st.letterSpacing;
      measure.textContent = chosen;
      const room =
        s.clientWidth - Number.parseFloat(st.paddingLeft) - Number.parseFloat(st.paddingRight) - 20; /* the arrow */
      if (measure.getBoundingClientRect().width > room)
        problems.push(`select "${s.name}" cuts its text "${chosen}" (${room.toFixed(0)} px of room)`);
    }
    measure.remove();

    // Text in a stretched SVG.
    for (const svg of Array.from(document.querySelectorAll('svg[preserveAspectRatio="none"]')).filter(visible)) {
      const texts = svg.querySelectorAll('text');
      if (texts.length > 0) problems.push(`${texts.length} text elements in a stretched SVG: ${name(svg)}`);
    }

    // Nothing wider than the window.
    const sideways = document.documentElement.scrollWidth - document.documentElement.clientWidth;
    if (sideways > 1) problems.push(`the page scrolls sideways by ${sideways} px`);

    // Navigation entries inside the window.
    for (const a of Array.from(document.querySelectorAll('nav a')).filter(visible)) {
      const r = a.getBoundingClientRect();
      if (r.left < 0 || r.right > document.documentElement.clientWidth + 0.5)
        problems.push(`navigation entry ${name(a)} is cut by the window's edge`);
    }
    return problems;
  }, MIN_GAP_PX);
}
