// Chat: POST the question, read the Server-Sent Events as they arrive, show each step and a typing
// indicator, stream the answer text, then render the cited answer. Enter sends, Shift+Enter adds a
// line, Stop ends a running answer. Answers can be copied and rated, questions edited and asked
// again; sessions renamed and deleted. Citations preview their passage on hover or focus and open
// it in a side panel. A resumed conversation opens at its newest turn.
(function () {
  "use strict";
  const el = window.KnowledgeDom.el;
  const root = document.getElementById("chat");
  const form = document.getElementById("ask");
  if (!root || !form) return;
  const turns = document.getElementById("turns");
  const sourcesPanel = document.getElementById("sources");
  const tokensPanel = document.getElementById("tokens");
  const sessionList = document.getElementById("session-list");
  const textarea = form.querySelector("textarea[name=question]");
  const askButton = document.getElementById("ask-button");
  const stopButton = document.getElementById("stop");
  const askError = document.getElementById("ask-error");
  const scopeHint = document.getElementById("scope-hint");
  const llmConfigured = root.dataset.llm === "1";
  const SESSIONS_API = root.dataset.apiSessions;

  // The words the saved turns show for each kind of answer (ChatTurn.Mode, given by the page).
  const MODE_WORDS = JSON.parse(document.getElementById("mode-words").textContent);
  // Each turn's cited sources by turn index: the saved ones from the page, live ones as they finish.
  const citedData = document.getElementById("cited-sources");
  const citedSources = citedData ? JSON.parse(citedData.textContent) : {};

  const STEP = {
    execution_start: "Starting…",
    knowledge_retrieval_start: "Searching your documents…",
    knowledge_retrieval_complete: "Writing the answer…",
    conversation_llm_step: "Answer written.",
  };

  // The agentic loop's steps (profiles with agentic.enabled), as the user sees them.
  const AGENT_STATUS = {
    classify: "Understanding the question…",
    expand: "Expanding search terms…",
    route: "Choosing documents…",
    plan: "Planning the searches…",
    retrieve: "Searching…",
    grade: "Evaluating relevance…",
    rewrite: "Rewriting the search…",
    rerank: "Ordering sources…",
    generate: "Writing the answer…",
    check: "Verifying the answer against its sources…",
    retry: "Some claims were not supported; searching again…",
    budget: "Out of time or tokens; answering with what was found…",
  };

  function describeStep(step) {
    const d = step.detail || {};
    let text = AGENT_STATUS[step.step] || step.step;
    if (step.step === "route") text += " " + (d.document_ids || []).length + " documents";
    if (step.step === "plan") text += " " + (d.steps || []).length + " steps";
    if (step.step === "retrieve") text += " " + d.chunks + " passages";
    if (step.step === "grade" && d.graded) text += " " + d.passed + " of " + d.graded + " relevant";
    if (step.step === "check" && d.grounded !== undefined) {
      text += d.grounded === null ? " not checked" : d.grounded ? " grounded" : " unsupported claims";
    }
    return text;
  }

  function csrfToken() {
    return form.querySelector("input[name=csrfmiddlewaretoken]").value;
  }

  function api(url, method, body) {
    const init = { method: method, headers: { "X-CSRFToken": csrfToken(), Accept: "application/json" }, credentials: "same-origin" };
    if (body !== undefined) {
      init.headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    return fetch(url, init).then(async function (response) {
      if (response.ok) return response.status === 204 ? null : response.json();
      let message = "the request failed (" + response.status + ")";
      try { message = (await response.json()).error.message || message; } catch (e) { /* keep it */ }
      throw new Error(message);
    });
  }

  // -- what to search: Ask stays disabled until a profile or a collection is chosen ------------------

  function scopeChosen() {
    // A resumed conversation searches what it searched, unless all of that is gone (#scope-lost).
    if (form.querySelector("input[name=session]") && !document.getElementById("scope-lost")) return true;
    const profile = form.querySelector("select[name=profile]");
    const collections = form.querySelector("select[name=collections]");
    return Boolean((profile && profile.value) || (collections && collections.selectedOptions.length));
  }

  let running = null; // the AbortController of the answer being written
  function updateAskButton() {
    const chosen = scopeChosen();
    askButton.disabled = running !== null || !chosen;
    if (scopeHint) scopeHint.hidden = chosen;
    scopeWords();
  }

  // What a new question searches, in words: "Searching: Handbook, Policies".
  function scopeWords() {
    const words = document.getElementById("scope-words");
    if (!words) return;
    const profile = form.querySelector("select[name=profile]");
    const collections = form.querySelector("select[name=collections]");
    if (profile && profile.value) {
      words.textContent = "Searching with the profile " + profile.selectedOptions[0].textContent;
      return;
    }
    const names = collections ? Array.from(collections.selectedOptions).map(function (o) { return o.textContent; }) : [];
    words.textContent = names.length ? "Searching: " + names.join(", ") : "Nothing chosen yet: choose a collection to search.";
  }

  function showError(message) {
    askError.textContent = message;
    askError.hidden = !message;
  }

  // -- sources and sessions --------------------------------------------------------------------

  // One group per turn, headed by its question; its list is filled when retrieval completes.
  function sourcesGroup(index, question) {
    const placeholder = sourcesPanel.querySelector(".placeholder");
    if (placeholder) placeholder.remove();
    let group = sourcesPanel.querySelector('.sources-turn[data-index="' + index + '"]');
    if (!group) {
      group = el("section", "sources-turn");
      group.dataset.index = index;
      sourcesPanel.appendChild(group);
    }
    group.textContent = "";
    const flat = question.split(/\s+/).join(" ");
    group.appendChild(el("h3", "sources-question", flat.length <= 80 ? flat : flat.slice(0, 79) + "…"));
    group.appendChild(el("ol", "source-list"));
    return group.querySelector(".source-list");
  }

  // In [Source N] order, the server's (the ranking's, best first): the N-th listed is the answer's
  // [Source N]. The scores in words, the numbers on demand.
  function showSources(list, sources) {
    list.textContent = "";
    if (!sources.length) { list.appendChild(el("li", "muted", "Nothing relevant enough was found.")); return; }
    sources.forEach(function (s) {
      const item = el("li", "source-item");
      const link = el("a", null, "[" + s.n + "] " + s.title + " — " + (s.label || s.source_ref));
      link.href = s.url;
      item.append(link, " ");
      if (s.match) item.appendChild(el("span", "match", s.match));
      if (s.scores && s.scores.similarity !== undefined && s.scores.similarity !== null) {
        const details = el("details", "scores");
        details.appendChild(el("summary", null, "Scores"));
        let numbers = "similarity " + s.scores.similarity + " · fused " + s.scores.fused;
        if (s.scores.lexical_rank) numbers += " · word-match rank " + s.scores.lexical_rank;
        details.append(numbers);
        item.appendChild(details);
      }
      list.appendChild(item);
    });
  }

  function sessionItem(id, title) {
    const li = el("li", "session-item current");
    li.dataset.id = id;
    const link = el("a", "session-title", title);
    link.href = "?session=" + id;
    const actions = el("span", "session-actions");
    const rename = el("button", "link", "Rename");
    rename.type = "button"; rename.dataset.action = "rename-session";
    const remove = el("button", "link danger-link", "Delete");
    remove.type = "button"; remove.dataset.action = "delete-session";
    actions.append(rename, " ", remove);
    li.append(link, " ", actions);
    return li;
  }

  function sessionStarted(id, question) {
    const empty = sessionList.querySelector(".empty");
    if (empty) empty.remove();
    sessionList.querySelectorAll(".current").forEach(function (li) { li.classList.remove("current"); });
    let li = sessionList.querySelector('li[data-id="' + id + '"]');
    if (!li) {
      const flat = question.split(/\s+/).join(" ");
      li = sessionItem(id, flat.length <= 80 ? flat : flat.slice(0, 79) + "…");
    }
    li.classList.add("current");
    sessionList.prepend(li);
  }

  // -- a turn: question, steps, typing indicator, answer, actions -------------------------------------

  function questionRow(question) {
    const row = el("div", "question-row");
    const actions = el("span", "question-actions");
    [["edit", "Edit", "Put this question in the box to change it and ask again"],
      ["regenerate", "Ask again", "Ask this question again"]].forEach(function (a) {
      const b = el("button", "icon-button", a[1]);
      b.type = "button"; b.dataset.action = a[0]; b.title = a[2];
      actions.appendChild(b);
    });
    row.append(el("p", "question", question), actions);
    return row;
  }

  function turnCard(question) {
    const empty = document.getElementById("empty-conversation");
    if (empty) empty.remove();
    const card = el("article", "card turn pending");
    card.setAttribute("aria-label", "Question " + (turns.querySelectorAll(".turn").length + 1));
    card.appendChild(questionRow(question));
    const progress = el("div", "progress-steps");
    const status = el("div", "status-line");
    status.setAttribute("role", "status");
    const typing = el("span", "typing");
    typing.setAttribute("aria-hidden", "true");
    typing.append(el("i"), el("i"), el("i"));
    const statusText = el("span", "status-text", "Sending…");
    status.append(typing, statusText);
    const log = el("ul", "events");
    progress.append(status, log);
    const answer = el("div", "answer");
    const footer = el("div", "turn-footer");
    const meta = el("span", "muted small turn-meta");
    footer.appendChild(meta);
    card.append(progress, answer, footer);
    turns.appendChild(card);
    return { card: card, status: status, statusText: statusText, log: log, answer: answer, footer: footer, meta: meta };
  }

  function setStatus(view, text) {
    view.statusText.textContent = text;
  }

  function addStep(view, text, cls) {
    view.log.appendChild(el("li", cls || null, text));
  }

  function finishTurn(view, sessionId, index) {
    view.card.classList.remove("pending");
    view.card.dataset.session = sessionId;
    view.card.dataset.index = index;
    const actions = el("span", "turn-actions");
    const copy = el("button", "icon-button", "Copy");
    copy.type = "button"; copy.dataset.action = "copy"; copy.title = "Copy the answer";
    actions.appendChild(copy);
    [["up", "Helpful", "This answer helped"], ["down", "Not helpful", "This answer did not help"]].forEach(function (r) {
      const b = el("button", "icon-button", r[1]);
      b.type = "button"; b.dataset.action = "rate"; b.dataset.rating = r[0];
      b.title = r[2]; b.setAttribute("aria-pressed", "false");
      actions.appendChild(b);
    });
    view.footer.appendChild(actions);
  }

  function handleEvent(view, state, name, payload) {
    if (STEP[name]) setStatus(view, STEP[name]);
    if (name === "execution_start") {
      state.sessionId = payload.session_id;
      state.index = payload.turn_index;
      state.sources = sourcesGroup(payload.turn_index, payload.question);
      sessionStarted(payload.session_id, payload.question);
      showTitle(payload.session_title);
      if (!form.querySelector("input[name=session]")) {
        const hidden = el("input"); hidden.type = "hidden"; hidden.name = "session"; hidden.value = payload.session_id;
        form.appendChild(hidden);
        history.replaceState(null, "", "?session=" + payload.session_id);
      }
    } else if (name === "knowledge_retrieval_start") {
      // A follow-up is searched together with the conversation before it; the rewritten query is internal.
      addStep(view, "Searching " + payload.collection_count + (payload.collection_count === 1 ? " collection" : " collections") +
        (payload.resolved_question && payload.resolved_question !== payload.question ? ", reading your question with the conversation before it" : ""));
    } else if (name === "knowledge_retrieval_complete") {
      const titles = payload.documents.map(function (d) { return d.title; });
      addStep(view, payload.results_count ? "Found " + payload.results_count + " passages in " + titles.join(", ") : "Found nothing relevant enough");
      if (state.sources) showSources(state.sources, payload.sources);
    } else if (name === "answer_delta") {
      view.card.classList.add("writing");
      state.streamed += payload.text;
      view.answer.textContent = state.streamed;
    } else if (name === "agent_step") {
      setStatus(view, AGENT_STATUS[payload.step] || "Working…");
      addStep(view, describeStep(payload), payload.status === "exhausted" ? "error" : null);
    } else if (name === "llm_error") {
      addStep(view, "The language model failed (" + payload.error + "); answering from the documents instead.", "error");
    } else if (name === "token_update") {
      if (llmConfigured && tokensPanel) {
        tokensPanel.textContent = "This answer: " + payload.input_tokens + " tokens read by the model, " + payload.output_tokens +
          " written" + (payload.source === "estimate" ? " (estimated)" : "") + ". This session: " + payload.total_input +
          " read, " + payload.total_output + " written.";
      }
    } else if (name === "final_answer") {
      view.answer.innerHTML = payload.html;
      citedSources[String(state.index)] = payload.sources || [];
      // The passages the answer numbers: an extracted answer adds the continuations it quotes.
      if (state.sources && payload.passages) showSources(state.sources, payload.passages);
      view.meta.textContent = MODE_WORDS[payload.mode] || "";
    } else if (name === "execution_complete") {
      state.complete = true;
      finishTurn(view, payload.session_id, state.index);
    } else if (name === "error") {
      view.answer.appendChild(el("p", "error", payload.message));
    }
  }

  function parseEvents(buffer, onEvent) {
    let index;
    while ((index = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, index);
      buffer = buffer.slice(index + 2);
      let name = "message", data = "";
      block.split("\n").forEach(function (line) {
        if (line.startsWith("event: ")) name = line.slice(7);
        else if (line.startsWith("data: ")) data += line.slice(6);
      });
      if (data) onEvent(name, JSON.parse(data));
    }
    return buffer;
  }

  async function readStream(response, view, state) {
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const chunk = await reader.read();
      if (chunk.done) break;
      buffer = parseEvents(buffer + decoder.decode(chunk.value, { stream: true }), function (name, payload) {
        handleEvent(view, state, name, payload);
      });
    }
  }

  async function ask(event) {
    event.preventDefault();
    const question = textarea.value.trim();
    if (!question || running) return;
    if (!scopeChosen()) { showError("Choose a profile or at least one collection to search."); return; }
    showError("");
    const data = new FormData(form);
    const view = turnCard(question);
    const state = { streamed: "", complete: false, sessionId: null, index: null, sources: null };
    running = new AbortController();
    updateAskButton();
    stopButton.hidden = false;
    view.card.scrollIntoView({ block: "start" });
    let keepQuestion = true;
    try {
      const response = await fetch(form.action, {
        method: "POST", body: data, headers: { Accept: "text/event-stream" }, signal: running.signal,
      });
      if (!response.ok) {
        let message = "The question could not be answered (" + response.status + ").";
        try { const body = await response.json(); message = (body.error && (body.error.message || body.error)) || message; } catch (e) { /* keep it */ }
        view.card.remove();
        showError(message.charAt(0).toUpperCase() + message.slice(1));
        return;
      }
      keepQuestion = false;
      textarea.value = "";
      await readStream(response, view, state);
    } catch (err) {
      if (err.name === "AbortError") {
        view.answer.appendChild(el("p", "muted stopped", "Stopped. The answer was not completed."));
      } else {
        view.answer.appendChild(el("p", "error", "The connection was lost: " + err.message));
        if (keepQuestion) textarea.value = question;
      }
    } finally {
      view.card.classList.remove("pending", "writing");
      view.status.remove();
      running = null;
      stopButton.hidden = true;
      updateAskButton();
      textarea.focus();
    }
  }

  // -- copy, rate, comment -----------------------------------------------------------------------

  function copyText(text) {
    if (navigator.clipboard && window.isSecureContext) return navigator.clipboard.writeText(text);
    const area = el("textarea", "offscreen");
    area.value = text;
    document.body.appendChild(area);
    area.select();
    const ok = document.execCommand("copy");
    area.remove();
    return ok ? Promise.resolve() : Promise.reject(new Error("copying is not allowed here"));
  }

  function flash(button, text) {
    const original = button.dataset.label || button.textContent;
    button.dataset.label = original;
    button.textContent = text;
    setTimeout(function () { button.textContent = original; }, 1500);
  }

  function feedbackUrl(card) {
    return SESSIONS_API + card.dataset.session + "/turns/" + card.dataset.index + "/feedback/";
  }

  function commentForm(card, rating) {
    let box = card.querySelector(".feedback-comment");
    if (!box) {
      box = el("form", "feedback-comment");
      const label = el("label", "small", "Tell us more (optional)");
      const input = el("textarea");
      input.name = "comment"; input.rows = 2; input.maxLength = 2000;
      label.appendChild(input);
      const send = el("button", "secondary", "Send");
      send.type = "submit";
      const note = el("span", "muted small note");
      note.setAttribute("role", "status");
      box.append(label, send, " ", note);
      card.appendChild(box);
      box.addEventListener("submit", function (e) {
        e.preventDefault();
        api(feedbackUrl(card), "POST", { rating: box.dataset.rating, comment: input.value })
          .then(function () { note.textContent = "Thanks, your comment was saved."; })
          .catch(function (err) { note.textContent = "Not saved: " + err.message; });
      });
    }
    box.dataset.rating = rating;
    return box;
  }

  function rate(button) {
    const card = button.closest(".turn");
    const rating = button.dataset.rating;
    api(feedbackUrl(card), "POST", { rating: rating })
      .then(function () {
        card.querySelectorAll("[data-action=rate]").forEach(function (b) {
          b.setAttribute("aria-pressed", b === button ? "true" : "false");
        });
        const box = commentForm(card, rating);
        box.querySelector(".note").textContent = "Thanks for rating this answer.";
      })
      .catch(function (err) { flash(button, "!"); button.title = err.message; });
  }

  // -- sessions: rename, delete -----------------------------------------------------------------------

  function renameSession(li) {
    const link = li.querySelector(".session-title");
    const title = window.prompt("New name for this session", link.textContent);
    if (title === null || !title.trim()) return;
    api(SESSIONS_API + li.dataset.id + "/", "PATCH", { title: title })
      .then(function (body) { link.textContent = body.title; })
      .catch(function (err) { window.alert("Not renamed: " + err.message); });
  }

  function deleteSession(li) {
    if (!window.confirm("Delete the session “" + li.querySelector(".session-title").textContent + "” and its answers?")) return;
    api(SESSIONS_API + li.dataset.id + "/", "DELETE")
      .then(function () {
        const wasCurrent = li.classList.contains("current");
        li.remove();
        if (!sessionList.querySelector("li")) sessionList.appendChild(el("li", "muted small empty", "No sessions yet."));
        if (wasCurrent) window.location.assign(window.location.pathname);
      })
      .catch(function (err) { window.alert("Not deleted: " + err.message); });
  }

  document.addEventListener("click", function (event) {
    const button = event.target.closest("button[data-action]");
    if (!button) return;
    const action = button.dataset.action;
    if (action === "copy") {
      const answer = button.closest(".turn").querySelector(".answer");
      copyText(answer.innerText.trim()).then(function () { flash(button, "Copied"); }, function (err) { flash(button, "Copy failed"); button.title = err.message; });
    } else if (action === "rate") {
      rate(button);
    } else if (action === "edit" || action === "regenerate") {
      reuseQuestion(button.closest(".turn").querySelector(".question").textContent, action === "regenerate");
    } else if (action === "rename-session") {
      renameSession(button.closest("li"));
    } else if (action === "delete-session") {
      deleteSession(button.closest("li"));
    }
  });

  // -- edit and ask again ----------------------------------------------------------------------

  function reuseQuestion(question, askNow) {
    if (running) return;
    textarea.value = question;
    updateAskButton();
    if (askNow && !askButton.disabled) { form.requestSubmit(); return; }
    textarea.focus();
    textarea.setSelectionRange(question.length, question.length);
  }

  // A new conversation is named after its first question as soon as it is asked.
  function showTitle(title) {
    const heading = document.getElementById("chat-title");
    if (!title || !heading || heading.textContent.trim() !== "New conversation") return;
    heading.textContent = title;
    document.title = title + " · Knowledge";
  }

  // -- citations: preview on hover or focus, open beside the chat ------------------------------------

  const panel = document.getElementById("source-panel");
  let preview = null;
  let panelOpener = null;

  function citationSource(link) {
    const card = link.closest(".turn");
    const sources = card ? citedSources[card.dataset.index] || [] : [];
    return sources.find(function (s) { return String(s.n) === link.dataset.source; }) || null;
  }

  function quotedText(link, source) {
    const range = new URL(link.href, window.location.href).searchParams.get("quote");
    const text = (source && source.text) || "";
    const match = /^(\d+)-(\d+)$/.exec(range || "");
    if (match && Number(match[2]) <= text.length) return text.slice(Number(match[1]), Number(match[2]));
    return text.length > 280 ? text.slice(0, 279) + "…" : text;
  }

  function showPreview(link) {
    hidePreview();
    const source = citationSource(link);
    if (!source) return;
    preview = el("div", "cite-preview");
    preview.id = "cite-preview";
    preview.setAttribute("role", "tooltip");
    const head = el("div");
    head.append(el("strong", null, source.title), " ", el("span", "place", source.place || source.label || ""));
    preview.append(head, el("div", null, quotedText(link, source)));
    document.body.appendChild(preview);
    link.setAttribute("aria-describedby", "cite-preview");
    const box = link.getBoundingClientRect();
    const left = Math.max(8, Math.min(window.scrollX + box.left, window.scrollX + document.documentElement.clientWidth - preview.offsetWidth - 8));
    preview.style.left = left + "px";
    preview.style.top = (window.scrollY + box.bottom + 6) + "px";
  }

  function hidePreview() {
    if (!preview) return;
    document.querySelectorAll("[aria-describedby=cite-preview]").forEach(function (a) { a.removeAttribute("aria-describedby"); });
    preview.remove();
    preview = null;
  }

  function partNode(part) {
    const node = el("div", "chunk" + (part.cited ? " cited" : ""), part.before);
    if (part.quote) {
      node.appendChild(el("mark", "quote", part.quote));
      node.append(part.after);
    }
    return node;
  }

  // A sheet's cited rows as a grid (text only), the cited row singled out.
  function gridNode(grid) {
    const frame = el("div", "grid-frame");
    // A scrolling box is reachable by keyboard, and named for screen readers.
    frame.setAttribute("role", "region");
    frame.tabIndex = 0;
    frame.setAttribute("aria-label", grid.caption || "The cited rows");
    const table = el("table", "grid");
    if (grid.caption) table.appendChild(el("caption", null, grid.caption));
    const head = el("tr");
    head.appendChild(el("th", null, "Row"));
    grid.columns.forEach(function (name) { head.appendChild(el("th", null, name || "—")); });
    table.appendChild(el("thead")).appendChild(head);
    const rows = table.appendChild(el("tbody"));
    grid.rows.forEach(function (row) {
      const line = el("tr", (row.in_passage ? "in-passage" : "") + (row.quoted ? " quoted" : ""));
      line.appendChild(el("th", null, String(row.n)));
      row.cells.forEach(function (cell) { line.appendChild(el("td", null, cell)); });
      rows.appendChild(line);
    });
    frame.appendChild(table);
    return frame;
  }

  async function openPanel(link) {
    hidePreview();
    panelOpener = link;
    const url = new URL(link.href, window.location.href);
    const passageUrl = url.pathname.replace(/\/view\/$/, "/passage/") + url.search;
    const body = document.getElementById("source-panel-body");
    document.getElementById("source-panel-title").textContent = "Loading the source…";
    document.getElementById("source-panel-place").textContent = "";
    body.textContent = "";
    document.getElementById("source-panel-open").href = link.href;
    panel.hidden = false;
    panel.focus();
    try {
      const data = await api(passageUrl, "GET");
      document.getElementById("source-panel-title").textContent = data.title;
      document.getElementById("source-panel-place").textContent = data.place + " · " + data.filename;
      const origin = document.getElementById("source-panel-origin");
      origin.hidden = !data.origin_url;
      origin.querySelector("a").href = data.origin_url || "#";
      if (data.grid) body.appendChild(gridNode(data.grid));
      else data.parts.forEach(function (part) { body.appendChild(partNode(part)); });
      const cited = body.querySelector(".quote") || body.querySelector("tr.quoted") || body.querySelector(".cited, tr.in-passage");
      if (cited) cited.scrollIntoView({ block: "center" });
    } catch (err) {
      document.getElementById("source-panel-title").textContent = "Source";
      body.appendChild(el("p", "error", "The source could not be opened: " + err.message));
    }
  }

  function closePanel() {
    if (panel.hidden) return;
    panel.hidden = true;
    if (panelOpener && document.body.contains(panelOpener)) panelOpener.focus();
    panelOpener = null;
  }

  turns.addEventListener("mouseover", function (event) {
    const link = event.target.closest("a.citation");
    if (link) showPreview(link);
  });
  turns.addEventListener("mouseout", function (event) {
    if (event.target.closest("a.citation")) hidePreview();
  });
  turns.addEventListener("focusin", function (event) {
    const link = event.target.closest("a.citation");
    if (link) showPreview(link); else hidePreview();
  });
  turns.addEventListener("focusout", hidePreview);
  turns.addEventListener("click", function (event) {
    const link = event.target.closest("a.citation, a.closest-match");
    // A modified click (new tab) keeps the link's own behaviour: the full document view.
    if (!link || event.ctrlKey || event.metaKey || event.shiftKey || event.button !== 0) return;
    event.preventDefault();
    openPanel(link);
  });
  document.getElementById("source-panel-close").addEventListener("click", closePanel);
  document.addEventListener("keydown", function (event) {
    if (event.key !== "Escape") return;
    if (preview) hidePreview(); else closePanel();
  });

  textarea.addEventListener("keydown", function (event) {
    // Enter sends, as in other chat apps; Shift+Enter (or an IME composing) adds a line.
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      if (!askButton.disabled) form.requestSubmit();
    }
  });
  stopButton.addEventListener("click", function () { if (running) running.abort(); });
  form.addEventListener("change", updateAskButton);
  form.addEventListener("submit", ask);
  updateAskButton();
  // A resumed conversation opens at its newest turn, the question box below it.
  const latest = turns.querySelector(".turn:last-of-type");
  if (latest) latest.scrollIntoView({ block: "start" });
})();
