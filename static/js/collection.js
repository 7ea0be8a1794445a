// Collection page: drag-and-drop multi-file upload with a progress bar per file, then live
// processing progress for every document until it is ready or failed. Upload rows and document
// rows update in place with their status, error, title link and actions (Retry, Delete).
(function () {
  "use strict";
  const el = window.KnowledgeDom.el;
  const form = document.getElementById("upload-form");
  const table = document.getElementById("documents");
  const uploads = document.getElementById("uploads");
  const askLink = document.getElementById("ask-collection");
  // A change made in a folded section comes back to it, the address naming it: open it again.
  function openNamedSection() {
    const section = location.hash.length > 1 && document.getElementById(decodeURIComponent(location.hash.slice(1)));
    if (section && section.tagName === "DETAILS" && !section.open) {
      section.open = true;
      section.scrollIntoView();
    }
  }
  openNamedSection();
  window.addEventListener("hashchange", openNamedSection);
  if (!table) return;
  const canWrite = table.dataset.canWrite === "1";
  const LABELS = { uploaded: "Uploaded", processing: "Processing", ready: "Ready", failed: "Failed" };
  const uploadRows = {}; // document id -> its upload row
  const IDLE_POLL_MS = 5000;

  function csrfToken() {
    const field = document.querySelector("input[name=csrfmiddlewaretoken]");
    return field ? field.value : "";
  }

  function documentUrl(template, id) {
    return template.replace("/0/", "/" + id + "/");
  }

  // -- upload rows ---------------------------------------------------------------------------------

  function uploadRow(file) {
    const li = el("li");
    const name = el("span", "name", file.name);
    const progress = el("div", "progress");
    const bar = el("span");
    progress.appendChild(bar);
    const state = el("span", "small state", "waiting to send");
    li.append(name, progress, state);
    uploads.appendChild(li);
    return { li: li, progress: progress, bar: bar, state: state };
  }

  function uploadRejected(row, message) {
    row.progress.remove(); // nothing was stored: no bar beside the reason
    row.state.textContent = message;
    row.state.className = "small state error";
    row.li.classList.add("rejected");
  }

  function showUploadState(row, doc) {
    row.bar.style.width = doc.percent + "%";
    row.progress.classList.toggle("failed", doc.status === "failed");
    if (doc.status === "ready") {
      row.state.textContent = "Ready";
      row.state.className = "small state status-ready";
    } else if (doc.status === "failed") {
      row.state.textContent = "Failed: " + (doc.error || "could not be processed");
      row.state.className = "small state error";
    } else {
      row.state.textContent = doc.status === "uploaded" ? "uploaded, waiting to be processed…" : "uploaded, processing… " + doc.percent + "%" + (doc.stage ? " · " + doc.stage : "");
      row.state.className = "small state";
    }
  }

  function sendFile(file) {
    const row = uploadRow(file);
    return new Promise(function (resolve) {
      const xhr = new XMLHttpRequest();
      const data = new FormData();
      data.append("file", file);
      xhr.open("POST", form.action);
      xhr.setRequestHeader("X-CSRFToken", csrfToken());
      xhr.setRequestHeader("Accept", "application/json");
      xhr.upload.onprogress = function (e) {
        if (e.lengthComputable) {
          row.bar.style.width = Math.round((100 * e.loaded) / e.total) + "%";
          row.state.textContent = e.loaded < e.total ? "uploading" : "uploaded, processing…";
        }
      };
      xhr.onload = function () {
        let body = {};
        try { body = JSON.parse(xhr.responseText); } catch (err) { body = { error: "unexpected response (" + xhr.status + ")" }; }
        if (xhr.status >= 400) {
          uploadRejected(row, body.error || "upload failed");
        } else {
          const doc = body.documents[0];
          row.bar.style.width = "100%";
          if (doc.created) {
            uploadRows[doc.id] = row;
            row.state.textContent = "uploaded, processing…";
          } else {
            row.state.textContent = "already in this collection";
          }
          ensureDocumentRow(doc);
          render(doc); // its status from the first moment, not after the last file is sent
          poll();
        }
        resolve();
      };
      xhr.onerror = function () {
        uploadRejected(row, "network error: the file was not sent");
        resolve();
      };
      xhr.send(data);
    });
  }

  async function sendAll(files) {
    for (const file of files) { await sendFile(file); }
  }

  // -- document rows -------------------------------------------------------------------------------

  function ensureDocumentRow(doc) {
    if (table.querySelector('tr[data-id="' + doc.id + '"]')) return;
    const empty = table.querySelector("tr.empty");
    if (empty) empty.remove();
    const tr = el("tr");
    tr.dataset.id = doc.id;
    const name = el("td", "doc-name");
    const link = el("a", null, doc.title || doc.filename);
    link.dataset.role = "link";
    link.href = documentUrl(table.dataset.viewUrl, doc.id);
    name.append(link, el("div", "muted small", doc.filename));
    const state = el("td");
    const badge = el("span", "badge");
    badge.dataset.role = "status";
    const error = el("div", "error small");
    error.dataset.role = "error";
    const skipped = el("div", "small warning");
    skipped.dataset.role = "skipped";
    state.append(badge, error, skipped);
    const progressCell = el("td", "progress-cell");
    const progress = el("div", "progress");
    const bar = el("span");
    bar.dataset.role = "bar";
    progress.appendChild(bar);
    const detail = el("div", "muted small");
    detail.dataset.role = "detail";
    progressCell.append(progress, detail);
    const actions = el("td", "doc-actions");
    actions.dataset.role = "actions";
    tr.append(name, state, progressCell, actions);
    table.querySelector("tbody").prepend(tr);
  }

  function actionForm(url, label, cls, confirmText) {
    const f = el("form", "inline");
    f.method = "post";
    f.action = url;
    if (confirmText) f.dataset.confirm = confirmText;
    const token = el("input");
    token.type = "hidden"; token.name = "csrfmiddlewaretoken"; token.value = csrfToken();
    const button = el("button", cls, label);
    f.append(token, button);
    return f;
  }

  function renderActions(tr, doc) {
    if (!canWrite) return;
    const cell = tr.querySelector('[data-role="actions"]');
    const state = doc.status === "failed" ? "failed" : "other";
    if (cell.dataset.state === state) return; // keep forms (and focus) that are already right
    cell.dataset.state = state;
    cell.textContent = "";
    if (doc.status === "failed") {
      cell.append(actionForm(documentUrl(table.dataset.retryUrl, doc.id), "Retry", "secondary"), " ");
    }
    cell.appendChild(actionForm(documentUrl(table.dataset.deleteUrl, doc.id), "Delete", "danger", "Delete " + doc.filename + "?"));
  }

  function render(doc) {
    const tr = table.querySelector('tr[data-id="' + doc.id + '"]');
    if (!tr) return;
    const status = tr.querySelector('[data-role="status"]');
    status.textContent = LABELS[doc.status] || doc.status;
    status.className = "badge status-" + doc.status;
    tr.querySelector('[data-role="error"]').textContent = doc.error || "";
    const skipped = tr.querySelector('[data-role="skipped"]');
    if (skipped) skipped.textContent = doc.skipped && doc.skipped.length ? "Left out: " + doc.skipped.join("; ") : "";
    const bar = tr.querySelector('[data-role="bar"]');
    bar.style.width = doc.percent + "%";
    bar.parentNode.classList.toggle("failed", doc.status === "failed");
    const link = tr.querySelector('[data-role="link"]');
    if (link && doc.title) link.textContent = doc.title;
    const detail = tr.querySelector('[data-role="detail"]');
    if (doc.stage) detail.textContent = doc.stage;
    else if (doc.chunks_total) detail.textContent = doc.chunks_done + "/" + doc.chunks_total + " passages";
    else if (doc.sections_total) detail.textContent = doc.sections_total + " sections";
    renderActions(tr, doc);
    if (uploadRows[doc.id]) showUploadState(uploadRows[doc.id], doc);
  }

  // -- releases: state and passages kept current while the page is open -------------------------------

  function renderRelease(release) {
    const row = document.querySelector('#release-list tr[data-release="' + release.id + '"]');
    const card = document.getElementById("releases");
    if (!row) {
      if (card && !card.querySelector(".release-new")) {
        card.appendChild(el("p", "notice release-new", "A new release was built: reload the page to see it and decide."));
      }
      return;
    }
    row.dataset.state = release.state;
    const state = row.querySelector('[data-role="state"]');
    state.textContent = release.state_label;
    state.className = "badge release-" + release.state;
    row.querySelector('[data-role="chunks"]').textContent = release.chunks;
    const serving = card && card.querySelector('[data-role="serving-chunks"]');
    if (serving && release.state === "serving") serving.textContent = release.chunks;
  }

  // -- sources ---------------------------------------------------------------------------------------

  function renderSource(source) {
    const li = document.querySelector('[data-source="' + source.id + '"]');
    if (!li) return;
    li.querySelector('[data-role="state"]').textContent = source.state;
    li.querySelector('[data-role="stage"]').textContent = source.stage;
    li.querySelector('[data-role="error"]').textContent = source.error;
    const errors = li.querySelector('[data-role="errors"]');
    errors.textContent = "";
    source.errors.forEach(function (text) { errors.appendChild(el("li", null, text)); });
    const sync = li.querySelector("button.secondary");
    if (sync) sync.disabled = source.syncing;
  }

  const sources = document.getElementById("collection-sources");
  const previewButton = document.getElementById("preview-source");
  if (sources && previewButton) {
    previewButton.addEventListener("click", function () {
      const out = document.getElementById("source-preview");
      const data = new FormData(document.getElementById("add-source-form"));
      out.textContent = "Looking at the source…";
      fetch(sources.dataset.previewUrl, {
        method: "POST", body: data, headers: { Accept: "application/json", "X-CSRFToken": csrfToken() },
      })
        .then(function (r) { return r.json(); })
        .then(function (body) {
          out.textContent = "";
          if (body.error) { out.appendChild(el("p", "error", body.error)); return; }
          const intro = body.items.length ? "A first sync would read:" : "Nothing to list yet";
          out.appendChild(el("p", null, intro + (body.note && !body.items.length ? ": " + body.note : "")));
          const list = el("ul");
          body.items.forEach(function (item) { list.appendChild(el("li", null, item)); });
          out.appendChild(list);
          if (body.items.length && body.note) out.appendChild(el("p", "muted", "… " + body.note + "."));
        })
        .catch(function () { out.textContent = "The preview could not be loaded; try again."; });
    });
  }

  let timer = null;
  function poll() {
    clearTimeout(timer);
    fetch(table.dataset.statusUrl, { headers: { Accept: "application/json" } })
      .then(function (r) { return r.json(); })
      .then(function (body) {
        body.documents.forEach(function (doc) { ensureDocumentRow(doc); render(doc); });
        (body.sources || []).forEach(renderSource);
        (body.releases || []).forEach(renderRelease);
        if (askLink) askLink.hidden = !body.documents.some(function (d) { return d.status === "ready"; });
        const syncing = (body.sources || []).some(function (s) { return s.syncing; });
        const busy = syncing || body.documents.some(function (d) { return d.status === "uploaded" || d.status === "processing"; });
        if (busy) timer = setTimeout(poll, 1000);
        // A source may start syncing by itself (its schedule, another tab): look now and then.
        else if ((body.sources || []).length) timer = setTimeout(poll, IDLE_POLL_MS);
      })
      .catch(function () { timer = setTimeout(poll, 3000); });
  }

  if (form) {
    const zone = document.getElementById("dropzone");
    const input = document.getElementById("file-input");
    input.addEventListener("change", function () { sendAll(Array.from(input.files)); input.value = ""; });
    ["dragenter", "dragover"].forEach(function (name) {
      zone.addEventListener(name, function (e) { e.preventDefault(); zone.classList.add("over"); });
    });
    ["dragleave", "drop"].forEach(function (name) {
      zone.addEventListener(name, function (e) { e.preventDefault(); zone.classList.remove("over"); });
    });
    zone.addEventListener("drop", function (e) { sendAll(Array.from(e.dataTransfer.files)); });
  }
  poll();
})();
