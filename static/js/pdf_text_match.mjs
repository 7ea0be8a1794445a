// Finding a cited passage and its quoted sentence in a PDF page's text items (pure: no DOM).
//
// The passage was extracted by pypdf at ingestion (lines reflowed, line-end hyphens removed),
// the page's items come from pdf.js: the same text, spaced and broken differently. Both sides
// are therefore compared folded: compatibility forms (ligatures), lower case, one kind of
// quote mark, and without white space or hyphens at all. Each folded character remembers the
// item and offset it came from, so a match maps back to runs of the page's own text.

const DROPPED = /[\s\u00ad\u200b-\u200d\u2060\ufeff\-\u2010\u2011]/u;
const SAME_MARK = new Map([["\u2018", "'"], ["\u2019", "'"], ["\u201c", '"'], ["\u201d", '"']]);
// A shorter piece of a passage could match anywhere on the page.
const MIN_PIECE = 15;

function fold(char) {
  return Array.from(char.normalize("NFKC").toLowerCase())
    .map((c) => SAME_MARK.get(c) || c)
    .filter((c) => !DROPPED.test(c))
    .join("");
}

export function folded(text) {
  let out = "";
  for (let i = 0; i < text.length; i++) out += fold(text[i]);
  return out;
}

// The page's items as one folded string, with the (item, offset) of each of its characters.
export function pageIndex(items) {
  let text = "";
  const origin = [];
  items.forEach((str, item) => {
    for (let offset = 0; offset < str.length; offset++) {
      const piece = fold(str[offset]);
      text += piece;
      for (let k = 0; k < piece.length; k++) origin.push([item, offset]);
    }
  });
  return { text, origin };
}

// Where `needle` is on the page: [start, end) in the folded text, searched from `from` first.
export function locate(index, needle, from = 0) {
  const target = folded(needle);
  if (!target) return null;
  let start = index.text.indexOf(target, from);
  if (start < 0 && from > 0) start = index.text.indexOf(target);
  return start < 0 ? null : [start, start + target.length];
}

// The passage's spans on the page: whole when the page reads it in the same order, otherwise
// paragraph by paragraph, then sentence by sentence (columns, headers and footnotes interleave).
export function locatePassage(index, passage) {
  const whole = locate(index, passage);
  if (whole) return [whole];
  const spans = [];
  let cursor = 0;
  for (const paragraph of passage.split(/\n\s*\n|\n/)) {
    const found = locatePiece(index, paragraph, cursor);
    const pieces = found ? [found] : paragraph.split(/(?<=[.!?:;])\s+/).map((s) => locatePiece(index, s, cursor));
    for (const span of pieces.filter(Boolean)) {
      spans.push(span);
      cursor = span[1];
    }
  }
  return spans;
}

function locatePiece(index, piece, from) {
  return folded(piece).length >= MIN_PIECE ? locate(index, piece, from) : null;
}

// Folded spans of one kind -> {item: [[start, end, kind], ...]} in the items' own offsets. A span
// is contiguous in the folded text, so within one item it runs from its first to its last
// character (the spaces between its words included).
export function itemMarks(index, spans, kind, marks = new Map()) {
  for (const [start, end] of spans) {
    let current = null;
    let currentItem = -1;
    for (let k = start; k < end; k++) {
      const [item, offset] = index.origin[k];
      if (item === currentItem) {
        current[1] = offset + 1;
        continue;
      }
      current = [offset, offset + 1, kind];
      currentItem = item;
      marks.set(item, [...(marks.get(item) || []), current]);
    }
  }
  return marks;
}

// One item's text cut into runs [start, end, kind|null]; where kinds overlap the first in
// `priority` wins (the quote over its passage).
export function itemRuns(length, marks, priority) {
  const kinds = new Array(length).fill(null);
  for (const kind of [...priority].reverse()) {
    for (const [start, end, markKind] of marks) {
      if (markKind === kind) kinds.fill(kind, start, end);
    }
  }
  const runs = [];
  for (let i = 0; i < length; i++) {
    const last = runs[runs.length - 1];
    if (last && last[2] === kinds[i]) last[1] = i + 1;
    else runs.push([i, i + 1, kinds[i]]);
  }
  return runs;
}
