/* The local cloud's console: a read-only single-page app over /_localcloud/console/api/.
 *
 * Hash routes: #/ (state machines), #/machine/<arn> (its graph and executions),
 * #/execution/<arn> (graph with the path highlighted, the states' input/output, the history
 * paged), #/queues (every SQS queue), #/queue/<url> (its messages, peeked, and the redrive
 * command), and, when the application provides them (api/features), #/objects?q=<text> and
 * #/object/<key> (console/extensions.py). Every view polls the API every POLL_MS while the
 * page is visible. Plain JS, no build step; the helpers and the graph are lib.js's.
 */
"use strict";

(function () {
  const POLL_MS = 2000;
  // events per history page ("more" loads the next); ?pageSize=<n> in the page's URL overrides
  const HISTORY_PAGE = Math.max(1, Math.min(1000, Number(new URLSearchParams(location.search).get("pageSize")) || 100));
  const EXECUTIONS_PAGE = 50;
  const STATUSES = ["RUNNING", "SUCCEEDED", "FAILED", "TIMED_OUT", "ABORTED", "PENDING_REDRIVE"];
  const app = document.getElementById("app");
  const refresh = document.getElementById("refresh");

  const {
    ApiError, api, h, append, s, machineHref, executionHref,
    queueHref, objectHref, objectsHref, safeHref, when, duration, pretty,
    statusSpan, errorBox, setCrumbs, nameOf, drawGraph,
  } = window.LocalCloudConsole; // lib.js

  // --- views ---------------------------------------------------------------------------
  // A view: {title, mount(root), update() -> Promise}. mount builds the page once; update is
  // called at once and then every POLL_MS, and changes the page only where the data did.

  function machinesView() {
    let table, body, problem;
    return {
      mount(root) {
        setCrumbs({ text: "State machines" });
        problem = h("div");
        body = h("tbody");
        table = h("table", { class: "machines" },
          h("thead", {}, h("tr", {}, h("th", {}, "Name"), h("th", {}, "Type"), h("th", {}, "Created"), h("th", {}, "ARN"))),
          body);
        root.append(h("h1", {}, "State machines"), problem, table);
      },
      async update() {
        const machines = await api("state-machines");
        problem.replaceChildren();
        const rows = machines.map((m) =>
          h("tr", { "data-arn": m.arn },
            h("td", {}, h("a", { href: machineHref(m.arn) }, m.name)),
            h("td", {}, m.type),
            h("td", { title: m.created || "" }, when(m.created)),
            h("td", { class: "arn" }, m.arn)));
        if (!rows.length) rows.push(h("tr", {}, h("td", { colspan: 4, class: "empty" }, "No state machine yet.")));
        body.replaceChildren(...rows);
      },
    };
  }

  function machineView(arn) {
    let graphBox, body, more, filter, drawnKey = null, nextToken = null, loaded = EXECUTIONS_PAGE;
    let machine = null;

    function row(x) {
      return h("tr", { "data-arn": x.arn, "data-status": x.status },
        h("td", {}, h("a", { href: executionHref(x.arn) }, x.name)),
        h("td", {}, statusSpan(x.status)),
        h("td", { title: x.start || "" }, when(x.start)),
        h("td", {}, duration(x.durationMs)),
        h("td", { class: "subject" }, x.subject || ""));
    }

    async function loadMore() {
      if (!nextToken) return;
      const page = await api("executions", { stateMachineArn: arn, status: filter.value, limit: EXECUTIONS_PAGE, nextToken });
      body.append(...page.executions.map(row));
      loaded += page.executions.length;
      nextToken = page.nextToken;
      more.hidden = !nextToken;
    }

    return {
      mount(root) {
        setCrumbs({ text: "State machines", href: "#/" }, { text: nameOf(arn) });
        graphBox = h("div", { class: "graph" }, h("p", { class: "loading" }, "Loading…"));
        filter = h("select", { id: "status-filter", "aria-label": "Status" },
          h("option", { value: "" }, "All statuses"),
          STATUSES.map((st) => h("option", { value: st }, st)));
        filter.addEventListener("change", () => { loaded = EXECUTIONS_PAGE; pollNow(); });
        body = h("tbody");
        more = h("button", { class: "more", hidden: true, onclick: () => loadMore().catch(showError) }, "more");
        root.append(
          h("h1", { id: "title" }, nameOf(arn)),
          h("dl", { class: "summary", id: "machine-summary" }),
          graphBox,
          h("h2", {}, "Executions"),
          h("div", { class: "toolbar" }, h("label", {}, "Status ", filter)),
          h("table", { class: "executions" },
            h("thead", {}, h("tr", {}, ["Name", "Status", "Started", "Duration", "Subject"].map((t) => h("th", {}, t)))),
            body),
          more);
      },
      async update() {
        const status = filter.value;
        const page = await api("executions", { stateMachineArn: arn, status, limit: Math.min(1000, loaded) });
        if (status !== filter.value) return; // the filter changed meanwhile: the next poll shows it
        body.replaceChildren(...page.executions.map(row));
        if (!page.executions.length) body.appendChild(h("tr", {}, h("td", { colspan: 5, class: "empty" }, "No execution" + (status ? " with status " + status : "") + ".")));
        nextToken = page.nextToken;
        more.hidden = !nextToken;
        if (!machine || drawnKey === null) {
          const machines = await api("state-machines");
          machine = machines.find((m) => m.arn === arn) || null;
          if (!machine) throw new ApiError(404, "no state machine " + arn);
          const summary = document.getElementById("machine-summary");
          summary.replaceChildren(
            h("dt", {}, "ARN"), h("dd", { class: "mono" }, machine.arn),
            h("dt", {}, "Type"), h("dd", {}, machine.type),
            h("dt", {}, "Created"), h("dd", {}, when(machine.created)));
          const key = JSON.stringify(machine.graph);
          if (key !== drawnKey) {
            drawnKey = key;
            graphBox.replaceChildren(machine.graph ? drawGraph(machine.graph) : h("div", { class: "error" }, "Cannot draw this definition: " + (machine.graphError || "no graph")));
          }
        }
      },
    };
  }

  function executionView(arn) {
    let graphBox, summary, pathList, historyBody, more, drawnKey = null, pathKey = null, summaryKey = null;
    let pages = []; // [{token, rows}]: the history pages loaded, in order
    let nextPageToken = null, eventCount = 0;
    let selected = null;

    function eventRow(e) {
      const details = e.details && Object.keys(e.details).length ? JSON.stringify(e.details, null, 2) : "";
      return h("tr", { "data-event-id": e.id },
        h("td", {}, e.id),
        h("td", {}, e.type),
        h("td", {}, e.stateName || ""),
        h("td", { title: e.timestamp || "" }, when(e.timestamp)),
        h("td", {}, details ? h("details", {}, h("summary", {}, "details"), h("pre", {}, details)) : ""));
    }

    function renderHistory() {
      historyBody.replaceChildren(...pages.flatMap((p) => p.rows).map(eventRow));
      const shown = pages.reduce((n, p) => n + p.rows.length, 0);
      more.hidden = !nextPageToken;
      more.textContent = "more (" + shown + " of " + eventCount + " events shown)";
      if (!shown) historyBody.appendChild(h("tr", {}, h("td", { colspan: 5, class: "empty" }, "No event in the history.")));
    }

    async function loadMore() {
      if (!nextPageToken) return;
      const token = nextPageToken;
      const page = await api("execution", { arn, pageSize: HISTORY_PAGE, pageToken: token });
      pages.push({ token, rows: page.events });
      nextPageToken = page.nextPageToken;
      eventCount = page.eventCount;
      renderHistory();
    }

    function io(title, value, cls) {
      const text = pretty(value);
      if (!text) return null;
      return h("div", { class: cls || "" }, h("h4", {}, title), h("pre", {}, text));
    }

    function visitItem(v, index) {
      const item = h("li", { "data-node-id": v.nodeId || "", "data-index": index, class: "visit visit-" + v.status },
        h("div", {},
          h("strong", {}, v.name), " ",
          h("span", { class: "mono" }, v.type), " — ",
          statusSpan(v.status),
          v.retries ? h("span", { class: "retries" }, " · retried ×" + v.retries + (v.retriedErrors && v.retriedErrors.length ? " (" + v.retriedErrors.join(", ") + ")" : "")) : null,
          v.entered ? h("span", { class: "empty" }, " · " + when(v.entered)) : null),
        h("div", { class: "io" },
          io("Input", v.input), io("Output", v.output),
          io("Error", v.error, "error-text"), io("Cause", v.cause, "cause-text")));
      return item;
    }

    function select(node) {
      selected = node.id;
      for (const li of pathList.querySelectorAll("li")) li.classList.toggle("highlight", li.dataset.nodeId === node.id);
      const first = [...pathList.querySelectorAll("li")].find((li) => li.dataset.nodeId === node.id);
      if (first) first.scrollIntoView({ block: "nearest" });
    }

    return {
      mount(root) {
        setCrumbs({ text: "State machines", href: "#/" }, { text: "…" }, { text: nameOf(arn) });
        summary = h("dl", { class: "summary", id: "execution-summary" });
        graphBox = h("div", { class: "graph" }, h("p", { class: "loading" }, "Loading…"));
        pathList = h("ol", { class: "path-list", id: "path" });
        historyBody = h("tbody");
        more = h("button", { class: "more", id: "history-more", hidden: true, onclick: () => loadMore().catch(showError) }, "more");
        root.append(
          h("h1", { id: "title" }, nameOf(arn)),
          summary,
          graphBox,
          h("h2", {}, "States entered"),
          pathList,
          h("h2", {}, "Event history"),
          h("table", { class: "history" },
            h("thead", {}, h("tr", {}, ["ID", "Type", "State", "Time", "Details"].map((t) => h("th", {}, t)))),
            historyBody),
          more);
      },
      async update() {
        const first = await api("execution", { arn, pageSize: HISTORY_PAGE });
        setCrumbs({ text: "State machines", href: "#/" }, { text: nameOf(first.stateMachineArn), href: machineHref(first.stateMachineArn) }, { text: first.name });
        document.getElementById("title").textContent = first.name;
        const newSummaryKey = JSON.stringify([first.status, first.stop, first.error, first.cause, first.output, first.historySource]);
        if (newSummaryKey !== summaryKey) {
        summaryKey = newSummaryKey; // rebuilt only when it changed: an opened <details> stays open
        summary.replaceChildren();
        append(summary, [
          h("dt", {}, "Status"), h("dd", { id: "execution-status" }, statusSpan(first.status)),
          h("dt", {}, "ARN"), h("dd", { class: "mono" }, first.arn),
          h("dt", {}, "State machine"), h("dd", {}, h("a", { href: machineHref(first.stateMachineArn) }, nameOf(first.stateMachineArn))),
          h("dt", {}, "Subject"), h("dd", { class: "subject" }, first.subject || "—"),
          h("dt", {}, "Started"), h("dd", {}, when(first.start)),
          h("dt", {}, "Stopped"), h("dd", {}, when(first.stop) || "—"),
          h("dt", {}, "Duration"), h("dd", {}, duration(first.durationMs) || "—"),
          first.error ? [h("dt", {}, "Error"), h("dd", { class: "error-text" }, first.error)] : null,
          first.cause ? [h("dt", {}, "Cause"), h("dd", {}, h("pre", {}, pretty(first.cause)))] : null,
          h("dt", {}, "Input"), h("dd", {}, h("details", {}, h("summary", {}, "input"), h("pre", {}, pretty(first.input)))),
          first.output ? [h("dt", {}, "Output"), h("dd", {}, h("details", {}, h("summary", {}, "output"), h("pre", {}, pretty(first.output))))] : null,
          h("dt", {}, "History"), h("dd", {}, first.historySource || "")]);
        }

        // the graph, redrawn only when the definition or the path changed
        const retries = new Map();
        for (const v of first.path || []) {
          if (v.nodeId && v.retries) retries.set(v.nodeId, (retries.get(v.nodeId) || 0) + v.retries);
        }
        const key = JSON.stringify([first.graph, first.visitedNodeIds, first.failedNodeId, [...retries]]);
        if (key !== drawnKey) {
          drawnKey = key;
          graphBox.replaceChildren(first.graph
            ? drawGraph(first.graph, { visited: first.visitedNodeIds, failed: first.failedNodeId, retries, onNode: select })
            : h("div", { class: "error" }, "Cannot draw this definition: " + (first.graphError || "no graph")));
        }
        const newPathKey = JSON.stringify([first.path, first.pathTruncated]);
        if (newPathKey !== pathKey) {
          pathKey = newPathKey;
          pathList.replaceChildren(...(first.path || []).map(visitItem));
          if (first.pathTruncated) pathList.appendChild(h("li", { class: "empty" }, "… more states were entered (the list is cut)"));
          if (!(first.path || []).length) pathList.appendChild(h("li", { class: "empty" }, "No state entered" + (first.historySource ? "" : " (no history)") + "."));
          if (selected) select({ id: selected });
        }

        // the history: the first page anew; pages loaded with "more" are kept, the last one
        // fetched again with its own token when events were added since
        const grew = first.eventCount !== eventCount;
        eventCount = first.eventCount;
        if (!pages.length || pages.length === 1) {
          pages = [{ token: null, rows: first.events }];
          nextPageToken = first.nextPageToken;
        } else {
          pages[0] = { token: null, rows: first.events };
          if (grew && !nextPageToken) {
            const last = pages[pages.length - 1];
            const page = await api("execution", { arn, pageSize: HISTORY_PAGE, pageToken: last.token });
            last.rows = page.events;
            nextPageToken = page.nextPageToken;
          }
        }
        if (grew || historyBody.childElementCount === 0) renderHistory();
        else more.hidden = !nextPageToken;
      },
    };
  }


  // --- queues --------------------------------------------------------------------------
  function deadLetterNote(q) {
    const of = q.deadLetterFor || {};
    const parts = [];
    if ((of.queues || []).length) parts.push("DLQ of " + of.queues.map(nameOf).join(", "));
    if ((of.rules || []).length) parts.push("DLQ of rule " + of.rules.map((r) => String(r.rule || "").split("/").pop() + " → " + r.target).join(", "));
    if ((of.schedules || []).length) parts.push("DLQ of schedule " + of.schedules.map((a) => String(a || "").split("/").pop()).join(", "));
    return parts.join("; ");
  }

  function queuesView() {
    let body;
    return {
      mount(root) {
        setCrumbs({ text: "Queues" });
        body = h("tbody");
        root.append(h("h1", {}, "Queues"),
          h("table", { class: "queues" },
            h("thead", {}, h("tr", {}, ["Name", "Available", "In flight", "Delayed", "Dead-letter queue of", "URL"].map((t) => h("th", {}, t)))),
            body));
      },
      async update() {
        const listed = await api("queues");
        const rows = listed.map((q) =>
          h("tr", { "data-url": q.url, "data-arn": q.arn, class: q.isDeadLetterQueue ? "dlq" : null },
            h("td", {}, h("a", { href: queueHref(q.url) }, q.name), q.isDeadLetterQueue && q.messages ? [" ", h("span", { class: "badge" }, "dead letters")] : null),
            h("td", { class: "count" }, q.messages),
            h("td", { class: "count" }, q.inFlight),
            h("td", { class: "count" }, q.delayed),
            h("td", {}, deadLetterNote(q)),
            h("td", { class: "arn" }, q.url)));
        if (!rows.length) rows.push(h("tr", {}, h("td", { colspan: 6, class: "empty" }, "No queue.")));
        body.replaceChildren(...rows);
      },
    };
  }

  function attributeList(entries) {
    const dl = h("dl", { class: "attributes" });
    for (const [name, value] of entries) dl.append(h("dt", {}, name), h("dd", { "data-attribute": name }, value));
    return dl;
  }

  function queueView(url) {
    let summary, body, lastKey = null;
    const LIMIT = 50;

    function messageRow(m) {
      const messageAttributes = Object.entries(m.messageAttributes || {}).map(([k, v]) => [k, v.value === null || v.value === undefined ? "" : String(v.value)]);
      const system = Object.entries(m.attributes || {});
      return h("tr", { "data-message-id": m.id },
        h("td", { class: "mono" }, m.id, h("div", { class: "empty" }, when(m.sent)), h("div", { class: "empty" }, "received ×" + m.receiveCount + (m.visible ? "" : " · in flight"))),
        h("td", { class: "body" }, h("pre", {}, pretty(m.body))),
        h("td", { class: "message-attributes" }, messageAttributes.length ? attributeList(messageAttributes) : h("span", { class: "empty" }, "none")),
        h("td", { class: "system-attributes" }, h("details", {}, h("summary", {}, "attributes"), attributeList(system))),
        h("td", {}, m.redrive ? h("code", { class: "redrive" }, m.redrive) : h("span", { class: "empty" }, "—")));
    }

    return {
      mount(root) {
        setCrumbs({ text: "Queues", href: "#/queues" }, { text: url.split("/").pop() });
        summary = h("dl", { class: "summary", id: "queue-summary" });
        body = h("tbody");
        root.append(h("h1", { id: "title" }, url.split("/").pop()), summary,
          h("h2", {}, "Messages"),
          h("p", { class: "empty" }, "Read without receiving them: no visibility or receive count changes."),
          h("table", { class: "messages" },
            h("thead", {}, h("tr", {}, ["Message", "Body", "Message attributes", "Attributes", "Redrive"].map((t) => h("th", {}, t)))),
            body));
      },
      async update() {
        const q = await api("queue", { url, limit: LIMIT });
        const key = JSON.stringify(q);
        if (key === lastKey) return; // unchanged: an opened <details> stays open
        lastKey = key;
        setCrumbs({ text: "Queues", href: "#/queues" }, { text: q.name });
        document.getElementById("title").textContent = q.name;
        summary.replaceChildren();
        append(summary, [
          h("dt", {}, "URL"), h("dd", { class: "mono" }, q.url),
          h("dt", {}, "ARN"), h("dd", { class: "mono" }, q.arn),
          h("dt", {}, "Messages"), h("dd", { id: "queue-counts" }, q.messages + " available, " + q.inFlight + " in flight, " + q.delayed + " delayed"),
          deadLetterNote(q) ? [h("dt", {}, "Dead-letter queue of"), h("dd", {}, deadLetterNote(q))] : null,
          h("dt", {}, "Redrive"), h("dd", {}, q.redrive ? h("code", { class: "redrive", id: "queue-redrive" }, q.redrive) : "—")]);
        body.replaceChildren(...q.messages.map(messageRow));
        if (!q.messages.length) body.appendChild(h("tr", {}, h("td", { colspan: 5, class: "empty" }, "No message.")));
        if (q.total > q.messages.length) body.appendChild(h("tr", {}, h("td", { colspan: 5, class: "empty" }, "… " + (q.total - q.messages.length) + " more not shown")));
      },
    };
  }

  // --- objects (the application's, through console/extensions.py) ------------------------
  function cell(value) {
    if (value === null || value === undefined) return "";
    if (typeof value === "object") return h("pre", {}, JSON.stringify(value, null, 2));
    return String(value);
  }

  function recordsTable(rows, cls, linkKey) {
    const columns = [];
    for (const row of rows) for (const name of Object.keys(row)) if (!columns.includes(name)) columns.push(name);
    return h("table", { class: cls },
      h("thead", {}, h("tr", {}, columns.map((c) => h("th", {}, c)))),
      h("tbody", {}, rows.map((row) => h("tr", linkKey && typeof row.key === "string" ? { "data-key": row.key } : {},
        columns.map((c) => {
          const value = row[c];
          if (linkKey && c === "key" && typeof value === "string") return h("td", {}, h("a", { href: objectHref(value) }, value));
          if (c === "execution_arn" && typeof value === "string" && value.startsWith("arn:")) return h("td", { class: "arn" }, h("a", { href: executionHref(value) }, value));
          return h("td", { "data-field": c }, cell(value));
        })))));
  }

  function objectsView(query) {
    let body, input, lastKey = null;
    return {
      mount(root) {
        setCrumbs({ text: features.objectsTitle || "Objects" });
        input = h("input", { type: "search", id: "object-search", name: "q", placeholder: "key contains…", value: query });
        const form = h("form", { class: "search", onsubmit: (e) => { e.preventDefault(); location.hash = objectsHref(input.value); } },
          input, h("button", { type: "submit" }, "Search"));
        body = h("div", { id: "objects" });
        root.append(h("h1", {}, features.objectsTitle || "Objects"), form, body);
      },
      async update() {
        const rows = await api("objects", { q: query });
        const key = JSON.stringify(rows);
        if (key === lastKey) return;
        lastKey = key;
        body.replaceChildren(rows.length ? recordsTable(rows, "objects", true) : h("p", { class: "empty" }, "Nothing found" + (query ? " for " + JSON.stringify(query) : "") + "."));
      },
    };
  }

  function objectView(key) {
    let body, lastKey = null;
    return {
      mount(root) {
        setCrumbs({ text: features.objectsTitle || "Objects", href: "#/objects" }, { text: key });
        body = h("div", { id: "object" });
        root.append(h("h1", { id: "title" }, key), body);
      },
      async update() {
        const shown = await api("object", { key });
        const text = JSON.stringify(shown);
        if (text === lastKey) return;
        lastKey = text;
        const fields = h("dl", { class: "summary", id: "object-summary" });
        for (const [name, value] of Object.entries(shown || {})) {
          if (name === "records" || name === "links" || name === "key") continue;
          fields.append(h("dt", {}, name), h("dd", { "data-field": name }, typeof value === "object" && value !== null ? h("pre", {}, JSON.stringify(value, null, 2)) : cell(value)));
        }
        const links = (shown.links || []).map((l) => safeHref(l.href) ? h("li", {}, h("a", { href: safeHref(l.href) }, l.text || l.href)) : null).filter(Boolean);
        body.replaceChildren();
        append(body, [fields,
          links.length ? [h("h2", {}, "Links"), h("ul", { class: "links", id: "object-links" }, links)] : null,
          Array.isArray(shown.records) ? [h("h2", {}, "Records"), shown.records.length ? recordsTable(shown.records, "records", false) : h("p", { class: "empty" }, "No record.")] : null]);
      },
    };
  }

  // --- router and polling ----------------------------------------------------------------
  let view = null;
  let generation = 0;
  let timer = null;

  function showError(error) {
    const old = app.querySelector(":scope > .error");
    if (old) old.remove();
    app.prepend(errorBox(error));
  }

  let features = { objects: false, objectsTitle: null };

  function route() {
    const hash = location.hash.replace(/^#/, "");
    const match = /^\/(machine|execution|queue|object)\/(.+)$/.exec(hash);
    if (match) {
      const value = decodeURIComponentSafe(match[2]);
      if (value !== null) {
        if (match[1] === "machine") return ["machines", machineView(value)];
        if (match[1] === "execution") return ["machines", executionView(value)];
        if (match[1] === "queue") return ["queues", queueView(value)];
        return ["objects", objectView(value)];
      }
    }
    if (/^\/queues\/?$/.test(hash)) return ["queues", queuesView()];
    const objects = /^\/objects\/?(?:\?(.*))?$/.exec(hash);
    if (objects) return ["objects", objectsView(new URLSearchParams(objects[1] || "").get("q") || "")];
    return ["machines", machinesView()];
  }

  function setMenu(current) {
    const link = document.getElementById("menu-objects");
    link.hidden = !features.objects;
    link.textContent = features.objectsTitle || "Objects";
    for (const a of document.querySelectorAll("#menu a")) a.classList.toggle("current", a.dataset.menu === current);
  }

  function decodeURIComponentSafe(text) {
    try {
      return decodeURIComponent(text);
    } catch (e) {
      return null;
    }
  }

  async function tick(mine) {
    if (mine !== generation) return;
    if (!document.hidden) {
      try {
        await view.update();
        if (mine !== generation) return;
        const old = app.querySelector(":scope > .error");
        if (old) old.remove();
        refresh.textContent = "updated " + new Date().toLocaleTimeString();
      } catch (error) {
        if (mine !== generation) return;
        showError(error);
        refresh.textContent = "update failed " + new Date().toLocaleTimeString();
      }
    }
    if (mine === generation) timer = setTimeout(() => tick(mine), POLL_MS);
  }

  function start() {
    generation += 1;
    if (timer) clearTimeout(timer);
    const [menu, routed] = route();
    view = routed;
    setMenu(menu);
    app.replaceChildren();
    view.mount(app);
    tick(generation);
  }

  /** An update now (a filter changed, the page became visible), then every POLL_MS again. */
  function pollNow() {
    generation += 1;
    if (timer) clearTimeout(timer);
    tick(generation);
  }

  window.addEventListener("hashchange", start);
  document.addEventListener("visibilitychange", () => {
    if (!document.hidden) pollNow();
  });

  window.localcloudConsole = { drawGraph, api };
  // what the application added (the Objects page), then the page; without it: the rest
  api("features").then((found) => { features = found || features; }, () => {}).finally(start);
})();
