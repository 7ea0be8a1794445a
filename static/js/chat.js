// Chat: POST the question, read the Server-Sent Events as they arrive, show
// retrieval progress, stream the answer text, then render the cited answer.
(function () {
  "use strict";
  const form = document.getElementById("ask");
  const turns = document.getElementById("turns");
  const statusLine = document.getElementById("status");
  const sourcesPanel = document.getElementById("sources");
  const tokensPanel = document.getElementById("tokens");
  const STATUS = {
    execution_start: "Starting…",
    knowledge_retrieval_start: "Retrieving from your documents…",
    knowledge_retrieval_complete: "Found sources; synthesising the answer…",
    conversation_llm_step: "Answer written.",
    execution_complete: "",
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
    let text = step.step + " (" + step.method + ")";
    if (step.step === "classify") text += ": " + d.kind;
    if (step.step === "route") text += ": " + (d.document_ids || []).length + " documents";
    if (step.step === "plan") text += ": " + (d.steps || []).length + " steps";
    if (step.step === "retrieve") text += ": " + d.chunks + " passages";
    if (step.step === "grade" && d.graded) text += ": " + d.passed + " of " + d.graded + " relevant";
    if (step.step === "rewrite" && d.query) text += ": " + d.query;
    if (step.step === "check" && d.grounded !== undefined) {
      text += d.grounded === null ? ": not checked" : d.grounded ? ": grounded" : ": unsupported claims";
    }
    if (step.note) text += " · " + step.note;
    return text + " · " + Math.round(step.duration_ms) + " ms";
  }

  function el(tag, cls, text) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined) node.textContent = text;
    return node;
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

  function showSources(sources) {
    sourcesPanel.textContent = "";
    if (!sources.length) { sourcesPanel.textContent = "Nothing relevant enough was found."; return; }
    sources.forEach(function (s) {
      const item = el("div", "source-item");
      const link = el("a", null, "[" + s.n + "] " + s.title + " — " + s.source_ref);
      link.href = s.url;
      item.appendChild(link);
      if (s.scores && s.scores.similarity !== undefined) {
        item.appendChild(el("div", "muted", "similarity " + s.scores.similarity + " · fused " + s.scores.fused +
          (s.scores.lexical_rank ? " · lexical #" + s.scores.lexical_rank : "")));
      } else if (s.role === "reference") {
        item.appendChild(el("div", "muted", "referenced by a result"));
      }
      sourcesPanel.appendChild(item);
    });
  }

  async function ask(event) {
    event.preventDefault();
    const data = new FormData(form);
    const card = el("div", "card turn");
    card.appendChild(el("div", "question", data.get("question")));
    const log = el("ul", "events");
    const answer = el("div", "answer");
    card.appendChild(log);
    card.appendChild(answer);
    turns.appendChild(card);
    form.querySelector("button").disabled = true;
    let streamed = "";
    try {
      const response = await fetch(form.action, { method: "POST", body: data, headers: { Accept: "text/event-stream" } });
      if (!response.ok) {
        let message = "The question could not be answered (" + response.status + ").";
        try { message = (await response.json()).error || message; } catch (e) { /* keep the generic message */ }
        answer.appendChild(el("p", "error", message));
        return;
      }
      const reader = response.body.getReader();
      const decoder = new TextDecoder();
      let buffer = "";
      for (;;) {
        const chunk = await reader.read();
        if (chunk.done) break;
        buffer = parseEvents(buffer + decoder.decode(chunk.value, { stream: true }), function (name, payload) {
          if (STATUS[name] !== undefined) statusLine.textContent = STATUS[name];
          if (name === "knowledge_retrieval_complete") {
            log.appendChild(el("li", null, payload.results_count + " passages from " +
              payload.documents.map(function (d) { return d.title; }).join(", ")));
            showSources(payload.sources);
          } else if (name === "answer_delta") {
            streamed += payload.text;
            answer.textContent = streamed;
          } else if (name === "agent_step") {
            statusLine.textContent = AGENT_STATUS[payload.step] || statusLine.textContent;
            log.appendChild(el("li", payload.status === "exhausted" ? "error" : null, describeStep(payload)));
          } else if (name === "llm_error") {
            log.appendChild(el("li", "error", "Language model failed (" + payload.error + "); answering from the documents instead."));
          } else if (name === "token_update") {
            tokensPanel.textContent = "Turn: " + payload.input_tokens + " in / " + payload.output_tokens + " out (" +
              payload.source + ") · Session: " + payload.total_input + " in / " + payload.total_output + " out";
          } else if (name === "final_answer") {
            answer.innerHTML = payload.html;
          } else if (name === "execution_complete") {
            if (!form.querySelector("input[name=session]")) {
              const hidden = el("input"); hidden.type = "hidden"; hidden.name = "session"; hidden.value = payload.session_id;
              form.appendChild(hidden);
              history.replaceState(null, "", "?session=" + payload.session_id);
            }
          } else if (name === "error") {
            answer.appendChild(el("p", "error", payload.message));
          }
        });
      }
    } catch (err) {
      answer.appendChild(el("p", "error", "The connection was lost: " + err.message));
    } finally {
      form.querySelector("button").disabled = false;
      form.querySelector("textarea").value = "";
    }
  }

  if (form) form.addEventListener("submit", ask);
})();
