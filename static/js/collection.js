// Collection page: drag-and-drop multi-file upload with a progress bar per file,
// then live processing progress for every document until it is ready or failed.
(function () {
  "use strict";
  const form = document.getElementById("upload-form");
  const table = document.getElementById("documents");
  const uploads = document.getElementById("uploads");
  const LABELS = { uploaded: "Uploaded", processing: "Processing", ready: "Ready", failed: "Failed" };

  function csrfToken() {
    return form.querySelector("input[name=csrfmiddlewaretoken]").value;
  }

  function uploadRow(file) {
    const li = document.createElement("li");
    li.innerHTML = '<span class="name"></span><div class="progress"><span></span></div><span class="small state">waiting</span>';
    li.querySelector(".name").textContent = file.name;
    uploads.appendChild(li);
    return { bar: li.querySelector(".progress > span"), state: li.querySelector(".state") };
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
          // Once every byte is sent the server is extracting and embedding.
          row.state.textContent = e.loaded < e.total ? "uploading" : "uploaded, processing…";
        }
      };
      xhr.onload = function () {
        let body = {};
        try { body = JSON.parse(xhr.responseText); } catch (err) { body = { error: "unexpected response (" + xhr.status + ")" }; }
        if (xhr.status >= 400) {
          row.state.textContent = body.error || "upload failed";
          row.state.className = "small error";
        } else {
          const doc = body.documents[0];
          row.bar.style.width = "100%";
          row.state.textContent = doc.created ? "uploaded, processing…" : "already in this collection";
          ensureDocumentRow(doc);
        }
        resolve();
      };
      xhr.onerror = function () {
        row.state.textContent = "network error";
        row.state.className = "small error";
        resolve();
      };
      xhr.send(data);
    });
  }

  async function sendAll(files) {
    for (const file of files) { await sendFile(file); }
    poll();
  }

  function ensureDocumentRow(doc) {
    if (table.querySelector('tr[data-id="' + doc.id + '"]')) return;
    const empty = table.querySelector("tr.empty");
    if (empty) empty.remove();
    const tr = document.createElement("tr");
    tr.dataset.id = doc.id;
    tr.innerHTML = '<td class="name"></td><td><span class="badge" data-role="status"></span><div class="error small" data-role="error"></div></td>' +
      '<td><div class="progress"><span data-role="bar"></span></div><div class="muted small" data-role="detail"></div></td><td class="muted small">reload for actions</td>';
    tr.querySelector(".name").textContent = doc.filename;
    table.querySelector("tbody").prepend(tr);
  }

  function render(doc) {
    const tr = table.querySelector('tr[data-id="' + doc.id + '"]');
    if (!tr) return;
    const status = tr.querySelector('[data-role="status"]');
    status.textContent = LABELS[doc.status] || doc.status;
    status.className = "badge status-" + doc.status;
    tr.querySelector('[data-role="error"]').textContent = doc.error || "";
    tr.querySelector('[data-role="bar"]').style.width = doc.percent + "%";
    const detail = tr.querySelector('[data-role="detail"]');
    if (doc.chunks_total) detail.textContent = doc.chunks_done + "/" + doc.chunks_total + " chunks";
    else if (doc.sections_total) detail.textContent = doc.sections_total + " sections";
  }

  let timer = null;
  function poll() {
    clearTimeout(timer);
    fetch(table.dataset.statusUrl, { headers: { Accept: "application/json" } })
      .then(function (r) { return r.json(); })
      .then(function (body) {
        body.documents.forEach(function (doc) { ensureDocumentRow(doc); render(doc); });
        const busy = body.documents.some(function (d) { return d.status === "uploaded" || d.status === "processing"; });
        if (busy) timer = setTimeout(poll, 1000);
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
