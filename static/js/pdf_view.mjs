// The PDF source viewer: the cited page drawn by pdf.js (static/vendor/pdfjs, no CDN) with its
// text layer, the quoted sentence highlighted on it and scrolled into view, the rest of the
// passage marked lightly. Nothing in the PDF runs: no annotation layer (so no links or forms),
// no scripting, no WebAssembly (the page's policy allows none; pdf.js has JavaScript fallbacks).
// What was found is reported in #pdf-status and in #pdf-view's data-highlight: "quote",
// "passage" (the quote was not found, or none was given), "page" (neither was found), "none"
// (no passage was cited, or another page is shown), "error" (the PDF could not be drawn).
import { GlobalWorkerOptions, OutputScale, TextLayer, getDocument } from "../vendor/pdfjs/pdf.min.mjs";
import { itemMarks, itemRuns, locate, locatePassage, pageIndex } from "./pdf_text_match.mjs";

const view = document.getElementById("pdf-view");
const holder = document.getElementById("pdf-page");
const status = document.getElementById("pdf-status");
const label = document.getElementById("pdf-page-label");
const previous = document.getElementById("pdf-previous");
const next = document.getElementById("pdf-next");
const data = JSON.parse(document.getElementById("pdf-viewer-data").textContent);
const PRIORITY = ["quote", "passage"];

const MESSAGES = {
  quote: "The quoted sentence is highlighted; the rest of its passage is marked lightly.",
  passage: "The cited passage is highlighted.",
  passageOnly: "The quoted sentence was not found in this page's text: its passage is highlighted.",
  page: "The passage was not found in this page's text (a scanned page has none): the page is shown.",
  none: "",
  error: "The PDF could not be displayed here: download the original below.",
};

const frame = document.getElementById("pdf-frame");
const zoomButton = document.getElementById("pdf-zoom");
// Drawn pages are kept while the reader is open, so a revisited page shows at once (no "Loading"),
// up to this many canvas pixels (about 96 MB); the least recently shown goes first.
const KEEP_PIXELS = 24e6;
const kept = new Map();

let pdf = null;
let shown = 0;
let zoom = 1;
let firstDrawn = false;
let drawing = Promise.resolve();

function report(outcome, message) {
  view.dataset.highlight = outcome;
  status.textContent = message;
}

function pageSize(page) {
  // The page fills the frame's width (times the zoom the "Enlarge page" button sets: the frame then
  // scrolls both ways to the quote).
  const natural = page.getViewport({ scale: 1 });
  return page.getViewport({ scale: (frame.clientWidth * zoom) / natural.width });
}

// A kept page is put back as it was drawn; a new one is drawn, and kept.
async function drawPage(number) {
  const key = `${number}@${zoom}@${frame.clientWidth}`;
  const found = kept.get(key);
  if (found) {
    kept.delete(key);
    kept.set(key, found); // the most recently shown last
    placePage(found);
    return found.textLayer;
  }
  status.textContent = `Loading page ${number}…`;
  const drawn = await renderPage(number);
  kept.set(key, drawn);
  forgetOldPages();
  return drawn.textLayer;
}

function placePage(drawn) {
  holder.style.setProperty("--scale-factor", String(drawn.scale));
  holder.style.height = `${drawn.height}px`;
  holder.style.width = zoom > 1 ? `${drawn.width}px` : "";
  holder.replaceChildren(drawn.canvas, drawn.layer);
}

function forgetOldPages() {
  let pixels = 0;
  for (const drawn of kept.values()) pixels += drawn.pixels;
  for (const [key, drawn] of kept) {
    if (pixels <= KEEP_PIXELS || kept.size <= 1) break;
    if (drawn.number === data.page) continue; // the cited page stays
    kept.delete(key);
    pixels -= drawn.pixels;
  }
}

async function renderPage(number) {
  const page = await pdf.getPage(number);
  const viewport = pageSize(page);
  const output = new OutputScale();
  const canvas = document.createElement("canvas");
  canvas.width = Math.floor(viewport.width * output.sx);
  canvas.height = Math.floor(viewport.height * output.sy);
  const layer = document.createElement("div");
  layer.className = "textLayer";
  const drawn = {
    number,
    canvas,
    layer,
    scale: viewport.scale,
    height: Math.floor(viewport.height),
    width: Math.floor(viewport.width),
    pixels: canvas.width * canvas.height,
    textLayer: null,
  };
  placePage(drawn);
  const transform = output.scaled ? [output.sx, 0, 0, output.sy, 0, 0] : null;
  await page.render({ canvas, viewport, transform }).promise;
  drawn.textLayer = new TextLayer({ textContentSource: page.streamTextContent(), container: layer, viewport });
  await drawn.textLayer.render();
  return drawn;
}

// Marks the quote and the passage on the page's text; returns what was found.
function highlight(textLayer) {
  const index = pageIndex(textLayer.textContentItemsStr);
  const passage = locatePassage(index, data.passage);
  const from = passage.length ? passage[0][0] : 0;
  const quote = data.quote ? locate(index, data.quote, from) : null;
  const marks = itemMarks(index, passage, "passage");
  if (quote) itemMarks(index, [quote], "quote", marks);
  for (const [item, list] of marks) {
    markItem(textLayer.textDivs[item], textLayer.textContentItemsStr[item], list);
  }
  if (quote) return "quote";
  if (passage.length) return data.quote ? "passageOnly" : "passage";
  return "page";
}

function markItem(div, text, marks) {
  const pieces = itemRuns(text.length, marks, PRIORITY).map(([start, end, kind]) => {
    if (!kind) return document.createTextNode(text.slice(start, end));
    const mark = document.createElement("span");
    mark.className = `pdf-mark ${kind}`;
    mark.textContent = text.slice(start, end);
    return mark;
  });
  div.replaceChildren(...pieces);
}

// The quote to the middle of the page's frame; only the frame scrolls (the window and the text
// column are document_view.js's).
function bringIntoView() {
  const first = holder.querySelector(".pdf-mark.quote") || holder.querySelector(".pdf-mark.passage");
  if (!first) return;
  const box = frame.getBoundingClientRect();
  const mark = first.getBoundingClientRect();
  frame.scrollTop += mark.top - box.top - (frame.clientHeight - mark.height) / 2;
  frame.scrollLeft += mark.left - box.left - (frame.clientWidth - mark.width) / 2;
}

function announceFirstDrawing(number) {
  if (firstDrawn) return;
  firstDrawn = true;
  document.dispatchEvent(new CustomEvent("reader:page-drawn", { detail: { page: number, first: true } }));
}

async function show(number, { scroll }) {
  shown = number;
  label.textContent = `Page ${number} of ${pdf.numPages}`;
  previous.disabled = number <= 1;
  next.disabled = number >= pdf.numPages;
  const textLayer = await drawPage(number);
  if (number !== data.page || !data.passage) {
    report("none", MESSAGES.none);
    announceFirstDrawing(number);
    return;
  }
  const outcome = highlight(textLayer);
  report(outcome === "passageOnly" ? "passage" : outcome, MESSAGES[outcome]);
  if (scroll) bringIntoView();
  announceFirstDrawing(number);
}

// One drawing at a time: a click or a resize during a drawing waits for it.
function queue(number, options) {
  drawing = drawing.then(() => show(number, options)).catch(failed);
  return drawing;
}

function failed(error) {
  report("error", MESSAGES.error);
  console.error("pdf viewer:", error);
}

function redrawOnResize() {
  let width = frame.clientWidth;
  let timer = 0;
  window.addEventListener("resize", () => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      if (frame.clientWidth !== width) {
        width = frame.clientWidth;
        kept.clear(); // drawn for another width
        queue(shown, { scroll: shown === data.page });
      }
    }, 200);
  });
}

async function start() {
  GlobalWorkerOptions.workerSrc = `${data.assets}pdf.worker.min.mjs`;
  pdf = await getDocument({
    url: data.file,
    cMapUrl: `${data.assets}cmaps/`,
    standardFontDataUrl: `${data.assets}standard_fonts/`,
    iccUrl: `${data.assets}iccs/`,
    wasmUrl: `${data.assets}wasm/`,
    useWasm: false,
    enableXfa: false,
    disableWorkerRendering: true,
  }).promise;
  previous.addEventListener("click", () => queue(shown - 1, { scroll: false }));
  next.addEventListener("click", () => queue(shown + 1, { scroll: false }));
  zoomButton.addEventListener("click", () => {
    zoom = zoom === 1 ? 2 : 1;
    zoomButton.setAttribute("aria-pressed", String(zoom > 1));
    zoomButton.textContent = zoom > 1 ? "Fit to width" : "Enlarge page";
    queue(shown, { scroll: shown === data.page });
  });
  redrawOnResize();
  await queue(Math.min(Math.max(data.page, 1), pdf.numPages), { scroll: true });
}

start().catch(failed);
