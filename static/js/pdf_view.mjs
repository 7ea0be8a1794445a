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

let pdf = null;
let shown = 0;
let drawing = Promise.resolve();

function report(outcome, message) {
  view.dataset.highlight = outcome;
  status.textContent = message;
}

function pageSize(page) {
  // The page fills the column's width, whatever the screen: nothing scrolls sideways.
  const natural = page.getViewport({ scale: 1 });
  return page.getViewport({ scale: holder.clientWidth / natural.width });
}

async function drawPage(number) {
  const page = await pdf.getPage(number);
  const viewport = pageSize(page);
  const output = new OutputScale();
  const canvas = document.createElement("canvas");
  canvas.width = Math.floor(viewport.width * output.sx);
  canvas.height = Math.floor(viewport.height * output.sy);
  const layer = document.createElement("div");
  layer.className = "textLayer";
  holder.style.setProperty("--scale-factor", String(viewport.scale));
  holder.style.height = `${Math.floor(viewport.height)}px`;
  holder.replaceChildren(canvas, layer);
  const transform = output.scaled ? [output.sx, 0, 0, output.sy, 0, 0] : null;
  await page.render({ canvas, viewport, transform }).promise;
  const textLayer = new TextLayer({ textContentSource: page.streamTextContent(), container: layer, viewport });
  await textLayer.render();
  return textLayer;
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

function bringIntoView() {
  const first = holder.querySelector(".pdf-mark.quote") || holder.querySelector(".pdf-mark.passage");
  if (first) first.scrollIntoView({ block: "center" });
}

async function show(number, { scroll }) {
  shown = number;
  label.textContent = `Page ${number} of ${pdf.numPages}`;
  previous.disabled = number <= 1;
  next.disabled = number >= pdf.numPages;
  const textLayer = await drawPage(number);
  if (number !== data.page || !data.passage) {
    report("none", MESSAGES.none);
    return;
  }
  const outcome = highlight(textLayer);
  report(outcome === "passageOnly" ? "passage" : outcome, MESSAGES[outcome]);
  if (scroll) bringIntoView();
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
  let width = holder.clientWidth;
  let timer = 0;
  window.addEventListener("resize", () => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      if (holder.clientWidth !== width) {
        width = holder.clientWidth;
        queue(shown, { scroll: false });
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
  redrawOnResize();
  await queue(Math.min(Math.max(data.page, 1), pdf.numPages), { scroll: true });
}

start().catch(failed);
